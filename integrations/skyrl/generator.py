# pyright: reportMissingImports=false
# (SkyRL is installed where SkyRL runs this module, not in rollgym's own venv)
"""`RollgymGenerator`: rollgym's rollout loop as a SkyRL 0.4 generator (`GeneratorInterface`), the live hook.

SkyRL's trainer calls `generate(GeneratorInput) -> GeneratorOutput` once per step with every prompt repeated for its
GRPO group; each row runs one rollgym episode, sampling through SkyRL's own `inference_engine_client`
(`SkyRLClientEngine`), so SkyRL's weights and engines stay in charge. A row's `env_classes` entry is the rollgym
environment id and its `env_extras["task"]` the task (a dict or its JSON), as `dataset_rows` writes them. Wire it
by overriding `BasePPOExp.get_generator` (docs/trainers.md#skyrl). Whatever fails becomes that row's masked sample
with reward 0 and stop reason "error", never an exception: SkyRL needs one output per input row.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

from skyrl.train.generators.base import GeneratorInput, GeneratorInterface, GeneratorOutput

from rollgym.engines.base import SamplingParams
from rollgym.integrations.live_rows import append_rollout, row_task_dict
from rollgym.integrations.skyrl.engine import SkyRLClientEngine
from rollgym.integrations.skyrl.generator_output import generator_output
from rollgym.integrations.trainer_versions import require_trainer
from rollgym.integrations.training_samples import TrainingSample, training_samples
from rollgym.limits import Limits
from rollgym.rollouts.loop import rollout as run_one
from rollgym.rollouts.policy import Policy, certified_tokenizer
from rollgym.rollouts.records import Rollout

logger = logging.getLogger(__name__)


class RollgymGenerator(GeneratorInterface):
    """SkyRL's generator over rollgym environments."""

    def __init__(
        self,
        inference_engine_client: Any,
        tokenizer: Any,
        *,
        max_generate_length: int,
        limits: Limits | None = None,
        sampling: SamplingParams | None = None,
        chat_template: str | None = None,
        concurrency: int = 64,
        record_dir: str | None = None,
    ) -> None:
        require_trainer("skyrl")
        self.client, self.max_generate_length = inference_engine_client, max_generate_length
        self.limits = limits or Limits(max_tokens_per_turn=max_generate_length)
        self.sampling = sampling or SamplingParams()
        self.tokenizer = certified_tokenizer(tokenizer, chat_template=chat_template)
        self.concurrency = concurrency
        self.record_dir = Path(record_dir) if record_dir else None
        self.rollouts: list[Rollout | None] = []  # the last batch's episodes, whole (None where a row never ran)

    async def generate(self, input_batch: GeneratorInput) -> GeneratorOutput:
        rows = len(input_batch["prompts"])
        extras = input_batch.get("env_extras") or [{}] * rows
        sampling = skyrl_sampling(input_batch.get("sampling_params"), self.sampling)
        gate = asyncio.Semaphore(self.concurrency)

        async def one(i: int) -> tuple[TrainingSample, Rollout | None]:
            async with gate:
                return await self.run_row(input_batch["env_classes"][i], extras[i] or {}, sampling)

        results = await asyncio.gather(*(one(i) for i in range(rows)))
        self.rollouts = [r for _, r in results]
        hf = self.tokenizer.hf
        out = generator_output(
            [s for s, _ in results],
            max_response=self.max_generate_length,
            trajectory_ids=input_batch.get("trajectory_ids"),
            filler_id=hf.pad_token_id if hf.pad_token_id is not None else (hf.eos_token_id or 0),
        )
        return out  # type: ignore[return-value]  # GeneratorOutput's required keys, and its optional ones left out

    async def run_row(
        self, env_id: str, extras: dict[str, Any], sampling: SamplingParams
    ) -> tuple[TrainingSample, Rollout | None]:
        try:
            task = row_task(extras)
            engine = SkyRLClientEngine(self.client, session_id=uuid.uuid4().hex)
            policy = Policy(engine=engine, tokenizer=self.tokenizer)
            rollout = await run_one(env_id, policy, task, limits=self.limits, sampling=sampling)
        except Exception as exc:  # noqa: BLE001 - any failure is this row's, recorded on it: never the step's
            logger.warning("rollgym: a SkyRL row failed: %s: %s", type(exc).__name__, exc)
            return failed_sample(env_id, extras, exc), None
        self.record(rollout)
        return training_samples(rollout)[-1], rollout

    def record(self, rollout: Rollout) -> None:
        """Append the whole rollout to `record_dir/rollouts-<pid>.jsonl` for the viewer."""
        append_rollout(self.record_dir, rollout)


def row_task(extras: dict[str, Any]) -> dict:
    """The task of one SkyRL row (`env_extras["task"]`: a dict or its JSON)."""
    return row_task_dict(extras.get("task"), "env_extras['task']")


def failed_sample(env_id: str, extras: dict[str, Any], exc: BaseException) -> TrainingSample:
    """A row that trains nothing: no prompt or response ids it could stand on, reward 0, the reason kept."""
    return TrainingSample.failure(exc, env_id=env_id, task_id=str(extras.get("task_id", "")))


def skyrl_sampling(params: dict[str, Any] | None, default: SamplingParams) -> SamplingParams:
    """rollgym's sampling from SkyRL's (vLLM's meanings; top_k -1 is off, rollgym's 0); `default` where it names none."""
    if not params:
        return default
    top_k = int(params.get("top_k", -1) or -1)
    return SamplingParams(
        temperature=float(params.get("temperature", default.temperature)),
        top_p=float(params.get("top_p", default.top_p)),
        top_k=top_k if top_k > 0 else 0,
        seed=default.seed,
    )
