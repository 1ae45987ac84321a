"""The engine client's JSON bodies (orjson both ways, engines/http_client.py): the bytes sent mean what the
standard library would have sent, and an answer orjson refuses but Python servers write (a bare NaN) still reads
as a float, so output validation names it instead of a parse error hiding it."""

from __future__ import annotations

import json
import math

import pytest

from rollgym.engines.http_client import decode_body, encode_body


def test_a_token_id_body_encodes_to_the_same_json():
    body = {
        "prompt": list(range(0, 152000, 997)),
        "temperature": 0.7,
        "stop_token_ids": [151645],
        "seed": 2**62,
        "skip_special_tokens": False,
        "model": "Qwen/Qwen3-8B ü",
    }
    sent = encode_body(body)
    assert isinstance(sent, bytes)
    assert json.loads(sent) == body
    assert encode_body(None) is None


def test_an_answer_with_a_bare_nan_reads_as_nan_and_garbage_is_a_value_error():
    answer = decode_body(b'{"choices": [{"logprobs": {"token_logprobs": [-0.5, NaN]}}]}')
    assert math.isnan(answer["choices"][0]["logprobs"]["token_logprobs"][1])
    assert decode_body(b'{"token_ids": [1, 2, 3]}') == {"token_ids": [1, 2, 3]}
    with pytest.raises(ValueError):
        decode_body(b"<html>bad gateway</html>")


def test_a_trajectorys_prompt_is_not_copied_again_by_the_engine(tool_tok):
    """The trajectory hands each request a fresh `TokenIds` it has checked: validation passes that same list on
    (an idle rollout waiting for the engine used to hold a second copy of its whole prompt)."""
    from rollgym.engines.validation import validate_prompt

    traj = tool_tok.start([{"role": "user", "content": "What is 2 + 2?"}])
    prompt = traj.next_prompt_ids
    assert validate_prompt(prompt, max_model_len=None) is prompt
    plain = list(prompt)
    assert (
        validate_prompt(plain, max_model_len=None) == plain and validate_prompt(plain, max_model_len=None) is not plain
    )
