"""What a user stumbles on: unknown routes name the real ones, HEAD on a base URL, base URLs on the configured host."""

from __future__ import annotations

import anthropic
import httpx


def test_unknown_route_names_the_routes(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    resp = httpx.get(f"{proxy.base_url}/nowhere")
    assert resp.status_code == 404
    err = resp.json()["error"]
    assert err["code"] == "not_found" and "POST /sessions/{id}/v1/responses" in err["message"]
    assert "POST /sessions/{id}/v1/messages" in err["message"]


def test_v1_without_a_session_says_how_to_get_one(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    resp = httpx.post(f"{proxy.base_url}/v1/chat/completions", json={"model": "m", "messages": []})
    assert resp.status_code == 404
    message = resp.json()["error"]["message"]
    assert "/sessions/default/v1/chat/completions" in message and "POST /sessions" in message
    anth = httpx.post(f"{proxy.base_url}/v1/messages?beta=true", json={})  # Claude Code without a session
    assert anth.status_code == 404 and anth.json()["type"] == "error"
    assert (
        anth.json()["error"]["type"] == "not_found_error"
        and "/sessions/default/v1/messages" in anth.json()["error"]["message"]
    )


def test_head_on_a_session_base_url(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    sess = proxy.session()
    assert httpx.head(sess.base_url).status_code == 200
    assert httpx.head(sess.base_url.removesuffix("/v1")).status_code == 200
    assert httpx.head(f"{proxy.base_url}/sessions/nope").status_code == 404


def test_created_base_url_uses_the_configured_host_not_the_host_header(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    resp = httpx.post(f"{proxy.base_url}/sessions", json={"session_id": "s1"}, headers={"host": "evil.example:1"})
    assert resp.status_code == 201
    assert resp.json()["base_url"] == f"{proxy.base_url}/sessions/s1/v1"


def test_anthropic_client_given_the_openai_base_url(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    sess = proxy.session()
    client = anthropic.Anthropic(base_url=sess.base_url, api_key="x", max_retries=0)  # posts to .../v1/v1/messages
    msg = client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert msg.content[0].text == "ok" and len(sess.calls) == 1


def test_a_session_path_without_v1_suggests_it(scripted_proxy, scripts):
    proxy, _ = scripted_proxy([scripts.text("ok")])
    sess = proxy.session()
    resp = httpx.post(f"{proxy.base_url}/sessions/{sess.id}/chat/completions", json={})
    assert resp.status_code == 404
    assert f"did you mean /sessions/{sess.id}/v1/chat/completions" in resp.json()["error"]["message"]


def test_one_access_log_line_per_request(scripted_proxy, scripts, caplog):
    """Method, path, status, milliseconds, session and segment, for answered and refused requests alike."""
    import logging
    import time

    import httpx

    proxy, _ = scripted_proxy(lambda prompt, sampling: scripts.text("ok"))
    sess = proxy.session("logged")
    with caplog.at_level(logging.INFO, logger="rollgym.proxy.access"):
        httpx.post(
            f"{sess.base_url}/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        )
        httpx.get(f"{proxy.base_url}/nowhere")
        for _ in range(100):  # the server thread writes the line just after the answer is sent
            lines = [r.getMessage() for r in caplog.records if r.name == "rollgym.proxy.access"]
            if len(lines) >= 2:
                break
            time.sleep(0.02)
    assert len(lines) == 2, lines
    assert lines[0].startswith("POST /sessions/logged/v1/chat/completions 200 ") and lines[0].endswith(
        "session=logged segment=0"
    ), lines[0]
    assert " ms " in lines[0] and lines[1].startswith("GET /nowhere 404 ") and lines[1].endswith("session=- segment=-")
