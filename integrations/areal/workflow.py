# pyright: reportMissingImports=false
# (areal is installed where AReaL runs this module, not in rollgym's own venv)
"""`RollgymWorkflow`: rollgym's rollout loop as an AReaL 1.0 `RolloutWorkflow`, the live hook.

AReaL's `WorkflowExecutor` awaits `arun_episode(engine, data)` once per dataset row (areal/infra/workflow_executor.py:
1037-1060); every turn samples through the `engine` it hands over (`AReaLEngine`, its `agenerate`), so AReaL's weights,
versions and staleness control stay in charge, and the episode comes back as the `[1, L]` tensors AReaL's own
multi-turn workflow returns (`episode_tensors`, the offline converter's code): `input_ids`, `loss_mask`, `logprobs`,
`versions`, `attention_mask`, `rewards`. Give it to AReaL by its path:

    trainer.train(workflow="rollgym.integrations.areal.workflow.RollgymWorkflow",
                  workflow_kwargs={"gconfig": config.gconfig, "tokenizer": config.tokenizer_path})

A row names its environment and task (`env_id`, `task`: `dataset_rows`). A failed rollout (an unknown environment, a
task the environment refuses, a dead server) is `None`, AReaL's way to reject a trajectory; it never raises.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

from areal.api.workflow_api import RolloutWorkflow

from rollgym.engines.base import SamplingParams
from rollgym.errors import UsageError
from rollgym.integrations.areal.engine import AReaLEngine
from rollgym.integrations.areal.episode_tensors import episode_tensors
from rollgym.integrations.live_rows import append_rollout, row_task_dict
from rollgym.integrations.trainer_versions import require_trainer
from rollgym.integrations.training_samples import training_samples
from rollgym.limits import Limits
from rollgym.rollouts.loop import rollout as run_one
from rollgym.rollouts.policy import Policy, certified_tokenizer
from rollgym.rollouts.records import Rollout

logger = logging.getLogger(__name__)


class RollgymWorkflow(RolloutWorkflow):
    """AReaL's rollout workflow over rollgym environments; `gconfig` is AReaL's `GenerationHyperparameters`,
    `tokenizer` its tokenizer or its path."""

    _tokenizers: ClassVar[dict[Any, Any]] = {}

    def __init__(
        self,
        gconfig: Any,
        tokenizer: Any,
        *,
        env: str | None = None,
        max_turns: int | None = None,
        max_tokens_per_turn: int | None = None,
        timeout_s: float | None = None,
        chat_template: str | None = None,
        record_dir: str | None = None,
    ) -> None:
        require_trainer("areal")
        self.tokenizer, self.default_env, self.chat_template = tokenizer, env, chat_template
        self.gconfig = gconfig.new_with_stop_and_pad_token_ids(_hf(self.chat_tokenizer()))  # as AReaL's workflows do
        self.limits = Limits(
            max_turns=max_turns or Limits().max_turns,
            max_tokens_per_turn=max_tokens_per_turn or int(gconfig.max_new_tokens),
            max_model_len=int(gconfig.max_tokens) if getattr(gconfig, "max_tokens", None) else None,
            timeout_s=timeout_s if timeout_s is not None else Limits().timeout_s,
        )
        self.record_dir = Path(record_dir) if record_dir else None
        self.rollout: Rollout | None = None  # the last episode, whole

    def chat_tokenizer(self) -> Any:
        key = self.tokenizer if isinstance(self.tokenizer, str) else id(self.tokenizer)
        if key not in self._tokenizers:
            self._tokenizers[key] = certified_tokenizer(self.tokenizer, chat_template=self.chat_template)
        return self._tokenizers[key]

    async def arun_episode(self, engine: Any, data: dict[str, Any]) -> dict[str, Any] | None:
        try:
            env_id, task = row_task(data, self.default_env)
            tok = self.chat_tokenizer()
            policy = Policy(engine=AReaLEngine(engine, self.gconfig, tokenizer=_hf(tok)), tokenizer=tok)
            rollout = await run_one(env_id, policy, task, limits=self.limits, sampling=areal_sampling(self.gconfig))
        except Exception as exc:  # noqa: BLE001 - any failure is this trajectory's: rejected, never the batch's
            logger.warning("rollgym: an AReaL episode failed and is rejected: %s: %s", type(exc).__name__, exc)
            return None
        self.rollout = rollout
        self.record(rollout)
        sample = training_samples(rollout)[-1]
        if sample.failed:
            logger.warning("rollgym: rollout %s failed and is rejected: %s", rollout.id, sample.error)
        return episode_tensors(sample)

    def record(self, rollout: Rollout) -> None:
        """Append the whole rollout to `record_dir/rollouts-<pid>.jsonl`, for `rollgym view`."""
        append_rollout(self.record_dir, rollout)


def row_task(data: dict[str, Any], default_env: str | None) -> tuple[str, dict]:
    """The environment id and the task of one AReaL row (`env_id`, `task` as a dict or its JSON)."""
    if not isinstance(data, dict) or "task" not in data:
        raise UsageError("a rollgym row needs its task in `task` (see rollgym.integrations.areal.dataset_rows)")
    env_id = data.get("env_id") or default_env
    if not env_id:
        raise UsageError("no environment for this row: set its env_id, or the workflow's `env`")
    return str(env_id), row_task_dict(data["task"], "the row's task")


def areal_sampling(gconfig: Any) -> SamplingParams:
    """rollgym's record of AReaL's sampling (greedy is temperature 0; AReaL's huge default top_k is off)."""
    top_k = int(getattr(gconfig, "top_k", 0) or 0)
    return SamplingParams(
        temperature=0.0 if gconfig.greedy else float(gconfig.temperature),
        top_p=float(gconfig.top_p),
        top_k=top_k if 0 < top_k < 1_000_000 else 0,
    )


def _hf(tokenizer: Any) -> Any:
    """The Hugging Face tokenizer inside a rollgym `ChatTokenizer` (AReaL's requests carry one)."""
    return getattr(tokenizer, "hf", tokenizer)
