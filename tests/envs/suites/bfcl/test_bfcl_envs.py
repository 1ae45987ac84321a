"""Every catalogued BFCL id passes `check_env`; the categories, prompts and tools are bfcl-eval's own; rows name BFCL
entries, and bad ones are named (an unknown id with the closest ones, another category's, a refused category's)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

import rollgym as rg
from rollgym.envs import InvalidTaskError, UnknownEnvironmentError
from rollgym.envs.catalogue import catalogue
from rollgym.envs.suites.bfcl import BFCL_VERSION, CATEGORIES, REFUSED, RefusedCategoryError, env_id

IDS = [env_id(c) for c in CATEGORIES]


def test_the_catalogued_categories_are_the_installed_bfcls_multi_turn_ones():
    from bfcl_eval.constants.category_mapping import AGENTIC_CATEGORY, MULTI_TURN_CATEGORY

    assert importlib.metadata.version("bfcl-eval") == BFCL_VERSION
    assert list(CATEGORIES) == MULTI_TURN_CATEGORY and set(REFUSED) == set(AGENTIC_CATEGORY)
    entries = {e.id: e for e in catalogue() if e.suite == "bfcl"}
    assert set(entries) == set(IDS) and all(e.installed and e.package == "bfcl-eval" for e in entries.values())


def test_an_episode_starts_with_the_entrys_first_turn_and_bfcls_own_tool_docs():
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.model_handler.utils import convert_to_tool
    from bfcl_eval.utils import load_dataset_entry

    (bfcl_entry,) = [e for e in load_dataset_entry("multi_turn_base") if e["id"] == "multi_turn_base_0"]
    env = rg.make("bfcl/multi_turn_base-v0")
    messages, info = env.reset(options={"task": {"task_id": "multi_turn_base_0"}})
    assert messages == bfcl_entry["question"][0] and info["task_id"] == "multi_turn_base_0"
    assert info["tools"] == convert_to_tool(bfcl_entry["function"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
    assert {t["function"]["name"] for t in info["tools"]} >= {"cd", "mkdir", "mv", "post_tweet"}
    # a reply without a call ends the user's turn: the next one comes, and the last one ends the episode
    for turn in bfcl_entry["question"][1:]:
        reply, reward, terminated, truncated, _ = env.step({"role": "assistant", "content": "OK."})
        assert reply == turn and not terminated and not truncated
    _, reward, terminated, _, step_info = env.step({"role": "assistant", "content": "OK."})
    assert terminated and reward == 0.0 and step_info["reward_components"] == {"valid": 0.0, "turns_reached": 1.0}
    assert env.unwrapped.verdict["error_type"] == "multi_turn:empty_turn_model_response"
    env.close()


def test_a_held_out_function_arrives_in_bfcls_own_words_and_runs_all_along_as_in_bfcl():
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    env = rg.make("bfcl/multi_turn_miss_func-v0")
    _, info = env.reset(options={"task": {"task_id": "multi_turn_miss_func_0"}})  # `sort` is held out until turn 3
    assert "sort" not in {t["function"]["name"] for t in info["tools"]}
    call = {"id": "c", "type": "function", "function": {"name": "sort", "arguments": '{"file_name": "a.txt"}'}}
    reply, *_ = env.step({"role": "assistant", "content": None, "tool_calls": [call]})
    assert reply[0]["content"] == '{"error": "sort: a.txt: No such file or directory"}'  # BFCL runs it anyway
    for _ in range(3):
        reply, *_ = env.step({"role": "assistant", "content": "OK."})
    (message,) = reply
    assert message["role"] == "user" and message["content"].endswith(DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC)
    assert "'name': 'sort'" in message["content"]
    assert env.unwrapped.episode.turns[0] == [["sort(file_name='a.txt')"]]
    env.close()


def test_default_tasks_are_bfcls_entries_in_order():
    env = rg.make("bfcl/multi_turn_long_context-v0")
    assert env.unwrapped.default_tasks(2) == [
        {"task_id": "multi_turn_long_context_0"},
        {"task_id": "multi_turn_long_context_1"},
    ]
    assert env.unwrapped.default_tasks(1, seed=199) == [{"task_id": "multi_turn_long_context_199"}]
    assert len(env.unwrapped.default_tasks(1000)) == 200
    assert rg.load_tasks("bfcl/multi_turn_base-v0", num_tasks=3)[2] == {"task_id": "multi_turn_base_2"}
    env.close()


def test_bfcls_own_data_lines_are_rows():
    from bfcl_eval.utils import load_dataset_entry

    line = load_dataset_entry("multi_turn_miss_param")[7]
    env = rg.make("bfcl/multi_turn_miss_param-v0")
    _, info = env.reset(options={"task": line})
    assert info["task_id"] == "multi_turn_miss_param_7"
    env.close()


@pytest.mark.parametrize(
    ("task", "needle"),
    [
        (
            {"task_id": "multi_turn_base_2000"},
            r"has no entry 'multi_turn_base_2000'\. Did you mean 'multi_turn_base_20'",
        ),
        ({"task_id": "multi_turn_bse_12"}, r"Did you mean 'multi_turn_base_12'"),
        ({"task_id": "multi_turn_miss_func_3"}, r"is a multi_turn_miss_func entry.*use bfcl/multi_turn_miss_func-v0"),
        ({"task_id": "web_search_base_3"}, r"needs the live web"),
        ({"task_id": "memory_kv_1"}, r"files on the host"),
        ({"prompt": "no id"}, r"a BFCL task row is \{'task_id': 'multi_turn_base_0'\}"),
    ],
)
def test_a_bad_row_is_an_invalid_task_naming_the_problem(task, needle):
    env = rg.make("bfcl/multi_turn_base-v0")
    with pytest.raises(InvalidTaskError, match=needle):
        env.reset(options={"task": task})
    env.close()


@pytest.mark.parametrize("category", list(REFUSED))
def test_a_refused_category_is_refused_with_the_reason_and_not_catalogued(category):
    with pytest.raises(RefusedCategoryError, match="SerpAPI|memory snapshots") as caught:
        rg.make(env_id(category))
    assert isinstance(caught.value, UnknownEnvironmentError)
    assert env_id(category) not in {e.id for e in catalogue()}


def test_an_unknown_bfcl_id_suggests_the_closest():
    with pytest.raises(UnknownEnvironmentError, match=r"Did you mean 'bfcl/multi_turn_base-v0'"):
        rg.make("bfcl/multi_turn_bas-v0")


def test_without_bfcl_eval_make_says_what_to_install(monkeypatch):
    from rollgym.envs import SuiteNotInstalledError

    monkeypatch.setitem(sys.modules, "bfcl_eval", None)  # what the import system says when it is absent
    with pytest.raises(SuiteNotInstalledError, match=r"pip install --no-deps bfcl-eval==2026\.3\.23"):
        rg.make("bfcl/multi_turn_base-v0")


def test_import_rollgym_and_the_catalogue_import_no_bfcl():
    code = (
        "import sys, rollgym as rg; from rollgym.envs.catalogue import catalogue; "
        "assert any(e.suite == 'bfcl' and e.installed for e in catalogue()); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('bfcl_eval', 'tree_sitter', 'mpmath')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_more_steps_in_a_turn_than_bfcls_limit_ends_the_episode_as_bfcl_force_quits():
    from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT

    env = rg.make("bfcl/multi_turn_base-v0")
    env.reset(options={"task": {"task_id": "multi_turn_base_1"}})
    call = {"id": "c", "type": "function", "function": {"name": "pwd", "arguments": "{}"}}
    for _ in range(MAXIMUM_STEP_LIMIT):
        _, _, terminated, _, _ = env.step({"role": "assistant", "content": None, "tool_calls": [call]})
        assert not terminated
    _, reward, terminated, _, info = env.step({"role": "assistant", "content": None, "tool_calls": [call]})
    assert terminated and info["finish_reason"] == "force_quit" and reward == 0.0
    assert env.unwrapped.verdict["error_type"] == "multi_turn:force_terminated"  # 1 of the entry's 4 user turns
    env.close()
