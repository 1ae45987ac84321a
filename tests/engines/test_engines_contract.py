"""The shared contract: sampling parameters, the output validator, and the batched logits processing."""

from __future__ import annotations

import pytest
import torch
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from rollgym.engines.base import SamplingParams
from rollgym.engines.errors import BadRequestError, ContextOverflowError, InvalidOutputError
from rollgym.engines.sampling import processed_logprobs, sample_rows
from rollgym.engines.validation import checked_generation, validate_output, validate_prompt
from rollgym.errors import UsageError


@pytest.mark.parametrize(
    "bad",
    [
        {"temperature": -0.1},
        {"top_p": 0.0},
        {"top_p": 1.5},
        {"top_k": -1},
        {"max_tokens": 0},
        {"seed": -3},
        {"max_token": 5},
    ],
)
def test_bad_sampling_params_are_rejected(bad):
    field, value = next(iter(bad.items()))
    with pytest.raises(UsageError, match=rf"SamplingParams\({field}={value!r}\)"):
        SamplingParams(**bad)


def test_prompt_validation():
    assert validate_prompt((1, 2, 3), max_model_len=10) == [1, 2, 3]
    with pytest.raises(BadRequestError, match="empty"):
        validate_prompt([], max_model_len=10)
    with pytest.raises(ContextOverflowError, match="at most 9 tokens"):
        validate_prompt(list(range(10)), max_model_len=10)
    with pytest.raises(BadRequestError, match=">= 0"):
        validate_prompt([1, -2], max_model_len=10)
    with pytest.raises(BadRequestError, match="integer"):
        validate_prompt([1, "x"], max_model_len=10)
    for bad in ([1, 2.0], [3.5], [1, None], [None]):  # the fast path for lists refuses these too
        with pytest.raises(BadRequestError, match="integer"):
            validate_prompt(bad, max_model_len=10)
    import numpy as np

    for mixed in ([np.int64(5), 6], [True, 5, 6]):  # converted one by one, to plain ints
        ids = validate_prompt(mixed, max_model_len=10)
        assert ids == [int(t) for t in mixed] and all(type(t) is int for t in ids)
    assert validate_prompt(iter([4, 5]), max_model_len=10) == [4, 5]  # an iterator is read once
    for raw in (b"\x01\x02", bytearray(8), memoryview(bytes(8))):  # bytes are not token ids
        with pytest.raises(BadRequestError, match="sequence of token ids"):
            validate_prompt(raw, max_model_len=10)
    for bad in ((t for t in [1, -2]), [1, 2**64]):
        with pytest.raises(BadRequestError, match=r">= 0.*got \[(-2|18446744073709551616)\]"):
            validate_prompt(bad, max_model_len=10)
    prompt = [7, 8]
    ids = validate_prompt(prompt, max_model_len=10)
    assert ids == prompt and ids is not prompt  # a copy: the caller may keep appending to its list


def _check(**overrides):
    fields = {
        "engine": "e",
        "completion_ids": [4, 5],
        "logprobs": [-0.5, -0.1],
        "finish_reason": "length",
        "sampling": SamplingParams(max_tokens=2),
    }
    fields.update(overrides)
    validate_output(**fields)


def test_output_validator_rules():
    _check()
    for bad, message in [
        ({"logprobs": [-0.5]}, "pair one to one"),
        ({"logprobs": [-0.5, float("nan")]}, "not a finite number"),
        ({"logprobs": [-0.5, float("-inf")]}, "not a finite number"),
        ({"logprobs": [-0.5, None]}, "not a finite number"),
        ({"logprobs": [-0.5, 0.3]}, "<= 0"),
        ({"completion_ids": [4, -5]}, "non-negative"),
        ({"finish_reason": "eos"}, "unknown finish_reason"),
        ({"sampling": SamplingParams(max_tokens=1)}, "max_tokens was 1"),
        ({"completion_ids": [], "logprobs": []}, "no tokens"),
        ({"sent_prompt": [1, 2, 3], "echoed_prompt": [1, 2, 4]}, "first difference at position 2"),
    ]:
        with pytest.raises(InvalidOutputError, match=message):
            _check(**bad)


def test_stop_token_must_be_last():
    with pytest.raises(InvalidOutputError, match="not the last"):
        checked_generation(
            engine="e",
            model="m",
            sampling=SamplingParams(),
            completion_ids=[4, 5],
            logprobs=[-1.0, -1.0],
            finish_reason="stop",
            stop_token_id=4,
            prompt_ids=[1],
        )


@pytest.mark.parametrize("temperature,top_k,top_p", [(1.0, 0, 1.0), (0.7, 5, 1.0), (1.2, 0, 0.8), (0.5, 50, 0.9)])
def test_processing_matches_transformers_warpers(temperature, top_k, top_p):
    torch.manual_seed(0)
    logits = torch.randn(3, 200) * 3
    ours = processed_logprobs(
        logits, torch.full((3,), temperature), torch.full((3,), top_k, dtype=torch.long), torch.full((3,), top_p)
    )
    ref = TemperatureLogitsWarper(temperature)(None, logits.clone())
    if top_k:
        ref = TopKLogitsWarper(top_k)(None, ref)
    if top_p < 1.0:
        ref = TopPLogitsWarper(top_p)(None, ref)
    ref = ref.log_softmax(-1)
    assert torch.equal(torch.isinf(ours), torch.isinf(ref))
    finite = torch.isfinite(ref)
    assert torch.allclose(ours[finite], ref[finite], atol=1e-5)


def test_rows_keep_their_own_parameters_and_greedy_is_plain_log_softmax():
    logits = torch.randn(2, 50)
    out = processed_logprobs(logits, torch.tensor([0.0, 1.0]), torch.tensor([3, 3]), torch.tensor([0.5, 1.0]))
    assert torch.allclose(out[0], logits[0].log_softmax(-1))  # greedy row ignores top-k/top-p
    assert int(torch.isfinite(out[1]).sum()) == 3  # top-k 3 on the sampled row


def test_sampling_draws_only_kept_tokens_and_is_reproducible():
    logits = torch.randn(1, 100)
    lp = processed_logprobs(logits, torch.tensor([1.0]), torch.tensor([4]), torch.tensor([1.0]))
    kept = set(torch.isfinite(lp[0]).nonzero().flatten().tolist())
    draws = [int(sample_rows(lp, torch.tensor([False]), [torch.Generator().manual_seed(s)])[0]) for s in range(40)]
    assert set(draws) <= kept and len(set(draws)) > 1
    again = [int(sample_rows(lp, torch.tensor([False]), [torch.Generator().manual_seed(s)])[0]) for s in range(40)]
    assert draws == again
