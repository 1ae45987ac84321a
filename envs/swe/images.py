"""Task images: a prebuilt image by name, or one built from an `ImageRecipe` (source + injected bug + a
single base commit, so no history past `base_commit`), cached by content hash. The repository is
writable by any user, so sandboxes may run the agent as a non-root user."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from rollgym.envs.sandbox.errors import ImageError
from rollgym.envs.sandbox.images import (
    base_image_name,
    bootstrap_base_image,
    build_image_from_dockerfile,
    ensure_image,
    image_exists,
)
from rollgym.envs.swe.base_commit import build_mismatch
from rollgym.envs.swe.errors import SdistNotFoundError
from rollgym.envs.swe.task import BUNDLED_SDISTS, SWETask

# Fixed identity and dates make the base commit's hash a pure function of the tree.
_COMMIT_ENV = (
    "GIT_AUTHOR_NAME=rollgym GIT_AUTHOR_EMAIL=tasks@rollgym.invalid GIT_COMMITTER_NAME=rollgym "
    "GIT_COMMITTER_EMAIL=tasks@rollgym.invalid GIT_AUTHOR_DATE=2024-01-01T00:00:00Z "
    "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z"
)
IGNORED = "__pycache__/\n*.pyc\n.pytest_cache/\n"


def sdist_path(task: SWETask) -> Path:
    """Where a row's sdist is: an absolute path as given; a relative one next to the task file the row came from,
    else among rollgym's bundled sdists (so rows copied from the bundled file keep working)."""
    spec = task.env_spec
    assert spec is not None and spec.sdist
    given = Path(spec.sdist)
    if given.is_absolute():
        tried = [given]
    else:
        tried = ([Path(spec.task_file).parent / given] if spec.task_file else []) + [BUNDLED_SDISTS / given]
    for path in tried:
        if path.is_file():
            return path
    where = f"the task file {spec.task_file}" if spec.task_file else "a row not loaded from a task file"
    raise SdistNotFoundError(
        f"task {task.instance_id}: env_spec.sdist {spec.sdist!r} not found at {tried[0]} ({where})"
    )


def task_dockerfile(task: SWETask, expect_commit: bool = True) -> tuple[str, dict[str, bytes]]:
    """The Dockerfile and context files that build `task`'s repository image."""
    spec = task.env_spec
    if spec is None or not spec.sdist:
        raise ImageError(f"{task.instance_id}: no image_name and no env_spec.sdist: cannot build an image")
    data = sdist_path(task).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if spec.sdist_sha256 and digest != spec.sdist_sha256:
        raise ImageError(f"{task.instance_id}: {spec.sdist} has sha256 {digest}, expected {spec.sdist_sha256}")
    wd = spec.workdir
    setup = "".join(f" && {cmd}" for cmd in spec.setup_commands)
    check = (
        f' && test "$(git rev-parse HEAD)" = "{task.base_commit}"'
        f' || {{ echo "base commit is $(git rev-parse HEAD), task says {task.base_commit}" >&2; exit 1; }}'
        if expect_commit
        else ""
    )
    dockerfile = f"""\
FROM {spec.base_image or base_image_name()}
COPY src.tar.gz bug.patch ignore /tmp/rollgym-src/
RUN mkdir -p {wd} && tar -xzf /tmp/rollgym-src/src.tar.gz -C {wd} --strip-components=1 --no-same-owner \\
 && cd {wd} && {{ [ ! -s /tmp/rollgym-src/bug.patch ] || patch -p1 --no-backup-if-mismatch < /tmp/rollgym-src/bug.patch; }}{setup} \\
 && git init -q && cp /tmp/rollgym-src/ignore .git/info/exclude && git add -A \\
 && env {_COMMIT_ENV} git commit -q -m "base" && rm -rf /tmp/rollgym-src{check} \\
 && chmod -R a+rwX {wd}
WORKDIR {wd}
"""
    return dockerfile, {"src.tar.gz": data, "bug.patch": spec.bug_patch.encode(), "ignore": IGNORED.encode()}


def task_image_name(task: SWETask) -> str:
    """The image a task's sandboxes run: its `image` (SWE-bench 5) or `image_name`, or the content-hashed tag of its
    build."""
    if task.image or task.image_name:
        return task.image or task.image_name or ""
    dockerfile, files = task_dockerfile(task)
    h = hashlib.sha256(dockerfile.encode())
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    slug = re.sub(r"[^a-z0-9_.-]+", "-", task.instance_id.lower())[:80]
    return f"rollgym/swe-task:{slug}-{h.hexdigest()[:12]}"


def ensure_task_image(task: SWETask, log=print, client=None) -> str:
    """Make the task's image available on `client`'s daemon (default: the default engine; other Docker hosts
    get it when a sandbox starts there: sandbox/host_images.py): pull a named one, or build it (once) from its
    `ImageRecipe`; a build that finds another base commit is a one-line `WrongBaseCommitError` with the right one."""
    if task.image and task.task_dir:  # a task folder: its Dockerfile builds the row's image when no daemon has it
        if not image_exists(task.image, client):
            build_task_folder_image(task, log=log, client=client)
        return task.image
    if task.image or task.image_name:
        return ensure_image(task_image_name(task), log=log, client=client)
    name = task_image_name(task)
    if not image_exists(name, client):
        if task.env_spec and task.env_spec.base_image is None and not image_exists(base_image_name(), client):
            bootstrap_base_image(log=log, client=client)
        log(f"[image] building {name}")
        dockerfile, files = task_dockerfile(task)
        try:
            build_image_from_dockerfile(dockerfile, name, files=files, log=log, client=client)
        except ImageError as exc:
            mismatch = build_mismatch(task, str(exc))
            if mismatch is None:
                raise
            raise mismatch from None
    return name


def build_task_images(tasks: list[SWETask], log=print) -> list[str]:
    """Build (or find cached) the images of many tasks."""
    return [ensure_task_image(t, log=log) for t in tasks]


def build_task_folder_image(task: SWETask, log=print, client=None) -> str:
    """Build a task folder's image from its Dockerfile (the folder is the context, no network), tagged with the row's
    `image`. `FROM ${BASE_IMAGE}` gets rollgym's offline base image with the task's `base_packages`."""
    assert task.task_dir and task.image
    folder = Path(task.task_dir)
    dockerfile = (folder / "Dockerfile").read_text()
    files = {
        str(f.relative_to(folder)): f.read_bytes()
        for f in sorted(folder.rglob("*"))
        if f.is_file() and f.name != "Dockerfile"
    }
    if "BASE_IMAGE" in dockerfile:  # the recipe names its base outright, so another Docker host can build it too
        base = bootstrap_base_image(log=log, client=client, packages=tuple(task.base_packages))
        dockerfile = re.sub(r"^ARG BASE_IMAGE\b.*\n", "", dockerfile, count=1, flags=re.M)
        dockerfile = re.sub(r"^FROM \$\{?BASE_IMAGE\}?", f"FROM {base}", dockerfile, count=1, flags=re.M)
    log(f"[image] building {task.image} from {folder}")
    return build_image_from_dockerfile(dockerfile, task.image, files=files, log=log, client=client)
