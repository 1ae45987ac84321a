"""What sandbox leases cost (issue 32, item 6). N real sandboxes held by this process: first with no lease (the
baseline), then with a short lease renewed over the runner's socket, then without runners (renewed through the
daemon's kill API); over the same window each time, the CPU of this process (the owner), of the runtime's daemon
processes (dockerd, containerd and its shims; or podman and conmon) and of the containers, and how many heartbeats
went out. The cost per heartbeat (minus the baseline) is then scaled to 1,000 sandboxes at the default 60 s lease:
6 renewals per lease over the runner (100 heartbeats per second), 3 through the daemon (50 per second).

    .venv/bin/python benchmarks/bench_leases.py [--sandboxes 48] [--lease 2] [--seconds 20] [--runtime docker podman]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from _common import podman, setup

from rollgym.envs.sandbox import DEFAULT_HOST, SandboxConfig, list_containers, start_sandbox
from rollgym.envs.sandbox.lease import DAEMON_RENEWALS_PER_LEASE, DEFAULT_LEASE_S, KEEPER, RENEWALS_PER_LEASE

RUN_ID = "bench-leases"
DAEMONS = {
    "docker": ("dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2"),
    "podman": ("podman", "conmon"),
}
TICK = os.sysconf("SC_CLK_TCK")
# heartbeats per second for 1,000 sandboxes at the default lease, by the path they take
AT_SCALE = {
    path: 1000 * n / DEFAULT_LEASE_S
    for path, n in (("runner", RENEWALS_PER_LEASE), ("daemon", DAEMON_RENEWALS_PER_LEASE))
}


def _cpu_by_process() -> dict[int, tuple[str, float, str]]:
    """Every process: (name, CPU seconds so far, its cgroup lines)."""
    seen = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cgroups = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            continue
        name, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        seen[int(pid)] = (name, (int(fields[11]) + int(fields[12])) / TICK, cgroups)
    return seen


def _split(snapshot: dict[int, tuple[str, float, str]], runtime: str, ids: list[str]) -> tuple[float, float]:
    """CPU seconds of the runtime's daemon processes, and of the processes in the given containers."""
    daemon = sum(cpu for name, cpu, _ in snapshot.values() if name in DAEMONS[runtime])
    inside = sum(cpu for _, cpu, cgroups in snapshot.values() if any(i in cgroups for i in ids))
    return daemon, inside


async def window(cfg: SandboxConfig, n: int, seconds: float, runtime: str) -> dict[str, float]:
    """Hold `n` sandboxes of `cfg` for `seconds`: CPU seconds of owner, daemon and containers, and heartbeats sent."""
    made = await asyncio.gather(*(start_sandbox(cfg.model_copy(update={"task_id": f"lease-{k}"})) for k in range(n)))
    ids = [sb.container.id or "" for sb in made]
    await asyncio.sleep(2)  # creation's own work settles
    before, owner0, beats0 = _cpu_by_process(), time.process_time(), KEEPER.renewals
    await asyncio.sleep(seconds)
    after, owner1, beats1 = _cpu_by_process(), time.process_time(), KEEPER.renewals
    await asyncio.gather(*(sb.aclose() for sb in made))
    (d0, c0), (d1, c1) = _split(before, runtime, ids), _split(after, runtime, ids)
    return {"owner": owner1 - owner0, "daemon": d1 - d0, "containers": c1 - c0, "heartbeats": beats1 - beats0}


async def bench(address: str, runtime: str, image: str, n: int, lease: float, seconds: float) -> list[str]:
    base = SandboxConfig(image=image, run_id=RUN_ID, docker_host=address)
    quiet = await window(base.model_copy(update={"lease_s": 0}), n, seconds, runtime)
    rows = []
    for path, scale, update in (
        ("runner socket", AT_SCALE["runner"], {}),
        ("daemon kill API", AT_SCALE["daemon"], {"use_runner": False}),
    ):
        busy = await window(base.model_copy(update={"lease_s": lease, **update}), n, seconds, runtime)
        beats = max(busy["heartbeats"], 1)
        per = {k: max(0.0, busy[k] - quiet[k]) / beats * 1e6 for k in ("owner", "daemon", "containers")}  # µs
        rows.append(
            f"| {runtime} | {path} | {beats / seconds:.0f} | {per['owner']:.0f} | {per['daemon']:.0f} | "
            f"{per['containers']:.0f} | {per['owner'] * scale / 1e4:.2f} % | {per['daemon'] * scale / 1e4:.2f} % "
            f"| {per['containers'] * scale / 1e4:.2f} % |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandboxes", type=int, default=48)
    parser.add_argument("--lease", type=float, default=2.0, help="the lease while measuring (short: many heartbeats)")
    parser.add_argument("--seconds", type=float, default=20.0, help="each measured window")
    parser.add_argument("--runtime", nargs="+", default=["docker", "podman"], choices=["docker", "podman"])
    args = parser.parse_args()
    image = setup()
    print(
        f"{args.sandboxes} sandboxes, lease {args.lease:g} s ({RENEWALS_PER_LEASE} renewals per lease), "
        f"{args.seconds:g} s windows; CPU per heartbeat beyond the no-lease baseline, in µs; at scale: 1,000 "
        f"sandboxes at the default {DEFAULT_LEASE_S:g} s lease = {AT_SCALE['runner']:.0f} heartbeats/s over the runner, "
        f"{AT_SCALE['daemon']:.0f} through the daemon ({DAEMON_RENEWALS_PER_LEASE} per lease), in % of one core"
    )
    print(
        "| runtime | renewed over | heartbeats/s measured | owner µs | daemon µs | containers µs "
        "| owner at scale | daemon at scale | containers at scale |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for runtime in args.runtime:
        address = DEFAULT_HOST if runtime == "docker" else podman(image)
        for row in asyncio.run(bench(address, runtime, image, args.sandboxes, args.lease, args.seconds)):
            print(row, flush=True)
        assert not list_containers(run_id=RUN_ID, docker_host=address)


if __name__ == "__main__":
    main()
