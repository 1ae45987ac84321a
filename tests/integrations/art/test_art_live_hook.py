"""rollgym's live hook in ART's own loop (art_live_side.py, in ART's venv): `art_rollout` samples every turn through
ART's `model.openai_client()` and `art.gather_trajectory_groups` gathers the trajectories. Here each turn's answer is
recomputed from the request the server got (the stand-in's draws are a function of it) and checked, token by token,
against what ART's own tokenizer step read: the prompt ids the server was sent are ART's tokens before that turn,
the ids and logprobs it answered are ART's trainable tokens and logprobs."""

from __future__ import annotations

from pathlib import Path

import pytest
from standins.vllm_standin import CompletionRequest, _sample
from support.trainer_venv import run_side

from rollgym.engines.default_model import smollm2_dir

TESTS = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("art-live")
    side = Path(__file__).with_name("art_live_side.py")
    return run_side("art", side, [smollm2_dir(), tmp / "out.json"], tmp / "out.json", timeout=600, extra_path=TESTS)


def runs(mask):
    """(start, end) of each run of trainable positions."""
    out, start = [], None
    for j, m in enumerate([*mask, 0]):
        if m and start is None:
            start = j
        elif not m and start is not None:
            out.append((start, j))
            start = None
    return out


def test_each_turn_art_trains_on_is_what_arts_client_was_answered(live):
    answers = {}
    for body in live["requests"]:
        ids, logprobs, _, _ = _sample(
            body["prompt"], CompletionRequest(**body), live["vocab_size"], live["eos"], body["max_tokens"]
        )
        answers[tuple(body["prompt"])] = (ids, logprobs)
    assert len(live["rows"]) == 4 and len(live["requests"]) >= 4
    for row in live["rows"]:
        spans = runs(row["assistant_mask"])
        assert spans
        for start, end in spans:
            prompt = tuple(row["token_ids"][:start])
            assert prompt in answers, "a turn whose prompt ids ART's client did not send"
            ids, logprobs = answers[prompt]
            assert row["token_ids"][start:end] == ids
            assert row["logprobs"][start:end] == logprobs
        assert all(lp is None for lp, m in zip(row["logprobs"], row["assistant_mask"], strict=True) if not m)


def test_a_failed_row_is_arts_exception_and_the_rest_train(live):
    groups = live["groups"]
    assert [g["trajectories"] for g in groups] == [2, 2, 0]
    assert groups[0]["exceptions"] == groups[1]["exceptions"] == []
    (failure,) = groups[2]["exceptions"]  # the raise ART's gather caught (max_exceptions=1): the step goes on
    assert "NoSuchEnv" in failure
    assert all(r["model"] == "smollm2-standin" and r["logprobs"] == 0 for r in live["requests"])
