"""Images per Docker host: checked once per (host, image) before the first sandbox there; a missing one is pulled
there from its registry when its name has one, else built there when this process knows its recipe, else copied
from a host that has it (`docker save` streamed into `docker load`, no registry), else the base image is
bootstrapped there."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import docker.errors
import requests.exceptions

from rollgym.envs.sandbox import images
from rollgym.envs.sandbox.daemon import client_for
from rollgym.envs.sandbox.errors import ImageError, ImageMissingError, SandboxError

_READY: set[tuple[str, str]] = set()
_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()
Log = Callable[[str], None]


def _lock(key: tuple[str, str]) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(key, threading.Lock())


def copy_image(name: str, source: str, dest: str, log: Log = lambda _m: None) -> None:
    """Stream `name` from one daemon to another (`docker save | docker load`), never held whole in memory."""
    log(f"[image] copying {name} from {source} to {dest}")
    src, dst = client_for(source), client_for(dest)
    try:
        for message in dst.api.load_image(src.api.get_image(name, chunk_size=1 << 20), quiet=True):
            if isinstance(message, dict) and (message.get("error") or message.get("errorDetail")):
                raise ImageError(
                    f"loading {name} into {dest} failed: {message.get('error') or message.get('errorDetail')}"
                )
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ImageError(f"copying {name} from {source} to {dest} failed: {exc}") from exc
    if not images.image_exists(name, dst):
        raise ImageError(f"copying {name} from {source} to {dest}: the image is not there afterwards")


def _build_there(name: str, host: str, others: list[str], log: Log) -> bool:
    """Build `name` on `host` from its recipe, if this process built it before (its FROM images first)."""
    recipe = images.RECIPES.get(name)
    if recipe is None:
        return False
    dockerfile, files = recipe
    for base in re.findall(r"^FROM\s+(\S+)", dockerfile, flags=re.MULTILINE):
        ensure_image_on(base, host, others, log)
    log(f"[image] building {name} on {host}")
    images.build_image_from_dockerfile(dockerfile, name, files=files, log=log, client=client_for(host))
    return True


def from_registry(name: str) -> bool:
    """Whether `name` names its registry (`host:port/...`, `registry.example/...`, `localhost/...`)."""
    first, sep, _ = name.partition("/")
    return bool(sep) and ("." in first or ":" in first or first == "localhost")


def _provide(name: str, host: str, others: list[str], log: Log) -> None:
    if from_registry(name):  # each host pulls it from its registry, as a user's hosts would
        try:
            images.pull_image(name, log=log, client=client_for(host))
            return
        except ImageMissingError as exc:
            log(f"[image] {exc}; trying to build or copy it instead")
    if _build_there(name, host, others, log):
        return
    for other in others:
        try:
            if images.image_exists(name, client_for(other)):
                copy_image(name, other, host, log)
                return
        except SandboxError:
            continue  # that host does not answer: try the next
    if name == images.base_image_name():
        images.bootstrap_base_image(log=log, client=client_for(host))
        return
    raise ImageError(
        f"image {name!r} not found on any of the Docker hosts {[host, *others]}, and rollgym cannot build "
        "it (build it, e.g. `rollgym image bootstrap`, or import or pull it on one of them)"
    )


def ensure_image_on(name: str, host: str, others: list[str], log: Log = lambda _m: None) -> None:
    """Make sure `host` has `name` (checked once per process); `others`: hosts to copy it from."""
    key = (host, name)
    if key in _READY:
        return
    with _lock(key):
        if key in _READY:
            return
        if not images.image_exists(name, client_for(host)):
            _provide(name, host, [h for h in others if h != host], log)
        with _LOCKS_LOCK:
            _READY.add(key)


def forget(host: str) -> None:
    """Check images again on `host` (it was restarted, or out of rotation: its images may have changed)."""
    with _LOCKS_LOCK:
        for key in [k for k in _READY if k[0] == host]:
            _READY.discard(key)
