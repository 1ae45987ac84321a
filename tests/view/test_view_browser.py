"""The viewer in a real browser (headless Chromium via selenium) on a small real run: SmolLM2 on the
Calculator and on a bundled SWE task in Docker, plus the scripted Calculator run (tool calls, one failing).

Checked with the DOM: every rollout listed; each token strip holds exactly sum(env_mask) sampled tokens and
the rest as environment tokens; hovering a token shows its id and logprob; filters and search change the
list; two samples of a task side by side; no console errors; no request leaves the file. Screenshots go
to the artefacts folder.
"""

from __future__ import annotations

import json
import time

import pytest

from rollgym.engines import SamplingParams
from rollgym.limits import Limits
from rollgym.rollouts.generate import generate
from rollgym.rollouts.output import read_rollouts
from rollgym.view import write_viewer

pytestmark = [pytest.mark.slow, pytest.mark.docker]


@pytest.fixture(scope="module")
def real_view(docker_engine, scripted_run, tmp_path_factory):
    """A run of all three, in one rollouts file, and its viewer; returns (path, rollouts)."""
    base = tmp_path_factory.mktemp("real-view")
    sampling = SamplingParams(temperature=0.7, seed=0)
    generate(
        "rollgym/Calculator-v0",
        "smollm2-135m",
        out=base / "calc",
        num_tasks=2,
        n=2,
        concurrency=4,
        sampling=sampling,
        limits=Limits(max_turns=3, max_tokens_per_turn=48),
    )
    generate(
        "rollgym/SWE-v0",
        "smollm2-135m",
        out=base / "swe",
        tasks="bundled",
        num_tasks=1,
        n=2,
        concurrency=2,
        sampling=sampling,
        limits=Limits(max_turns=2, max_tokens_per_turn=48, timeout_s=600),
    )
    lines = b"".join((d / "rollouts.jsonl").read_bytes() for d in (base / "calc", base / "swe", scripted_run))
    (base / "all").mkdir()
    (base / "all" / "rollouts.jsonl").write_bytes(lines)
    path = write_viewer(base / "all", tokenizer="smollm2-135m")
    rollouts = list(read_rollouts(base / "all" / "rollouts.jsonl"))
    assert {r.env_id for r in rollouts} == {"rollgym/Calculator-v0", "rollgym/SWE-v0"} and len(rollouts) == 10
    return path, rollouts


def _open(browser, path, route: str = "") -> None:
    """Load the page afresh at `route` (a new document: no filter state carried over); it must render."""
    browser.get("about:blank")
    browser.get(f"file://{path}#/{route}")
    deadline = time.monotonic() + 30
    while not browser.execute_script("return !!document.querySelector('#rollouts, .strip .tk, .errorbox')"):
        assert time.monotonic() < deadline, f"#/{route} never rendered"
        time.sleep(0.05)
    failures = browser.execute_script("return [...document.querySelectorAll('.errorbox')].map(e => e.textContent)")
    assert not [f for f in failures if "could not be shown" in f], failures


def _fmt(x: float) -> str:
    """The page's number format."""
    return str(int(x)) if x == int(x) else f"{x:.3f}"


def _by_css(browser, selector):
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, selector)


def test_every_rollout_is_listed(browser, real_view, artifacts):
    path, rollouts = real_view
    _open(browser, path)
    rows = _by_css(browser, "tr.rollout")
    assert [int(r.get_attribute("data-i")) for r in rows] == list(range(len(rollouts)))
    assert [r.find_element("css selector", "td:nth-child(2)").text for r in rows] == [r.task_id for r in rollouts]
    assert _by_css(browser, "#count")[0].text == f"{len(rollouts)} of {len(rollouts)} rollouts"
    assert len(_by_css(browser, ".plot svg")) == 4
    browser.save_screenshot(str(artifacts / "overview.png"))


def test_token_strips_split_sampled_and_environment_ids(browser, real_view, artifacts):
    path, rollouts = real_view
    for i, r in enumerate(rollouts):
        _open(browser, path, f"r/{i}")
        view = r.token_view(keep_trailing_bridge=True)
        sampled = len(_by_css(browser, ".strip .tk.s"))
        environment = len(_by_css(browser, ".strip .tk.e"))
        assert sampled == sum(view["env_mask"]) > 0, i
        assert environment == len(view["env_mask"]) - sum(view["env_mask"]), i
        assert len(_by_css(browser, ".strip .tk.p")) == len(r.prompt_ids)
        assert len(_by_css(browser, ".strip .mk.turn")) == len(r.turns)
        if i in (0, 4, 8):
            browser.save_screenshot(str(artifacts / f"rollout-{i}-{r.env_id.split('/')[-1]}.png"))


def test_hovering_a_token_shows_its_id_and_logprob(browser, real_view):
    from selenium.webdriver.common.action_chains import ActionChains

    path, rollouts = real_view
    _open(browser, path, "r/0")
    view = rollouts[0].token_view(keep_trailing_bridge=True)
    tokens = _by_css(browser, ".strip .tk.s")
    for k in (0, len(tokens) // 2, len(tokens) - 1):
        ActionChains(browser).move_to_element(tokens[k]).perform()
        tip = _by_css(browser, "#tip")[0]
        assert tip.is_displayed()
        pos = int(tokens[k].get_attribute("data-k"))
        assert tip.text.startswith(f"id {view['completion_ids'][pos]} ")
        assert (
            f"logprob {round(view['logprobs'][pos] * 1000) / 1000:.3f}" in tip.text
            and "sampled (env_mask 1)" in tip.text
        )


def test_filters_and_search_change_the_list(browser, real_view, artifacts):
    from selenium.webdriver.support.ui import Select

    path, rollouts = real_view
    _open(browser, path)

    def shown() -> list[int]:
        return [int(r.get_attribute("data-i")) for r in _by_css(browser, "tr.rollout")]

    task = rollouts[-1].task_id
    Select(_by_css(browser, "#f-task")[0]).select_by_value(task)
    assert shown() == [i for i, r in enumerate(rollouts) if r.task_id == task]
    Select(_by_css(browser, "#f-task")[0]).select_by_value("")
    Select(_by_css(browser, "#f-reward")[0]).select_by_value("> 0")
    assert shown() == [i for i, r in enumerate(rollouts) if r.reward > 0] and len(shown()) >= 4  # the scripted solver
    Select(_by_css(browser, "#f-reward")[0]).select_by_value("")
    stop = rollouts[0].stop_reason
    Select(_by_css(browser, "#f-stop")[0]).select_by_value(stop)
    assert shown() == [i for i, r in enumerate(rollouts) if r.stop_reason == stop]
    Select(_by_css(browser, "#f-stop")[0]).select_by_value("")
    Select(_by_css(browser, "#f-error")[0]).select_by_value("(no error)")
    assert shown() == [i for i, r in enumerate(rollouts) if r.error is None]
    Select(_by_css(browser, "#f-error")[0]).select_by_value("")
    word = "ordinalize"  # in the SWE task's issue text only
    search = _by_css(browser, "#f-q")[0]
    search.send_keys(word)
    time.sleep(0.6)  # the search waits for typing to pause
    expected = [i for i, r in enumerate(rollouts) if word in json.dumps(r.messages()).lower()]
    assert shown() == expected and 0 < len(expected) < len(rollouts)
    browser.save_screenshot(str(artifacts / "filtered.png"))


def test_failed_tool_calls_are_marked(browser, real_view, hostile):
    path, rollouts = real_view
    i = next(k for k, r in enumerate(rollouts) if any(c.failed for t in r.turns for c in t.tool_calls))
    _open(browser, path, f"r/{i}")
    failed = _by_css(browser, "#conversation .call.failed")
    assert len(failed) == sum(c.failed for t in rollouts[i].turns for c in t.tool_calls) >= 1
    assert hostile in failed[0].text, "markup in arguments is shown as text"
    assert len(_by_css(browser, "#conversation .call .badge.ok")) == sum(
        not c.failed for t in rollouts[i].turns for c in t.tool_calls
    )
    assert not browser.execute_script("return document.querySelectorAll('img').length")


def test_two_samples_of_a_task_side_by_side(browser, real_view, artifacts):
    path, rollouts = real_view
    a = next(i for i, r in enumerate(rollouts) if r.env_id == "rollgym/SWE-v0")
    b = next(i for i, r in enumerate(rollouts) if r.group_id == rollouts[a].group_id and i != a)
    _open(browser, path, f"r/{a}")
    link = _by_css(browser, f'a[href="#/cmp/{a}/{b}"]')
    assert link, "a rollout links to the other samples of its group"
    link[0].click()
    deadline = time.monotonic() + 30  # the route changes at once; the comparison renders on the hashchange after it
    while not (cols := _by_css(browser, ".cmpcol")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [int(c.get_attribute("data-i")) for c in cols] == [a, b]
    for col, i in zip(cols, (a, b), strict=True):
        assert f"reward {_fmt(rollouts[i].reward)}" in col.text
        assert len(col.find_elements("css selector", ".tk.s")) == sum(len(t.completion_ids) for t in rollouts[i].turns)
    browser.save_screenshot(str(artifacts / "compare.png"))


def test_no_console_errors_and_nothing_from_the_network(browser, real_view):
    path, rollouts = real_view
    browser.get_log("browser"), browser.get_log("performance")  # start clean
    for route in ["", "r/0", f"r/{len(rollouts) - 1}", "cmp/0/1"]:
        _open(browser, path, route)
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    events = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = {ev["params"]["request"]["url"] for ev in events if ev["method"] == "Network.requestWillBeSent"}
    assert urls and all(u.startswith(f"file://{path}") for u in urls), urls


def test_a_split_page_reads_its_chunk_files(browser, scripted_run, tmp_path):
    """Big runs keep only the index in the page: opening a rollout or searching loads the chunks beside it."""
    path = write_viewer(scripted_run, tmp_path / "big.html", tokenizer="smollm2-135m", split=True)
    assert "rg-d-0" not in path.read_text() and (tmp_path / "big_files" / "d-0.js").exists()
    rollouts = list(read_rollouts(scripted_run / "rollouts.jsonl"))
    browser.get_log("browser"), browser.get_log("performance")
    _open(browser, path, "r/3")
    view = rollouts[3].token_view(keep_trailing_bridge=True)
    assert len(_by_css(browser, ".strip .tk.s")) == sum(view["env_mask"]) > 0
    assert len(_by_css(browser, ".strip .tk.p")) == len(rollouts[3].prompt_ids)
    _open(browser, path)
    _by_css(browser, "#f-q")[0].send_keys(rollouts[0].initial_messages[-1]["content"][:20])
    time.sleep(0.8)
    shown = [int(r.get_attribute("data-i")) for r in _by_css(browser, "tr.rollout")]
    assert shown == [i for i, r in enumerate(rollouts) if r.task_id == rollouts[0].task_id]
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
    events = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = {ev["params"]["request"]["url"] for ev in events if ev["method"] == "Network.requestWillBeSent"}
    assert {u.split("#")[0] for u in urls} == {
        f"file://{path}",
        *(f"file://{tmp_path}/big_files/{n}" for n in ("d-0.js", "t-0.js", "p-0.js", "s-0.js")),
    }
