"""Mistral through mistral-common: each tokenizer version's format, bridged ids equal `encode_chat_completion`."""

from __future__ import annotations

import json

import pytest
from mistral_common.protocol.instruct.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from mistral_common.protocol.instruct.request import ChatCompletionRequest
from mistral_common.protocol.instruct.tool_calls import Function, FunctionCall, Tool, ToolCall

from rollgym.tokenization.certify import TOOLS
from rollgym.tokenization.formats import mistral_call_id

VERSIONS = ["v3", "v7", "v11", "v13"]
CALLS = [("get_weather", {"city": "Paris"}), ("search", {"query": "Paris", "limit": 1})]


def _reference(tok, calls_text: list[tuple[str, str, dict]]) -> list[int]:
    """mistral-common's own tokens for: system, user, one turn making `calls_text`, their results."""
    request = ChatCompletionRequest(
        messages=[
            SystemMessage(content="Be brief."),
            UserMessage(content="Weather and news in Paris?"),
            AssistantMessage(
                tool_calls=[
                    ToolCall(id=i, function=FunctionCall(name=n, arguments=json.dumps(a))) for i, n, a in calls_text
                ]
            ),
            *[ToolMessage(tool_call_id=i, name=n, content=f"result of {n}") for i, n, _ in calls_text],
        ],
        tools=[Tool(function=Function(**t["function"])) for t in TOOLS],
    )
    return list(tok.codec._tokenizer.encode_chat_completion(request).tokens)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_turn_bridged_equals_encode_chat_completion(family_tok, version):
    tok = family_tok(f"mistral-{version}")
    traj = tok.start(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather and news in Paris?"}], TOOLS
    )
    ids = [("abc123def", *CALLS[0]), ("xyz789ghi", *CALLS[1])]
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in ids
        ],
    }
    sampled = tok.codec.completion_ids(turn, TOOLS)  # the model writes its calls (and their ids, v3-v11) itself
    traj.add_completion(sampled, None, "stop")
    parsed = tok.parse_completion(sampled, TOOLS)
    assert parsed.errors == []
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in parsed.tool_calls] == CALLS
    if version in ("v3", "v7", "v11"):  # the ids the model wrote are the calls' ids
        assert [c["id"] for c in parsed.tool_calls] == ["abc123def", "xyz789ghi"]
    traj.messages.append(parsed.message)
    traj.add_messages(
        [
            {
                "role": "tool",
                "tool_call_id": c["id"],
                "name": c["function"]["name"],
                "content": f"result of {c['function']['name']}",
            }
            for c in parsed.tool_calls
        ]
    )
    assert traj.next_prompt_ids == _reference(tok, ids)


@pytest.mark.parametrize(
    ("version", "needle"),
    [
        ("v3", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123def"}]</s>'),
        ("v7", "[TOOL_RESULTS]abc123def[TOOL_CONTENT]21C[/TOOL_RESULTS]"),
        ("v11", '[TOOL_CALLS]get_weather[CALL_ID]abc123def[ARGS]{"city": "Paris"}</s>'),
        ("v13", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}</s>'),
    ],
)
def test_each_version_writes_its_own_format(family_tok, version, needle):
    tok = family_tok(f"mistral-{version}")
    conv = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "abc123def",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "abc123def", "name": "get_weather", "content": "21C"},
    ]
    text = tok.render(conv, TOOLS, True)
    assert needle in text
    assert ("[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT]" in text) == (version != "v3")  # v3 prepends it to the user turn
    assert "[AVAILABLE_TOOLS]" in text


def test_ids_that_are_not_mistral_call_ids_get_a_stable_one():
    assert mistral_call_id("abc123def") == "abc123def"
    assert mistral_call_id("call_0") == mistral_call_id("call_0") != mistral_call_id("call_1")
    assert len(mistral_call_id("call_0")) == 9 and mistral_call_id("call_0").isalnum()


def test_v13_reasoning_is_think_blocks(family_tok):
    tok = family_tok("mistral-v13")
    sampled = tok.codec.completion_ids(
        {"role": "assistant", "content": "Paris.", "reasoning_content": "The capital."}, None
    )
    assert tok.decode(sampled) == "[THINK]The capital.[/THINK]Paris.</s>"
    parsed = tok.parse_completion(sampled)
    assert parsed.message == {"role": "assistant", "content": "Paris.", "reasoning_content": "The capital."}


@pytest.mark.parametrize("version", ["v3", "v11"])
def test_malformed_calls_are_errors_for_the_model(family_tok, version):
    tok = family_tok(f"mistral-{version}")
    control = tok.codec.special_vocab["[TOOL_CALLS]"]
    for text in ['[{"name": "get_weather", "arguments": {', "get_weather[ARGS]not json", ""]:
        ids = [control, *tok.codec.encode_text(text), tok.codec.eos_id]
        parsed = tok.parse_completion(ids, TOOLS)
        assert parsed.errors and parsed.tool_calls == []
