"""Runs in verifiers' own venv (.ci/trainers-up verifiers): verifiers 0.4.0 reads `rollgym export --format verifiers`
with its own loader (`vf.WireEpisode`), and its own `Trace`/`Branch` code reports each branch's token ids, sampled
mask and spread logprobs, the trace's reward and errors and the episode's policy span. Each keep-history rollout is
also replayed turn by turn through verifiers' own graph builder (`graph.prepare_turn(...).commit(Response)`), which
must build the same nodes. prime-rl's `trace_to_samples` (not installable) is applied as its source reads. Writes
JSON for test_verifiers_own_code.py.

usage: python verifiers_side.py VERIFIERS.jsonl ROLLOUTS.jsonl OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import verifiers
import verifiers.v1 as vf
from pydantic import TypeAdapter
from verifiers.v1 import graph

from rollgym.integrations.verifiers.episode import verifiers_episode
from rollgym.integrations.verifiers.trace_record import message_record
from rollgym.rollouts.output import read_rollouts
from rollgym.rollouts.records import Rollout, concat_turns

MESSAGE = TypeAdapter(vf.Message)
NODE_FIELDS = ("parent", "sampled", "token_ids", "mask", "logprobs")


def prime_rl_samples(trace: vf.Trace) -> list[dict]:
    """prime-rl's `trace_to_samples` (src/prime_rl/orchestrator/trajectories.py:69-89 and :111-160 at commit
    559b44772e471d1538537b8805cc77f3824a5e64), the fields verifiers 0.4.0 has: a sampled node shared by branches
    trains in the first only; a branch with no trainable token gives no sample; token_ids, mask, logprobs."""
    trained: set[int] = set()
    out = []
    for branch in trace.branches:
        mask: list[bool] = []
        for node in branch.nodes:
            if node.sampled and any(node.mask) and id(node) in trained:
                mask.extend([False] * len(node.mask))
            else:
                if node.sampled and any(node.mask):
                    trained.add(id(node))
                mask.extend(node.mask)
        if any(mask):
            out.append({"token_ids": branch.token_ids, "mask": mask, "logprobs": branch.logprobs})
    return out


def replay(rollout: Rollout, loaded: vf.Trace) -> list[dict]:
    """verifiers' own graph builder over the rollout's turns: each turn's prompt (messages and ids, as the model saw
    them) and its sampled completion committed as a `Response` with `TurnTokens`."""
    trace = vf.WireTrace.model_validate(loaded.to_record() | {"nodes": []})
    tools = loaded.nodes[0].tools if loaded.nodes else []
    messages = [MESSAGE.validate_python(message_record(m)) for m in rollout.initial_messages]
    for k, turn in enumerate(rollout.turns):
        prompt_ids = (
            list(rollout.prompt_ids) + concat_turns(rollout.turns[:k], keep_trailing_bridge=True)["completion_ids"]
        )
        assert len(prompt_ids) == turn.prompt_len, "the rollout's turn prompts are its ids so far"
        reply = MESSAGE.validate_python(message_record(turn.message))
        pending = graph.prepare_turn(trace, list(messages), tools)
        pending.commit(
            vf.Response(
                id=f"turn-{k}",
                created=0,
                model=rollout.model,
                message=reply,
                finish_reason="stop",
                tokens=vf.TurnTokens(
                    prompt_ids=prompt_ids,
                    completion_ids=list(turn.completion_ids),
                    completion_logprobs=list(turn.logprobs),
                ),
            )
        )
        messages += [reply, *(MESSAGE.validate_python(message_record(m)) for m in turn.env_messages)]
    return [node.model_dump(include=set(NODE_FIELDS)) for node in trace.nodes]


def differs(ours, theirs, where: str = "") -> list[str]:
    """Where verifiers' serialization disagrees with rollgym's record, on the fields rollgym wrote (a field verifiers
    leaves out when empty counts as equal to rollgym's empty value)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [
            d
            for k, v in ours.items()
            for d in (differs(v, theirs[k], f"{where}.{k}") if k in theirs else ([] if not v else [f"{where}.{k}"]))
        ]
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [d for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for d in differs(a, b, f"{where}[{i}]")]
    return [] if ours == theirs else [where]


def main() -> None:
    exported, rollouts_path, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    rollouts = {r.id: r for r in read_rollouts(rollouts_path)}
    result: dict = {"verifiers": verifiers.__version__, "episodes": {}}
    for line in exported.read_text().splitlines():
        record = json.loads(line)
        episode = vf.WireEpisode.model_validate_json(line)  # verifiers' own loader for trainers
        trace = episode.traces[0]
        rollout = rollouts[trace.info["rollgym_rollout_id"]]
        again = trace.to_record(float_decimals=None)
        ours = record["traces"][0]
        policy = episode.run.work.policy if episode.run is not None and episode.run.type == "train" else None
        entry = {
            "branches": [
                {"token_ids": b.token_ids, "sampled_mask": b.sampled_mask, "logprobs": b.logprobs}
                for b in trace.branches
            ],
            "reward": trace.reward,
            "rewards": {k: None if v is None else v.value for k, v in trace.rewards.items()},
            "ok": trace.ok,
            "has_error": trace.has_error,
            "episode_ok": episode.ok,
            "errors": [e.message for e in trace.errors],
            "stop_condition": trace.stop_condition,
            "num_turns": trace.num_turns,
            "group": episode.group.id if episode.group else None,
            "policy": None if policy is None else [policy.start, policy.end],
            "compact_logprobs_fit": all(len(n.logprobs) == sum(n.mask) for n in trace.nodes),
            # verifiers' own serialization of what it loaded gives back rollgym's record, field for field
            "roundtrip_differs": differs(ours, again),
            # prime-rl trains only ok traces (TrainSink.process_episode drops errored ones)
            "prime_rl": prime_rl_samples(trace) if trace.ok else [],
            "nodes": [n.model_dump(include=set(NODE_FIELDS)) for n in trace.nodes],
            "same_as_rollgyms_episode": verifiers_episode(
                rollout, run_id=episode.run.id if episode.run else "rollgym"
            ).model_dump(exclude={"traces": {0: {"verifiers"}}})
            == episode.model_dump(exclude={"traces": {0: {"verifiers"}}}),
        }
        keep = rollout.error is None and all(t.resample is None for t in rollout.turns)
        if keep:
            entry["replayed_nodes"] = replay(rollout, trace)
        result["episodes"][rollout.id] = entry
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
