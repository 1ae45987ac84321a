"""What becomes of a finished GRPO group: scored, its trainable samples pushed to the trainer together, and every
rollout's fate recorded (`async_worker.fate`, and `out` when the worker writes one) and counted.

Not pushed: infrastructure failures (`engine`, `sandbox`, `internal`: not the policy's doing), rollouts with no
sampled token (TRL's loss needs one per sample), unscored ones (every reward function returned None), and with
`max_staleness` and `stale="drop"` a sample whose oldest token is too many versions behind the trainer's.
"""

from __future__ import annotations

import asyncio
import queue
import time
from collections.abc import Callable, Sequence
from typing import Any

from rollgym.integrations.trl.async_grpo.config import AsyncRolloutConfig
from rollgym.integrations.trl.async_grpo.metrics import WorkerMetrics
from rollgym.integrations.trl.async_grpo.samples import group_advantages, to_sample, trainable
from rollgym.integrations.trl.async_grpo.scoring import RewardFunc, score_group
from rollgym.rollouts.output import RolloutWriter, is_infra_failure
from rollgym.rollouts.records import AsyncWorkerRecord, Rollout
from rollgym.rollouts.versions import changed_inside_a_turn, oldest_version, versions_of


class Outbox:
    """Scores finished groups and hands their samples to the trainer's queue (`sink`)."""

    def __init__(
        self,
        *,
        reward_funcs: Sequence[RewardFunc],
        pad_id: int,
        config: AsyncRolloutConfig,
        trainer_version: Callable[[], int],
        sink: queue.Queue,
        metrics: WorkerMetrics,
        busy_s: Callable[[], float],
        writer: RolloutWriter | None,
        on_pushed: Callable[[Any], None],
    ) -> None:
        self.reward_funcs, self.pad_id, self.config, self.trainer_version = (
            list(reward_funcs),
            pad_id,
            config,
            trainer_version,
        )
        self.sink, self.metrics, self.busy_s, self.writer, self.on_pushed = sink, metrics, busy_s, writer, on_pushed

    async def push(self, gid: int, task: dict, rollouts: list[Rollout], in_flight: int = 0) -> int:
        """Score the group and push its trainable samples together; record every rollout's fate; how many went."""
        for rollout in rollouts:
            if rollout.error is not None:
                self.metrics.count(f"errors/{rollout.error.category}")
            if len(versions_of(rollout)) > 1:
                self.metrics.count("multi_version_rollouts")
            if changed_inside_a_turn(rollout):
                self.metrics.count("version_changed_inside_a_turn")
        kept = [r for r in rollouts if not is_infra_failure(r) and trainable(r)]
        kept_ids = {id(r) for r in kept}
        for rollout in rollouts:
            self.metrics.finished()
            if id(rollout) not in kept_ids:
                self.record(rollout, "infra_failure" if is_infra_failure(rollout) else "untrainable")
                self.metrics.count("untrainable")
        if not kept:
            self.metrics.push(self.busy_s(), in_flight)
            return 0
        rewards, per_func = await score_group(kept, task, self.reward_funcs, self.pad_id)
        advantages = group_advantages(rewards)
        current = self.trainer_version()
        samples = []
        for i, (rollout, reward, advantage) in enumerate(zip(kept, rewards, advantages, strict=True)):
            oldest = oldest_version(rollout)
            record = rollout.async_worker or AsyncWorkerRecord()
            rollout.async_worker = record
            version = (record.started_version or 0) if oldest is None else oldest
            staleness = current - version
            record.model_version, record.staleness, record.reward = version, staleness, reward
            if reward is None:
                self.record(rollout, "unscored")
                self.metrics.count("unscored")
                continue
            bound = self.config.max_staleness
            if bound is not None and staleness > bound:
                self.metrics.count(f"{self.config.stale}_stale")
                if self.config.stale == "drop":
                    self.record(rollout, "dropped_stale")
                    continue
            metrics = {"reward": reward, **{f"rewards/{k}": v[i] for k, v in per_func.items() if v[i] is not None}}
            samples.append(
                (rollout, to_sample(rollout, advantage=advantage, group_id=gid, model_version=version, metrics=metrics))
            )
            self.metrics.pushed(staleness, reward)
        for rollout, sample in samples:
            await self._put(sample)
            self.record(rollout, "pushed")
            self.on_pushed(sample)
        self.metrics.push(self.busy_s(), in_flight)
        return len(samples)

    async def _put(self, sample: Any) -> None:
        """Hand one sample to the trainer; a full queue (`queue_maxsize`) holds generation back, not the loop."""
        waited = None
        while True:
            try:
                self.sink.put_nowait(sample)
                break
            except queue.Full:
                waited = waited or time.perf_counter()
                await asyncio.sleep(0.05)
        if waited is not None:
            self.metrics.count("backpressure_waits")

    def record(self, rollout: Rollout, fate: str) -> None:
        """Note what became of `rollout` on it, and append it to `out`."""
        if rollout.async_worker is None:
            rollout.async_worker = AsyncWorkerRecord()
        rollout.async_worker.fate = fate
        if self.writer is not None:
            self.writer.write(rollout)
