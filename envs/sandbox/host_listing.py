"""`rollgym sandbox list` / `prune` over every configured Docker host: one host that does not answer is
reported and the others are still listed or pruned; `prune --run DIR` ends what a run's record lists as not ended."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import docker.errors
import requests.exceptions
from pydantic import BaseModel, Field

from rollgym.envs.sandbox import prepared
from rollgym.envs.sandbox.daemon import client_for, configured_hosts
from rollgym.envs.sandbox.errors import SandboxError
from rollgym.envs.sandbox.keepalive import last_renewal
from rollgym.envs.sandbox.lifecycle import ContainerRow, list_sandboxes, prune
from rollgym.envs.sandbox.record import RecordFile, ended_event, read_record, record_path


def list_hosts(
    run_id: str | None = None, docker_host: str | list[str] | None = None, lease_ages: bool = False
) -> tuple[list[ContainerRow], dict[str, str]]:
    """The rollgym containers of every host that answered, and why the others did not; with `lease_ages`, each
    running one's time since its lease was last renewed (one log read per container, 16 at a time)."""
    rows: list[ContainerRow] = []
    failed: dict[str, str] = {}
    for host in configured_hosts(docker_host):
        try:
            rows += list_sandboxes(run_id, docker_host=host)
        except SandboxError as exc:
            failed[host] = str(exc)
    if lease_ages:
        leased = [r for r in rows if r.lease_s and r.state == "running"]
        with ThreadPoolExecutor(16) as pool:
            renewed = list(pool.map(lambda r: last_renewal(client_for(r.host).api, r.id), leased))
        now = time.time()
        for row, at in zip(leased, renewed, strict=True):
            row.lease_age_s = None if at is None else max(0.0, now - at)
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


class RunPrune(BaseModel):
    """What `prune_run` did with the sandboxes a run's record lists as not ended."""

    removed: list[str] = Field(default_factory=list)  # were still there: removed now
    gone: list[str] = Field(default_factory=list)  # already gone (their lease or TTL ended them, or someone else)
    failed: dict[str, str] = Field(default_factory=dict)  # name -> why it could not be checked (its host is down)
    ended_before: int = 0  # the record already says ended


def prune_run(folder: str) -> RunPrune:
    """Remove the sandboxes a run's record (`sandboxes.jsonl` in its output folder) lists as not ended, on the host
    each was started on, and append how each ended to the record: afterwards it accounts for every one."""
    entries = read_record(folder)
    sink = RecordFile(record_path(folder))
    outcome = RunPrune(ended_before=sum(e.ended is not None for e in entries))
    for entry in (e for e in entries if e.ended is None):
        try:
            client_for(entry.host).api.remove_container(entry.id or entry.name, force=True)
            outcome.removed.append(entry.name)
            sink(ended_event(entry, "pruned"))
        except docker.errors.NotFound:
            outcome.gone.append(entry.name)
            sink(ended_event(entry, "gone"))
        except (docker.errors.DockerException, requests.exceptions.RequestException, SandboxError) as exc:
            if "already in progress" in str(exc):
                outcome.gone.append(entry.name)
                sink(ended_event(entry, "gone"))
            else:
                outcome.failed[entry.name] = f"{entry.host}: {type(exc).__name__}: {exc}"
    return outcome


def _lease_cell(row: ContainerRow) -> str:
    if not row.lease_s:
        return "none"
    age = "?" if row.lease_age_s is None else f"{row.lease_age_s:.0f}s"
    return f"{age}/{row.lease_s:g}s" if row.state == "running" else f"-/{row.lease_s:g}s"


def table(rows: list[ContainerRow]) -> str:
    """Aligned columns NAME, HOST, STATE, OWNER (machine:pid), LEASE (age of its last renewal / the lease), RUN, TASK."""
    lines = [("NAME", "HOST", "STATE", "OWNER", "LEASE", "RUN", "TASK")] + [
        (r.name, r.host, r.state, r.owner, _lease_cell(r), r.run_id, r.task_id) for r in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line[:-1], widths, strict=True)) + "  " + line[-1] for line in lines
    )
