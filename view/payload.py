"""The viewer's data: a small index for the list and plots, and each rollout's detail kept apart.

The page parses a rollout's detail (messages, token strip) only when it is opened, so a run of 10,000
rollouts loads as fast as its index. Prompts shared by a GRPO group are stored once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from rollgym.rollouts.records import Rollout
from rollgym.rollouts.summary import summarize
from rollgym.rollouts.versions import oldest_version


def index_row(i: int, r: Rollout) -> dict[str, Any]:
    """One line of the rollout list: what the filters, the plots and the table need."""
    m = r.metrics()
    return {
        "i": i,
        "id": r.id,
        "task": r.task_id,
        "sample": r.sample_index,
        "group": r.group_id,
        "reward": r.reward,
        "stop": r.stop_reason or "",
        "error": r.error.category if r.error else "",
        "turns": len(r.turns),
        "calls": int(m["tool_calls"]),
        "failed": int(m["tool_failures"]),
        "sampled": int(m["sampled_tokens"]),
        "env": sum(len(t.bridge_ids) for t in r.turns),
        "gen_s": round(r.timings.generate_s, 3),
        "env_s": round(r.timings.env_s, 3),
        "wall_s": round(r.timings.wall_s, 3),
        "segment": r.proxy.segment if r.proxy else None,
        "session": r.proxy.session if r.proxy else None,
        "version": oldest_version(r),  # the weights version of its oldest sampled token (None: not recorded)
    }


def token_strip(r: Rollout, prompt_ref: int) -> dict[str, Any]:
    """The whole trajectory as ids: the prompt (by reference), then each turn's sampled ids and its bridge.

    Compact on purpose (a 10,000-rollout page is mostly this): per turn, the sampled ids, their logprobs in
    milli-nats (integers), the environment's bridge ids, and (when recorded) the weights version `v` and the changes
    inside the turn `vc` ([token, version]); the page rebuilds TRL's `env_mask` (with the trailing bridge kept) and
    marks where each turn, bridge, proxy segment and weights version begins.
    """
    return {
        "prompt": prompt_ref,
        "segment": (
            f"proxy segment {r.proxy.segment}: {r.proxy.segment_reason or 'continued'}"
            if r.proxy is not None and r.proxy.segment is not None
            else None
        ),
        "turns": [
            {
                "index": t.index,
                "finish": t.finish_reason,
                "ids": t.completion_ids,
                "lp": [round(x * 1000) for x in t.logprobs],
                "bridge": t.bridge_ids,
                **({"v": t.policy_version} if t.policy_version is not None else {}),
                **({"vc": [[c.at, c.version] for c in t.version_changes]} if t.version_changes else {}),
            }
            for t in r.turns
        ],
    }


def _provenance(r: Rollout) -> dict[str, Any]:
    """What rollgym recorded of the rollout's making, flat for the page (the proxy session and segment)."""
    if r.proxy is None:
        return {}
    return {"proxy_session": r.proxy.session, "segment": r.proxy.segment, "segment_reason": r.proxy.segment_reason}


def detail(r: Rollout) -> dict[str, Any]:
    """A rollout's page, minus tokens: messages turn by turn, tool calls with results, reward, timings, error."""
    return {
        "id": r.id,
        "env": r.env_id,
        "task": r.task_id,
        "sample": r.sample_index,
        "group": r.group_id,
        "model": r.model,
        "engine": r.engine,
        "token_exact": r.token_exact,
        "reward": r.reward,
        "reward_components": r.reward_components,
        "stop": r.stop_reason,
        "truncated": r.truncated,
        "error": r.error.model_dump() if r.error else None,
        "timings": r.timings.model_dump(),
        "sampling": r.sampling,
        "limits": r.limits,
        "meta": {**r.meta, **_provenance(r)},
        "initial_messages": r.initial_messages,
        "tools": [_tool_name(t) for t in r.tools],
        "turns": [
            {
                "index": t.index,
                "prompt_len": t.prompt_len,
                "n_sampled": len(t.completion_ids),
                "n_bridge": len(t.bridge_ids),
                "finish_reason": t.finish_reason,
                "generate_s": t.generate_s,
                "env_s": t.env_s,
                "reward": t.reward,
                "message": t.message,
                "parse_errors": t.parse_errors,
                "tool_calls": [c.model_dump(exclude={"result"}) for c in t.tool_calls],  # the tool message shows it
                "env_messages": t.env_messages,
                "policy_version": t.policy_version,
                "version_changes": [c.model_dump() for c in t.version_changes],
            }
            for t in r.turns
        ],
    }


def search_text(r: Rollout) -> str:
    """What the list's search reads: every message's text, reasoning and tool-call arguments, lowercased."""
    parts: list[str] = []
    for m in r.messages():
        content = m.get("content")
        parts.append(content if isinstance(content, str) else str(content or ""))
        parts.append(str(m.get("reasoning_content") or m.get("reasoning") or ""))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or call
            parts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    return "\n".join(p for p in parts if p).lower()


def _tool_name(tool: dict[str, Any]) -> str:
    return (tool.get("function") or tool).get("name", "?")


class Payload:
    """Everything the page shows, built once from the rollouts."""

    def __init__(
        self, rollouts: list[Rollout], token_text: Callable[[list[int]], dict[int, str]] | None, meta: dict[str, Any]
    ) -> None:
        self.summary = summarize(rollouts).to_dict()
        self.rows = [index_row(i, r) for i, r in enumerate(rollouts)]
        self.details = [detail(r) for r in rollouts]
        self.texts = [search_text(r) for r in rollouts]
        self.prompts: list[list[int]] = []
        seen: dict[str, int] = {}
        self.strips = []
        for r in rollouts:
            key = hashlib.blake2b(repr(r.prompt_ids).encode(), digest_size=12).hexdigest()
            if key not in seen:
                seen[key] = len(self.prompts)
                self.prompts.append(list(r.prompt_ids))
            self.strips.append(token_strip(r, seen[key]))
        used = sorted(
            {i for p in self.prompts for i in p}
            | {i for s in self.strips for t in s["turns"] for i in (*t["ids"], *t["bridge"])}
        )
        self.vocab = token_text(used) if token_text else {}
        self.meta = {**meta, "token_texts": bool(token_text)}

    def index(self) -> dict[str, Any]:
        """What the page parses at load: meta, summary, the list rows and the token texts (prompts and
        details are parsed when a rollout is opened)."""
        return {
            "meta": self.meta,
            "summary": self.summary,
            "rows": self.rows,
            "vocab": {str(k): v for k, v in self.vocab.items()},
        }
