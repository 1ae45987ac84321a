"""Every tool-call format, fuzzed: malformed, truncated or interleaved calls are errors told to the model, never a
crash; each format's well-formed calls come back exactly, also when cut or mixed with garbage."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollgym.tokenization.parsers import PARSERS, make_parser

_ARGS = st.dictionaries(
    st.text("abcxyz_", min_size=1, max_size=6),
    st.one_of(
        st.integers(-1000, 10**20),
        st.booleans(),
        st.none(),
        st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    ),
    max_size=3,
)
_NAMES = st.text("abcdefgh_", min_size=1, max_size=8)


def _pythonic_value(v):
    return repr(v) if not isinstance(v, bool | type(None)) else {True: "True", False: "False", None: "None"}[v]


#: How each format writes one call, and the markers its parser looks for (fuzz material).
WRITE = {
    "hermes": lambda n, a: f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>",
    "kimi_k2": lambda n, a: (
        f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{n}:0<|tool_call_argument_begin|>{json.dumps(a)}<|tool_call_end|><|tool_calls_section_end|>"
    ),
    "deepseek": lambda n, a: (
        f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{json.dumps(a)}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "toolcall_json": lambda n, a: f"<TOOLCALL>{json.dumps([{'name': n, 'arguments': a}])}</TOOLCALL>",
    "cohere": lambda n, a: (
        f'<|START_ACTION|>[{{"tool_call_id": "0", "tool_name": "{n}", "parameters": {json.dumps(a)}}}]<|END_ACTION|>'
    ),
    "pythonic": lambda n, a: (
        "<|tool_call_start|>["
        + n
        + "("
        + ", ".join(f"{k}={_pythonic_value(v)}" for k, v in a.items())
        + ")]<|tool_call_end|>"
    ),
}
MARKERS = {
    "hermes": ["<tool_call>", "</tool_call>"],
    "kimi_k2": [
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
        "functions.f:0",
    ],
    "deepseek": [
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁sep｜>",
        "<｜tool▁call▁end｜>",
        "function",
        "\n```json\n",
        "```",
    ],
    "toolcall_json": ["<TOOLCALL>", "</TOOLCALL>", "[", "]"],
    "cohere": ["<|START_ACTION|>", "<|END_ACTION|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>", '"tool_name"'],
    "pythonic": ["<|tool_call_start|>", "<|tool_call_end|>", "(", ")", "=", "'", "f"],
    "glm": ["<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"],
    "xml_function": ["<tool_call>", "</tool_call>", "<function=f>", "</function>", "<parameter=x>", "</parameter>"],
    "llama_json": ["<|python_tag|>", '{"name": "f", "parameters": ', "}", ";"],
    "hermes_or_json": ["<tool_call>", "</tool_call>", '{"name": "f", "arguments": ', '{"name": ', "}"],
}
_JUNK = ["{", "}", '"', ":", ",", "1", "x", " ", "\n", "null", '{"a": 1}', "[1,", "\\"]


def _check(result) -> None:
    for name, args in result.calls:
        assert isinstance(name, str) and name and isinstance(args, dict)
    for err in result.errors:
        assert isinstance(err.index, int) and isinstance(err.message, str) and err.message
    assert len(result.call_ids) <= len(result.calls)


@pytest.mark.parametrize("fmt", sorted(PARSERS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_mix_of_markers_and_junk_parses_without_raising(fmt, data):
    pieces = data.draw(st.lists(st.sampled_from(MARKERS[fmt] + _JUNK), max_size=16))
    _check(make_parser(fmt).parse("".join(pieces)))


@pytest.mark.parametrize("fmt", sorted(WRITE))
@settings(max_examples=60, deadline=None)
@given(name=_NAMES, args=_ARGS, cut=st.integers(0, 400), junk=st.sampled_from(["", "garbage", "<", "}}]"]))
def test_written_calls_round_trip_and_cut_ones_are_reported(fmt, name, args, cut, junk):
    parser = make_parser(fmt)
    text = WRITE[fmt](name, args)
    whole = parser.parse("Thinking done. " + text)
    assert whole.errors == [] and whole.calls == [(name, args)]
    truncated = text[: min(cut, len(text) - 1)]  # a completion cut short by max_tokens
    _check(parser.parse(truncated + junk))
    both = parser.parse(text + junk + text)  # interleaved: a good call, junk, a good call
    _check(both)


@pytest.mark.parametrize("family", ["gpt-oss", "mistral-v3", "mistral-v11", "mistral-v13"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_library_formats_parse_any_id_sequence_without_raising(family_tok, family, data):
    """Harmony and Mistral parse ids: any mix of their special ids and text is an error or a call, never a crash."""
    tok = family_tok(family)
    specials = sorted(tok.codec.special_vocab.values())[:40] + list(tok.stop_token_ids)
    text = [
        tok.codec.encode_text(s)
        for s in ("get_weather", '{"city": "x"}', "functions.get_weather", " to=", "json", "hi")
    ]
    chunks = data.draw(
        st.lists(st.one_of(st.sampled_from(specials).map(lambda i: [i]), st.sampled_from(text)), max_size=14)
    )
    parsed = tok.parse_completion([i for chunk in chunks for i in chunk])
    assert parsed.message["role"] == "assistant" and isinstance(parsed.message["content"], str)
    for err in parsed.errors:
        assert err.message
