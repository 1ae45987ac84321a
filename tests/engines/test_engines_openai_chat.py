"""OpenAIChatEngine with the real `openai` client over loopback HTTP, against a chat-completions stand-in.

The stand-in (standins.openai_standin) answers with the fields of OpenAI's
`ChatCompletion` as typed in openai-python src/openai/types/chat/chat_completion.py.
"""

from __future__ import annotations

import pytest
from standins.loopback import LoopbackServer
from standins.openai_standin import make_openai_standin

from rollgym.engines.base import SamplingParams
from rollgym.engines.chat import ChatEngine
from rollgym.engines.errors import (
    BadRequestError,
    ContextOverflowError,
    EngineTimeoutError,
    ServerError,
    UnreachableError,
)
from rollgym.engines.openai_chat import OpenAIChatEngine

TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture(scope="module")
def standin():
    app, control = make_openai_standin()
    with LoopbackServer(app) as server:
        yield server, control


@pytest.fixture
def control(standin):
    control = standin[1]
    control.__init__()
    return control


@pytest.fixture
async def engine(standin, control):
    eng = OpenAIChatEngine("gpt-4o-mini", base_url=f"{standin[0].base_url}/v1", api_key="test-key", max_retries=1)
    yield eng
    await eng.aclose()


async def test_chat_returns_the_assistant_message_marked_not_token_exact(engine, control):
    gen = await engine.chat(
        [{"role": "user", "content": "hello there world"}],
        sampling=SamplingParams(temperature=0.2, max_tokens=50, seed=4),
    )
    assert isinstance(engine, ChatEngine) and engine.token_exact is False
    assert gen.token_exact is False
    assert gen.message["role"] == "assistant" and gen.message["content"] == "hello there world"
    assert gen.finish_reason == "stop" and gen.usage.completion_tokens == 3 and gen.model == "gpt-4o-mini"
    sent = control.requests[-1]
    assert sent["max_completion_tokens"] == 50 and sent["temperature"] == 0.2 and sent["seed"] == 4 and sent["n"] == 1
    assert "tools" not in sent


async def test_length_and_tool_calls(engine, control):
    cut = await engine.chat([{"role": "user", "content": "one two three four"}], sampling=SamplingParams(max_tokens=2))
    assert cut.finish_reason == "length" and cut.message["content"] == "one two"
    call = await engine.chat([{"role": "user", "content": 'call add {"a": 1}'}], tools=TOOLS)
    assert call.finish_reason == "tool_calls"
    assert call.message["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 1}'}
    assert control.requests[-1]["tools"] == TOOLS


async def test_token_level_sampling_is_refused(engine):
    with pytest.raises(BadRequestError, match="no top_k"):
        await engine.chat([{"role": "user", "content": "x"}], sampling=SamplingParams(top_k=5))
    with pytest.raises(BadRequestError, match="stop token ids"):
        await engine.chat([{"role": "user", "content": "x"}], sampling=SamplingParams(stop_token_ids=[2]))
    with pytest.raises(BadRequestError, match="non-empty list"):
        await engine.chat([])


async def test_http_errors_map_to_engine_errors(engine, control):
    control.fail_next, control.fail_status = 5, 500
    with pytest.raises(ServerError, match="HTTP 500"):
        await engine.chat([{"role": "user", "content": "x"}])
    assert len(control.requests) == 2  # the openai client's own retry (max_retries=1)
    control.__init__(
        fail_next=1,
        fail_status=400,
        fail_code="context_length_exceeded",
        fail_message="This model's maximum context length is 128000 tokens.",
    )
    with pytest.raises(ContextOverflowError):
        await engine.chat([{"role": "user", "content": "x"}])
    bad_model = OpenAIChatEngine("no-such-model", base_url=engine._client.base_url, api_key="k", max_retries=0)
    with pytest.raises(BadRequestError, match="HTTP 404"):
        await bad_model.chat([{"role": "user", "content": "x"}])
    await bad_model.aclose()


async def test_timeout_and_unreachable(standin, control):
    slow = OpenAIChatEngine(
        "gpt-4o-mini", base_url=f"{standin[0].base_url}/v1", api_key="k", timeout_s=0.2, max_retries=0
    )
    control.delay_s = 1.0
    with pytest.raises(EngineTimeoutError):
        await slow.chat([{"role": "user", "content": "x"}])
    await slow.aclose()
    gone = OpenAIChatEngine("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    with pytest.raises(UnreachableError, match="could not reach"):
        await gone.chat([{"role": "user", "content": "x"}])
    await gone.aclose()


def test_missing_api_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(BadRequestError, match="OPENAI_API_KEY"):
        OpenAIChatEngine("gpt-4o-mini")
