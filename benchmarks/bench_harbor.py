"""Harbor task start cost and verification overhead (issue 40, item 7), on the test task folders.

Time to a ready GRPO group of 8 (`rollgym/Harbor-v0` reset done in 8 environments at once) for
tests/fixtures/harbor/write-greeting: cold (a copy whose content hash and build cache are new, the base image kept;
built once by `HarborEnv.prepare_tasks`, as a batch does, then the group), warm (image present), and the next group on the warm
image (Harbor has no prepared state beyond the cached image). Verification: `verify` on a solved sandbox vs the same
steps by hand (`docker exec` to clear, `docker cp tests/`, `docker exec ... bash /tests/test.sh`, read the reward).

This VM's speed drifts 2x: the modes are interleaved round after round and compared as ratios of medians.
Run: `.venv/bin/python benchmarks/bench_harbor.py [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import docker
from _common import setup

import rollgym as rg
from rollgym.envs.harbor.env import HarborEnv
from rollgym.envs.harbor.folders import parse_harbor_task
from rollgym.envs.harbor.images import ensure_harbor_image, harbor_image_name
from rollgym.envs.harbor.rewards import REWARD_JSON, REWARD_TXT, VERIFIER_DIR
from rollgym.envs.harbor.sandbox_config import image_workdir, task_sandbox
from rollgym.envs.harbor.verifier import verify
from rollgym.envs.sandbox import SandboxConfig, start_sandbox

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
PREBUILT = "rollgym-tests/harbor-prebuilt:v1"  # partial-credit's `docker_image`, built as its tests build it
GROUP = 8


def row_of(name: str) -> dict:
    (row,) = rg.load_tasks("rollgym/Harbor-v0", str(FIXTURES / "harbor" / name))
    return row


async def group(row: dict) -> float:
    """Seconds until GROUP environments have each reset on `row`, started at once (closed afterwards)."""
    envs = [rg.make("rollgym/Harbor-v0").unwrapped for _ in range(GROUP)]
    start = time.perf_counter()
    try:
        await asyncio.gather(*(env.areset(options={"task": row}) for env in envs))
        return time.perf_counter() - start
    finally:
        await asyncio.gather(*(env.aclose() for env in envs))


def cold(client: docker.DockerClient) -> tuple[float, float]:
    """write-greeting copied with a fresh label after its FROM (so no image or build cache of its steps exists; the
    base is kept), built once and a group made ready, the image removed after: (build, total) seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "write-greeting"
        shutil.copytree(FIXTURES / "harbor" / "write-greeting", folder)
        dockerfile = folder / "environment" / "Dockerfile"
        lines = dockerfile.read_text().splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("FROM ")) + 1
        lines.insert(at, f"LABEL rollgym.bench={uuid.uuid4().hex}")
        dockerfile.write_text("\n".join(lines) + "\n")
        (row,) = rg.load_tasks("rollgym/Harbor-v0", str(folder))
        start = time.perf_counter()
        assert not HarborEnv.prepare_tasks([row], log=lambda _m: None)
        built = time.perf_counter() - start
        asyncio.run(group(row))
        took = time.perf_counter() - start
        client.images.remove(harbor_image_name(parse_harbor_task(row)), force=True)
    return built, took


def by_hand(container: str, task, user: str | None) -> tuple[float, float]:
    """Harbor's verification steps with the docker CLI (clear, copy tests/, run test.sh, read the reward): seconds
    for all, and for the test.sh `docker exec` alone."""
    who = ["-u", user] if user else []
    env = [a for k, v in task.config.verifier.env.items() for a in ("-e", f"{k}={v}")]
    start = time.perf_counter()
    clear = f"rm -rf -- {REWARD_TXT} {REWARD_JSON} /tests && mkdir -p {VERIFIER_DIR} /tests"
    subprocess.run(["docker", "exec", *who, container, "sh", "-c", clear], check=True)
    subprocess.run(["docker", "cp", f"{task.tests_dir}/.", f"{container}:/tests"], check=True)
    run = f"bash /tests/test.sh > {VERIFIER_DIR}/test-stdout.txt 2>&1"
    t0 = time.perf_counter()
    subprocess.run(["docker", "exec", *who, *env, container, "sh", "-c", run], check=True)
    only = time.perf_counter() - t0
    read = f"cat {REWARD_JSON} 2>/dev/null || cat {REWARD_TXT}"
    out = subprocess.run(["docker", "exec", *who, container, "sh", "-c", read], check=True, capture_output=True)
    took = time.perf_counter() - start
    assert out.stdout.strip(), "test.sh wrote no reward"
    return took, only


def verification(name: str, reps: int, client: docker.DockerClient) -> list[float]:
    """On one solved sandbox, medians: `verify`, the same by hand, test.sh's exec alone (seconds), verify / by hand."""
    task = parse_harbor_task(row_of(name))
    image = ensure_harbor_image(task, lambda _m: None, client)
    config = SandboxConfig(image=image, workdir=image_workdir(image, client), **task_sandbox(task))
    box = asyncio.run(start_sandbox(config))
    try:
        assert box.exec((task.task_dir / "solution" / "solve.sh").read_text(), timeout=60).ok
        ours, theirs, only, ratios = [], [], [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            grade = verify(box, task)
            t1 = time.perf_counter()
            hand, run = by_hand(box.container.id or "", task, config.user)
            assert grade.status == "graded" and grade.reward == 1.0, grade
            ours.append(t1 - t0)
            theirs.append(hand)
            only.append(run)
            ratios.append((t1 - t0) / hand)
    finally:
        box.close()
    return [statistics.median(x) for x in (ours, theirs, only, ratios)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 round and 5 verifications (else 3 and 20)")
    args = ap.parse_args()
    rounds, reps = (1, 5) if args.quick else (3, 20)
    base = setup()
    client = docker.from_env()
    client.images.get(base).tag("rollgym/base", "latest")  # what the fixtures' Dockerfiles start FROM
    client.images.build(path=str(FIXTURES / "harbor-images" / "prebuilt"), tag=PREBUILT, rm=True, network_mode="none")
    row = row_of("write-greeting")

    build_s, cold_s, warm_s, next_s = [], [], [], []
    for _ in range(rounds):
        built, total = cold(client)
        build_s.append(built)
        cold_s.append(total)
        warm_s.append(asyncio.run(group(row)))
        next_s.append(asyncio.run(group(row)))
    b, c, w, n = (statistics.median(x) for x in (build_s, cold_s, warm_s, next_s))
    print(f"write-greeting, group of {GROUP} reset at once, median of {rounds} rounds (seconds)")
    print(f"  cold {c:5.2f} (build {b:5.2f})  warm {w:5.2f}  next group, warm {n:5.2f}  cold/warm {c / w:4.2f}x")

    print(f"\nverification of a solved sandbox, median of {reps}: rollgym `verify` vs by hand (docker exec/cp)")
    for name in ("write-greeting", "partial-credit"):
        ours, theirs, only, ratio = (x * 1000 for x in verification(name, reps, client))
        print(
            f"  {name:16} verify {ours:5.0f} ms  by hand {theirs:5.0f} ms (test.sh exec alone {only:5.0f} ms)"
            f"  ratio {ratio / 1000:4.2f}x"
        )


if __name__ == "__main__":
    main()
