"""Rollouts in worker processes: one event loop per core, for when rollgym's own Python work
(rendering, tokenizing, parsing, tool dispatch) limits throughput rather than the engine.

The parent hands out jobs on demand: each worker holds its share of `concurrency` running rollouts
plus a few queued (an eighth as many, at least one), and is topped up in one message once its queue
is used up, so no worker idles while another works through a long tail. Each worker builds its own engine (from a spec string, or by unpickling
the engine object) and environments, runs each job exactly as the in-process loop does, and sends
every finished `Rollout` back as JSON. A worker that dies turns the rollouts it held into errored
rollouts (the batch goes on; jobs not yet handed out go to the others). Cancelling stops every worker,
and each releases its environments before it exits; workers ignore Ctrl-C so that the parent decides
the order of shutdown.

Worker processes are rollgym's own, so each freezes the heap it starts with (`gc.freeze()`): garbage
collections then scan the run's objects, not the imported libraries. As with any `multiprocessing`
program, a script that starts workers must guard its entry point with `if __name__ == "__main__":`.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import pickle
import signal
import traceback
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable

from .batch import Job, env_factory_for, run_job
from .engines.base import SamplingParams
from .limits import RolloutLimits
from .records import Rollout, RolloutError

#: How long a stopping worker may take to release its environments before it is killed.
STOP_GRACE_S = 120.0


def prefetch_for(slots: int) -> int:
    """Jobs a worker holds beyond its running ones, so it never waits for the parent between two rollouts."""
    return max(1, slots // 8)


DONE = b"D"  # worker -> parent: finished (normally or after a stop)
_ROLLOUT, _FAILED = b"R", b"E"  # worker -> parent: a finished rollout; the worker could not start


@dataclass
class WorkerSpec:
    """Everything a worker needs besides its jobs, pickled once and sent at start."""

    env: Any
    env_kwargs: dict | None
    engine: Any
    tokenizer: Any
    slots: int
    limits: RolloutLimits | None
    sampling: SamplingParams
    group_prefix: str


def _context():
    """forkserver: workers fork from a clean server that already imported rollgym (fast, thread-safe)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["rollgym.rollouts.workers"])
    return ctx


# --- worker side ---------------------------------------------------------------------------------
def _worker_main(results: Connection, commands: Connection, blob: bytes) -> None:
    """Process entry point."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        spec: WorkerSpec = pickle.loads(blob)
    except BaseException:
        results.send_bytes(_FAILED + traceback.format_exc().encode())
        raise
    asyncio.run(_serve(results, commands, spec))


def _encode(ti: int, si: int, rollout: Rollout) -> bytes:
    """`R` + `"ti si\\n"` + the rollout's JSON: the header is read without parsing the record twice."""
    return b"%s%d %d\n%s" % (_ROLLOUT, ti, si, rollout.model_dump_json().encode())


def _decode(raw: bytes) -> tuple[int, int, Rollout]:
    header, _, body = raw[1:].partition(b"\n")
    ti, si = map(int, header.split())
    return ti, si, Rollout.model_validate_json(body)


async def _serve(results: Connection, commands: Connection, spec: WorkerSpec) -> None:
    """Run jobs as they arrive, `spec.slots` at once, until the parent says `end` (or `stop`, or dies)."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    inbox: asyncio.Queue[Job | None] = asyncio.Queue()
    try:
        factory, env_id = env_factory_for(spec.env, **(spec.env_kwargs or {}))
        engine = spec.engine
        if isinstance(engine, str):
            from .engines import make_engine

            engine = make_engine(engine)
    except Exception:
        results.send_bytes(_FAILED + traceback.format_exc().encode())
        results.send_bytes(DONE)
        return
    gc.collect()
    gc.freeze()

    def on_command() -> None:  # jobs into the inbox; `stop`, or the parent's death (EOF), cancels everything
        try:
            while True:
                kind, *rest = pickle.loads(commands.recv_bytes())
                if kind == "stop":
                    break
                for job in rest[0] if kind == "jobs" else [None]:
                    inbox.put_nowait(job)
                if not commands.poll():
                    return
        except (EOFError, OSError):
            pass
        loop.remove_reader(commands.fileno())
        main.cancel()

    loop.add_reader(commands.fileno(), on_command)

    async def slot() -> None:
        while (job := await inbox.get()) is not None:
            rollout = await run_job(factory, env_id, job, engine, spec.tokenizer, limits=spec.limits,
                                    sampling=spec.sampling, group_prefix=spec.group_prefix)
            results.send_bytes(_encode(job[0], job[2], rollout))
        inbox.put_nowait(None)  # every slot sees the end

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(spec.slots):
                group.create_task(slot())
    except asyncio.CancelledError:
        pass  # every rollout has released its environment; finished ones were already sent
    finally:
        loop.remove_reader(commands.fileno())
        try:
            if engine is not spec.engine:
                await engine.aclose()
        except asyncio.CancelledError:  # a `stop` that came while closing: we are closing anyway
            pass
        finally:
            results.send_bytes(DONE)


# --- parent side ---------------------------------------------------------------------------------
def _lost(job: Job, env_id: str, group_prefix: str, why: str) -> Rollout:
    ti, tid, si, _ = job
    return Rollout(env_id=env_id, task_id=tid, group_id=f"{group_prefix}{tid}", sample_index=si, stop_reason="error",
                   error=RolloutError(category="internal", type="WorkerDied", message=why))


class _Dispatcher:
    """Which worker holds which jobs; hands out the rest on demand, `slots + prefetch` at most per worker."""

    def __init__(self, jobs: list[Job], commands: list[Connection], slots: int):
        self.pending: deque[Job] = deque(jobs)
        self.commands, self.slots, self.depth = commands, slots, slots + prefetch_for(slots)
        self.held: list[dict[tuple[int, int], Job]] = [{} for _ in commands]
        self.open = [True] * len(commands)  # may still be sent jobs
        self.ended = [False] * len(commands)

    def _send(self, i: int, message: tuple) -> bool:
        try:
            self.commands[i].send_bytes(pickle.dumps(message))
            return True
        except (OSError, ValueError):  # the worker is gone; its EOF will arrive on the results pipe
            self.open[i] = False
            return False

    def fill(self, first: bool = False) -> None:
        """Top up every open worker whose queue is used up (`first`: deal jobs out round robin); tell
        each `end` once nothing is left."""
        n = len(self.commands)
        chunks: list[list[Job]] = [[] for _ in range(n)]
        if first:
            for k in range(min(len(self.pending), n * self.depth)):
                chunks[k % n].append(self.pending.popleft())
        else:
            for i in range(n):
                if self.open[i] and len(self.held[i]) <= self.slots:
                    for _ in range(min(len(self.pending), self.depth - len(self.held[i]))):
                        chunks[i].append(self.pending.popleft())
        for i, chunk in enumerate(chunks):
            if not chunk:
                continue
            if self.open[i] and self._send(i, ("jobs", chunk)):
                self.held[i].update(((job[0], job[2]), job) for job in chunk)
            else:
                self.pending.extendleft(reversed(chunk))
        if not self.pending:
            for i in range(len(self.commands)):
                if self.open[i] and not self.ended[i]:
                    self.ended[i] = self._send(i, ("end",))

    def finished(self, i: int, ti: int, si: int) -> None:
        self.held[i].pop((ti, si), None)

    def close(self, i: int) -> list[Job]:
        """Worker `i` is gone: what it held and never reported."""
        self.open[i] = False
        lost, self.held[i] = list(self.held[i].values()), {}
        return lost

    def stop_all(self) -> None:
        for i in range(len(self.commands)):
            if self.open[i]:
                self._send(i, ("stop",))
            self.open[i] = False


async def run_jobs_in_workers(env: Any, jobs: list[Job], engine: Any, tokenizer: Any, *, workers: int, concurrency: int,
                              limits: RolloutLimits | None, sampling: SamplingParams,
                              on_result: Callable[[int, int, Rollout], None], group_prefix: str = "",
                              env_kwargs: dict | None = None) -> None:
    """Run `jobs` in `workers` processes (`concurrency` shared out) and report every result as it arrives."""
    if not jobs:
        return
    n = min(workers, len(jobs))
    slots = max(1, -(-concurrency // n))
    blob = pickle.dumps(WorkerSpec(env, env_kwargs, engine, tokenizer, slots, limits, sampling, group_prefix))
    env_id = env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
    ctx = _context()
    procs, readers, commands = [], [], []
    try:
        for _ in range(n):
            res_r, res_w = ctx.Pipe(duplex=False)
            cmd_r, cmd_w = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker_main, args=(res_w, cmd_r, blob), name="rollgym-worker", daemon=True)
            proc.start()
            res_w.close()
            cmd_r.close()
            procs.append(proc)
            readers.append(res_r)
            commands.append(cmd_w)
    except BaseException:
        _Dispatcher([], commands, 0).stop_all()
        _reap(procs, 5.0)
        raise

    dispatch = _Dispatcher(jobs, commands, slots)
    inbox = _Inbox(readers)
    failures: dict[int, str] = {}
    live, stopping = n, False

    async def consume() -> None:
        nonlocal live
        while live:
            i, raw = await inbox.get()
            if raw is None or raw == DONE:  # the worker finished, or died (its pipe closed without DONE)
                live -= 1
                lost = dispatch.close(i)
                if lost and not stopping:
                    await asyncio.to_thread(procs[i].join, 5.0)
                    why = failures.get(i) or f"the worker process exited (code {procs[i].exitcode}) before finishing this rollout"
                    for job in lost:
                        on_result(job[0], job[2], _lost(job, env_id, group_prefix, why))
                if not stopping:
                    dispatch.fill()  # its unsent jobs still go to the others
                    if not any(dispatch.open) and dispatch.pending:  # nobody is left to run them
                        for job in dispatch.pending:
                            on_result(job[0], job[2], _lost(job, env_id, group_prefix, "no worker process is left to run it"))
                        dispatch.pending.clear()
                continue
            if raw[:1] == _FAILED:
                failures[i] = "the worker process could not start: " + raw[1:].decode(errors="replace").strip()[-2000:]
                continue
            ti, si, rollout = _decode(raw)
            dispatch.finished(i, ti, si)
            on_result(ti, si, rollout)
            if not stopping:
                dispatch.fill()

    dispatch.fill(first=True)
    try:
        await consume()
    except asyncio.CancelledError:
        stopping = True
        dispatch.stop_all()
        try:  # keep what the workers finish while they release their environments
            await asyncio.shield(asyncio.wait_for(consume(), STOP_GRACE_S))
        except (TimeoutError, asyncio.CancelledError):
            pass
        raise
    finally:
        dispatch.stop_all()
        inbox.close()
        await asyncio.shield(asyncio.to_thread(_reap, procs, STOP_GRACE_S))


class _Inbox:
    """Worker messages as `(worker index, message)`, read by the event loop itself when a pipe is readable
    (no thread, no wake-up per message); the message is `None` when a worker's pipe closes."""

    def __init__(self, readers: list[Connection]):
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue = asyncio.Queue()
        self._readers = dict(enumerate(readers))
        for i, conn in self._readers.items():
            self._loop.add_reader(conn.fileno(), self._drain, i)

    def _drain(self, i: int) -> None:
        conn = self._readers.get(i)
        while conn is not None:
            try:
                raw = conn.recv_bytes()
            except (EOFError, OSError):
                raw = None
            self._queue.put_nowait((i, raw))
            if raw is None or raw == DONE:
                self._forget(i)
                return
            if not conn.poll():
                return

    def _forget(self, i: int) -> None:
        conn = self._readers.pop(i, None)
        if conn is not None:
            self._loop.remove_reader(conn.fileno())
            conn.close()

    async def get(self) -> tuple[int, bytes | None]:
        return await self._queue.get()

    def close(self) -> None:
        for i in list(self._readers):
            self._forget(i)


def _reap(procs: list, grace_s: float) -> None:
    """Wait for workers to exit; kill the ones that outlive the grace period."""
    for proc in procs:
        proc.join(timeout=grace_s)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5.0)
