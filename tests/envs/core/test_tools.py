"""Tool schemas from signatures and docstrings, plain-function tools, async tools, and concurrency."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Literal

from rollgym.envs import Env, ToolSet, tool
from rollgym.envs.core.tools import Tool


def search(query: str, limit: int = 5, kinds: list[Literal["code", "docs"]] | None = None) -> list[str]:
    """Search the corpus.

    Args:
        query: words to look for
        limit: how many results, at most
        kinds: which corpora to search;
            all of them when omitted
    """
    return [f"{query}:{i}" for i in range(limit)]


def test_schema_from_signature_and_docstring():
    fn = Tool(search).schema()["function"]
    assert fn["name"] == "search" and fn["description"] == "Search the corpus."
    props = fn["parameters"]["properties"]
    assert props["query"] == {"description": "words to look for", "type": "string"}
    assert props["limit"]["default"] == 5 and props["limit"]["type"] == "integer"
    assert props["kinds"]["description"] == "which corpora to search; all of them when omitted"
    assert {"type": "array", "items": {"enum": ["code", "docs"], "type": "string"}} in props["kinds"]["anyOf"]
    assert fn["parameters"]["required"] == ["query"]


def test_swe_editor_schema_has_an_enum_and_integer_arrays():
    from rollgym.envs.swe.env import SWEEnv

    schemas = {s["function"]["name"]: s["function"] for s in SWEEnv().toolset.schemas()}
    params = schemas["str_replace_editor"]["parameters"]
    assert params["properties"]["command"]["enum"] == ["view", "create", "str_replace", "insert", "undo_edit"]
    assert params["required"] == ["command", "path"]
    assert {"items": {"type": "integer"}, "type": "array"} in params["properties"]["view_range"]["anyOf"]
    assert schemas["submit"]["parameters"]["properties"] == {}


class Echo(Env):
    async def setup(self, task):
        return [{"role": "user", "content": "hi"}], {"task_id": "echo"}

    async def compute_reward(self):
        return 0.0, {}

    @tool(parallel=True)
    async def wait(self, seconds: float) -> str:
        """Sleep, then say so."""
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @tool
    def boom(self) -> str:
        """Always fails."""
        raise RuntimeError("kaput")


def call(name, args, i):
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


async def test_plain_function_tools_async_tools_and_parallel_calls():
    env = Echo(tools=[search])
    _, info = await env.areset()
    assert {t["function"]["name"] for t in info["tools"]} == {"wait", "boom", "search"}
    start = time.monotonic()
    obs, *_, step_info = await env.astep(
        {"role": "assistant", "content": None, "tool_calls": [call("wait", {"seconds": 0.5}, i) for i in range(4)]}
    )
    assert time.monotonic() - start < 1.2 and [o["content"] for o in obs] == ["slept 0.5"] * 4
    obs, *_, step_info = await env.astep(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("search", {"query": "x", "limit": 2}, 1), call("boom", {}, 2)],
        }
    )
    assert obs[0]["content"] == '["x:0", "x:1"]'
    assert obs[1]["content"] == "Error: tool 'boom' failed: RuntimeError: kaput"
    assert step_info["tool_calls"][1].error_kind == "tool_error"


async def test_a_tool_call_with_no_arguments_field_and_odd_ids():
    ts = ToolSet.from_object(Echo())
    rec = await ts.call({"id": 7, "function": {"name": "boom"}})
    assert rec.id == "7" and rec.failed and rec.error_kind == "tool_error"


async def test_environments_share_their_tool_schemas_and_a_tool_still_gives_a_fresh_copy():
    """Each reset used to parse its tools' schemas anew: the largest part of an idle rollout's memory at 65,000
    rollouts. Environments with the same tools now share one parsed copy; `Tool.schema()` stays a fresh one."""
    from rollgym.envs.builtin.calculator import CalculatorEnv

    task = CalculatorEnv.default_tasks(1)[0]
    infos = []
    for _ in range(2):
        env = CalculatorEnv()
        infos.append((await env.areset(options={"task": task}))[1])
        await env.aclose()
    first, second = infos[0]["tools"], infos[1]["tools"]
    assert first == second and all(a is b for a, b in zip(first, second, strict=True))
    one = Tool(search)
    assert one.schema() == one.schema() and one.schema() is not one.schema()


def test_a_tools_argument_model_is_built_once_per_function_not_per_environment():
    """Building a pydantic model per tool per environment cost CPU and memory on every rollout."""
    from rollgym.envs.builtin.calculator import CalculatorEnv

    first, second = CalculatorEnv(), CalculatorEnv()
    assert first.toolset.tools["add"].args_model is second.toolset.tools["add"].args_model
