"""A rollgym rollout as the JSON record of a verifiers 0.4 v1 `Episode` holding one `Trace`, in plain Python.

verifiers' message graph (verifiers/v1/graph.py) stores each message once as a `MessageNode` whose `token_ids` are
the ids it adds to the sequence. Without per-message spans (rollgym records none, like verifiers' default Jinja
renderer) verifiers' own `_commit_turn` gives input messages an empty slice and puts a turn's new prompt ids on the
assistant node, before its sampled completion: `mask` is False on them and True on the completion, `logprobs` has one
value per True. Concatenated along a branch, the ids are rollgym's `prompt_ids + completion_ids`. A rewrite of history
(`history="template"`) starts a new root, so each rollgym sample is one verifiers branch. The reward is
`rewards["reward"]`; a failed rollout is an errored trace (`ok` False, `errors`, rewards not scored), which prime-rl
drops before training; the weights versions are the episode's `PolicySpan`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from rollgym.rollouts.records import Rollout

#: the key of rollgym's reward in `Trace.rewards` (its components go to `Trace.metrics` as `reward/<name>`)
REWARD_KEY = "reward"


class NodeRecord(BaseModel):
    """A `MessageNode` as verifiers serializes it (the fields rollgym fills)."""

    parent: int | None
    message: dict[str, Any]
    sampled: bool = False
    tools: list[dict[str, Any]] = Field(default_factory=list)
    token_ids: list[int] = Field(default_factory=list)
    mask: list[bool] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list)


def episode_record(rollout: Rollout, *, run_id: str = "rollgym") -> dict[str, Any]:
    """`WireEpisode.model_validate(record)` loads it; its one trace is `trace_record(rollout)`. The group is
    rollgym's GRPO group; `run.work.policy` spans the weights versions that sampled it (no `run` when untracked)."""
    versions = [v for t in rollout.turns for v in t.token_versions() if v is not None]
    record: dict[str, Any] = {
        "id": rollout.id,
        "env": {"id": rollout.env_id, "name": rollout.env_id},
        "task": _task(rollout),
        "group": {"id": rollout.group_id},
        "ok": rollout.error is None,
        "errors": [],
        "traces": [trace_record(rollout)],
    }
    if versions:
        policy = {"start": min(versions), "end": max(versions)}
        record["run"] = {
            "type": "train",
            "id": run_id,
            "work": {"type": "train", "step": policy["start"], "policy": policy},
        }
    return record


def trace_record(rollout: Rollout) -> dict[str, Any]:
    """The `Trace` record: the message graph (`nodes`), `rewards`, `metrics`, `ok`/`errors`/`stop_condition`, and
    rollgym's provenance in `info`."""
    error = rollout.error
    rewards: dict[str, Any] = {REWARD_KEY: None if error else {"score": float(rollout.reward), "weight": 1.0}}
    metrics = {f"reward/{k}": float(v) for k, v in rollout.reward_components.items()} | rollout.metrics()
    return {
        "version": 1,
        "id": rollout.id,
        "task": _task(rollout),
        "agent": {"config": {"model": rollout.model or None}, "name": "rollgym", "trainable": rollout.token_exact},
        "tools": [_tool(t) for t in rollout.tools],
        "nodes": [n.model_dump() | {"timestamp": rollout.timings.started_at} for n in message_nodes(rollout)],
        "rewards": rewards,
        "metrics": {} if error else metrics,
        "info": {
            "rollgym_rollout_id": rollout.id,
            "rollgym_env_id": rollout.env_id,
            "rollgym_group_id": rollout.group_id,
            "rollgym_policy_versions": [t.policy_version for t in rollout.turns],
            "rollgym_truncated": rollout.truncated,
        },
        "timing": {"start": rollout.timings.started_at},
        "is_completed": True,
        "ok": error is None,
        "stop_condition": f"{error.category}_error" if error else rollout.stop_reason,
        "errors": [{"type": error.type, "message": f"{error.category}: {error.message}", "traceback": error.traceback}]
        if error
        else [],
    }


def message_nodes(rollout: Rollout) -> list[NodeRecord]:
    """The message graph: one path per rollgym sample (one unless `history="template"` rewrote the history)."""
    nodes: list[NodeRecord] = []
    tools = [_tool(t) for t in rollout.tools]
    samples = rollout.samples()
    history = list(rollout.initial_messages)  # the conversation so far, as rollgym's messages
    parent: int | None = None
    pending: list[dict[str, Any]] = list(history)  # messages no node holds yet on the current path
    delta: list[int] = list(rollout.prompt_ids)  # ids the next assistant node adds before its completion
    k = 0
    for turn in rollout.turns:
        if turn.resample is not None:
            _close_sample(nodes, parent, pending, delta)
            k += 1
            parent, pending, delta = None, list(history), list(samples[k]["prompt_ids"])
        for message in pending:
            nodes.append(_node(parent, message, tools))
            parent = len(nodes) - 1
        nodes.append(
            _node(
                parent,
                turn.message or {"role": "assistant", "content": ""},
                tools,
                sampled=True,
                token_ids=[*delta, *turn.completion_ids],
                mask=[False] * len(delta) + [True] * len(turn.completion_ids),
                logprobs=list(turn.logprobs),
            )
        )
        parent = len(nodes) - 1
        history += [m for m in [turn.message] if m] + turn.env_messages
        pending, delta = list(turn.env_messages), list(turn.bridge_ids)
    if not rollout.turns:
        for message in pending:  # a rollout that failed before its first turn: its prompt, ids on the last message
            nodes.append(_node(parent, message, tools))
            parent = len(nodes) - 1
        if nodes:
            nodes[-1].token_ids, nodes[-1].mask = delta, [False] * len(delta)
    # the last sample ends on its last sampled id, as rollgym's token view does (and as verifiers' graph does: no
    # model call follows to commit the environment's last answer)
    return nodes


def _close_sample(nodes: list[NodeRecord], parent: int | None, pending: list[dict], delta: list[int]) -> None:
    """Environment ids after a sample's last turn (kept by rollgym's samples before a rewrite) go on its messages."""
    if not delta:
        return
    for message in pending or [{"role": "user", "content": ""}]:
        nodes.append(_node(parent, message, []))
        parent = len(nodes) - 1
    nodes[-1].token_ids, nodes[-1].mask = list(delta), [False] * len(delta)


def _node(parent: int | None, message: dict[str, Any], tools: list[dict], **fields: Any) -> NodeRecord:
    return NodeRecord(parent=parent, message=message_record(message), tools=tools if parent is None else [], **fields)


def message_record(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat message as verifiers' typed message (`SystemMessage`, `UserMessage`, `AssistantMessage` with
    flat `ToolCall`s, `ToolMessage`)."""
    role = message.get("role", "user")
    content = message.get("content")
    if role == "assistant":
        out: dict[str, Any] = {"role": role, "content": _text(content) if content is not None else None}
        if message.get("reasoning_content"):
            out["reasoning_content"] = message["reasoning_content"]
        calls = message.get("tool_calls") or []
        if calls:
            out["tool_calls"] = [_tool_call(c) for c in calls]
        return out
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": str(message.get("tool_call_id", "")),
            "content": _text(content),
            "name": message.get("name"),
        }
    return {"role": role if role in ("system", "user") else "user", "content": _text(content)}


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or call
    arguments = fn.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {"id": str(call.get("id", "")), "type": "function", "name": fn.get("name", ""), "arguments": arguments}


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    fn = tool.get("function") or tool
    return {
        "type": "function",
        "name": fn.get("name", ""),
        "description": fn.get("description", ""),
        "parameters": fn.get("parameters", {}),
    }


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def _task(rollout: Rollout) -> dict[str, Any]:
    return {"type": "RollgymTask", "data": {"id": rollout.task_id, "name": rollout.env_id}, "key": rollout.task_id}


def branch_view(rollout: Rollout) -> list[dict[str, list]]:
    """What each verifiers branch of the rollout must read (`Branch.token_ids`, `sampled_mask`, spread `logprobs`):
    rollgym's samples, prompt and completion joined, mask True exactly on sampled ids."""
    out = []
    for sample in rollout.samples():
        n = len(sample["prompt_ids"])
        out.append(
            {
                "token_ids": sample["prompt_ids"] + sample["completion_ids"],
                "sampled_mask": [False] * n + [bool(m) for m in sample["env_mask"]],
                "logprobs": [0.0] * n + list(sample["logprobs"]),
            }
        )
    return out
