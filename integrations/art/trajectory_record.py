"""A rollgym rollout as the record of an ART `Trajectory` (openpipe-art 0.5.18, art/trajectories.py), in plain Python.

ART trains on `messages_and_choices`: message dicts, which its `tokenize_trajectory` (art/preprocessing/tokenize.py)
renders with its tokenizer's chat template and never trains, and OpenAI `Choice`s with logprobs, whose ids it takes
from each logprob's `token` written "token_id:<id>" (vLLM's `return_tokens_as_token_ids`), with `assistant_mask` 1
and the logprob as sampled. So each rollgym turn is a `Choice` carrying its exact sampled ids and logprobs, and the
prompt and tool results are messages ART renders: with the chat template rollgym rendered them with (ART's
`_internal_config["chat_template"]`), they are rollgym's ids too. A choice's message holds the text content only: ART
renders an assistant's `tool_calls` after the sampled ids, which already hold them. A rewrite of history
(`history="template"`) starts a new ART `History` (`additional_histories`), earlier turns as plain messages.
"""

from __future__ import annotations

from typing import Any

from rollgym.rollouts.records import Rollout, Turn

#: ART's finish reasons for rollgym's (a `Choice.finish_reason` is one of OpenAI's)
FINISH = {"length": "length"}


def choice_record(turn: Turn, index: int = 0) -> dict[str, Any]:
    """An OpenAI `Choice` for one turn: "token_id:<id>" per sampled id with its sampling logprob, the message's text."""
    content = turn.message.get("content") if turn.message else None
    return {
        "index": index,
        "finish_reason": FINISH.get(turn.finish_reason, "stop"),
        "message": {"role": "assistant", "content": content if isinstance(content, str) else ""},
        "logprobs": {
            "content": [
                {"token": f"token_id:{t}", "logprob": float(lp), "bytes": None, "top_logprobs": []}
                for t, lp in zip(turn.completion_ids, turn.logprobs, strict=True)
            ],
            "refusal": None,
        },
    }


def is_choice(entry: dict[str, Any]) -> bool:
    """A `Choice` record among messages (ART's `messages_and_choices` holds both)."""
    return "logprobs" in entry and "message" in entry and "role" not in entry


def histories(rollout: Rollout) -> list[list[dict[str, Any]]]:
    """`messages_and_choices` of each rollgym sample: one, or one per rewrite of history, earlier turns as messages."""
    runs: list[list[Turn]] = [[]]
    for turn in rollout.turns:
        if turn.resample is not None:
            runs.append([])
        runs[-1].append(turn)
    out, before = [], list(rollout.initial_messages)
    for run in runs:
        entries = list(before)
        for turn in run:
            entries.append(choice_record(turn))
            entries += turn.env_messages
            before += ([turn.message] if turn.message else []) + turn.env_messages
        out.append(entries)
    return out


def policy_versions(rollout: Rollout) -> tuple[int | None, int | None]:
    """The first and last weights version that sampled the rollout (ART's `initial/final_policy_version`)."""
    known = [v for t in rollout.turns for v in t.token_versions() if v is not None]
    return (known[0], known[-1]) if known else (None, None)


def trajectory_record(rollout: Rollout) -> dict[str, Any]:
    """`art.Trajectory` fields: `messages_and_choices` (and `additional_histories`), `tools`, `reward`, the policy
    versions, rollgym's metrics and reward components as `metrics`, its provenance as `metadata`."""
    first, *more = histories(rollout)
    tools = rollout.tools or None
    initial, final = policy_versions(rollout)
    metrics = {f"reward/{k}": float(v) for k, v in rollout.reward_components.items()} | rollout.metrics()
    return {
        "messages_and_choices": first,
        "tools": tools,
        "additional_histories": [{"messages_and_choices": h, "tools": tools} for h in more],
        "reward": float(rollout.reward),
        "initial_policy_version": initial,
        "final_policy_version": final,
        "metrics": metrics,
        "metadata": {
            "rollgym_rollout_id": rollout.id,
            "rollgym_group_id": rollout.group_id,
            "rollgym_task_id": rollout.task_id,
            "rollgym_env_id": rollout.env_id,
            "rollgym_stop_reason": rollout.stop_reason,
            "rollgym_truncated": rollout.truncated,
        },
    }


def unusable(rollout: Rollout) -> str | None:
    """Why ART cannot train on the rollout (it failed, or has no token ids), or None."""
    if rollout.error is not None:
        return f"{rollout.error.category}: {rollout.error.message}"
    if not rollout.token_exact:
        return "the rollout has no token ids (a chat engine sampled it): nothing to train on"
    if not rollout.turns:
        return "the rollout has no turns"
    return None


def group_records(rollouts: list[Rollout]) -> list[dict[str, Any]]:
    """`art.TrajectoryGroup` fields per rollgym group, in order of appearance. A failed rollout is ART's failed
    trajectory: not in `trajectories`, its error in `exceptions` (what `art.gather_trajectory_groups` does with a
    rollout that raised), so it takes no part in the group's advantage."""
    groups: dict[str, dict[str, Any]] = {}
    for rollout in rollouts:
        group = groups.setdefault(
            rollout.group_id or rollout.id,
            {"trajectories": [], "exceptions": [], "metadata": {"rollgym_group_id": rollout.group_id}},
        )
        reason = unusable(rollout)
        if reason is None:
            group["trajectories"].append(trajectory_record(rollout))
        else:
            group["exceptions"].append(
                {
                    "type": rollout.error.type if rollout.error else "RollgymNoTokenIds",
                    "message": f"rollout {rollout.id}: {reason}",
                    "traceback": (rollout.error.traceback if rollout.error else None) or "",
                }
            )
    return list(groups.values())
