"""A sandbox's prepared state, built once per Docker host and forked for the sandboxes after it.

`SandboxConfig.prepare` is a shell command every sandbox of that config needs run before use (an SWE task: check
out and pin the task's commit in a repository of thousands of files). The first sandbox on a host runs it and
commits its container as an image (`rollgym-prepared:<key>`, labelled `rollgym-prepared`); later sandboxes of the
same image, command, user and workdir on that host start from that image and skip the work, so a GRPO group of N
rollouts of one task prepares once per host, not N times. Sandboxes of one process wait for the one preparing
(a lock per host and key); other processes may prepare the same state twice, which is harmless. A preparation
quicker than a commit (`WORTH_S`) is not saved: every sandbox runs it itself, without waiting for the others.
Remove them with `rollgym sandbox prune --prepared` (or `docker image prune -a --filter label=rollgym-prepared`): a
prepared image keeps its parent's layers, so a rebuilt task image's old layers stay until then.
"""

from __future__ import annotations

import hashlib
import threading

import docker
import docker.errors

from rollgym.envs.sandbox.models import SandboxConfig

LABEL = "rollgym-prepared"
REPOSITORY = "rollgym-prepared"

#: a preparation quicker than this (seconds) is not saved: a commit costs about as much, and the sandboxes of a
#: group would wait for it (a small repository's checkout); each sandbox then runs it itself, at once
WORTH_S = 0.1

_locks: dict[tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()
_cheap: set[tuple[str, str]] = set()


def key_of(client: docker.DockerClient, config: SandboxConfig) -> str:
    """What the prepared state depends on: the image's id (a rebuilt image is prepared again), the command, the user
    and the workdir it ran with."""
    image_id = client.images.get(config.image).id or config.image  # a daemon's image always has an id
    parts = (image_id, config.prepare or "", config.user or "", config.workdir)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def tag_of(key: str) -> str:
    return f"{REPOSITORY}:{key}"


def lock_for(host: str, key: str) -> threading.Lock:
    """The lock the sandboxes of one process hold while one of them prepares `key` on `host`."""
    with _locks_guard:
        return _locks.setdefault((host, key), threading.Lock())


def find(client: docker.DockerClient, key: str) -> str | None:
    """The prepared image of `key` on this daemon, if it has one."""
    try:
        client.images.get(tag_of(key))
    except docker.errors.ImageNotFound:
        return None
    return tag_of(key)


def commit(container, key: str) -> None:
    """Save the prepared container as `key`'s image (paused for the moment the commit takes)."""
    container.commit(repository=REPOSITORY, tag=key, changes=[f"LABEL {LABEL}={key}"], pause=True)


def worth_saving(host: str, key: str) -> bool:
    """False once this process saw `key` prepare on `host` faster than a commit would save it."""
    return (host, key) not in _cheap


def not_worth_saving(host: str, key: str) -> None:
    _cheap.add((host, key))


def remove_all(client: docker.DockerClient) -> list[str]:
    """Remove this daemon's prepared images that no container uses; their tags."""
    removed = []
    for image in client.images.list(filters={"label": LABEL}):
        try:
            client.images.remove(image.id, force=False)
        except docker.errors.APIError:  # in use by a container (or gone meanwhile): left for the next prune
            continue
        removed += image.tags or [image.short_id]
    return removed
