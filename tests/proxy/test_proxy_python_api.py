"""The Python API on the caller's event loop (`async with RecordingProxy(...)`), and tool_choice handling."""

from __future__ import annotations

import openai

from rollgym.engines.scripted import ScriptedEngine
from rollgym.proxy import RecordingProxy
from rollgym.rollouts.policy import Policy


async def test_async_with_serves_on_the_running_loop(ptok, scripts, tools):
    engine = ScriptedEngine([scripts.call("add", a=1, b=1), scripts.text("2")])
    async with RecordingProxy(Policy(engine=engine, tokenizer=ptok), api_key="k") as proxy:
        sess = proxy.session(task_id="t")
        assert sess.base_url == f"{proxy.base_url}/sessions/{sess.id}/v1" and proxy.base_url.startswith(
            "http://127.0.0.1:"
        )
        client = openai.AsyncOpenAI(base_url=sess.base_url, api_key="k", max_retries=0)
        msgs = [{"role": "user", "content": "1+1"}]
        first = (await client.chat.completions.create(model="m", messages=msgs, tools=tools)).choices[0].message
        msgs += [
            first.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "2"},
        ]
        await client.chat.completions.create(model="m", messages=msgs, tools=tools)
    (rollout,) = sess.rollouts()
    assert rollout.task_id == "t" and len(rollout.turns) == 2 and rollout.turns[0].env_messages[0]["content"] == "2"
    assert rollout.token_view()["env_mask"].count(1) == sum(len(t.completion_ids) for t in rollout.turns)


async def test_tool_choice_none_and_required_are_reported(ptok, scripts, tools):
    engine = ScriptedEngine([scripts.call("add", a=1, b=1), scripts.text("no tools")])
    async with RecordingProxy(Policy(engine=engine, tokenizer=ptok)) as proxy:
        sess = proxy.session()
        client = openai.AsyncOpenAI(base_url=sess.base_url, api_key="x", max_retries=0)
        msgs = [{"role": "user", "content": "1+1"}]
        none = (
            await client.chat.completions.create(model="m", messages=msgs, tools=tools, tool_choice="none")
        ).choices[0]
        assert none.message.tool_calls is None and none.finish_reason == "stop"
        required = await client.chat.completions.create(model="m", messages=msgs, tools=tools, tool_choice="required")
        assert required.choices[0].message.content == "no tools"
    assert "dropped 1 tool call" in sess.calls[0].warnings[0]
    assert "called no tool" in sess.calls[1].warnings[0]
    assert sess.calls[0].completion_ids == scripts.call("add", a=1, b=1)  # the sampled ids keep what the model wrote
