"""Rollouts in worker processes: one event loop per core, for when rollgym's own Python work
(rendering, tokenizing, parsing, tool dispatch) limits throughput rather than the engine.

The parent hands out jobs on demand: each worker runs its share of `concurrency` rollouts and holds a
few more queued (an eighth as many, at least one), and is topped up in one message once its queue is
used up, so no worker idles while another works through a long tail. Each worker builds its own engine
(from a spec string, or by unpickling the engine object) and environments, runs each job exactly as
the in-process loop does, and sends every finished `Rollout` back pickled (see `_encode`).

Failures: a worker that cannot start (a bad engine spec, a missing model) stops the whole run with its
traceback (`WorkerStartError`); rollouts are never written as errors for it, so a resumed run redoes them. A worker that dies later turns only the
rollouts it held into errored rollouts (`internal`/`WorkerDied`); jobs it had not been given go to the
others. A result that cannot be decoded is one errored rollout. Cancelling (or SIGTERM to a worker)
stops every worker, and each releases its environments before it exits; workers ignore Ctrl-C so that
the parent decides the order of shutdown. The parent's event loop never blocks on a pipe: commands go
out through a writer thread, results are read as they arrive.

Worker processes are rollgym's own, so each tunes its garbage collector (`own_process_gc`). As with
any `multiprocessing` program, a script that starts workers must guard its entry point with
`if __name__ == "__main__":`.
"""

from __future__ import annotations

import asyncio
import gc
import io
import multiprocessing
import pickle
import queue
import signal
import threading
import time
import traceback
import types
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable

from rollgym.errors import WorkerError

from .batch import Job, env_factory_for, run_job
from .engines.base import SamplingParams
from .limits import Limits
from .records import ErrorRecord, Rollout

#: How long stopping workers may take, together, to release their environments before they are killed.
STOP_GRACE_S = 120.0

DONE = b"D"  # worker -> parent: finished (normally or after a stop)
_ROLLOUT, _ROLLOUT_JSON, _FAILED = b"R", b"J", b"E"  # worker -> parent: a finished rollout (pickled, JSON); could not start


class WorkerStartError(WorkerError):
    """A worker process could not start (its engine or environment could not be built); the run stops."""


@dataclass
class WorkerSpec:
    """Everything a worker needs besides its jobs, pickled once and sent at start."""

    env: Any
    env_kwargs: dict | None
    policy: Any  # a Policy: pickled as its spec (each worker builds its own engine) or its engine object
    slots: int
    limits: Limits | None
    sampling: SamplingParams
    group_prefix: str


def own_process_gc() -> None:
    """Garbage-collection settings for a process rollgym owns (a worker, the `generate` CLI): freeze the
    heap built so far (collections then scan the run's objects, not the imported libraries), and collect
    the youngest generation every 20,000 allocations rather than 700 (a rollout allocates thousands of
    short-lived containers; collecting that often costs a few percent of a turn)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 10, 10)


def prefetch_for(slots: int) -> int:
    """Jobs a worker holds beyond its running ones, so it never waits for the parent between two rollouts."""
    return max(1, slots // 8)


def split_slots(concurrency: int, workers: int) -> list[int]:
    """`concurrency` rollouts shared out over at most `workers` processes, each running at least one."""
    n = max(1, min(workers, concurrency))
    return [concurrency // n + (1 if i < concurrency % n else 0) for i in range(n)]


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


class _RecordPickler(pickle.Pickler):
    """Pickles rollgym's records and built-in values only: anything else (an environment's own object,
    a class defined in the main script) raises, so that the parent can always load what it receives."""

    def reducer_override(self, obj: Any) -> Any:
        named = obj if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)) else type(obj)
        module = getattr(named, "__module__", None) or ""
        if module in ("builtins", "copyreg") or module.startswith("rollgym."):
            return NotImplemented  # pickle it the usual way
        raise pickle.PicklingError(f"{module}.{getattr(named, '__qualname__', '?')} is not sent pickled")


def _encode(ti: int, si: int, rollout: Rollout) -> bytes:
    """`R` + `"ti si\\n"` + the pickled rollout (about half the cost of a JSON round trip).

    A rollout holding any other object than rollgym's records and built-in values goes as its JSON
    line (`J`) instead, where such values become text, as they do in `rollouts.jsonl`.
    """
    buffer = io.BytesIO()
    try:
        _RecordPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(rollout)
    except Exception:
        return b"%s%d %d\n%s" % (_ROLLOUT_JSON, ti, si, rollout.to_json().encode())
    return b"%s%d %d\n%s" % (_ROLLOUT, ti, si, buffer.getvalue())


def _decode(raw: bytes) -> tuple[int, int, Rollout]:
    header, _, body = raw[1:].partition(b"\n")
    ti, si = map(int, header.split())
    rollout = pickle.loads(body) if raw[:1] == _ROLLOUT else Rollout.model_validate_json(body)
    if not isinstance(rollout, Rollout):
        raise TypeError(f"expected a Rollout, got {type(rollout).__name__}")
    return ti, si, rollout


async def _serve(results: Connection, commands: Connection, spec: WorkerSpec) -> None:
    """Run jobs as they arrive, `spec.slots` at once, until the parent says `end` (or `stop`, or dies)."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    inbox: asyncio.Queue[Job | None] = asyncio.Queue()
    try:
        factory, env_id = env_factory_for(spec.env, **(spec.env_kwargs or {}))
        policy = spec.policy
        policy.engine  # noqa: B018 - build it now, so a bad spec fails the start, not every rollout
    except Exception:
        results.send_bytes(_FAILED + traceback.format_exc().encode())
        results.send_bytes(DONE)
        return
    own_process_gc()
    loop.add_signal_handler(signal.SIGTERM, main.cancel)  # terminate() = stop: environments are released

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
            rollout = await run_job(factory, env_id, job, policy, limits=spec.limits,
                                    sampling=spec.sampling, group_prefix=spec.group_prefix)
            try:
                message = _encode(job[0], job[2], rollout)
            except Exception as exc:  # one odd record must not take the worker's other rollouts down
                message = _encode(job[0], job[2], _errored(job, env_id, spec.group_prefix, "ResultNotSerializable",
                                                           f"the rollout could not be serialised: {exc}"[:2000]))
            results.send_bytes(message)
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
            await policy.aclose()
        except asyncio.CancelledError:  # a `stop` that came while closing: we are closing anyway
            pass
        finally:
            results.send_bytes(DONE)


# --- parent side ---------------------------------------------------------------------------------
def _errored(job: Job, env_id: str, group_prefix: str, kind: str, why: str) -> Rollout:
    ti, tid, si, _ = job
    return Rollout(env_id=env_id, task_id=tid, group_id=f"{group_prefix}{tid}", sample_index=si, stop_reason="error",
                   error=ErrorRecord(category="internal", type=kind, message=why))


class _Commands:
    """Parent -> workers messages, written by one thread so that the event loop never blocks on a full pipe
    (a worker busy writing a large result reads its commands only afterwards)."""

    def __init__(self, pipes: list[Connection]):
        self._pipes = pipes
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write, name="rollgym-worker-commands", daemon=True)
        self._thread.start()

    def send(self, i: int, message: tuple) -> None:
        self._queue.put((i, pickle.dumps(message)))

    def _write(self) -> None:
        while (item := self._queue.get()) is not None:
            i, data = item
            try:
                self._pipes[i].send_bytes(data)
            except (OSError, ValueError):  # the worker is gone; the parent learns it from its results pipe
                pass

    def close(self) -> None:
        """Send what is queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join(timeout=10.0)


class _Dispatcher:
    """Which worker holds which jobs; hands out the rest on demand, `slots + prefetch` at most per worker."""

    def __init__(self, jobs: list[Job], commands: _Commands, slots: list[int]):
        self.pending: deque[Job] = deque(jobs)
        self.commands, self.slots = commands, slots
        self.depth = [s + prefetch_for(s) for s in slots]
        self.held: list[dict[tuple[int, int], Job]] = [{} for _ in slots]
        self.open = [True] * len(slots)  # may still be sent jobs
        self.ended = [False] * len(slots)

    def fill(self, first: bool = False) -> None:
        """Top up every open worker whose queue is used up (`first`: deal jobs out round robin); tell
        each `end` once nothing is left."""
        n = len(self.slots)
        chunks: list[list[Job]] = [[] for _ in range(n)]
        if first:
            room = list(self.depth)
            while self.pending and any(room):
                for i in range(n):
                    if self.pending and room[i]:
                        chunks[i].append(self.pending.popleft())
                        room[i] -= 1
        else:
            for i in range(n):
                if self.open[i] and len(self.held[i]) <= self.slots[i]:
                    for _ in range(min(len(self.pending), self.depth[i] - len(self.held[i]))):
                        chunks[i].append(self.pending.popleft())
        for i, chunk in enumerate(chunks):
            if chunk:
                self.commands.send(i, ("jobs", chunk))
                self.held[i].update(((job[0], job[2]), job) for job in chunk)
        if not self.pending:
            for i in range(n):
                if self.open[i] and not self.ended[i]:
                    self.commands.send(i, ("end",))
                    self.ended[i] = True

    def finished(self, i: int, ti: int, si: int) -> None:
        self.held[i].pop((ti, si), None)

    def close(self, i: int) -> list[Job]:
        """Worker `i` is gone: what it held and never reported."""
        self.open[i] = False
        lost, self.held[i] = list(self.held[i].values()), {}
        return lost

    def stop_all(self) -> None:
        for i in range(len(self.slots)):
            if self.open[i]:
                self.commands.send(i, ("stop",))
            self.open[i] = False


async def run_jobs_in_workers(env: Any, jobs: list[Job], policy: Any, *, workers: int, concurrency: int,
                              limits: Limits | None, sampling: SamplingParams,
                              on_result: Callable[[int, int, Rollout], None], group_prefix: str = "",
                              env_kwargs: dict | None = None) -> None:
    """Run `jobs` in up to `workers` processes, at most `concurrency` rollouts at once in all; report every
    result as it arrives. Raises `WorkerStartError` when a worker cannot start."""
    if not jobs:
        return
    slots = split_slots(concurrency, min(workers, len(jobs)))
    # Pickled once per distinct share (at most two); this fails here, before any process starts, for lambdas.
    specs = {s: pickle.dumps(WorkerSpec(env, env_kwargs, policy, s, limits, sampling, group_prefix))
             for s in set(slots)}
    env_id = env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
    ctx = _context()
    procs, readers, pipes = [], [], []
    try:
        for s in slots:
            res_r, res_w = ctx.Pipe(duplex=False)
            cmd_r, cmd_w = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker_main, args=(res_w, cmd_r, specs[s]), name="rollgym-worker", daemon=True)
            proc.start()
            res_w.close()
            cmd_r.close()
            procs.append(proc)
            readers.append(res_r)
            pipes.append(cmd_w)
    except BaseException:
        for proc in procs:
            proc.terminate()
        _reap(procs, 10.0)
        raise

    commands = _Commands(pipes)
    dispatch = _Dispatcher(jobs, commands, slots)
    inbox = _Inbox(readers, [p.sentinel for p in procs])
    live, stopping = len(procs), False

    def lose(job: Job, kind: str, why: str) -> None:
        on_result(job[0], job[2], _errored(job, env_id, group_prefix, kind, why))

    async def consume() -> None:
        nonlocal live, stopping
        while live:
            i, raw = await inbox.get()
            if raw is None or raw == DONE:  # the worker finished, or died (its pipe closed or it exited)
                live -= 1
                lost = dispatch.close(i)
                if lost and not stopping:
                    await asyncio.to_thread(procs[i].join, 5.0)
                    why = f"the worker process exited (code {procs[i].exitcode}) before finishing this rollout"
                    for job in lost:
                        lose(job, "WorkerDied", why)
                if not stopping:
                    dispatch.fill()  # its unsent jobs still go to the others
                    if not any(dispatch.open) and dispatch.pending:  # nobody is left to run them
                        for job in dispatch.pending:
                            lose(job, "WorkerDied", "no worker process is left to run it")
                        dispatch.pending.clear()
                continue
            if raw[:1] == _FAILED:
                stopping = True
                dispatch.stop_all()
                raise WorkerStartError("a worker process could not start:\n" + raw[1:].decode(errors="replace").strip())
            try:
                ti, si, rollout = _decode(raw)
            except Exception as exc:  # one unreadable result is one errored rollout, not a crashed batch
                ti, si = map(int, raw[1:].partition(b"\n")[0].split())
                rollout = _errored(dispatch.held[i].get((ti, si)) or (ti, "", si, {}), env_id, group_prefix,
                                   "ResultUndecodable", f"the worker's result could not be read back: {exc}"[:2000])
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
        except (TimeoutError, asyncio.CancelledError, WorkerStartError):
            pass
        raise
    finally:
        dispatch.stop_all()
        inbox.close()
        await asyncio.shield(asyncio.to_thread(_shutdown, commands, procs))


class _Inbox:
    """Worker messages as `(worker index, message)`, read by the event loop itself when a pipe is readable
    (no thread, no wake-up per message). The message is `None` when a worker is gone: its pipe closed,
    or its process exited (seen on its sentinel, in case something else still holds the pipe open)."""

    def __init__(self, readers: list[Connection], sentinels: list[int]):
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue = asyncio.Queue()
        self._readers = dict(enumerate(readers))
        self._sentinels = dict(enumerate(sentinels))
        for i, conn in self._readers.items():
            self._loop.add_reader(conn.fileno(), self._drain, i)
            self._loop.add_reader(self._sentinels[i], self._exited, i)

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

    def _exited(self, i: int) -> None:
        """The process is gone: read what it sent, then report it gone if it never said DONE."""
        conn = self._readers.get(i)
        if conn is not None and conn.poll():
            self._drain(i)
        if i in self._readers:
            self._queue.put_nowait((i, None))
            self._forget(i)

    def _forget(self, i: int) -> None:
        conn = self._readers.pop(i, None)
        if conn is not None:
            self._loop.remove_reader(conn.fileno())
            self._loop.remove_reader(self._sentinels[i])
            conn.close()

    async def get(self) -> tuple[int, bytes | None]:
        return await self._queue.get()

    def close(self) -> None:
        for i in list(self._readers):
            self._forget(i)


def _shutdown(commands: _Commands, procs: list) -> None:
    """Deliver the last commands, then wait for the workers to exit."""
    commands.close()
    _reap(procs, STOP_GRACE_S)


def _reap(procs: list, grace_s: float) -> None:
    """Wait for workers to exit, `grace_s` in all; kill the ones still alive after it."""
    deadline = time.monotonic() + grace_s
    for proc in procs:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5.0)
