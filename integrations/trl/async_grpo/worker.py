"""`rg.AsyncRolloutWorker`: rollgym as the rollout worker of TRL's `AsyncGRPOTrainer` (TRL 1.16,
`trl.experimental.async_grpo`), implementing its `RolloutWorkerProtocol` field for field.

    weights = rg.WeightsVersion()
    worker = rg.AsyncRolloutWorker("rollgym/Calculator-v0", "vllm:http://127.0.0.1:8000/v1#MODEL", num_generations=8,
                                   max_staleness=2, weights=weights)
    trainer = AsyncGRPOTrainer(model=MODEL, args=AsyncGRPOConfig(...), train_dataset=dataset, rollout_worker=worker,
                               weight_transfer=rg.VLLMServerWeightTransfer("http://127.0.0.1:8000", weights=weights))

The protocol (TRL's `RolloutWorkerProtocol`): `rollout_buffer` and `metrics_queue` (queues the trainer drains),
`start()` after the first weight sync, `stop()` when training ends (also after a crash: the trainer calls it in a
`finally`), `update_model_version(v)` after each sync, `check_health(stale_after_s)` whenever the trainer waited
`poll_interval_s` for a sample. The work runs in one thread of the trainer's process, on its own event loop
(`production.Producer`); its engine is the policy's, wrapped in a `VersionedEngine` that reads `weights`, so every
turn records the version that sampled it and no request is sampled by half-loaded weights.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
import traceback
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rollgym.engines.base import SamplingParams
from rollgym.engines.weights import VersionedEngine, WeightsVersion
from rollgym.errors import UsageError, WorkerDiedError
from rollgym.integrations.trl.async_grpo.config import AsyncRolloutConfig
from rollgym.integrations.trl.async_grpo.environments import Envs
from rollgym.integrations.trl.async_grpo.metrics import WorkerMetrics
from rollgym.integrations.trl.async_grpo.outbox import Outbox
from rollgym.integrations.trl.async_grpo.production import Producer
from rollgym.integrations.trl.async_grpo.scoring import RewardFunc
from rollgym.integrations.trl.rollout_func import env_reward
from rollgym.limits import Limits
from rollgym.rollouts.loop import check_sampling
from rollgym.rollouts.output import RolloutWriter
from rollgym.rollouts.policy import Policy, as_policy
from rollgym.rollouts.stopping import sigterm_raises_terminated
from rollgym.rollouts.tasks import load_tasks

log = logging.getLogger(__name__)
THREAD_NAME = "rollgym-async-rollout-worker"
#: How often the worker's loop says it is alive (what `check_health` reads).
HEARTBEAT_S = 1.0


class AsyncRolloutWorker:
    """Produces scored, token-exact `RolloutSample`s from `env` with `policy`, without end, for an asynchronous
    trainer. `env`: a registered id, a factory, or several by name (`{"calc": ..., "swe": ...}`, picked by each task's
    `environment` field); `tasks`: rows, a file, `"bundled"`, or None (the environment's own), used in turn;
    `reward_funcs`: TRL-style reward functions, summed (default: the environment's reward, `rg.env_reward`);
    `weights`: the version the weight transfer moves (shared with it); `job_runner`: runs each rollout instead of the
    loop (an agent CLI through the proxy: `rollgym.agents.jobs.AgentJobs`); `out`: a directory where every
    rollout is appended to `rollouts.jsonl` as it ends, its fate in `async_worker.fate` (pushed, dropped_stale,
    aborted_stale, stopped, ...), viewable with `rollgym view`. The rest (`num_generations`, `concurrency`,
    `max_staleness`, `stale`, `restart_stale`, `queue_maxsize`, `samples_per_version`) is `AsyncRolloutConfig`'s.
    `ray` (a `RayConfig`, an address, True) runs each group on Ray actors kept warm, as `rg.run_rollouts(ray=...)`
    does; the policy must then travel (a spec, or a picklable engine such as a vLLM server's), its actors' turns
    carry no version and a stale rollout is not restarted (the finished sample's `stale` rule still applies)."""

    def __init__(
        self,
        env: Any,
        policy: Policy | str,
        *,
        tasks: Any = None,
        reward_funcs: Sequence[RewardFunc] | None = None,
        limits: Limits | None = None,
        sampling: SamplingParams | None = None,
        weights: WeightsVersion | None = None,
        env_kwargs: dict | None = None,
        job_runner: Any = None,
        out: str | Path | None = None,
        ray: Any = None,
        config: AsyncRolloutConfig | None = None,
        **settings: Any,
    ) -> None:
        if config is not None and settings:
            raise UsageError("give the worker's settings either as config= or as keyword arguments, not both")
        self.config = config or AsyncRolloutConfig(**settings)
        self.sampling = check_sampling(sampling)
        self.limits, self.env_kwargs, self.job_runner, self.out = limits, env_kwargs, job_runner, out
        self.envs = Envs.build(env, env_kwargs)
        if tasks is None and not isinstance(env, str):
            raise UsageError(
                "pass tasks= (rows, a JSONL file, 'bundled'): only a registered environment id brings its own "
                "(with several environments, each task names its `environment`)"
            )
        self.tasks = load_tasks(env if isinstance(env, str) else "", tasks)
        self.reward_funcs = list(reward_funcs) if reward_funcs is not None else [env_reward]
        self._policy, self._owned = as_policy(policy)
        if not self._policy.token_exact:
            raise UsageError(f"{self._policy.name} is not token-exact: text-only engines cannot be used for training")
        self.weights = weights if weights is not None else WeightsVersion()
        self.executor = None
        if ray is not None and ray is not False:  # each group a call on warm actors (as make_rollout_func's steps)
            from rollgym.integrations.ray.config import as_ray_config
            from rollgym.integrations.ray.executor import RayExecutor

            ray_config = as_ray_config(ray)
            assert ray_config is not None  # given ray= (not None/False)
            self.executor = RayExecutor(ray_config.model_copy(update={"keep_actors": True}))
        self.rollout_buffer: queue.Queue = queue.Queue(maxsize=self.config.queue_maxsize)
        self.metrics_queue: queue.Queue = queue.Queue(maxsize=4096)
        self.metrics = WorkerMetrics(self.metrics_queue)
        self.model_version = 0
        #: the last samples pushed (bounded): what a test or a notebook checks
        self.pushed: deque = deque(maxlen=10_000)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._producer: Producer | None = None
        self._engine: VersionedEngine | None = None
        self._failure: BaseException | None = None
        self._failure_tb = ""
        self._heartbeat = time.time()
        self._started = threading.Event()
        self._signals = contextlib.ExitStack()

    def _versions_on_ray(self, base: Policy) -> tuple[Policy, Any]:
        """The policy the actors get (its engine wrapped to follow this worker's `weights`) and the board's handle."""
        from rollgym.integrations.ray.cluster import connect
        from rollgym.integrations.ray.versions import publish

        assert self.executor is not None
        config = self.executor.config
        ray = connect(config, config.actors or 1)
        wrapper, board = publish(self.weights, ray)
        return base.wrapped(wrapper), board

    # --- TRL's RolloutWorkerProtocol ------------------------------------------------------------
    def start(self) -> None:
        """Begin producing (TRL calls it once, after the first weight sync); returns once the loop runs."""
        if self._thread is not None:
            return
        self._heartbeat = time.time()
        self._signals.enter_context(sigterm_raises_terminated())  # SIGTERM unwinds training as Ctrl-C does
        self._thread = threading.Thread(target=self._main, name=THREAD_NAME, daemon=True)
        self._thread.start()
        self._started.wait(timeout=300)
        self.check_health(float("inf"))

    def stop(self) -> None:
        """Stop producing: every rollout is cancelled and releases its environment (its partial record written to
        `out`); returns once that is done (or after `stop_timeout_s`)."""
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None:
            return
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop ended on its own meanwhile
                loop.call_soon_threadsafe(stopping.set)
        thread.join(timeout=self.config.stop_timeout_s)
        if thread.is_alive():
            log.warning("the rollout worker did not stop within %.0f s", self.config.stop_timeout_s)
        self._thread = None
        self._signals.close()

    def update_model_version(self, model_version: int) -> None:
        """The trainer's policy version after a sync: staleness is measured against it (and running rollouts that
        fall too far behind are restarted). Before any sync (a trainer resumed from a checkpoint) it also numbers
        the weights."""
        self.model_version = int(model_version)
        if self.weights.state().syncs == 0:
            self.weights.set(self.model_version)
        loop, producer = self._loop, self._producer
        if loop is not None and producer is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(producer.enforce_staleness)

    def check_health(self, stale_after_s: float) -> None:
        """Raise `WorkerDiedError` (naming this worker, its thread and the cause) if it crashed, or its loop has not
        answered for `stale_after_s` seconds."""
        where = (
            f"rollgym's AsyncRolloutWorker (thread {THREAD_NAME!r}, env {sorted(map(str, self.envs.specs.values()))})"
        )
        if self._failure is not None:
            raise WorkerDiedError(
                f"{where} crashed: {type(self._failure).__name__}: {self._failure}\n{self._failure_tb}"
            ) from self._failure
        if self._thread is not None and not self._thread.is_alive():
            raise WorkerDiedError(f"{where} has ended although the trainer did not stop it")
        silent = time.time() - self._heartbeat
        if silent > stale_after_s:
            raise WorkerDiedError(f"{where} has not answered for {silent:.0f} s (over {stale_after_s:.0f} s): it hangs")

    # --- the thread -------------------------------------------------------------------------------
    def _main(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException as exc:  # noqa: BLE001 - reported to the trainer through check_health, never lost
            self._failure, self._failure_tb = exc, traceback.format_exc()
            log.error("the rollout worker crashed:\n%s", self._failure_tb)
        finally:
            self._started.set()

    async def _run(self) -> None:
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        base = self._policy
        self._engine = VersionedEngine(base.engine, self.weights)
        policy = Policy(engine=self._engine, tokenizer=base.tokenizer)
        writer = RolloutWriter(self.out, resume=True, retry_errors=False) if self.out is not None else None
        engine = self._engine
        outbox = Outbox(
            reward_funcs=self.reward_funcs,
            pad_id=base.pad_token_id,
            config=self.config,
            trainer_version=lambda: self.model_version,
            sink=self.rollout_buffer,
            metrics=self.metrics,
            busy_s=lambda: engine.busy.busy_s,
            writer=writer,
            on_pushed=self.pushed.append,
        )
        remote, board = base, None
        if self.executor is not None:  # actors stamp their turns with the version too (a board they follow)
            remote, board = await asyncio.to_thread(self._versions_on_ray, base)
        self._producer = Producer(
            envs=self.envs,
            tasks=self.tasks,
            policy=policy,
            limits=self.limits,
            sampling=self.sampling,
            env_kwargs=self.env_kwargs,
            job_runner=self.job_runner,
            config=self.config,
            trainer_version=lambda: self.model_version,
            outbox=outbox,
            executor=self.executor,
            remote_policy=remote,
        )
        beat = asyncio.create_task(self._beat())
        self._started.set()
        try:
            await self._producer.run(self._stopping)
        finally:
            beat.cancel()
            if board is not None:
                import ray

                ray.kill(board)
            if self.job_runner is not None:
                await self.job_runner.close()
            if writer is not None:
                writer.close()
            if self._owned:
                await base.aclose()

    async def _beat(self) -> None:
        while True:
            self._heartbeat = time.time()
            await asyncio.sleep(HEARTBEAT_S)
