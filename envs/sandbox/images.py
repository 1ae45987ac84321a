"""Images: use by name (pull if a registry answers), build from a context cached by content hash,
or bootstrap rollgym's base image offline with debootstrap + `docker import` (no registry needed)."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import docker
import docker.errors
import docker.utils
import requests

from rollgym.envs.sandbox.daemon import docker_client
from rollgym.envs.sandbox.errors import ImageError, ImageMissingError

# The offline base image: Debian bookworm minbase, plus what rollgym's tools and bundled tasks need.
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-pytest", "git", "patch", "procps", "ca-certificates")
BASE_MIRROR = os.environ.get("ROLLGYM_DEBIAN_MIRROR", "http://deb.debian.org/debian")
BASE_REPO = "rollgym/base"
BASE_LAYER_DOCKERFILE = """\
FROM {rootfs}
ENV PAGER=cat GIT_PAGER=cat TERM=dumb LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN ln -sf /usr/bin/python3 /usr/local/bin/python \\
 && useradd --create-home --uid 1000 agent \\
 && git config --system user.email agent@rollgym.invalid && git config --system user.name rollgym \\
 && git config --system --add safe.directory '*' && git config --system init.defaultBranch main \\
 && mkdir -p /testbed
CMD ["sleep", "infinity"]
"""

Log = Callable[[str], None]
# How each image built in this process was made (Dockerfile, context files), so another Docker host that
# lacks it can build it too (host_images.py).
RECIPES: dict[str, tuple[str, dict[str, bytes]]] = {}


def _hash(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def image_exists(name: str, client: docker.DockerClient | None = None) -> bool:
    try:
        (client or docker_client()).images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ImageError(f"cannot look up image {name}: the Docker engine failed: {exc}") from exc


def base_packages(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The Debian packages of a base image: `BASE_PACKAGES`, then the `extra` ones not among them (sorted, once
    each, so their order does not change the image)."""
    return BASE_PACKAGES + tuple(sorted(set(extra) - set(BASE_PACKAGES)))


def base_image_name(packages: Iterable[str] = ()) -> str:
    """The content-addressed tag of the offline base image, with extra Debian `packages` if any (e.g.
    `["golang-go"]`); it changes when its recipe changes, and without extras it is the plain base image's."""
    key = _hash(BASE_SUITE, BASE_MIRROR, ",".join(base_packages(packages)), BASE_LAYER_DOCKERFILE)
    return f"{BASE_REPO}:{BASE_SUITE}-{key}"


def bootstrap_base_image(
    log: Log = print,
    force: bool = False,
    client: docker.DockerClient | None = None,
    packages: Iterable[str] = (),
) -> str:
    """Build the base image offline from Debian packages: debootstrap a rootfs, import it, add a layer
    (on `client`'s daemon; default: the default engine). Extra Debian `packages` give another image, tagged by
    `base_image_name(packages)`; only the plain one is also tagged `latest`."""
    client = client or docker_client()
    debs = base_packages(packages)
    name = base_image_name(debs)
    if image_exists(name, client) and not force:
        log(f"[image] {name} is up to date")
        return name
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap is not installed (apt-get install -y debootstrap)")
    if os.geteuid() != 0:
        raise ImageError("bootstrapping the base image needs root (debootstrap)")
    rootfs_tag = name.replace(BASE_REPO, BASE_REPO + "-rootfs")
    if not image_exists(rootfs_tag, client) or force:
        with tempfile.TemporaryDirectory(prefix="rollgym-rootfs-", dir="/var/tmp") as tmp:
            root = Path(tmp) / "root"
            log(f"[image] debootstrap {BASE_SUITE} (minbase + {', '.join(debs)}) into {root}")
            cmd = [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(debs)}",
                BASE_SUITE,
                str(root),
                BASE_MIRROR,
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise ImageError(f"debootstrap failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
            for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for entry in (root / junk).glob("*"):
                    if entry.is_file():
                        entry.unlink()
            tar_path = Path(tmp) / "rootfs.tar"
            subprocess.run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(tar_path), "."], check=True)
            log(f"[image] docker import -> {rootfs_tag}")
            repo, tag = rootfs_tag.rsplit(":", 1)
            client.api.import_image_from_file(str(tar_path), repository=repo, tag=tag)
    dockerfile = BASE_LAYER_DOCKERFILE.format(rootfs=rootfs_tag)
    build_image_from_dockerfile(dockerfile, name, log=log, client=client)
    if debs == BASE_PACKAGES:
        client.images.get(name).tag(BASE_REPO, "latest")
    log(f"[image] built {name}")
    return name


def build_image_from_dockerfile(
    dockerfile: str,
    tag: str,
    files: dict[str, bytes] | None = None,
    log: Log = print,
    client: docker.DockerClient | None = None,
) -> str:
    """`docker build` of an in-memory context (a Dockerfile plus files), with no network; the recipe is kept
    (`RECIPES`) so other Docker hosts can build the same image."""
    RECIPES[tag] = (dockerfile, dict(files or {}))
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in {"Dockerfile": dockerfile.encode(), **(files or {})}.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    client = client or docker_client()
    try:
        _, logs = client.images.build(
            fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True, network_mode="none", pull=False
        )
    except docker.errors.BuildError as exc:
        tail = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)[-3000:]
        raise ImageError(f"building {tag} failed: {exc.msg}\n{tail}") from exc
    except docker.errors.APIError as exc:
        raise ImageError(f"building {tag} failed: {exc}") from exc
    return tag


def context_hash(context_dir: str | Path) -> str:
    """A content hash of a build context (paths, modes and bytes of every file)."""
    root = Path(context_dir)
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        h.update(rel.encode() + b"\0" + oct(path.stat().st_mode & 0o777).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def build_image(context_dir: str | Path, repo: str, log: Log = print, network_mode: str = "none") -> str:
    """Build `repo:<content hash>` from a Dockerfile context; skipped when that tag already exists.
    Builds get no network by default (`network_mode="default"` lets RUN steps download)."""
    tag = f"{repo}:{context_hash(context_dir)}"
    if image_exists(tag):
        return tag
    log(f"[image] building {tag} from {context_dir}")
    try:
        docker_client().images.build(
            path=str(context_dir), tag=tag, rm=True, forcerm=True, pull=False, network_mode=network_mode
        )
    except (docker.errors.BuildError, docker.errors.APIError) as exc:
        raise ImageError(f"building {tag} from {context_dir} failed: {exc}") from exc
    return tag


def ensure_image(name: str, log: Log = print, client: docker.DockerClient | None = None) -> str:
    """Make `name` available on `client`'s daemon (default engine): present already, or pulled from its registry
    (`pull_image`); `ImageMissingError` with the registry's answer when neither works."""
    client = client or docker_client()
    if image_exists(name, client):
        return name
    pull_image(name, log=log, client=client)
    return name


def pull_image(name: str, log: Log = print, client: docker.DockerClient | None = None) -> None:
    """Pull `name` onto `client`'s daemon, saying how far it got (each layer's status, and the bytes done every
    few seconds); `ImageMissingError` naming the image and the registry's answer when it cannot."""
    client = client or docker_client()
    repository, tag = docker.utils.parse_repository_tag(name)
    log(f"[image] pulling {name}")
    said, last, layers = 0.0, {}, {}
    try:
        for event in client.api.pull(repository, tag=tag or "latest", stream=True, decode=True):
            if "error" in event or "errorDetail" in event:
                raise docker.errors.APIError(str(event.get("error") or event.get("errorDetail")))
            layer, status = event.get("id"), event.get("status", "")
            detail = event.get("progressDetail") or {}
            if layer and detail.get("total"):
                layers[layer] = (detail.get("current", 0), detail["total"])
            if layer and status in ("Pull complete", "Already exists") and last.get(layer) != status:
                last[layer] = status
                log(f"[image]   {name}: layer {layer} {status.lower()}")
            if time.monotonic() - said > 5 and layers:
                said = time.monotonic()
                done, total = sum(c for c, _ in layers.values()), sum(t for _, t in layers.values())
                log(f"[image]   {name}: {done / 1e6:,.0f} of {total / 1e6:,.0f} MB")
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        answer = getattr(exc, "explanation", None) or str(exc)
        raise ImageMissingError(
            f"image {name!r} is on no Docker daemon here and cannot be pulled: the registry answered: {answer} "
            "(push it there, or build or import it on this host first)"
        ) from exc
    if not image_exists(name, client):
        raise ImageMissingError(f"image {name!r}: the pull ended but the daemon does not have it")
    log(f"[image] pulled {name}")
