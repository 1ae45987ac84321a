"""`rollgym view` without a browser: what the file holds, where it reads rollouts from, and its errors."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import openai
import pytest
from support.interrupt import interruptible
from typer.testing import CliRunner

from rollgym.cli import app
from rollgym.rollouts.output import read_rollouts
from rollgym.view import ViewOutputError, ViewSourceError, default_output, write_viewer
from rollgym.view.payload import Payload
from rollgym.view.sources import load_rollouts

runner = CliRunner()


def expand_strip(strip: dict) -> dict:
    """The reference for what viewer.js computes from a strip: ids, logprobs, env_mask and marks (positions from the first completion id)."""
    ids: list = []
    logprobs: list = []
    mask: list = []
    marks: list = [{"pos": 0, "kind": "segment", "label": strip["segment"]}] if strip["segment"] else []
    for t in strip["turns"]:
        marks.append({"pos": len(ids), "kind": "turn", "label": f"turn {t['index']}: sampled, {t['finish']}"})
        ids += t["ids"]
        logprobs += [x / 1000 for x in t["lp"]]
        mask += [1] * len(t["ids"])
        if t["bridge"]:
            marks.append({"pos": len(ids), "kind": "bridge", "label": f"turn {t['index']}: environment reply"})
            ids += t["bridge"]
            logprobs += [0.0] * len(t["bridge"])
            mask += [0] * len(t["bridge"])
    return {"ids": ids, "logprobs": logprobs, "mask": mask, "marks": marks}


def blocks(html: str) -> dict[str, object]:
    """Every inert JSON block of the page, parsed, by id."""
    return {
        m.group(1): json.loads(m.group(2))
        for m in re.finditer(r'<script type="application/json" id="([^"]+)">(.*?)</script>', html, re.S)
    }


class Resources(HTMLParser):
    """Collects every attribute that could make the browser load something."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        self.scripts += tag == "script"
        self.urls += [v for k, v in attrs if k in ("src", "href", "srcset", "action", "data") and v]


def test_strip_is_the_token_view_with_marks(scripted_run):
    rollouts = list(read_rollouts(scripted_run / "rollouts.jsonl"))
    payload = Payload(rollouts, None, {})
    assert len(payload.prompts) == 2, "the 2 samples of each task share one stored prompt"
    for r, stored in zip(rollouts, payload.strips, strict=True):
        strip = expand_strip(stored)
        view = r.token_view(keep_trailing_bridge=True)
        assert strip["ids"] == view["completion_ids"] and strip["mask"] == view["env_mask"]
        assert strip["logprobs"] == pytest.approx(view["logprobs"], abs=5e-4)
        assert payload.prompts[stored["prompt"]] == r.prompt_ids
        turns = [m["pos"] for m in strip["marks"] if m["kind"] == "turn"]
        bridges = [m["pos"] for m in strip["marks"] if m["kind"] == "bridge"]
        assert len(turns) == len(r.turns) == 3 and turns[0] == 0
        for t, start, bridge in zip(r.turns, turns, bridges, strict=False):  # the last turn may end without a bridge
            assert strip["mask"][start : start + len(t.completion_ids)] == [1] * len(t.completion_ids)
            assert bridge == start + len(t.completion_ids) and strip["mask"][bridge] == 0


def test_page_is_self_contained_and_escaped(scripted_run, hostile, tmp_path):
    path = write_viewer(scripted_run, tmp_path / "view.html", tokenizer="smollm2-135m")
    html = path.read_text()
    parser = Resources()
    parser.feed(html)
    assert all(u.startswith(("#", "data:")) for u in parser.urls), parser.urls  # nothing to fetch, anywhere
    assert "default-src 'none'" in html  # and the page's policy forbids it even if a bug tried
    data = blocks(html)
    assert parser.scripts == len(data) + 1, "the hostile argument closed no <script> block"
    index = data["rg-index"]
    assert [row["i"] for row in index["rows"]] == list(range(4)) and index["meta"]["token_texts"]
    detail = data["rg-d-0"]
    failed = [c for t in detail["turns"] for c in t["tool_calls"] if c["failed"]]
    assert len(failed) == 1 and hostile in json.dumps(failed[0]["arguments"])
    ids = {i for k, v in data.items() if k.startswith("rg-t-") for i in expand_strip(v)["ids"]}
    assert ids <= {int(k) for k in index["vocab"]}, "every id in a strip has its text"
    assert index["vocab"][str(ids.pop())] != ""


def test_search_text_is_the_conversation_only(scripted_run, tmp_path):
    data = blocks(write_viewer(scripted_run, tmp_path / "v.html", tokenizer="smollm2-135m", title="a <b>&").read_text())
    rollouts = list(read_rollouts(scripted_run / "rollouts.jsonl"))
    text = data["rg-s-0"]
    assert rollouts[0].initial_messages[-1]["content"].lower() in text and '"a": 1' in text  # messages, tool arguments
    assert "calculator-v0" not in text and "finish_reason" not in text and "scripted" not in text  # no metadata
    assert "<title>a &lt;b&gt;&amp; · rollgym view</title>" in (tmp_path / "v.html").read_text()


def test_a_chunk_folder_rollgym_did_not_write_is_left_alone(scripted_run, tmp_path):
    mine = tmp_path / "report_files"
    mine.mkdir()
    (mine / "keep.txt").write_text("a browser's saved page")
    write_viewer(scripted_run, tmp_path / "report.html", tokenizer="smollm2-135m", split=False)
    assert (mine / "keep.txt").exists()
    with pytest.raises(ViewOutputError, match="not written by rollgym view"):
        write_viewer(scripted_run, tmp_path / "report.html", tokenizer="smollm2-135m", split=True)
    write_viewer(scripted_run, tmp_path / "big.html", tokenizer="smollm2-135m", split=True)
    assert (tmp_path / "big_files" / "t-0.js").exists()
    write_viewer(scripted_run, tmp_path / "big.html", tokenizer="smollm2-135m", split=False)
    assert not (tmp_path / "big_files").exists(), "its own chunk folder goes when the page is rewritten as one file"


def test_sources_dir_jsonl_and_saved_session(scripted_run, tmp_path):
    rollouts, origin = load_rollouts(scripted_run)
    assert len(rollouts) == 4 and origin.endswith("rollouts.jsonl")
    assert len(load_rollouts(scripted_run / "rollouts.jsonl")[0]) == 4
    saved = tmp_path / "session.json"
    saved.write_text(json.dumps([r.model_dump(mode="json") for r in rollouts[:2]]))
    assert [r.id for r in load_rollouts(saved)[0]] == [r.id for r in rollouts[:2]]
    saved.write_text(json.dumps({"session_id": "s", "rollouts": [r.model_dump(mode="json") for r in rollouts[:1]]}))
    assert len(load_rollouts(saved)[0]) == 1
    assert default_output(str(scripted_run)) == scripted_run / "view.html"
    assert default_output("http://127.0.0.1:1/sessions/abc") == Path("view-abc.html")


def test_bad_sources_say_what_to_pass(tmp_path):
    with pytest.raises(ViewSourceError, match="no such run directory or file"):
        load_rollouts(tmp_path / "missing")
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"hello": 1}\n')
    with pytest.raises(ViewSourceError, match="not a rollouts JSONL"):
        load_rollouts(bad)
    with pytest.raises(ViewSourceError, match="session URL"):
        load_rollouts("http://127.0.0.1:9/not-a-session")
    broken = tmp_path / "session.json"
    broken.write_text("{not json")
    with pytest.raises(ViewSourceError, match="not JSON"):
        load_rollouts(broken)
    result = runner.invoke(app, ["view", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "no such run directory" in result.output


def test_without_a_tokenizer_the_strip_shows_ids(scripted_run, tmp_path):
    notes: list[str] = []
    html = write_viewer(scripted_run, tmp_path / "v.html", tokenizer="/nonexistent/model", log=notes.append).read_text()
    index = blocks(html)["rg-index"]
    assert index["vocab"] == {} and index["meta"]["token_texts"] is False
    assert notes and "ids only" in notes[0]


def test_proxy_session_url_is_viewable_with_its_segments(scripted_proxy, say, tmp_path):
    """A real proxy and the real openai client: a rewritten history forks a segment; the viewer marks both."""
    proxy = scripted_proxy([say.text("Hello."), say.text("Fine."), say.text("Other.")], api_key="k3y")
    sess = proxy.session()
    client = openai.OpenAI(base_url=sess.base_url, api_key="k3y", max_retries=0)
    msgs = [{"role": "user", "content": "hi"}]
    first = client.chat.completions.create(model="m", messages=msgs)
    client.chat.completions.create(
        model="m",
        messages=msgs
        + [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "ok?"}],
    )
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "something else"}])
    url = sess.base_url  # the agent's base URL, .../sessions/ID/v1, is accepted as it is
    out = tmp_path / "session.html"
    denied = runner.invoke(app, ["view", url, "--out", str(out), "--api-key", "wrong"])
    assert denied.exit_code == 2 and "401" in denied.output
    result = runner.invoke(app, ["view", url, "--out", str(out), "--api-key", "k3y", "--tokenizer", "smollm2-135m"])
    assert result.exit_code == 0, result.output
    data = blocks(out.read_text())
    strips = [expand_strip(v) for k, v in data.items() if k.startswith("rg-t-")]
    marks = [m for s in strips for m in s["marks"] if m["kind"] == "segment"]
    assert len(marks) == 2 and marks[0]["label"] == "proxy segment 0: first call"
    assert marks[1]["label"].startswith("proxy segment 1: ") and marks[1]["label"] != "proxy segment 1: continued"
    assert [len(s["marks"]) for s in strips] == [1 + 2 + 1, 1 + 1]  # segment, turns, bridge


@pytest.mark.slow
def test_serve_answers_the_page_on_loopback(scripted_run, tmp_path):
    """`rollgym view --serve`: the real CLI process serves the written file at / until Ctrl-C."""
    import signal
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "served.html"
    proc = subprocess.Popen(
        interruptible(
            [
                sys.executable,
                "-m",
                "rollgym",
                "view",
                str(scripted_run),
                "--out",
                str(out),
                "--tokenizer",
                "smollm2-135m",
                "--serve",
                "--port",
                str(port),
            ]
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline, response = time.monotonic() + 120, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        assert response is not None and response.status_code == 200, (
            proc.stderr.read() if proc.poll() is not None else ""
        )
        assert response.headers["content-type"].startswith("text/html") and response.text == out.read_text()
    finally:
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=30)
    assert f"serving it at http://127.0.0.1:{port}/" in stdout
