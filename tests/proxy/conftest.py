"""Fixtures for the proxy tests: the SmolLM2 tokenizer with rollgym's ChatML tool template, a scripted
engine proxy (fast, exact tool calls) and the real default model behind one proxy per test session."""

from __future__ import annotations

import pytest
from support.proxy import SpyEngine

from rollgym.rollouts.policy import Policy

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]


@pytest.fixture(scope="session")
def tools():
    return TOOLS


@pytest.fixture(scope="session")
def ptok(tool_tok):
    """The default model's tokenizer with the ChatML tool template (tests/conftest.py)."""
    return tool_tok


@pytest.fixture(scope="session")
def scripts(say):
    """Exact completion ids for text and tool calls (tests/conftest.py)."""
    return say


@pytest.fixture()
def scripted_proxy(ptok):
    """A factory: a proxy over a ScriptedEngine (spied), served from a thread; yields (proxy, spy)."""
    from contextlib import ExitStack

    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.proxy import ProxySettings, RecordingProxy

    stack = ExitStack()

    def make(script, **settings):
        spy = SpyEngine(ScriptedEngine(script))
        proxy = RecordingProxy(Policy(engine=spy, tokenizer=ptok), settings=ProxySettings(**settings))
        stack.enter_context(proxy.in_thread())
        return proxy, spy

    with stack:
        yield make


@pytest.fixture(scope="session")
def real_proxy(ptok):
    """The real SmolLM2-135M behind one recording proxy for the whole test session (model loaded once)."""
    from rollgym.engines.transformers_engine import TransformersEngine
    from rollgym.proxy import ProxySettings, RecordingProxy

    spy = SpyEngine(TransformersEngine("smollm2-135m"))
    proxy = RecordingProxy(Policy(engine=spy, tokenizer=ptok), settings=ProxySettings(default_max_tokens=40))
    with proxy.in_thread():
        yield proxy, spy
