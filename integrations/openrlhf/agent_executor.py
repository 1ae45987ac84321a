# pyright: reportMissingImports=false
# (openrlhf is installed where OpenRLHF runs this module, not in rollgym's own venv)
"""`RollgymAgentExecutor`: rollgym's rollout loop as an OpenRLHF 0.11 agent executor (`AgentExecutorBase`), the
live hook.

OpenRLHF loads the file given by `--train.agent_func_path`, takes its class named `AgentExecutor` and builds it
with no arguments (openrlhf/trainer/ray/vllm_engine.py:19-30); each rollout actor then awaits
`execute(prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine)` once per sample. Every turn samples
through OpenRLHF's own `llm_engine` (`OpenRLHFEngine`), so its weights and scheduling stay in charge, and the episode
comes back as the executor's dict with rollgym's exact ids (`executor_output`). This file defines `AgentExecutor`,
so it can be given as it is; options are class attributes (a subclass in your own file) or, as defaults, the
environment variables ROLLGYM_ENV, ROLLGYM_MAX_TURNS, ROLLGYM_MAX_TOKENS_PER_TURN, ROLLGYM_RECORD_DIR.

A row's label names its environment and task (`dataset_rows`). Whatever fails (an unknown environment, a task the
environment refuses, a dead engine) becomes a sample with no action range and reward 0, never an exception: OpenRLHF
gathers a prompt's samples without `return_exceptions` and `ray.get`s them, so one raise fails the step.
"""

from __future__ import annotations

import logging
import os
import traceback
from typing import Any, ClassVar

from openrlhf.utils.agent import AgentExecutorBase

from rollgym.engines.base import SamplingParams
from rollgym.integrations.live_rows import append_rollout
from rollgym.integrations.openrlhf.dataset import label_task
from rollgym.integrations.openrlhf.engine import OpenRLHFEngine
from rollgym.integrations.openrlhf.executor_output import executor_output
from rollgym.integrations.trainer_versions import require_trainer
from rollgym.integrations.training_samples import TrainingSample, training_samples
from rollgym.limits import Limits
from rollgym.rollouts.loop import rollout as run_one
from rollgym.rollouts.policy import Policy, certified_tokenizer
from rollgym.rollouts.records import Rollout

logger = logging.getLogger(__name__)


class RollgymAgentExecutor(AgentExecutorBase):
    """OpenRLHF's agent executor over a rollgym environment."""

    env: ClassVar[str | None] = os.environ.get("ROLLGYM_ENV") or None
    max_turns: ClassVar[int] = int(os.environ.get("ROLLGYM_MAX_TURNS") or Limits().max_turns)
    max_tokens_per_turn: ClassVar[int | None] = int(os.environ.get("ROLLGYM_MAX_TOKENS_PER_TURN") or 0) or None
    timeout_s: ClassVar[float | None] = Limits().timeout_s
    chat_template: ClassVar[str | None] = None
    record_dir: ClassVar[str | None] = os.environ.get("ROLLGYM_RECORD_DIR") or None
    _tokenizers: ClassVar[dict[int, Any]] = {}  # certified once per OpenRLHF tokenizer, shared by every sample

    def __init__(self) -> None:
        require_trainer("openrlhf")
        self.rollout: Rollout | None = None  # the last episode, whole

    def chat_tokenizer(self, hf_tokenizer: Any) -> Any:
        key = id(hf_tokenizer)
        if key not in self._tokenizers:
            self._tokenizers[key] = certified_tokenizer(hf_tokenizer, chat_template=self.chat_template)
        return self._tokenizers[key]

    def limits(self, sampling_params: Any, max_length: int) -> Limits:
        """rollgym's budgets: OpenRLHF's `max_len` is the context (prompt, sampled and environment ids together),
        each turn asks for at most what is left of it, as OpenRLHF's own multi-turn executor does."""
        per_turn = self.max_tokens_per_turn or getattr(sampling_params, "max_tokens", None) or max_length
        return Limits(
            max_turns=self.max_turns, max_tokens_per_turn=per_turn, max_model_len=max_length, timeout_s=self.timeout_s
        )

    async def execute(
        self, prompt, label, sampling_params, max_length: int, hf_tokenizer, llm_engine, images=None
    ) -> dict[str, Any]:
        try:
            env_id, task = label_task(label, self.env)
            engine = OpenRLHFEngine(llm_engine, sampling_params, max_model_len=max_length)
            policy = Policy(engine=engine, tokenizer=self.chat_tokenizer(hf_tokenizer))
            rollout = await run_one(
                env_id,
                policy,
                task,
                limits=self.limits(sampling_params, max_length),
                sampling=openrlhf_sampling(sampling_params),
            )
        except Exception as exc:  # noqa: BLE001 - any failure is this sample's, recorded on it: never the step's
            logger.warning("rollgym: an OpenRLHF sample failed: %s: %s", type(exc).__name__, exc)
            return failed_output(prompt, label, hf_tokenizer, exc, max_length)
        self.rollout = rollout
        self.record(rollout)
        sample = training_samples(rollout)[-1]
        if rollout.error is not None:
            logger.warning("rollgym: rollout %s failed: %s", rollout.id, sample.error)
        if not sample.prompt_ids:  # failed before its prompt was rendered: OpenRLHF's prompt keeps its shapes defined
            sample = sample.model_copy(update={"prompt_ids": prompt_ids_of(prompt, hf_tokenizer, max_length)})
        return executor_output(sample, prompt=prompt, label=label, max_length=max_length)

    def record(self, rollout: Rollout) -> None:
        """Append the whole rollout to `record_dir/rollouts-<pid>.jsonl`, for `rollgym view`."""
        append_rollout(self.record_dir, rollout)


def prompt_ids_of(prompt: Any, hf_tokenizer: Any, max_length: int) -> list[int]:
    """OpenRLHF's prompt text as its tokenizer encodes it (as OpenRLHF's own executors do), its last
    `max_length - 1` ids, and at least one id (an Experience needs one)."""
    try:
        ids = list(hf_tokenizer(text=str(prompt), add_special_tokens=False)["input_ids"])
    except Exception:  # noqa: BLE001 - an untokenizable prompt still needs one id for OpenRLHF's shapes
        ids = []
    return ids[-max(1, max_length - 1) :] or [getattr(hf_tokenizer, "eos_token_id", None) or 0]


def failed_output(prompt: Any, label: Any, hf_tokenizer: Any, exc: BaseException, max_length: int) -> dict[str, Any]:
    """A sample that trains nothing: OpenRLHF's prompt text as tokens (at least one id), no action, reward 0."""
    ids = prompt_ids_of(prompt, hf_tokenizer, max_length)
    sample = TrainingSample.failure(exc, prompt_ids=ids)
    out = executor_output(sample, prompt=prompt, label=label, max_length=max_length)
    out["rollgym"]["traceback"] = "".join(traceback.format_exception(exc))[-4000:]
    return out


def openrlhf_sampling(params: Any) -> SamplingParams:
    """rollgym's sampling from OpenRLHF's vLLM params (top_k -1 is off, rollgym's 0)."""
    top_k = int(getattr(params, "top_k", -1) or -1)
    return SamplingParams(
        temperature=float(getattr(params, "temperature", 1.0)),
        top_p=float(getattr(params, "top_p", 1.0)),
        top_k=top_k if top_k > 0 else 0,
    )


#: the name OpenRLHF's loader looks for (`--train.agent_func_path` may name this file as it is)
AgentExecutor = RollgymAgentExecutor
