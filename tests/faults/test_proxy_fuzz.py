"""The recording proxy under fuzzed requests (issue 17's fault suite): whatever `hypothesis` builds over the
chat-completions schema (wrong types, huge and negative numbers, NaN, lone surrogates, deep nesting,
unknown fields, bad keys), the answer is a 2xx or a 4xx JSON error naming what is wrong, never a 5xx or a
dropped connection, and the proxy keeps serving."""

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
roles = st.sampled_from(["system", "user", "assistant", "tool", "developer", "function", "nobody"])
content = (
    st.text(max_size=200)
    | st.none()
    | st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["text", "image_url", "input_text", "x"]), "text": st.text(max_size=40)}
        ),
        max_size=3,
    )
    | json_values
)
tool_call = st.fixed_dictionaries(
    {
        "id": st.text(max_size=8),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": st.text(max_size=12), "arguments": st.text(max_size=60) | json_values}
        ),
    }
)
message = st.fixed_dictionaries(
    {"role": roles, "content": content},
    optional={
        "tool_calls": st.lists(tool_call, max_size=2) | json_values,
        "tool_call_id": st.text(max_size=8) | json_values,
        "name": st.text(max_size=8),
    },
)
tool = (
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["function", "web_search"]),
            "function": st.fixed_dictionaries(
                {"name": st.text(max_size=12)},
                optional={"parameters": json_values, "description": st.text(max_size=30)},
            ),
        }
    )
    | json_values
)
body = st.fixed_dictionaries(
    {"messages": st.lists(message, max_size=5) | json_values},
    optional={
        "model": st.text(max_size=10) | json_values,
        "tools": st.lists(tool, max_size=3) | json_values,
        "tool_choice": st.sampled_from(["auto", "none", "required"]) | json_values,
        "max_tokens": st.integers(min_value=-5, max_value=2**40) | json_values,
        "max_completion_tokens": st.integers(min_value=-5, max_value=2**40),
        "temperature": st.floats(allow_nan=True) | json_values,
        "top_p": st.floats(allow_nan=True),
        "n": st.integers(min_value=-2, max_value=10),
        "stream": st.booleans() | json_values,
        "stop": st.text(max_size=5) | st.lists(st.text(max_size=5), max_size=5) | json_values,
        "seed": st.integers(min_value=-(2**70), max_value=2**70),
        "logprobs": json_values,
        "chat_template_kwargs": json_values,
        "extra": json_values,
    },
)


@pytest.fixture(scope="module")
def proxy(tool_tok):
    engine = ScriptedEngine(lambda prompt, sampling: tool_tok.encode("ok") + [tool_tok.end_of_turn_id])
    proxy = RecordingProxy(Policy(engine=engine, tokenizer=tool_tok), settings=ProxySettings(api_key=KEY))
    with proxy.in_thread():
        yield proxy


def _check(resp: httpx.Response) -> None:
    assert resp.status_code < 500, resp.text[:500]
    if resp.status_code >= 400:
        error = resp.json()["error"]
        assert error["message"], resp.text[:500]


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(request=body)
def test_fuzzed_chat_requests_get_a_2xx_or_a_4xx_json(proxy, request):
    sess = proxy.session()
    raw = json.dumps(request).encode()  # NaN and lone surrogates (as \\ud800 escapes) go through as JSON
    resp = httpx.post(
        f"{sess.base_url}/chat/completions",
        content=raw,
        timeout=60,
        headers={"content-type": "application/json", "authorization": f"Bearer {KEY}"},
    )
    _check(resp)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    key=st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40).filter(lambda k: k != KEY)
)
def test_every_wrong_key_is_a_401(proxy, key):
    resp = httpx.post(
        f"{proxy.base_url}/sessions/default/v1/chat/completions",
        timeout=30,
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {key}"},
    )
    assert resp.status_code == 401, resp.text


def test_the_proxy_still_serves_after_the_fuzzing(proxy):
    sess = proxy.session()
    resp = httpx.post(
        f"{sess.base_url}/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {KEY}"},
        timeout=60,
    )
    assert resp.status_code == 200 and resp.json()["choices"][0]["message"]["content"] == "ok"
