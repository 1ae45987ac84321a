"""SWE sandbox start cost on real task images, and grading time against the official harness (issue 27, item 6).

Time-to-ready of one rollout's sandbox (created, started, the task's commit pinned and its history hidden: what
`SWEEnv.setup` waits for), per task image:
- cold: the image pulled from the registry (`.ci/docker-up --registry`) onto a daemon that has none of its layers
  (the tests' second dockerd, `.ci/docker-up --second`), then one sandbox made ready there;
- warm: the image present, the pinning run in the new sandbox (each rollout prepares itself);
- prepared: `SandboxConfig.prepare` (envs/sandbox/prepared.py), rollgym's default: started from the host's prepared
  state, or, where pinning is quicker than saving it (`prepared.WORTH_S`), each sandbox pinning itself;
A GRPO group of 8 rollouts of one task, started at once: each pinning itself vs prepared (one pins and saves, 7 fork; or all pin when that is quicker).
Images: the two SWE-bench 5 task folders (Django, Go), and the Django one with a large repository on top (8,000
more files in a later commit and 200 commits of history, the shape of a real SWE-bench image) where pinning costs.

Grading: rollgym's `grade_patch` vs the harness's own `run_instance` (swebench 5.0.2; its containers without network
and with an init, as in the agreement tests) on the same rows and gold patches, rollgym's grading container held to
its default 1 CPU and given every core (the harness sets no CPU limit). Target: rollgym <= 1.1x.

This VM's speed drifts 2x: every comparison is measured side by side, interleaved, round after round, and reported
as a ratio (median over rounds). Run: `.venv/bin/python benchmarks/bench_swe_start.py [--rounds 3]` (from a git
checkout; it starts the test registry, `.ci/docker-up --registry`, and leaves it running).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import docker
from _common import setup

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.docker2 import DOCKER2, REGISTRY, start_docker2, start_registry
from support.harness import harness_resolved

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, start_sandbox
from rollgym.envs.sandbox import prepared as prep
from rollgym.envs.sandbox.images import pull_image
from rollgym.envs.swe.env import SCRUB_GIT
from rollgym.envs.swe.grading import grade_patch
from rollgym.envs.swe.images import ensure_task_image
from rollgym.envs.swe.task import TASKS_DIR, parse_task
from rollgym.envs.swe.task_folders import read_task_folders

LARGE = "rollgym/bench-swe-large:v1"
GROUP = 8


def large_image(client: docker.DockerClient, django_image: str) -> str:
    """The Django task image with a large repository: 200 commits of history and 8,000 more files in a later commit
    (what pinning the base commit must undo), built once, offline."""
    with contextlib.suppress(docker.errors.ImageNotFound):
        return client.images.get(LARGE).tags[0]
    script = (
        "cd /testbed && git checkout -q -b later "
        "&& for i in $(seq 1 200); do echo $i >> history.txt; git add history.txt; "
        "git -c user.name=b -c user.email=b@x commit -qm c$i; done "
        "&& mkdir -p big && for d in $(seq 1 80); do mkdir big/$d; for f in $(seq 1 100); do "
        "echo $d-$f > big/$d/f$f.py; done; done && git add -A && git -c user.name=b -c user.email=b@x commit -qm big "
        "&& chmod -R a+rwX /testbed"
    )
    dockerfile = f"FROM {django_image}\nRUN {script}\n"
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=LARGE, rm=True, network_mode="none")
    return LARGE


def config_for(task, image: str, prepare: bool) -> SandboxConfig:
    scrub = SCRUB_GIT.format(commit=shlex.quote(task.base_commit))
    extra = {"prepare": scrub} if prepare else {}
    return SandboxConfig(image=image, workdir="/testbed", task_id=f"bench-{task.instance_id}", **extra)


async def ready(task, image: str, mode: str) -> float:
    """Seconds until one sandbox is ready: `warm` pins in the sandbox itself; `prepared` starts from the prepared state (or pins itself when that is quicker)."""
    start = time.perf_counter()
    if mode == "warm":
        box = await start_sandbox(config_for(task, image, prepare=False))
        res = await box.aexec(SCRUB_GIT.format(commit=shlex.quote(task.base_commit)), timeout=300)
        assert res.exit_code == 0, res.output
    else:
        box = await start_sandbox(config_for(task, image, prepare=True))
    took = time.perf_counter() - start
    await box.aclose()
    return took


async def group(task, image: str, mode: str) -> float:
    """Seconds until all GROUP sandboxes of one task are ready, started at once (`prepared`: no prepared state yet)."""
    client = docker.from_env()
    config = config_for(task, image, prepare=True)
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.remove(prep.tag_of(prep.key_of(client, config)), force=True)
    scrub = SCRUB_GIT.format(commit=shlex.quote(task.base_commit))
    start = time.perf_counter()
    if mode == "warm":
        boxes = await asyncio.gather(*(start_sandbox(config_for(task, image, False)) for _ in range(GROUP)))
        results = await asyncio.gather(*(b.aexec(scrub, timeout=300) for b in boxes))
        assert all(r.exit_code == 0 for r in results)
    else:
        boxes = await asyncio.gather(*(start_sandbox(config) for _ in range(GROUP)))
        assert all(b.prepare_result is None or b.prepare_result.exit_code == 0 for b in boxes)
    took = time.perf_counter() - start
    await asyncio.gather(*(b.aclose() for b in boxes))
    return took


def cold(task, image: str) -> float | None:
    """Seconds to pull the image from the registry onto a daemon that has no layer of it (the tests' second dockerd,
    emptied first) and get one sandbox ready there; None when the registry does not serve it."""
    if not image.startswith(REGISTRY + "/"):
        return None
    client = docker.DockerClient(base_url=DOCKER2)
    for old in client.images.list(all=True):  # every image, rollgym's base too (`start_docker2` copies it back)
        with contextlib.suppress(docker.errors.ImageNotFound, docker.errors.APIError):
            client.images.remove(old.id, force=True)
    assert not client.images.list(all=True), "the second dockerd still holds images"
    start = time.perf_counter()
    pull_image(image, log=lambda _m: None, client=client)
    with DockerSandbox(config_for(task, image, prepare=False), client=client) as box:
        assert box.exec(SCRUB_GIT.format(commit=shlex.quote(task.base_commit)), timeout=300).exit_code == 0
    took = time.perf_counter() - start
    client.close()
    return took


def saved(task, image: str) -> str:
    """Whether the host keeps a prepared image for the task (else pinning was quicker than saving it)."""
    client = docker.from_env()
    return "yes" if prep.find(client, prep.key_of(client, config_for(task, image, prepare=True))) else "no"


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    setup()
    start_registry()  # `.ci/docker-up --registry`: the task folders' images served on 127.0.0.1:5000 (left running)
    start_docker2()  # `.ci/docker-up --second`: a daemon the cold starts empty of the task images (left running)
    client = docker.from_env()
    rows = read_task_folders(TASKS_DIR / "swebench")
    tasks = {}
    for row in rows:
        task = parse_task(row)
        tasks[task.instance_id] = (task, ensure_task_image(task, log=lambda _m: None), row)
    django, django_image, _ = tasks["rollgym__django-textutils-1"]
    workloads = [(tid, t, img) for tid, (t, img, _) in tasks.items()]
    workloads.append(("django, large repository", django, large_image(client, django_image)))

    print(f"time-to-ready per rollout, median of {args.rounds} rounds (seconds; ratio = prepared / warm)")
    for name, task, image in workloads:
        cold_s = []
        for _ in range(args.rounds):
            took = cold(task, image)
            if took is None:
                break
            cold_s.append(took)
        asyncio.run(group(task, image, "prepared"))  # leaves the host's prepared state in place
        warm, forked, ratios = [], [], []
        for _ in range(args.rounds):
            w = asyncio.run(ready(task, image, "warm"))
            f = asyncio.run(ready(task, image, "prepared"))
            warm.append(w)
            forked.append(f)
            ratios.append(f / w)
        g_warm, g_fork, g_ratio = [], [], []
        for _ in range(args.rounds):
            gw = asyncio.run(group(task, image, "warm"))
            gf = asyncio.run(group(task, image, "prepared"))
            g_warm.append(gw)
            g_fork.append(gf)
            g_ratio.append(gf / gw)
        print(
            f"{name:30} cold(pull incl.) {median(cold_s):6.2f}  warm {median(warm):5.2f}  prepared {median(forked):5.2f}"
            f"  ratio {median(ratios):4.2f}x | group of {GROUP}: each pins {median(g_warm):5.2f}"
            f"  prepared {median(g_fork):5.2f}  ratio {median(g_ratio):4.2f}x  (saved: {saved(task, image)})"
        )

    start_docker2()  # gives the second dockerd rollgym's base images back
    print(f"\ngrading the gold patch: rollgym vs the harness's run_instance, median of {args.rounds} rounds")
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        for tid, (task, _image, row) in tasks.items():
            ours, unlimited, theirs, ratios, ratios_unlimited = [], [], [], [], []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                result = grade_patch(task, row["patch"])  # its default: the grading container held to 1 CPU
                t1 = time.perf_counter()
                verdict = harness_resolved(row, row["patch"], Path(tmp))  # the harness sets no CPU limit
                t2 = time.perf_counter()
                again = grade_patch(task, row["patch"], cpus=float(os.cpu_count() or 1))
                t3 = time.perf_counter()
                assert result.resolved and verdict and again.resolved, (result.status, result.error, verdict)
                ours.append(t1 - t0)
                theirs.append(t2 - t1)
                unlimited.append(t3 - t2)
                ratios.append((t1 - t0) / (t2 - t1))
                ratios_unlimited.append((t3 - t2) / (t2 - t1))
            print(
                f"{tid:30} harness {median(theirs):5.2f} s | rollgym, 1 CPU {median(ours):5.2f} s  ratio "
                f"{median(ratios):4.2f}x | rollgym, {os.cpu_count()} CPUs {median(unlimited):5.2f} s  ratio "
                f"{median(ratios_unlimited):4.2f}x"
            )


if __name__ == "__main__":
    main()
