"""The multi-turn rollout loop: generate, parse, step the environment, bridge, repeat; token-exact.

Every failure at a boundary (engine, environment, sandbox, tokenization, timeout) is caught where it
happens, recorded on the `Rollout` with its category, and the environment is closed: a bad rollout is
data, not a crash. Only cancellation propagates (after the environment is released).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Any

from pydantic import ValidationError

from rollgym.engines.base import SamplingParams
from rollgym.envs.core.env import reward_result
from rollgym.envs.core.errors import InvalidReplyError, InvalidRewardError
from rollgym.envs.core.spaces import message_problem
from rollgym.envs.core.tasks import task_id_of
from rollgym.envs.core.wrappers import inner_env_and_step_limit
from rollgym.errors import UsageError
from rollgym.limits import Limits, as_limits
from rollgym.rollouts.history import common_prefix, record_history_costs
from rollgym.rollouts.live import publish
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.records import (
    ErrorCategory,
    ErrorRecord,
    FailurePhase,
    Resample,
    Rollout,
    StopReason,
    Turn,
    errored_rollout,
    failure_category,
)
from rollgym.rollouts.turns import record_turn
from rollgym.tokenization import ChatTokenizer, TokenizationError
from rollgym.version import __version__


class _Stop(Exception):
    """Internal: end the episode with a stop reason (and maybe an error).

    `scored`: the environment ended the episode itself, with `reward` (value, components) when it gave one,
    so the loop does not score it again.
    """

    def __init__(
        self,
        reason: StopReason,
        error: ErrorRecord | None = None,
        truncated: bool = False,
        scored: bool = False,
        reward: tuple[float, dict[str, float]] | None = None,
    ):
        super().__init__(reason)
        self.reason: StopReason = reason
        self.error, self.truncated, self.scored, self.reward = error, truncated, scored, reward


log = logging.getLogger("rollgym.rollouts")


def _error(category: ErrorCategory, exc: BaseException, turn: int | None, phase: FailurePhase) -> ErrorRecord:
    """The record of a failure (with its traceback), and a log line with the traceback, so a failing environment can
    be debugged from the run's log as well as from its records."""
    phase = getattr(exc, "rollgym_phase", None) or phase  # an environment says where (its reward, a tool)
    record = ErrorRecord.of(exc, category, turn, phase)
    log.warning(
        "a rollout failed in %s (%s, turn %s): %s: %s",
        phase,
        category,
        turn,
        record.type,
        record.message,
        exc_info=exc if exc.__traceback__ is not None else None,
    )
    return record


#: the category of a failure an environment raised (`ErrorRecord.of` without a category uses it)
env_failure_category = failure_category


_LIMITS_RECORDS: dict[int, tuple[Limits, dict[str, Any]]] = {}


def _limits_record(limits: Limits) -> dict[str, Any]:
    """What a rollout records of its `Limits` (frozen, so one dump serves every rollout of a call; found by identity,
    cheaper than hashing the model)."""
    hit = _LIMITS_RECORDS.get(id(limits))
    if hit is None or hit[0] is not limits:
        if len(_LIMITS_RECORDS) > 64:
            _LIMITS_RECORDS.clear()
        hit = _LIMITS_RECORDS[id(limits)] = (limits, limits.model_dump())
    return hit[1]


def check_sampling(sampling: SamplingParams | None) -> SamplingParams:
    """The sampling parameters of a rollout; a `max_tokens` set on them is refused (it is a budget: `Limits`)."""
    sampling = sampling or SamplingParams()
    if "max_tokens" in sampling.model_fields_set:
        raise UsageError(
            "in a rollout the tokens per turn are a budget: set Limits(max_tokens_per_turn=...) "
            "instead of SamplingParams(max_tokens=...)"
        )
    return sampling


def _checked_reward(reward: Any, components: dict | None) -> tuple[float, dict[str, float]]:
    """The reward and its components as finite floats, or `InvalidRewardError` naming the offender."""
    values = {"reward": reward, **{f"reward component {k!r}": v for k, v in (components or {}).items()}}
    for name, value in values.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InvalidRewardError(f"the environment's {name} is {value!r}, not a number") from None
        if not math.isfinite(number):
            raise InvalidRewardError(f"the environment's {name} is {number}, not a finite number")
    return float(reward), {k: float(v) for k, v in (components or {}).items()}


def _reply_problem(reply: Any) -> str | None:
    """Why an environment's reply is not a list of chat messages (None when it is)."""
    if not isinstance(reply, (list, tuple)):
        return f"the environment's reply must be a list of chat messages, got {type(reply).__name__}"
    for i, message in enumerate(reply):
        problem = message_problem(message, ("tool", "user", "system"))
        if problem:
            return f"the environment's reply message {i} is not a valid chat message: {problem}"
    return None


def _malformed_reply(parsed, tokenizer: ChatTokenizer) -> dict:
    """The message that tells the model what was wrong with its tool calls."""
    text = parsed.error_message()
    if tokenizer.tool_role_supported:
        return {"role": "tool", "tool_call_id": "invalid_tool_call", "name": "invalid_tool_call", "content": text}
    return {"role": "user", "content": text}


async def run_rollout(
    env: Any,
    policy: Policy,
    task: dict | None = None,
    *,
    limits: Limits | None = None,
    sampling: SamplingParams | None = None,
    env_id: str = "",
    group_id: str = "",
    sample_index: int = 0,
) -> Rollout:
    """Run one episode of `env` on `task` with `policy`; always return a `Rollout`, never raise (but on cancel, and
    `UsageError` for a wrapper it cannot apply).

    `env` is a rollgym `Env`, or gymnasium wrappers around one: a `TimeLimit` ends the episode after its steps
    (`env_truncated`), the checker and order enforcer `make` adds change nothing, any other raises `UsageError`.
    """

    env, max_steps = inner_env_and_step_limit(env)
    limits = limits or Limits()
    sampling = sampling or SamplingParams()
    try:
        engine, tokenizer = policy.engine, policy.tokenizer
    except Exception as exc:  # noqa: BLE001 - an engine that cannot be built is this rollout's engine failure, still data
        await asyncio.shield(_close(env))
        return errored_rollout(
            _error("engine", exc, None, "generate"),
            env_id=env_id,
            group_id=group_id,
            sample_index=sample_index,
            task_id=task_id_of(task),
            rollgym_version=__version__,
        )
    token_exact = bool(getattr(engine, "token_exact", True))
    rollout = Rollout(
        env_id=env_id,
        group_id=group_id,
        sample_index=sample_index,
        sampling=sampling.model_dump(exclude={"max_tokens"}),  # the tokens per turn are a budget: `limits`
        limits=_limits_record(limits),  # (pydantic copies it: one dump per `Limits` serves every rollout)
        engine=getattr(engine, "name", type(engine).__name__),
        model=str(getattr(engine, "model", "")),
        token_exact=token_exact,
        rollgym_version=__version__,
        task_id=task_id_of(task),
        history=getattr(policy, "history", "keep"),
    )
    publish(rollout)
    t0 = time.perf_counter()
    scored = False
    try:
        async with asyncio.timeout(limits.timeout_s):
            await _episode(env, engine, tokenizer, task, limits, sampling, rollout, max_steps)
    except _Stop as stop:
        rollout.stop_reason, rollout.error, rollout.truncated, scored = (
            stop.reason,
            stop.error,
            stop.truncated,
            stop.scored,
        )
        if stop.reward is not None:
            rollout.reward, rollout.reward_components = stop.reward
    except TimeoutError as exc:
        rollout.stop_reason, rollout.truncated = "timeout", True
        rollout.error = _error("timeout", exc, len(rollout.turns), "loop")
        rollout.error.message = f"the rollout exceeded its wall-clock limit of {limits.timeout_s}s"
    except asyncio.CancelledError:
        await asyncio.shield(_close(env))
        raise
    except Exception as exc:  # noqa: BLE001 - a bug of ours: still data, never a crashed batch
        rollout.stop_reason, rollout.error = "error", _error("internal", exc, len(rollout.turns), "loop")
    if not scored and (rollout.error is None or rollout.stop_reason == "timeout"):
        await _final_reward(env, rollout, limits)
    await asyncio.shield(_close(env))
    record_history_costs(rollout, tokenizer if token_exact else None)
    timings = rollout.timings
    timings.generate_s = sum(t.generate_s for t in rollout.turns)
    timings.env_s = sum(t.env_s for t in rollout.turns)
    timings.wall_s = time.perf_counter() - t0
    return rollout


async def _close(env: Any) -> None:
    try:
        await env.aclose()
    except Exception:  # noqa: BLE001 - closing must never turn a finished rollout into a crash
        pass


async def _final_reward(env: Any, rollout: Rollout, limits: Limits) -> None:
    """Score an episode the loop cut short (turn, context, token or time budget) from the env's state."""
    scorer = getattr(env, "compute_reward", None)
    if scorer is None:
        return
    try:
        async with asyncio.timeout(limits.final_reward_timeout_s):
            reward, components = reward_result(type(env).__name__, await scorer())
        rollout.reward, rollout.reward_components = _checked_reward(reward, components)
    except Exception as exc:  # noqa: BLE001 - an unscorable episode is recorded on the rollout
        if rollout.error is None:
            rollout.error = _error(env_failure_category(exc), exc, len(rollout.turns), "reward")


async def _episode(
    env, engine, tokenizer, task, limits: Limits, sampling: SamplingParams, rollout: Rollout, max_steps: int | None
) -> None:
    """Reset, then turns until a stop; raises `_Stop` with the reason (and an error when one happened).

    `max_steps`: a gymnasium `TimeLimit`'s, the environment steps after which the episode is truncated (scored then
    by the environment's `compute_reward`, as any episode the loop cuts short)."""
    env_steps = 0
    t = time.perf_counter()
    try:
        messages, info = await env.areset(options={"task": task} if task is not None else None)
    except Exception as exc:  # noqa: BLE001 - a failed reset is recorded on the rollout
        raise _Stop("error", _error(env_failure_category(exc), exc, None, "setup")) from None
    rollout.timings.reset_s = time.perf_counter() - t
    tools = info.get("tools") or None
    rollout.task_id = str(info.get("task_id") or rollout.task_id)
    rollout.initial_messages, rollout.tools = list(messages), list(tools or [])
    traj = None
    if rollout.token_exact:
        try:
            traj = tokenizer.start(messages, tools)
        except TokenizationError as exc:
            raise _Stop("error", _error("tokenization", exc, None, "tokenize")) from None
        rollout.prompt_ids = traj.prompt_ids  # shared, not copied: the trajectory never changes this list in place
        stop_ids = list(dict.fromkeys(tokenizer.stop_token_ids + list(sampling.stop_token_ids)))
    max_len = limits.max_model_len or getattr(engine, "max_model_len", None)
    sampled_total = 0
    history = list(messages)
    last_update: dict | None = None
    resample: Resample | None = None
    for index in range(limits.max_turns):
        remaining = None if limits.max_total_tokens is None else limits.max_total_tokens - sampled_total
        if remaining is not None and remaining <= 0:
            raise _Stop("token_budget", truncated=True)
        max_tokens = min(limits.max_tokens_per_turn, remaining or limits.max_tokens_per_turn)
        prompt_len = len(traj) if traj is not None else 0
        context_bound = False
        if traj is not None and max_len:
            room = max_len - prompt_len
            if room < 1:
                raise _Stop("context_limit", truncated=True)
            context_bound = room <= max_tokens
            max_tokens = min(max_tokens, room)
        update = {
            "max_tokens": max_tokens,
            "seed": None if sampling.seed is None else (sampling.seed + index) % 2**63,
            **({"stop_token_ids": stop_ids} if traj is not None else {}),
        }
        if update != last_update:  # most turns sample with the same parameters as the one before
            turn_sampling, last_update = sampling.model_copy(update=update), update
        # The turn's fields, made into a `Turn` once when the turn ends, however it ends (a turn whose generation
        # failed sampled nothing and is not recorded).
        recorded: list[dict[str, Any]] = []
        try:
            sampled, stepped = await _turn(
                env,
                engine,
                tokenizer,
                traj,
                tools,
                history,
                recorded,
                (index, prompt_len, resample),
                turn_sampling,
                context_bound,
            )
        finally:
            if recorded:  # (extend: no pydantic attribute assignment per turn)
                rollout.turns.append(_turn_record(recorded[0]))
        sampled_total += sampled
        if max_steps is not None and stepped:  # the environment stepped this turn
            env_steps += 1
            if env_steps >= max_steps:
                raise _Stop("env_truncated", truncated=True)
        if rollout.history == "template" and traj is not None:
            traj, resample = _follow_template(tokenizer, traj, history, tools, rollout.turns[-1], index)
    raise _Stop("max_turns", truncated=True)


def _follow_template(tokenizer, traj, history: list, tools, turn: Turn, index: int):
    """Under `history="template"`, the next prompt is what the template renders: when that is not the kept
    sequence, the turn's bridge is dropped and a new sample starts (with where it departs from the last one)."""
    try:
        fresh = tokenizer.start(history, tools)
    except TokenizationError as exc:
        raise _Stop("error", _error("tokenization", exc, index, "tokenize")) from None
    if fresh.prompt_ids == traj.next_prompt_ids:
        return traj, None
    kept = traj.next_prompt_ids[: len(traj) - len(turn.bridge_ids)]
    shared = common_prefix(fresh.prompt_ids, kept)
    turn.bridge_ids = []
    return fresh, Resample(shared=shared, ids=fresh.prompt_ids[shared:])


async def _turn(
    env,
    engine,
    tokenizer: ChatTokenizer | None,
    traj,
    tools,
    history: list,
    recorded: list[dict[str, Any]],
    position: tuple[int, int, Resample | None],
    sampling: SamplingParams,
    context_bound: bool,
) -> tuple[int, bool]:
    """One turn: generate, parse, step the environment, bridge; its `Turn` fields go into `recorded` as soon as it
    has sampled; returns the tokens sampled and whether the environment stepped. Raises `_Stop` when the episode ends (carrying the environment's reward
    when it ended the episode)."""
    index, prompt_len, resample = position
    t = time.perf_counter()
    try:  # (the engine called here, not through `turns.generate`: one coroutine less per turn on the hot path)
        gen = await (
            engine.generate(traj.next_prompt_ids, sampling)
            if traj is not None
            else engine.chat(history, tools, sampling)
        )
        generate_s = time.perf_counter() - t
    except Exception as exc:  # noqa: BLE001 - any engine failure is this turn's engine error
        raise _Stop("error", _error("engine", exc, index, "generate")) from None
    sampled = 0
    if traj is not None:
        assert tokenizer is not None  # the trajectory was started by it
        sampled = len(gen.completion_ids)
        try:
            parsed = record_turn(recorded, gen, generate_s, position, traj, tokenizer, tools)
        except TokenizationError as exc:
            raise _Stop("error", _error("tokenization", exc, index, "tokenize")) from None
        turn = recorded[-1]
        if gen.finish_reason == "abort":
            raise _Stop(
                "error",
                ErrorRecord(category="engine", type="Abort", message="the engine aborted the generation", turn=index),
            )
        if traj.ended:  # cut by max_tokens: by the context when that is what bounded it
            raise _Stop("context_limit" if context_bound else "truncated_completion", truncated=True)
    else:
        turn = {"index": index, "prompt_len": prompt_len, "resample": resample, "finish_reason": gen.finish_reason}
        turn["generate_s"], turn["message"], parsed = generate_s, dict(gen.message), None
        recorded.append(turn)
        if gen.finish_reason == "length":
            raise _Stop("truncated_completion", truncated=True)
    action = turn["message"]
    history.append(action)
    if parsed is not None and parsed.errors and not parsed.tool_calls:
        # Only malformed calls: tell the model, do not bother the environment.
        assert tokenizer is not None  # parsed calls come only from the token path, which has a tokenizer
        reply, reward, terminated, truncated, step_info = [_malformed_reply(parsed, tokenizer)], 0.0, False, False, {}
        stepped = False
    else:
        stepped = True
        t = time.perf_counter()
        try:
            reply, reward, terminated, truncated, step_info = await env.astep(action)
        except Exception as exc:  # noqa: BLE001 - any step failure is the environment's (or its sandbox's) error
            raise _Stop("error", _error(env_failure_category(exc), exc, index, "step")) from None
        finally:
            turn["env_s"] = time.perf_counter() - t
        problem = _reply_problem(reply)
        if problem:
            raise _Stop("error", _error("environment", InvalidReplyError(problem), index, "step"))
        reply = list(reply)
        if parsed is not None and parsed.errors:
            assert tokenizer is not None  # parsed calls come only from the token path, which has a tokenizer
            reply.append(_malformed_reply(parsed, tokenizer))
    try:
        reward, components = _checked_reward(reward, step_info.get("reward_components"))
    except InvalidRewardError as exc:
        raise _Stop("error", _error("environment", exc, index, "reward"), scored=terminated or truncated) from None
    turn["reward"], turn["env_messages"] = reward, reply
    turn["tool_calls"] = [  # validated into `ToolCall`s with the `Turn` (one validation per turn)
        {
            "id": c.id,
            "name": c.name,
            "arguments": c.arguments,
            "result": c.result,
            "failed": c.failed,
            "duration_s": c.duration_s,
        }
        for c in step_info.get("tool_calls", ())
    ]
    history += reply
    failure = step_info.get("error")
    if failure is not None:
        raise _Stop("error", _error(env_failure_category(failure), failure, index, "step"), scored=True)
    if terminated or truncated:
        reason = "env_truncated" if truncated else "no_tool_call" if not action.get("tool_calls") else "env_terminated"
        raise _Stop(reason, truncated=bool(truncated), scored=True, reward=(reward, components))
    if not reply:
        raise _Stop(
            "error",
            _error(
                "environment",
                InvalidReplyError("the environment returned no messages and did not end the episode"),
                index,
                "step",
            ),
        )
    if traj is not None:
        try:
            turn["bridge_ids"] = traj.add_messages(reply)
        except TokenizationError as exc:
            raise _Stop("error", _error("tokenization", exc, index, "tokenize")) from None
    return sampled, stepped


def _turn_record(fields: dict[str, Any]) -> Turn:
    """The turn's `Turn`; never raises, so it cannot replace the exception that ended the turn."""
    try:
        return Turn.model_validate(fields)
    except ValidationError as exc:  # keep what was sampled, say what could not be recorded
        kept = {k: fields[k] for k in SAMPLED if k in fields}
        return Turn.model_construct(**kept, parse_errors=[f"part of this turn could not be recorded: {exc}"])


#: the fields of a turn that are what was sampled (kept even when the rest cannot be recorded)
SAMPLED = (
    "index",
    "prompt_len",
    "completion_ids",
    "logprobs",
    "finish_reason",
    "generate_s",
    "policy_version",
    "version_changes",
)


async def rollout(
    env: Any,
    policy: Policy | str,
    task: dict | None = None,
    *,
    limits: Limits | None = None,
    sampling: SamplingParams | None = None,
) -> Rollout:
    """One episode: `env` is a registered id or an environment, `policy` a `Policy` or its spec string
    (then it is built here and its engine closed after). Returns the `Rollout`; failures are recorded on it."""
    from rollgym.envs import make
    from rollgym.rollouts.policy import as_policy

    sampling, limits = check_sampling(sampling), as_limits(limits)
    policy, owned = as_policy(policy)
    policy.engine  # noqa: B018 - an engine that cannot be built fails the call here, before any environment
    env_id = env if isinstance(env, str) else getattr(getattr(env, "spec", None), "id", None) or type(env).__name__
    instance = make(env) if isinstance(env, str) else env
    try:
        inner_env_and_step_limit(instance)  # a wrapper rollgym cannot apply is refused here, not recorded as a failure
    except UsageError:
        if isinstance(env, str):
            instance.close()
        if owned:
            await policy.aclose()
        raise
    try:
        return await run_rollout(
            instance, policy, task, limits=limits, sampling=sampling, env_id=env_id, group_id=task_id_of(task)
        )
    finally:
        if owned:
            await policy.aclose()
