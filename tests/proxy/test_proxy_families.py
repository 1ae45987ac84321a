"""A GPT-OSS (Harmony) or Mistral model behind the proxy's three APIs: the agent gets standard tool calls, the
trainer the exact ids, in the family's own format (official `openai` and `anthropic` clients)."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest
from support import call_message, written_turn
from support.proxy import SpyEngine

from rollgym.engines.scripted import ScriptedEngine
from rollgym.rollouts.policy import Policy

FAMILIES = ["gpt-oss", "mistral-v3", "mistral-v11"]
#: What the model's own format writes after the tool result, as the family ends that message.
RESULT = {
    "gpt-oss": "<|start|>functions.add to=assistant<|channel|>commentary<|message|>3<|end|><|start|>assistant",
    "mistral-v3": '[TOOL_RESULTS]{"content": 3, "call_id": "',
    "mistral-v11": "[TOOL_RESULTS]",
}


@pytest.fixture()
def tool(tools):
    """The proxy tests' `add` tool (tests/proxy/conftest.py)."""
    return tools[0]


@pytest.fixture()
def family_proxy(family_tok, tool):
    from contextlib import ExitStack

    from rollgym.proxy import RecordingProxy

    stack = ExitStack()

    def make(name: str):
        tok = family_tok(name)
        script = [
            written_turn(tok, call_message("add", "abc123def", a=1, b=2), [tool]),
            written_turn(tok, {"role": "assistant", "content": "It is 3."}),
        ]
        spy = SpyEngine(ScriptedEngine(script))
        proxy = RecordingProxy(Policy(engine=spy, tokenizer=tok))
        stack.enter_context(proxy.in_thread())
        return tok, proxy.session(), spy, script

    with stack:
        yield make


def _check_records(tok, sess, spy, script, name: str) -> None:
    assert [s.calls for s in sess.segments] == [[0, 1]]  # one token-exact trajectory
    prev, nxt = sess.calls
    assert spy.prompts[1] == spy.prompts[0] + prev.completion_ids + nxt.bridge_ids
    assert RESULT[name] in tok.decode(nxt.bridge_ids)
    [rollout] = sess.rollouts()
    view = rollout.token_view()
    assert [i for i, m in zip(view["completion_ids"], view["env_mask"], strict=True) if m] == sum(script, [])


@pytest.mark.parametrize("name", FAMILIES)
def test_chat_completions(family_proxy, tool, name):
    tok, sess, spy, script = family_proxy(name)
    client = openai.OpenAI(base_url=sess.base_url, api_key="x", max_retries=0)
    messages = [{"role": "user", "content": "Add 1 and 2."}]
    first = client.chat.completions.create(model="m", messages=messages, tools=[tool]).choices[0]
    assert first.finish_reason == "tool_calls"
    (call,) = first.message.tool_calls
    assert call.function.name == "add" and json.loads(call.function.arguments) == {"a": 1, "b": 2}
    messages += [first.message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "3"}]
    second = client.chat.completions.create(model="m", messages=messages, tools=[tool]).choices[0]
    assert second.message.content == "It is 3." and second.finish_reason == "stop"
    _check_records(tok, sess, spy, script, name)


@pytest.mark.parametrize("name", FAMILIES)
def test_anthropic_messages(family_proxy, tool, name):
    tok, sess, spy, script = family_proxy(name)
    client = anthropic.Anthropic(base_url=sess.base_url.removesuffix("/v1"), api_key="x", max_retries=0)
    tool = {"name": "add", "description": "Add two integers.", "input_schema": tool["function"]["parameters"]}
    user = [{"role": "user", "content": "Add 1 and 2."}]
    first = client.messages.create(model="m", max_tokens=256, messages=user, tools=[tool])
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert first.stop_reason == "tool_use" and use.name == "add" and use.input == {"a": 1, "b": 2}
    history = user + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "3"}]},
    ]
    second = client.messages.create(model="m", max_tokens=256, messages=history, tools=[tool])
    assert [b.text for b in second.content if b.type == "text"] == ["It is 3."]
    _check_records(tok, sess, spy, script, name)


@pytest.mark.parametrize("name", FAMILIES)
def test_responses(family_proxy, tool, name):
    tok, sess, spy, script = family_proxy(name)
    client = openai.OpenAI(base_url=sess.base_url, api_key="x", max_retries=0)
    tool = {"type": "function", **tool["function"]}
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add 1 and 2."}]}]
    first = client.responses.create(model="m", input=items, tools=[tool], store=False)
    (fc,) = [o for o in first.output if o.type == "function_call"]
    assert fc.name == "add" and json.loads(fc.arguments) == {"a": 1, "b": 2}
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items.append({"type": "function_call_output", "call_id": fc.call_id, "output": "3"})
    second = client.responses.create(model="m", input=items, tools=[tool], store=False)
    assert second.output_text == "It is 3."
    _check_records(tok, sess, spy, script, name)
