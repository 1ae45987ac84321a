"""verifiers' own code consumes rollgym's rollouts: verifiers 0.4.0 in its own venv (.ci/trainers-up verifiers) loads
`rollgym export --format verifiers` with `vf.WireEpisode`, reads each `Branch`'s token ids, mask and logprobs and each
`Trace`'s reward, serializes it back, and rebuilds every keep-history rollout with its own graph builder
(verifiers_side.py). prime-rl's `trace_to_samples` is not installable; it is applied as its source at commit 559b447
reads. Here what verifiers produced is checked, token by token, against rollgym's records."""

from __future__ import annotations

from pathlib import Path

import pytest
from rollouts_for_verifiers import varied_rollouts
from support.trainer_venv import run_side

from rollgym.integrations.verifiers import branch_view, export_verifiers, trace_record


@pytest.fixture(scope="module")
def verifiers_read(tool_tok, say, smollm2_rollout, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verifiers")
    kinds = varied_rollouts(tool_tok, say) | {"smollm2": smollm2_rollout}
    run = tmp / "run"
    run.mkdir()
    (run / "rollouts.jsonl").write_text("".join(r.to_json() + "\n" for r in kinds.values()))
    exported, count = export_verifiers(run, include_errored=True)
    assert count == 6
    side = Path(__file__).with_name("verifiers_side.py")
    args = [exported, run / "rollouts.jsonl", tmp / "out.json"]
    return run_side("verifiers", side, args, tmp / "out.json", timeout=600, extra_path=Path(__file__).parent), kinds


def test_verifiers_branches_hold_rollgyms_ids_mask_and_logprobs_token_by_token(verifiers_read):
    read, kinds = verifiers_read
    assert read["verifiers"] == "0.4.0"
    for kind, rollout in kinds.items():
        got = read["episodes"][rollout.id]
        want = branch_view(rollout) if rollout.turns else []  # failed before its first turn: no ids, no branch
        assert [b["token_ids"] for b in got["branches"]] == [w["token_ids"] for w in want], kind
        assert [b["sampled_mask"] for b in got["branches"]] == [w["sampled_mask"] for w in want], kind
        assert [b["logprobs"] for b in got["branches"]] == [w["logprobs"] for w in want], kind
        assert got["compact_logprobs_fit"] and got["num_turns"] == len(rollout.turns)
        assert got["roundtrip_differs"] == [], kind  # verifiers writes back exactly what rollgym wrote
        assert got["same_as_rollgyms_episode"], kind  # rollgym's verifiers_episode builds the same Episode
        assert got["group"] == rollout.group_id
    assert len(read["episodes"][kinds["template"].id]["branches"]) == 2
    tools = read["episodes"][kinds["tools"].id]["branches"][0]["sampled_mask"]
    assert tools[-1] and False in tools[tools.index(True) :]  # a tool bridge with mask False between sampled runs


def test_verifiers_own_graph_builder_makes_the_same_nodes(verifiers_read):
    read, kinds = verifiers_read
    replayed = [k for k, r in kinds.items() if "replayed_nodes" in read["episodes"][r.id]]
    assert sorted(replayed) == ["smollm2", "tools", "versions"]
    for kind in replayed:
        got = read["episodes"][kinds[kind].id]
        assert got["replayed_nodes"] == got["nodes"], kind
        ours = trace_record(kinds[kind])["nodes"]
        assert [n["token_ids"] for n in got["nodes"]] == [n["token_ids"] for n in ours]


def test_rewards_failures_versions_and_prime_rls_samples(verifiers_read):
    read, kinds = verifiers_read
    tools = read["episodes"][kinds["tools"].id]
    assert tools["reward"] == 1.0 == kinds["tools"].reward and tools["ok"] and not tools["has_error"]
    failed = read["episodes"][kinds["failed"].id]
    assert failed["has_error"] and not failed["episode_ok"] and failed["rewards"] == {"reward": None}
    assert failed["reward"] == 0.0 and "answer" in failed["errors"][0] and failed["prime_rl"] == []
    assert failed["stop_condition"] == "environment_error"
    broken = read["episodes"][kinds["broken"].id]  # failed mid-episode: what was sampled is kept, prime-rl drops it
    assert broken["has_error"] and broken["stop_condition"] == "engine_error" and broken["prime_rl"] == []
    assert broken["num_turns"] == 1 and any(broken["branches"][0]["sampled_mask"])
    assert read["episodes"][kinds["versions"].id]["policy"] == [3, 5]
    assert tools["policy"] is None
    for kind in ("tools", "versions", "template", "smollm2"):
        rollout = kinds[kind]
        samples = read["episodes"][rollout.id]["prime_rl"]
        want = branch_view(rollout)
        assert [s["token_ids"] for s in samples] == [w["token_ids"] for w in want], kind
        assert [s["mask"] for s in samples] == [w["sampled_mask"] for w in want], kind
        assert [s["logprobs"] for s in samples] == [w["logprobs"] for w in want], kind
