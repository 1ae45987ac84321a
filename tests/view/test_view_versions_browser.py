"""The viewer shows training: when a run's rollouts carry policy versions, the overview gains reward, tool-call
success and sampled tokens per version (a table and charts), and the rollout list filters by version; checked in a
real headless Chromium on the scripted Calculator run, its rollouts stamped with three weights versions."""

from __future__ import annotations

import time

import pytest

from rollgym.rollouts.output import read_rollouts
from rollgym.rollouts.versions import oldest_version
from rollgym.view import write_viewer

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def versioned_view(scripted_run, tmp_path_factory):
    """The scripted run's 4 rollouts, twice over, stamped with versions 0, 1, 2 (rewards differing by version)."""
    base = tmp_path_factory.mktemp("versioned-view")
    rollouts = []
    for k, r in enumerate([*read_rollouts(scripted_run / "rollouts.jsonl")] * 2):
        copy = r.model_copy(deep=True, update={"id": f"v{k}", "sample_index": k})
        version = k % 3
        for turn in copy.turns:
            turn.policy_version = version
        copy.reward = float(version) / 2
        rollouts.append(copy)
    (base / "rollouts.jsonl").write_text("".join(r.to_json() + "\n" for r in rollouts))
    return write_viewer(base, tokenizer="smollm2-135m"), rollouts


def _open(browser, path) -> None:
    browser.get("about:blank")
    browser.get(f"file://{path}#/")
    deadline = time.monotonic() + 30
    while not browser.execute_script("return !!document.querySelector('#rollouts')"):
        assert time.monotonic() < deadline, "the overview never rendered"
        time.sleep(0.05)


def test_the_overview_shows_each_policy_version_and_the_list_filters_by_it(browser, versioned_view, artifacts):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    path, rollouts = versioned_view
    _open(browser, path)
    rows = browser.find_elements(By.CSS_SELECTOR, "#versions tr.version")
    assert [int(r.get_attribute("data-version")) for r in rows] == [0, 1, 2]
    for row in rows:
        v = int(row.get_attribute("data-version"))
        mine = [r for r in rollouts if oldest_version(r) == v]
        calls = [c for r in mine for t in r.turns for c in t.tool_calls]
        cells = [c.text for c in row.find_elements(By.CSS_SELECTOR, "td")]
        reward = sum(r.reward for r in mine) / len(mine)
        success = sum(not c.failed for c in calls) / len(calls)
        sampled = sum(len(t.completion_ids) for r in mine for t in r.turns) / len(mine)
        assert cells[1] == str(len(mine)) and float(cells[2]) == pytest.approx(reward, abs=1e-3), cells
        assert float(cells[3]) == pytest.approx(success, abs=1e-3) and float(cells[4]) == pytest.approx(
            sampled, abs=0.1
        )
    assert len(browser.find_elements(By.CSS_SELECTOR, "#by-version .plot svg")) == 3
    browser.save_screenshot(str(artifacts / "by-version.png"))
    Select(browser.find_element(By.ID, "f-version")).select_by_visible_text("1")
    listed = [int(r.get_attribute("data-i")) for r in browser.find_elements(By.CSS_SELECTOR, "tr.rollout")]
    assert listed == [i for i, r in enumerate(rollouts) if oldest_version(r) == 1] and listed
    logs = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not logs, logs
