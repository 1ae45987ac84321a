"""Fixtures for the viewer tests: a scripted Calculator run (exact tool calls, one failing, markup in its
arguments), and a real headless Chromium driven by selenium (skipped, with the reason, only when absent)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.limits import Limits
from rollgym.rollouts.generate import generate_to_dir
from rollgym.rollouts.policy import Policy

ROOT = Path(__file__).resolve().parents[3]
TASKS = CalculatorEnv.default_tasks(2)
HOSTILE = "</script><img src=x onerror=alert(1)>"  # must show as text, never run or break the page


def calculator_agent(tool_tok, say):
    """Turn 1: a call the environment refuses (markup where an int belongs); turn 2: add; turn 3: submit."""
    answers = {t["question"]: t["answer"] for t in TASKS}

    def policy(prompt, sampling):
        text = tool_tok.hf.decode(prompt)
        question = next(q for q in answers if q in text)
        done = text.count("<tool_response>")
        if done == 0:
            return say.call("add", a=HOSTILE, b=2)
        if done == 1:
            return say.call("add", a=1, b=2)
        return say.call("submit", answer=answers[question])

    return policy


@pytest.fixture(scope="session")
def hostile() -> str:
    return HOSTILE


@pytest.fixture(scope="session")
def scripted_run(tool_tok, say, tmp_path_factory) -> Path:
    """A run directory: 2 Calculator tasks x 2 samples, 3 turns each, one failed tool call per rollout."""
    out = tmp_path_factory.mktemp("scripted-run")
    policy = Policy(engine=ScriptedEngine(calculator_agent(tool_tok, say)), tokenizer=tool_tok)
    asyncio.run(
        generate_to_dir(
            env="rollgym/Calculator-v0",
            tasks=TASKS,
            policy=policy,
            out=out,
            n=2,
            concurrency=2,
            limits=Limits(max_turns=5, max_tokens_per_turn=64),
        )
    )
    return out


def _browser_or_skip() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    try:
        import selenium  # noqa: F401 - only whether it imports
    except ImportError:
        pytest.skip("selenium is not installed (pip install 'rollgym[test]'); skipping the real-browser viewer tests")
    if not chromium or not driver:
        pytest.skip(
            "no Chromium or chromedriver on PATH (apt-get install chromium chromium-driver, as .ci/setup does); "
            "skipping the real-browser viewer tests"
        )
    return chromium, driver


@pytest.fixture(scope="session")
def browser():
    """A real headless Chromium (Debian's chromium + chromium-driver) with its console and network logged."""
    chromium, driver_path = _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-component-update",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (kept after the run): $ROLLGYM_TEST_ARTIFACTS, else a folder in the system's temporary
    directory (never the checkout)."""
    default = Path(tempfile.gettempdir()) / "rollgym-test-artifacts"
    path = Path(os.environ.get("ROLLGYM_TEST_ARTIFACTS", default)) / "view"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture()
def scripted_proxy(tool_tok):
    """A factory: a real recording proxy over a ScriptedEngine, served from a thread for the test."""
    from contextlib import ExitStack

    from rollgym.proxy import ProxySettings, RecordingProxy

    stack = ExitStack()

    def make(script, **settings):
        proxy = RecordingProxy(
            Policy(engine=ScriptedEngine(script), tokenizer=tool_tok), settings=ProxySettings(**settings)
        )
        stack.enter_context(proxy.in_thread())
        return proxy

    with stack:
        yield make
