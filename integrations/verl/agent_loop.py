# pyright: reportMissingImports=false
# (verl is installed where verl runs this module, not in rollgym's own venv)
"""`RollgymAgentLoop`: rollgym's rollout loop as a verl 0.9 agent loop (`AgentLoopBase`), the live hook.

verl builds one instance per sample inside its agent-loop workers and awaits `run(sampling_params, **row)`; every
turn samples through verl's own `server_manager` (`VerlServerEngine`), so verl's weights and scheduling stay in
charge, and the episode comes back as an `AgentLoopOutput` with rollgym's exact ids, env_mask and sampling
logprobs. Registered with verl through `actor_rollout_ref.rollout.agent.agent_loop_config_path` (docs/trainers.md):

    - name: rollgym
      _target_: rollgym.integrations.verl.agent_loop.RollgymAgentLoop
      env: rollgym/Calculator-v0      # the default environment; a row's extra_info.env_id overrides it
      max_turns: 8

A row names its task in `extra_info.task` (a dict or its JSON). Whatever fails (an unknown environment, a task the
environment refuses, a dead server) becomes a fully masked sample with reward 0 and `extra_fields.rollgym_error`,
never an exception: verl gathers a step's samples without `return_exceptions`, so one raise would fail the step.
"""

from __future__ import annotations

import logging
import traceback
import uuid
from pathlib import Path
from typing import Any, ClassVar

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput

from rollgym.engines.base import SamplingParams
from rollgym.errors import UsageError
from rollgym.integrations.live_rows import append_rollout, row_task_dict
from rollgym.integrations.trainer_versions import require_trainer
from rollgym.integrations.training_samples import TrainingSample, training_samples
from rollgym.integrations.verl.agent_loop_output import agent_loop_fields
from rollgym.integrations.verl.engine import VerlServerEngine
from rollgym.limits import Limits
from rollgym.rollouts.loop import rollout as run_one
from rollgym.rollouts.policy import Policy, certified_tokenizer
from rollgym.rollouts.records import Rollout

logger = logging.getLogger(__name__)


class RollgymAgentLoop(AgentLoopBase):
    """verl's agent loop over a rollgym environment; options come from its `agent_loop_config_path` entry."""

    _tokenizers: ClassVar[dict[int, Any]] = {}  # certified once per verl tokenizer, shared by every sample

    def __init__(
        self,
        *args: Any,
        env: str | None = None,
        max_turns: int | None = None,
        max_tokens_per_turn: int | None = None,
        timeout_s: float | None = None,
        chat_template: str | None = None,
        record_dir: str | None = None,
        **kwargs: Any,
    ) -> None:
        require_trainer("verl")
        kwargs.pop("tools", None)  # verl's own tool list: rollgym's environments bring their tools
        super().__init__(*args, **kwargs)
        self.default_env = env
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)
        self.limits = Limits(
            max_turns=max_turns or Limits().max_turns,
            max_tokens_per_turn=max_tokens_per_turn or self.response_length,
            timeout_s=timeout_s if timeout_s is not None else Limits().timeout_s,
        )
        self.chat_template = chat_template
        self.record_dir = Path(record_dir) if record_dir else None
        self.rollout: Rollout | None = None  # the last episode, whole (for callers that want more than verl keeps)

    def chat_tokenizer(self) -> Any:
        key = id(self.tokenizer)
        if key not in self._tokenizers:
            self._tokenizers[key] = certified_tokenizer(self.tokenizer, chat_template=self.chat_template)
        return self._tokenizers[key]

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        try:
            env_id, task = row_task(kwargs, self.default_env)
            engine = VerlServerEngine(
                self.server_manager,
                request_id=uuid.uuid4().hex,
                model=str(getattr(self.config.actor_rollout_ref.model, "path", "verl")),
                response_length=self.response_length,
                extra_sampling={"repetition_penalty": sampling_params.get("repetition_penalty", 1.0)},
            )
            policy = Policy(engine=engine, tokenizer=self.chat_tokenizer())
            rollout = await run_one(env_id, policy, task, limits=self.limits, sampling=verl_sampling(sampling_params))
        except Exception as exc:  # noqa: BLE001 - any failure is this sample's, recorded on it: never the step's
            logger.warning("rollgym: a verl sample failed: %s: %s", type(exc).__name__, exc)
            return self.failed_output(kwargs, exc)
        self.rollout = rollout
        self.record(rollout)
        sample = training_samples(rollout)[-1]
        if rollout.error is not None:
            logger.warning("rollgym: rollout %s failed: %s", rollout.id, sample.error)
        metrics = {"generate_sequences": rollout.timings.generate_s, "tool_calls": rollout.timings.env_s}
        fields = agent_loop_fields(
            sample, prompt_length=self.prompt_length, response_length=self.response_length, metrics=metrics
        )
        return AgentLoopOutput(**{**fields, "metrics": AgentLoopMetrics(**fields["metrics"])})

    def failed_output(self, row: dict[str, Any], exc: BaseException) -> AgentLoopOutput:
        """A sample that trains nothing: the row's prompt rendered by verl's tokenizer, no response, reward 0."""
        prompt = self.row_prompt_ids(row)
        extra = row.get("extra_info") or {}
        sample = TrainingSample.failure(
            exc,
            prompt_ids=prompt,
            task_id=str(extra.get("task_id", "")) if isinstance(extra, dict) else "",
            env_id=str(extra.get("env_id") or self.default_env or "") if isinstance(extra, dict) else "",
            messages=len(row.get("raw_prompt") or []),
        )
        fields = agent_loop_fields(sample, prompt_length=self.prompt_length, response_length=self.response_length)
        fields["extra_fields"]["rollgym_traceback"] = "".join(traceback.format_exception(exc))[-4000:]
        return AgentLoopOutput(**{**fields, "metrics": AgentLoopMetrics()})

    def row_prompt_ids(self, row: dict[str, Any]) -> list[int]:
        try:
            text = self.tokenizer.apply_chat_template(
                list(row["raw_prompt"]), add_generation_prompt=True, tokenize=False
            )
            return list(self.tokenizer.encode(text, add_special_tokens=False)) or [self.tokenizer.eos_token_id]
        except Exception:  # noqa: BLE001 - no usable raw_prompt: one id keeps verl's padding and positions defined
            return [self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0]

    def record(self, rollout: Rollout) -> None:
        """Append the whole rollout to `record_dir/rollouts-<pid>.jsonl` for the viewer."""
        append_rollout(self.record_dir, rollout)


def row_task(row: dict[str, Any], default_env: str | None) -> tuple[str, dict]:
    """The environment id and the task of one verl dataset row (`extra_info.env_id`, `extra_info.task`)."""
    extra = row.get("extra_info")
    if not isinstance(extra, dict):
        raise UsageError("a rollgym row needs extra_info with its task (extra_info.task); this row has none")
    env_id = extra.get("env_id") or default_env
    if not env_id:
        raise UsageError(
            "no environment for this row: set extra_info.env_id, or `env:` in the agent loop's config entry"
        )
    return str(env_id), row_task_dict(extra.get("task"), "extra_info.task")


def verl_sampling(params: dict[str, Any]) -> SamplingParams:
    """rollgym's sampling from verl's dict (vLLM's meanings; top_k -1 is off, rollgym's 0)."""
    top_k = int(params.get("top_k", -1) or -1)
    return SamplingParams(
        temperature=float(params.get("temperature", 1.0)),
        top_p=float(params.get("top_p", 1.0)),
        top_k=top_k if top_k > 0 else 0,
    )
