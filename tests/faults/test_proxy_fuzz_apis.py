"""The proxy's Anthropic Messages and OpenAI Responses routes under fuzzed requests: whatever `hypothesis`
builds over their schemas, the answer is a 2xx or that API's 4xx error JSON, never a 5xx."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollgym.engines.scripted import ScriptedEngine
from rollgym.proxy import ProxySettings, RecordingProxy
from rollgym.rollouts.policy import Policy

KEY = "k3y"
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
text = st.text(max_size=60)

# --- Anthropic Messages ---
a_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": text}, optional={"cache_control": json_values}),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_use"),
            "id": st.text(max_size=8),
            "name": st.text(max_size=8),
            "input": st.dictionaries(st.text(max_size=5), json_values, max_size=3) | json_values,
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("tool_result"), "tool_use_id": st.text(max_size=8) | json_values},
        optional={
            "content": text
            | st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "image"]), "text": text}), max_size=2)
            | json_values,
            "is_error": st.booleans() | json_values,
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["thinking", "redacted_thinking", "image", "video"]), "thinking": text}
    ),
    json_values,
)
a_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "tool"]),
        "content": text | st.lists(a_block, max_size=3) | json_values,
    }
)
a_tool = st.fixed_dictionaries(
    {"name": st.text(max_size=8)},
    optional={
        "input_schema": json_values,
        "type": st.sampled_from(["custom", "web_search_20250305"]),
        "description": text,
    },
)
anthropic_body = st.fixed_dictionaries(
    {"messages": st.lists(a_message, max_size=4) | json_values},
    optional={
        "model": st.text(max_size=8),
        "max_tokens": st.integers(min_value=-5, max_value=2**40) | json_values,
        "system": text
        | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": text}), max_size=2)
        | json_values,
        "tools": st.lists(a_tool, max_size=2) | json_values,
        "stream": st.booleans() | json_values,
        "tool_choice": st.fixed_dictionaries(
            {"type": st.sampled_from(["auto", "any", "tool", "none", "x"])}, optional={"name": st.text(max_size=5)}
        )
        | json_values,
        "temperature": st.floats(allow_nan=True) | json_values,
        "top_k": json_values,
        "stop_sequences": st.lists(st.text(max_size=5), max_size=2) | json_values,
        "thinking": json_values,
    },
)

# --- OpenAI Responses ---
part = st.fixed_dictionaries({"type": st.sampled_from(["input_text", "output_text", "input_image", "x"]), "text": text})
r_item = st.one_of(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "developer", "system", "x"]),
            "content": text | st.lists(part, max_size=2) | json_values,
        },
        optional={"type": st.just("message"), "id": st.text(max_size=5)},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("function_call"),
            "call_id": st.text(max_size=6) | json_values,
            "name": st.text(max_size=6),
            "arguments": text | json_values,
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("function_call_output"), "call_id": st.text(max_size=6), "output": text | json_values}
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["reasoning", "item_reference", "web_search_call"])}),
    json_values,
)
r_tool = st.fixed_dictionaries(
    {"type": st.sampled_from(["function", "web_search", "namespace", "custom"])},
    optional={"name": st.text(max_size=6) | json_values, "parameters": json_values},
)
responses_body = st.fixed_dictionaries(
    {"input": text | st.lists(r_item, max_size=4) | json_values},
    optional={
        "model": st.text(max_size=8),
        "instructions": text | json_values,
        "tools": st.lists(r_tool, max_size=3) | json_values,
        "tool_choice": st.sampled_from(["auto", "none", "required"]) | json_values,
        "max_output_tokens": st.integers(min_value=-5, max_value=2**40) | json_values,
        "stream": st.booleans(),
        "store": st.booleans() | json_values,
        "previous_response_id": st.text(max_size=6) | json_values,
        "text": json_values,
        "temperature": st.floats(allow_nan=True),
    },
)


@pytest.fixture(scope="module")
def proxy(tool_tok):
    engine = ScriptedEngine(lambda prompt, sampling: tool_tok.encode("ok") + [tool_tok.end_of_turn_id])
    proxy = RecordingProxy(Policy(engine=engine, tokenizer=tool_tok), settings=ProxySettings(api_key=KEY))
    with proxy.in_thread():
        yield proxy


def _post(url: str, request) -> httpx.Response:
    return httpx.post(
        url,
        content=json.dumps(request).encode(),
        timeout=60,
        headers={"content-type": "application/json", "x-api-key": KEY},
    )


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(request=anthropic_body)
def test_fuzzed_anthropic_requests_get_a_2xx_or_an_anthropic_4xx(proxy, request):
    sess = proxy.session()
    resp = _post(f"{proxy.base_url}/sessions/{sess.id}/v1/messages?beta=true", request)
    assert resp.status_code < 500, resp.text[:500]
    if resp.status_code >= 400:
        body = resp.json()
        assert body["type"] == "error" and body["error"]["type"] and body["error"]["message"], resp.text[:500]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(request=responses_body)
def test_fuzzed_responses_requests_get_a_2xx_or_a_4xx_json(proxy, request):
    sess = proxy.session()
    resp = _post(f"{sess.base_url}/responses", request)
    assert resp.status_code < 500, resp.text[:500]
    if resp.status_code >= 400:
        assert resp.json()["error"]["message"], resp.text[:500]
