"""Bad requests get OpenAI-style 4xx JSON; engine failures get 5xx JSON and are recorded; never a dropped connection."""

from __future__ import annotations

import httpx
import openai
import pytest

MSGS = [{"role": "user", "content": "hi"}]


def _error(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()["error"]
    assert set(body) == {"message", "type", "param", "code"} and body["message"]
    return body


@pytest.fixture()
def proxy(scripted_proxy, scripts):
    proxy, _ = scripted_proxy(lambda prompt, sampling: scripts.text("ok"), max_body_bytes=4096)
    return proxy


def test_invalid_json(proxy):
    sess = proxy.session()
    resp = httpx.post(
        f"{sess.base_url}/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert _error(resp, 400)["code"] == "invalid_json"


@pytest.mark.parametrize(
    "body, param",
    [
        ({"model": "m", "messages": "hello"}, "messages"),
        ({"model": "m", "messages": []}, "messages"),
        ({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}, "messages.0.role"),
        ({"model": "m", "messages": MSGS, "temperature": "hot"}, "temperature"),
        ({"model": "m", "messages": MSGS, "max_tokens": 0}, "max_tokens"),
        ({"model": "m", "messages": MSGS, "tools": [{"type": "function"}]}, "tools.0.function"),
        ({"model": "m", "messages": MSGS, "n": 2}, "n"),
        ({"model": "m", "messages": MSGS, "stop": ["\n\n"]}, "stop"),
        ({"model": "m", "messages": MSGS, "presence_penalty": 0.5}, "presence_penalty"),
        ({"model": "m", "messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
        (
            {
                "model": "m",
                "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
            },
            "messages[0].content",
        ),
        ({"model": "m", "messages": MSGS + [{"role": "assistant", "content": "prefill"}]}, "messages"),
        ([1, 2, 3], None),
    ],
)
def test_wrong_types_and_unsupported_fields(proxy, body, param):
    sess = proxy.session()
    err = _error(httpx.post(f"{sess.base_url}/chat/completions", json=body), 400)
    assert err["param"] == param and err["type"] == "invalid_request_error"
    assert sess.calls == []


def test_unknown_session_and_route(proxy):
    err = _error(
        httpx.post(f"{proxy.base_url}/sessions/nope/v1/chat/completions", json={"model": "m", "messages": MSGS}), 404
    )
    assert err["code"] == "session_not_found"
    assert _error(httpx.get(f"{proxy.base_url}/v1/chat/completions"), 404)["code"] == "not_found"
    with pytest.raises(openai.NotFoundError):
        openai.OpenAI(
            base_url=f"{proxy.base_url}/sessions/nope/v1", api_key="x", max_retries=0
        ).chat.completions.create(model="m", messages=MSGS)


def test_oversize_body_by_header_and_by_stream(proxy):
    sess = proxy.session()
    big = {"model": "m", "messages": [{"role": "user", "content": "x" * 10_000}]}
    assert _error(httpx.post(f"{sess.base_url}/chat/completions", json=big), 413)["code"] == "request_too_large"

    def chunks():  # no content-length: chunked transfer
        yield b'{"model": "m", "messages": [{"role": "user", "content": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}]}'

    assert _error(httpx.post(f"{sess.base_url}/chat/completions", content=chunks()), 413)["code"] == "request_too_large"


def test_api_key_is_enforced(scripted_proxy, scripts):
    proxy, _ = scripted_proxy(lambda p, s: scripts.text("ok"), api_key="s3cret")
    sess = proxy.session()
    missing = httpx.post(f"{sess.base_url}/chat/completions", json={"model": "m", "messages": MSGS})
    assert _error(missing, 401)["code"] == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=sess.base_url, api_key="wrong", max_retries=0).chat.completions.create(
            model="m", messages=MSGS
        )
    assert _error(httpx.post(f"{proxy.base_url}/sessions", headers={"authorization": "Bearer nope"}), 401)
    ok = openai.OpenAI(base_url=sess.base_url, api_key="s3cret").chat.completions.create(model="m", messages=MSGS)
    assert ok.choices[0].message.content == "ok"


def test_engine_failure_is_a_recorded_5xx(scripted_proxy, scripts):
    from rollgym.engines.errors import ServerError

    def policy(prompt, sampling):
        raise ServerError("GPU fell off the bus")

    proxy, _ = scripted_proxy(policy)
    sess = proxy.session()
    resp = httpx.post(f"{sess.base_url}/chat/completions", json={"model": "m", "messages": MSGS})
    err = _error(resp, 502)
    assert err["type"] == "server_error" and "GPU fell off the bus" in err["message"]
    assert sess.errors[0]["type"] == "ServerError" and sess.errors[0]["status"] == 502 and sess.calls == []


def test_context_overflow_is_a_400(scripted_proxy, scripts):
    proxy, spy = scripted_proxy([scripts.text("x")])
    spy.max_model_len = 12  # the prompt renders to ~20 tokens
    sess = proxy.session()
    err = _error(httpx.post(f"{sess.base_url}/chat/completions", json={"model": "m", "messages": MSGS}), 400)
    assert err["code"] == "context_length_exceeded"


def test_a_bug_in_the_proxy_is_a_500_json_not_a_dropped_connection(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("x")])
    sess = proxy.session()

    async def broken(*args, **kwargs):
        raise KeyError("oops")

    proxy.core.chat = broken
    err = _error(httpx.post(f"{sess.base_url}/chat/completions", json={"model": "m", "messages": MSGS}), 500)
    assert err["code"] == "internal_error" and "KeyError" in err["message"]
    assert httpx.get(f"{proxy.base_url}/health").json()["status"] == "ok"  # still serving


MSG = '"messages":[{"role":"user","content":"x"}]'


@pytest.mark.parametrize(
    "raw, param, code",
    [
        ('{"model":"m","messages":[{"role":"user","content":"\\ud800"}]}', "messages.0.content", "invalid_unicode"),
        ('{"model":"m","messages":[{"role":"user","content":"x","\\udc00":1}]}', "messages.0", "invalid_unicode"),
        ('{{"model":"m",{},"metadata":{}}}'.format(MSG, "[" * 5000 + "]" * 5000), None, "invalid_json"),
        (
            '{{"model":"m",{},"metadata":{}}}'.format(MSG, "[" * 200 + "]" * 200),
            "metadata." + ".".join(["0"] * 100),
            "invalid_json",
        ),
        ('{{"model":"m",{},"max_tokens":{}}}'.format(MSG, "9" * 5000), None, "invalid_json"),
        ('{{"model":"m",{},"max_tokens":{}}}'.format(MSG, "1" + "0" * 30), "max_tokens", None),
        (f'{{"model":"m",{MSG},"chat_template_kwargs":{{"tools":5}}}}', "chat_template_kwargs.tools", None),
        (
            f'{{"model":"m",{MSG},"chat_template_kwargs":{{"add_generation_prompt":false}}}}',
            "chat_template_kwargs.add_generation_prompt",
            None,
        ),
    ],
)
def test_client_mistakes_inside_the_json_are_4xx_naming_the_field(scripted_proxy, scripts, raw, param, code):
    """Issue 17 item 10: each of these was a 500 (or a dropped connection for the deep nesting)."""
    proxy, _ = scripted_proxy(lambda prompt, sampling: scripts.text("ok"))
    sess = proxy.session()
    err = _error(
        httpx.post(
            f"{sess.base_url}/chat/completions", content=raw.encode(), headers={"content-type": "application/json"}
        ),
        400,
    )
    assert err["param"] == param and err["code"] == code and err["type"] == "invalid_request_error"
    assert sess.calls == [] and sess.errors == []
    ok = httpx.post(f"{sess.base_url}/chat/completions", json={"model": "m", "messages": MSGS})
    assert ok.status_code == 200, "the proxy is fine afterwards"


@pytest.mark.parametrize("session_id", [".", ".."])
def test_session_ids_that_are_path_steps_are_refused(proxy, session_id):
    err = _error(httpx.post(f"{proxy.base_url}/sessions", json={"session_id": session_id}), 400)
    assert err["param"] == "session_id" and "path step" in err["message"]
    assert httpx.post(f"{proxy.base_url}/sessions", json={"session_id": "run.1..a"}).status_code == 201


def test_a_large_request_is_worked_off_the_event_loop(scripted_proxy, scripts, monkeypatch):
    """A body over OFFLOAD_BYTES is parsed and its prompt rendered and tokenized in a worker thread, and long
    texts are tokenized with the GIL released: other sessions keep being served (8 MiB measured: issue 17)."""
    import threading

    from rollgym.proxy import app as app_module
    from rollgym.proxy.session import ProxySession

    threads: list[str] = []
    plan = ProxySession.plan

    def spy(self, *args, **kwargs):
        threads.append(threading.current_thread().name)
        return plan(self, *args, **kwargs)

    monkeypatch.setattr(ProxySession, "plan", spy)
    proxy, _ = scripted_proxy(lambda prompt, sampling: scripts.text("ok"))
    sess = proxy.session()
    small = {"model": "m", "messages": MSGS}
    big = {"model": "m", "messages": [{"role": "user", "content": "word " * (app_module.OFFLOAD_BYTES // 4)}]}
    for body in (small, big):
        assert httpx.post(f"{sess.base_url}/chat/completions", json=body, timeout=120).status_code == 200
    loop_thread, worker = threads
    assert worker != loop_thread and "asyncio" in worker, threads  # asyncio.to_thread's pool


def test_long_texts_are_tokenized_with_the_gil_released_and_the_same_ids(ptok):
    from rollgym.tokenization.segmented import GIL_FREE_CHARS, encode_text

    text = "héllo <|im_end|> wörld\n\t中文 " * (GIL_FREE_CHARS // 10)
    backend = ptok._backend
    assert len(text) >= GIL_FREE_CHARS
    assert encode_text(backend, text) == backend.encode(text, add_special_tokens=False).ids
    assert ptok.encode(text) == ptok.encode_whole(text) == backend.encode(text, add_special_tokens=False).ids
