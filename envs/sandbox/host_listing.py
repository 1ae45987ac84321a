"""`rollgym sandbox list` / `prune` over every configured Docker host: one host that does not answer is
reported and the others are still listed or pruned."""

from __future__ import annotations

from rollgym.envs.sandbox import prepared
from rollgym.envs.sandbox.daemon import client_for, configured_hosts
from rollgym.envs.sandbox.errors import SandboxError
from rollgym.envs.sandbox.lifecycle import ContainerRow, list_sandboxes, prune


def list_hosts(
    run_id: str | None = None, docker_host: str | list[str] | None = None
) -> tuple[list[ContainerRow], dict[str, str]]:
    """The rollgym containers of every host that answered, and why the others did not."""
    rows: list[ContainerRow] = []
    failed: dict[str, str] = {}
    for host in configured_hosts(docker_host):
        try:
            rows += list_sandboxes(run_id, docker_host=host)
        except SandboxError as exc:
            failed[host] = str(exc)
    return rows, failed


def prune_hosts(
    all_containers: bool = False,
    run_id: str | None = None,
    docker_host: str | list[str] | None = None,
    prepared_images: bool = False,
) -> tuple[list[str], dict[str, str]]:
    """`prune` on every host (and, with `prepared_images`, the prepared images no container uses: prepared.py); the
    names removed, and why the hosts that failed did."""
    removed: list[str] = []
    failed: dict[str, str] = {}
    for host in configured_hosts(docker_host):
        try:
            removed += prune(all_containers, run_id, docker_host=host)
            if prepared_images:
                removed += prepared.remove_all(client_for(host))
        except Exception as exc:  # noqa: BLE001 - any failure on one host: report it, go on with the next
            failed[host] = f"{type(exc).__name__}: {exc}"
    return removed, failed


def table(rows: list[ContainerRow]) -> str:
    """Aligned columns NAME, HOST, STATE, RUN, TASK."""
    lines = [("NAME", "HOST", "STATE", "RUN", "TASK")] + [(r.name, r.host, r.state, r.run_id, r.task_id) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line[:4], widths, strict=False)) + "  " + line[4] for line in lines
    )
