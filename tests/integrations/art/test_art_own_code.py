"""ART's own code consumes rollgym's rollouts: openpipe-art 0.5.18 in its own venv (.ci/trainers-up art) loads
`rollgym export --format art` as its `TrajectoryGroup`s, tokenizes them with `tokenize_trajectory_groups` (what its
LocalBackend trains through), packs them and computes its loss with SmolLM2's logprobs (art_side.py). Here what ART
built is checked, token by token, against rollgym's records: ART's tokens are rollgym's prompt + completion ids, its
`assistant_mask` rollgym's env_mask, its logprobs the sampling logprobs (NaN elsewhere)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from rollouts_for_art import art_rollouts
from support.trainer_venv import run_side

import rollgym as rg
from rollgym.engines.default_model import smollm2_dir
from rollgym.integrations.art import export_art


@pytest.fixture(scope="module")
def art_read(tool_tok, say, smollm2_rollout, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("art")
    kinds = art_rollouts(tool_tok, say) | {"smollm2": smollm2_rollout}
    run = tmp / "run"
    run.mkdir()
    (run / "rollouts.jsonl").write_text("".join(r.to_json() + "\n" for r in kinds.values()))
    exported, count = export_art(run, include_errored=True)
    assert count == 5  # the failed one is its group's exception
    template = tmp / "template.jinja"
    template.write_text(tool_tok.template)
    assert rg.Policy("smollm2-135m").tokenizer.template == tool_tok.template  # the smollm2 rollout's template too
    side = Path(__file__).with_name("art_side.py")
    return run_side("art", side, [exported, template, smollm2_dir(), tmp / "out.json"], tmp / "out.json"), kinds


def rows_of(read, rollout):
    return [r for r in read["rows"] if r["rollout_id"] == rollout.id]


def test_arts_tokens_mask_and_logprobs_are_rollgyms_token_by_token(art_read):
    read, kinds = art_read
    assert read["art"] == "0.5.18"
    for kind in ("right", "wrong", "versions", "smollm2"):
        rollout = kinds[kind]
        (row,) = rows_of(read, rollout)
        view = rollout.token_view()
        n = len(view["prompt_ids"])
        assert row["token_ids"] == view["prompt_ids"] + view["completion_ids"], kind
        assert row["assistant_mask"] == [0] * n + view["env_mask"], kind
        want = [None] * n + [lp if m else None for lp, m in zip(view["logprobs"], view["env_mask"], strict=True)]
        assert row["logprobs"] == want, kind  # exactly the sampling logprobs; NaN on prompt and tool ids
        assert row["reward"] == rollout.reward
    assert 0 in kinds["right"].token_view()["env_mask"]  # a tool turn: environment ids between two sampled runs
    assert rows_of(read, kinds["versions"])[0]["policy_versions"] == [3, 5]


def test_a_rewritten_history_is_an_art_history_per_sample(art_read):
    read, kinds = art_read
    rollout = kinds["template"]
    rows = rows_of(read, rollout)
    samples = rollout.samples()
    assert [r["history"] for r in rows] == [0, 1] and len(samples) == 2
    first = samples[0]
    ends = max(j for j, m in enumerate(first["env_mask"]) if m) + 1  # ART's history ends on its last choice
    assert rows[0]["token_ids"] == first["prompt_ids"] + first["completion_ids"][:ends]  # before the rewrite, exact
    for row, sample in zip(rows, samples, strict=True):  # each history's sampled ids and logprobs, exact
        sampled = [t for t, m in zip(row["token_ids"], row["assistant_mask"], strict=True) if m]
        assert sampled == [t for t, m in zip(sample["completion_ids"], sample["env_mask"], strict=True) if m]
        assert [lp for lp in row["logprobs"] if lp is not None] == [
            lp for lp, m in zip(sample["logprobs"], sample["env_mask"], strict=True) if m
        ]


def test_groups_advantages_and_a_failed_rollout_as_arts_exception(art_read):
    read, kinds = art_read
    right, wrong, failed = kinds["right"], kinds["wrong"], kinds["failed"]
    group = next(g for g in read["groups"] if right.id in g["trajectories"])
    assert group["trajectories"] == [right.id, wrong.id] and group["exceptions"] == []
    (row_right,), (row_wrong,) = rows_of(read, right), rows_of(read, wrong)
    assert math.isclose(row_right["advantage"], 1.0, abs_tol=1e-4)  # ART's GRPO: (r - mean) / (std + 1e-6)
    assert math.isclose(row_wrong["advantage"], -1.0, abs_tol=1e-4)
    failing = [g for g in read["groups"] if any(failed.id in e for e in g["exceptions"])]
    assert len(failing) == 1 and failing[0]["trajectories"] == []  # dropped, as ART's gather drops a raise
    assert not rows_of(read, failed)
    assert read["kept_by_default"] == 2  # ART's default drops zero-advantage trajectories: the lone ones


def test_arts_loss_runs_on_smollm2s_own_logprobs(art_read):
    read, kinds = art_read
    assert read["packed_advantages_finite"] and math.isfinite(read["loss"])
    assert read["packed_trainable"] == sum(sum(r["assistant_mask"]) for r in read["rows"])
    ids = kinds["smollm2"].token_view()
    want = ids["prompt_ids"] + ids["completion_ids"]
    (b,) = [b for b, t in enumerate(read["packed_tokens"]) if t[: len(want)] == want]
    old, new = read["packed_old_logprobs"][b], read["new_logprobs"][b]
    gaps = [abs(new[j] - old[j + 1]) for j in range(len(want) - 1) if old[j + 1] is not None]
    assert gaps and max(gaps) < 1e-3  # ART's shifted view: SmolLM2 recomputes what it sampled
