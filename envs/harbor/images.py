"""A Harbor task's image: `[environment] docker_image` (on the daemon, else pulled from its registry), or built once per
host from `environment/` (tagged by the folder's content hash, so a GRPO group and later runs reuse it), its base
images checked first, so a missing one fails that task before any rollout, naming the image."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import docker
import docker.errors
import requests
import urllib3.exceptions

from rollgym.envs.harbor.folders import HarborTask
from rollgym.envs.sandbox.daemon import docker_client
from rollgym.envs.sandbox.errors import ImageError, ImageMissingError
from rollgym.envs.sandbox.images import context_hash, ensure_image, image_exists

HARBOR_REPO = "rollgym-harbor"
Log = Callable[[str], None]
_ARG = re.compile(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?", re.I)
_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", re.I)
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}?")


def base_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile's stages start FROM (global ARG defaults filled in; earlier stages and `scratch` not
    counted), in order, once each."""
    args: dict[str, str] = {}
    stages: set[str] = set()
    out: list[str] = []
    seen_from = False
    for line in dockerfile.splitlines():
        arg = _ARG.match(line)
        if arg and not seen_from:
            args[arg.group(1)] = arg.group(2) or ""
            continue
        found = _FROM.match(line)
        if not found:
            continue
        seen_from = True
        image = _VAR.sub(lambda m: args.get(m.group(1)) or (m.group(2) or ""), found.group(1))
        if image and image.lower() != "scratch" and image not in stages and image not in out:
            out.append(image)
        if found.group(2):
            stages.add(found.group(2))
    return out


def harbor_image_name(task: HarborTask) -> str:
    """The task's image: its `docker_image`, else `rollgym-harbor/<task id>:<content hash of environment/>`."""
    if task.config.environment.docker_image:
        return task.config.environment.docker_image
    slug = re.sub(r"[^a-z0-9_.-]+", "-", task.task_id.lower()).strip("-.") or "task"
    return f"{HARBOR_REPO}/{slug}:{context_hash(task.environment_dir)}"


def ensure_harbor_image(task: HarborTask, log: Log = print, client: docker.DockerClient | None = None) -> str:
    """The task's image on `client`'s daemon (default engine): found, pulled, or built (each base image found or
    pulled first; `ImageMissingError` naming the one that is neither); `ImageError` when the build fails."""
    client = client or docker_client()
    name = harbor_image_name(task)
    if task.config.environment.docker_image:
        return ensure_image(name, log=log, client=client)
    if image_exists(name, client):
        return name
    for base in base_images((task.environment_dir / "Dockerfile").read_text()):
        try:
            ensure_image(base, log=log, client=client)
        except ImageMissingError as exc:
            raise ImageMissingError(
                f"{task.task_id}: the base image {base!r} of environment/Dockerfile is not on this Docker host "
                f"and cannot be pulled: {exc}"
            ) from exc
    _build(task, name, log, client)
    return name


def _build(task: HarborTask, name: str, log: Log, client: docker.DockerClient) -> None:
    """`docker build environment/` within `[environment] build_timeout_sec` (the build's whole time: over it, the
    connection is dropped, which stops the daemon's build), with the Docker network (as Harbor builds: TB2 Dockerfiles
    install packages)."""
    timeout = task.config.environment.build_timeout_sec
    log(f"[image] building {name} from {task.environment_dir}")
    start = time.monotonic()
    over = ImageError(f"{task.task_id}: building {name} took over build_timeout_sec={timeout:g}")
    try:
        stream = client.api.build(
            path=str(task.environment_dir),
            tag=name,
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            timeout=int(timeout),
        )
        for chunk in stream:
            if "error" in chunk:
                raise ImageError(f"{task.task_id}: building {name} failed: {str(chunk['error']).strip()}")
            if time.monotonic() - start > timeout:
                stream.close()
                raise over
    except (requests.exceptions.ReadTimeout, urllib3.exceptions.ReadTimeoutError, TimeoutError) as exc:
        raise over from exc  # no output for that long (while streaming, urllib3's own error)
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise ImageError(f"{task.task_id}: building {name} failed: {exc}") from exc
    log(f"[image] built {name}")
