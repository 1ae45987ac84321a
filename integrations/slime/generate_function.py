# pyright: reportMissingImports=false
# (slime is installed where slime runs this module, not in rollgym's own venv)
"""`rollgym_generate`: rollgym's rollout loop as a slime custom generate function, the live hook.

slime (THUDM/slime 624b824, 0.3.1) loads the function named by `--custom-generate-function-path` and awaits
`generate(args, sample, sampling_params)` once per sample, in place of its own single-turn `generate`
(slime/rollout/sglang_rollout.py:250-262); it returns the `Sample` it was given, filled. Every turn samples through
slime's own router (`SlimeRouterEngine`, slime's `post`), so slime's weights and scheduling stay in charge, and the
episode comes back in `Sample`'s fields with rollgym's exact ids (`slime_sample`, the offline converter's code). The
reward is set, so slime runs no reward model of its own for the sample (sglang_rollout.py:284-287).

A row names its environment and task in its metadata (`dataset_rows`; slime's `--metadata-key`, default
"metadata"). Options are environment variables of slime's rollout process: ROLLGYM_ENV (the default environment),
ROLLGYM_MAX_TURNS, ROLLGYM_MAX_TOKENS_PER_TURN, ROLLGYM_RECORD_DIR. Whatever fails (an unknown environment, a task
the environment refuses, a dead router) becomes `Sample.Status.FAILED` with `remove_sample` set (slime zeroes its loss
mask) and reward 0, never an exception: slime gathers a group's samples without `return_exceptions`. A turn sglang
aborted (slime aborts in-flight requests when a step has its samples) is `Sample.Status.ABORTED`, which slime leaves
out of the step and, with `--partial-rollout`, gives back to its buffer; the hook then runs the episode again.
"""

from __future__ import annotations

import json
import logging
import os
import traceback
from functools import lru_cache
from typing import Any

import httpx

from rollgym.engines.base import SamplingParams
from rollgym.errors import UsageError
from rollgym.integrations.live_rows import append_rollout, row_task_dict
from rollgym.integrations.slime.engine import Post, SlimeRouterEngine
from rollgym.integrations.slime.sample_fields import slime_sample
from rollgym.integrations.training_samples import TrainingSample, training_samples
from rollgym.limits import Limits
from rollgym.rollouts.loop import rollout as run_one
from rollgym.rollouts.policy import Policy, certified_tokenizer
from rollgym.rollouts.records import Rollout

logger = logging.getLogger(__name__)


async def rollgym_generate(args: Any, sample: Any, sampling_params: dict[str, Any]) -> Any:
    """slime's custom generate function: one rollgym episode for `sample`, sampled through slime's router."""
    tokenizer = None
    try:
        env_id, task = row_task(sample.metadata, os.environ.get("ROLLGYM_ENV"))
        tokenizer = chat_tokenizer(str(args.hf_checkpoint))
        headers = None
        if getattr(sample, "session_id", None) and getattr(args, "router_policy", None) == "consistent_hashing":
            headers = {"X-SMG-Routing-Key": sample.session_id}  # as slime's generate routes one session
        engine = SlimeRouterEngine(
            f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate",
            sampling_params,
            post=slime_post(),
            headers=headers,
            model=str(args.hf_checkpoint),
        )
        policy = Policy(engine=engine, tokenizer=tokenizer)
        rollout = await run_one(
            env_id, policy, task, limits=limits(sampling_params), sampling=slime_sampling(sampling_params)
        )
    except Exception as exc:  # noqa: BLE001 - any failure is this sample's, recorded on it: never the group's
        logger.warning("rollgym: a slime sample failed: %s: %s", type(exc).__name__, exc)
        failed = TrainingSample.failure(exc, prompt_ids=prompt_ids_of(sample, tokenizer))
        fill(sample, failed)
        sample.metadata["rollgym_traceback"] = "".join(traceback.format_exception(exc))[-4000:]
        return sample
    record(rollout)
    trained = training_samples(rollout)[-1]
    if rollout.error is not None:
        logger.warning("rollgym: rollout %s failed: %s", rollout.id, trained.error)
        if not trained.prompt_ids:  # failed before its prompt was rendered
            trained = trained.model_copy(update={"prompt_ids": prompt_ids_of(sample, tokenizer)})
    fill(sample, trained)
    if rollout.error is not None and rollout.error.type == "Abort":
        sample.status = type(
            sample
        ).Status.ABORTED  # sglang aborted it (slime's abort between steps): slime requeues it
    return sample


def fill(sample: Any, trained: TrainingSample) -> None:
    """Set `sample`'s fields from rollgym's sample (slime's index, group, prompt, label and session kept). A failed
    sample with no response gets one masked filler id, as slime's trainer reads a reward at the last response id."""
    fields = slime_sample(trained, index=sample.index, group_index=sample.group_index, prompt=sample.prompt)
    if fields["response_length"] == 0 and trained.failed:
        fields.update(
            tokens=[*fields["tokens"], fields["tokens"][-1] if fields["tokens"] else 0],
            response_length=1,
            loss_mask=[0],
            rollout_log_probs=[0.0],
        )
    metadata = {**(sample.metadata or {}), **fields.pop("metadata")}
    status = fields.pop("status")
    for name in ("index", "group_index", "prompt", "label"):
        fields.pop(name)
    for name, value in fields.items():
        setattr(sample, name, value)
    sample.metadata = metadata
    sample.status = type(sample).Status(status)


def row_task(metadata: Any, default_env: str | None) -> tuple[str, dict]:
    """The environment id and the task of one slime row's metadata (`env_id`, `task` as a dict or its JSON)."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError as exc:
            raise UsageError(f"a rollgym row's metadata is not JSON: {exc}") from None
    if not isinstance(metadata, dict) or "task" not in metadata:
        raise UsageError("a rollgym row needs its task in metadata.task (see rollgym.integrations.slime.dataset_rows)")
    env_id = metadata.get("env_id") or default_env
    if not env_id:
        raise UsageError("no environment for this row: set metadata.env_id, or ROLLGYM_ENV in slime's environment")
    return str(env_id), row_task_dict(metadata["task"], "metadata.task")


def limits(sampling_params: dict[str, Any]) -> Limits:
    """rollgym's budgets: each turn at most ROLLGYM_MAX_TOKENS_PER_TURN (default: slime's `max_new_tokens`, which
    the engine also caps as slime's response budget across turns)."""
    per_turn = int(os.environ.get("ROLLGYM_MAX_TOKENS_PER_TURN") or 0) or int(
        sampling_params.get("max_new_tokens") or 0
    )
    return Limits(
        max_turns=int(os.environ.get("ROLLGYM_MAX_TURNS") or Limits().max_turns),
        max_tokens_per_turn=per_turn or Limits().max_tokens_per_turn,
    )


def slime_sampling(params: dict[str, Any]) -> SamplingParams:
    """rollgym's sampling from slime's dict (sglang's meanings; top_k -1 is off, rollgym's 0)."""
    top_k = int(params.get("top_k", -1) or -1)
    return SamplingParams(
        temperature=float(params.get("temperature", 1.0)),
        top_p=float(params.get("top_p", 1.0)),
        top_k=top_k if top_k > 0 else 0,
    )


@lru_cache(maxsize=4)
def chat_tokenizer(hf_checkpoint: str) -> Any:
    """slime's tokenizer (`args.hf_checkpoint`, the checkpoint slime's `load_tokenizer` reads), certified once per
    process."""
    return certified_tokenizer(hf_checkpoint)


def slime_post() -> Post:
    """slime's own `post` (its retries and distributed POST actors) where slime is installed, else one HTTP POST."""
    try:
        from slime.utils.http_utils import post

        return post
    except ImportError:
        return _http_post


async def _http_post(url: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=None) as client:
        response = await client.post(url, json=payload, headers=headers)
        response.raise_for_status()
        return response.json()


def prompt_ids_of(sample: Any, tokenizer: Any) -> list[int]:
    """The ids of slime's prompt for a sample that failed before rollgym rendered one (at least one id)."""
    if getattr(sample, "tokens", None):
        return list(sample.tokens)
    try:
        hf = getattr(tokenizer, "hf", tokenizer)
        return list(hf(text=str(sample.prompt), add_special_tokens=False)["input_ids"]) or [0]
    except Exception:  # noqa: BLE001 - no tokenizer (it failed to load): one id keeps slime's shapes defined
        return [0]


def record(rollout: Rollout) -> None:
    """Append the whole rollout to ROLLGYM_RECORD_DIR/rollouts-<pid>.jsonl, for `rollgym view`."""
    append_rollout(os.environ.get("ROLLGYM_RECORD_DIR"), rollout)
