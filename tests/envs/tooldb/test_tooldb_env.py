"""General-agent task folders (`tools.py` + `db.json` + `verify(db)`) as an in-process tool environment: read by
path, their tools offered to the model, each episode on a fresh copy of the database, `verify` the reward."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.tooldb.db_tasks import read_tooldb_task
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy

TASKS = Path(__file__).parents[2] / "fixtures" / "tooldb"


def _scripted(tool_tok, *steps):
    return ScriptedEngine(
        lambda p, s: steps[min(tool_tok.decode(list(p)).count("<|im_start|>assistant") - 1, len(steps) - 1)]
    )


def test_a_task_folder_is_read_by_path_and_offers_its_tools():
    [row] = rg.load_tasks("rollgym/ToolDB-v0", str(TASKS))
    env = rg.make("rollgym/ToolDB-v0")
    try:
        _, info = env.reset(options={"task": row})
    finally:
        env.close()
    assert sorted(t["function"]["name"] for t in info["tools"]) == ["remove_item", "set_stock", "submit"]


def test_scripted_model_gets_verify_as_its_reward_and_the_database_is_fresh_each_episode(tool_tok, say):
    [row] = rg.load_tasks("rollgym/ToolDB-v0", str(TASKS))
    full = _scripted(
        tool_tok,
        say.call("set_stock", item="apple", count=5),
        say.call("remove_item", item="expired-milk"),
        say.call("submit"),
    )
    half = _scripted(tool_tok, say.call("set_stock", item="apple", count=5), say.call("submit"))
    for engine, reward in ((full, 1.0), (half, 0.5), (full, 1.0)):
        policy = Policy(engine=engine, tokenizer=tool_tok)
        [r] = asyncio.run(run_rollouts("rollgym/ToolDB-v0", [row], policy, limits=Limits(max_turns=4)))
        assert r.error is None and r.reward == reward and r.reward_components == {"verify": reward}
    assert read_tooldb_task(row).db["stock"]["apple"] == 0  # the folder's database is never changed


def test_a_tool_error_is_told_to_the_model(tool_tok, say):
    [row] = rg.load_tasks("rollgym/ToolDB-v0", str(TASKS))
    engine = _scripted(tool_tok, say.call("remove_item", item="banana"), say.call("submit"))
    [r] = asyncio.run(run_rollouts("rollgym/ToolDB-v0", [row], Policy(engine=engine, tokenizer=tool_tok)))
    call = r.turns[0].tool_calls[0]
    assert call.failed and "banana" in call.result and r.reward == 0.0


def test_a_folder_without_verify_is_invalid(tmp_path):
    folder = Path(shutil.copytree(TASKS / "restock", tmp_path / "restock"))
    tools = folder / "tools.py"
    tools.write_text(tools.read_text().replace("def verify(", "def not_verify("))
    with pytest.raises(InvalidTaskError, match="no verify"):
        read_tooldb_task({"task_dir": str(folder)})
