"""BFCL environments through rollgym's loop: a scripted policy replaying the ground truth scores 1 by BFCL's checker
on entries of every backend, token-exact; a wrong call scores 0; the reward is what BFCL's own `multi_turn_checker`
says of the same calls; BFCL's checker raising is the rollout's recorded error and the batch goes on; bad calls are
answered with a clear message; the real SmolLM2 through `rg.Policy` and `rollgym generate`."""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
import uuid

import pytest
from support.bfcl import BACKENDS, calls_text, script_of, scripted_policy, scripts_of, tool_call

import rollgym as rg
from rollgym.envs.suites.bfcl import CATEGORIES
from rollgym.envs.suites.bfcl.calls import forget_instances
from rollgym.envs.suites.bfcl.entries import category_entries
from rollgym.envs.suites.bfcl.env import env_class

LIMITS = rg.Limits(max_turns=40, max_tokens_per_turn=4096)


def covering(category: str) -> list:
    """The first entry of the category that involves each backend (7 entries cover the 8)."""
    entries = list(category_entries(category).values())
    chosen = {next(e.id for e in entries if backend in e.involved_classes) for backend in BACKENDS}
    return [e for e in entries if e.id in chosen]


def bfcl_calls(rollout) -> list[list[list[str]]]:
    """The rollout's calls as BFCL's checker reads them (turns of steps of call strings, by BFCL's own decoding): a
    reply without a call ends a user turn."""
    from bfcl_eval.model_handler.utils import convert_to_function_call

    turns: list[list[list[str]]] = [[]]
    for turn in rollout.turns:
        if turn.tool_calls:
            turns[-1].append(convert_to_function_call([{c.name: c.arguments} for c in turn.tool_calls]))
        elif turn is not rollout.turns[-1]:
            turns.append([])
    return turns


@functools.cache
def bfcls_own_entries(category: str) -> tuple[dict, dict]:
    """The category's entries and ground truth by id, as BFCL's own loaders give them."""
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    truths = {t["id"]: t["ground_truth"] for t in load_ground_truth_entry(category)}
    return {e["id"]: e for e in load_dataset_entry(category)}, truths


def bfcls_own_verdict(entry_id: str, turns: list[list[list[str]]]) -> dict:
    """BFCL's `multi_turn_checker` on `turns`, with the entry and ground truth as BFCL's own loaders give them."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    category = entry_id.rsplit("_", 1)[0]
    entries, truths = bfcls_own_entries(category)
    entry, truth = copy.deepcopy(entries[entry_id]), truths[entry_id]
    if len(turns) != len(truth):
        return {"valid": False}
    name = f"bfcl_test_{uuid.uuid4().hex}"  # BFCL keeps instances under the name: a reused one would carry state
    try:
        return multi_turn_checker(turns, truth, entry, category, name)
    finally:
        forget_instances(name)


@pytest.mark.parametrize("category", CATEGORIES)
async def test_replaying_the_ground_truth_scores_1_on_every_backend_token_exact(category, tool_tok):
    entries = covering(category)
    assert set().union(*(e.involved_classes for e in entries)) == set(BACKENDS)
    policy = scripted_policy(tool_tok, scripts_of(entries))
    rollouts = await rg.run_rollouts(f"bfcl/{category}-v0", [{"task_id": e.id} for e in entries], policy, limits=LIMITS)
    for rollout, entry in zip(rollouts, entries, strict=True):
        assert rollout.error is None and rollout.reward == 1.0, (rollout.task_id, rollout.error, rollout.stop_reason)
        assert rollout.reward_components == {"valid": 1.0, "turns_reached": 1.0}
        assert rollout.token_exact and rollout.stop_reason == "no_tool_call"
        calls = [c for t in rollout.turns for c in t.tool_calls]
        assert len(calls) == sum(len(t) for t in entry.ground_truth) and not any(c.failed for c in calls)
        assert sum(1 for t in rollout.turns if not t.tool_calls) == len(entry.question)  # one text reply per turn
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    assert not [name for name in vars(multi_turn_utils) if name.startswith("rollgym_")]  # BFCL's instances let go


async def test_a_wrong_call_scores_0_with_bfcls_reason(tool_tok):
    entry = category_entries("multi_turn_base")["multi_turn_base_0"]
    script = script_of(entry)
    script[0] = script[0].replace('"dir_name": "temp"', '"dir_name": "tmp"')  # the wrong directory
    policy = scripted_policy(tool_tok, scripts_of([entry]) | {next(iter(scripts_of([entry]))): script})
    made = []

    def factory():
        made.append(env_class("multi_turn_base")())
        return made[-1]

    (rollout,) = await rg.run_rollouts(factory, [{"task_id": entry.id}], policy, limits=LIMITS)
    assert rollout.error is None and rollout.reward == 0.0 and rollout.reward_components["valid"] == 0.0
    assert made[0].verdict["error_type"] == "multi_turn:instance_state_mismatch"


def _variants(entry) -> dict[str, list[str]]:
    """The ground truth, and three ways of getting it wrong: the last turn's calls left out, one argument changed, a
    call to a function the entry does not have."""
    right = script_of(entry)
    first = next(i for i, turn in enumerate(entry.ground_truth) if turn)
    changed = [tool_call(entry, c) for c in entry.ground_truth[first]]
    key = next(iter(changed[0][1]), None)
    if key is not None:
        value = changed[0][1][key]
        changed[0][1][key] = value + 1 if isinstance(value, (int, float)) and not isinstance(value, bool) else "x"
    dropped = list(right)
    last_calls = max(i for i, reply in enumerate(right) if reply.startswith("<tool_call>"))
    del dropped[last_calls]
    altered = list(right)
    altered[right.index(next(r for r in right if r.startswith("<tool_call>")))] = calls_text(changed)
    unknown = [calls_text([("no_such_function", {})])] + right
    return {"right": right, "dropped": dropped, "altered": altered, "unknown": unknown}


async def test_the_reward_is_what_bfcls_own_checker_says_of_the_same_calls(tool_tok):
    entries = [category_entries(c)[f"{c}_{i}"] for c in CATEGORIES for i in (2, 50, 160)]
    seen = {}
    for variant in ("right", "dropped", "altered", "unknown"):
        by_category: dict[str, list] = {}
        for entry in entries:
            by_category.setdefault(entry.category, []).append(entry)
        for category, group in by_category.items():
            scripts = {k: _variants(e)[variant] for k, e in zip(scripts_of(group), group, strict=True)}
            rows = [{"task_id": e.id} for e in group]
            rollouts = await rg.run_rollouts(
                f"bfcl/{category}-v0", rows, scripted_policy(tool_tok, scripts), limits=LIMITS
            )
            for rollout in rollouts:
                assert rollout.error is None, rollout.error
                own = bfcls_own_verdict(rollout.task_id, bfcl_calls(rollout))
                assert rollout.reward == (1.0 if own["valid"] else 0.0), (variant, rollout.task_id, own)
                seen[(variant, rollout.task_id)] = rollout.reward
    assert {r for (v, _), r in seen.items() if v in ("right", "unknown")} == {1.0}  # an unknown call is harmless
    assert {r for (v, _), r in seen.items() if v == "dropped"} == {0.0}
    assert 0.0 in {r for (v, _), r in seen.items() if v == "altered"}


async def test_bfcls_checker_raising_is_the_rollouts_error_and_the_batch_goes_on(tool_tok, monkeypatch):
    """An entry whose file system BFCL cannot load (a directory without `contents`): BFCL's backend raises at the
    first call (a tool error the model reads) and BFCL's checker raises when scoring: a `ScorerError`."""
    entries = category_entries("multi_turn_base")
    real = entries["multi_turn_base_1"]
    broken = real.model_copy(
        update={
            "id": "multi_turn_base_9999",
            "initial_config": {"GorillaFileSystem": {"root": {"alex": {"type": "directory"}}}},
        }
    )
    monkeypatch.setitem(entries, broken.id, broken)
    policy = scripted_policy(tool_tok, scripts_of([real]))
    rows = [{"task_id": broken.id}, {"task_id": real.id}]
    failed, scored = await rg.run_rollouts("bfcl/multi_turn_base-v0", rows, policy, limits=LIMITS)
    assert failed.error is not None and failed.error.phase == "reward" and failed.error.type == "ScorerError"
    assert "BFCL's multi_turn_checker (multi_turn_base_9999) raised KeyError" in failed.error.message
    assert "KeyError: 'contents'" in failed.turns[0].tool_calls[0].result
    assert not rg.is_infra_failure(failed)
    assert scored.error is None and scored.reward == 1.0


def _step_calls(env, *calls: tuple[str, str]) -> list[str]:
    tool_calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}
        for i, (name, args) in enumerate(calls)
    ]
    reply, *_ = env.step({"role": "assistant", "content": None, "tool_calls": tool_calls})
    return [m["content"] for m in reply]


def test_a_malformed_call_is_answered_with_a_clear_message_and_bfcl_never_evaluates_it():
    env = rg.make("bfcl/multi_turn_base-v0")
    env.reset(options={"task": {"task_id": "multi_turn_base_0"}})
    bad_json, injected, misnamed, unknown, good = _step_calls(
        env,
        ("cd", '{"folder": '),
        ("cd", json.dumps({"folder='x'),__import__('os').system('id'),cd(folder": "y"})),
        ("cd", '{"fodler": "document"}'),
        ("rm_rf", "{}"),
        ("cd", '{"folder": "document"}'),
    )
    assert bad_json.startswith("Error: the arguments of tool 'cd' are not valid JSON")
    assert injected.startswith("Error: tool 'cd' failed: argument names must be parameter names of 'cd'")
    assert misnamed == "Error during execution: GorillaFileSystem.cd() got an unexpected keyword argument 'fodler'"
    assert unknown.startswith("Error: unknown tool 'rm_rf'.")
    assert good == '{"current_working_directory": "document"}'
    # only the calls BFCL could run are the model's calls for BFCL's checker (BFCL's own error text included)
    assert env.unwrapped.episode.turns == [[["cd(fodler='document')", "cd(folder='document')"]]]
    env.close()


@pytest.mark.slow
async def test_one_short_episode_with_the_real_smollm2_is_token_exact(tool_tok, smollm2_fp32):
    """SmolLM2-135M plays the entry with the fewest tool docs for two turns; the sampled tokens' logprobs are
    the model's own under the whole recorded sequence (a teacher-forced float32 replay), the rest are the env's."""
    from support.vllm import assert_token_exact

    from rollgym.engines.transformers_engine import TransformersEngine

    policy = rg.Policy(engine=TransformersEngine("smollm2-135m"), tokenizer=tool_tok)
    limits = rg.Limits(max_turns=2, max_tokens_per_turn=16)
    (rollout,) = await rg.run_rollouts(
        "bfcl/multi_turn_miss_func-v0", [{"task_id": "multi_turn_miss_func_121"}], policy, limits=limits
    )
    assert rollout.error is None, rollout.error
    assert rollout.reward in (0.0, 1.0) and set(rollout.reward_components) == {"valid", "turns_reached"}
    assert_token_exact(rollout, smollm2_fp32)
    assert len(rollout.turns) >= 1 and rollout.turns[0].prompt_len == len(rollout.prompt_ids)


@pytest.mark.slow
def test_rollgym_generate_runs_a_bfcl_category_with_the_real_default_model(tmp_path):
    """One entry with the fewest tool docs (the trading bot's: a 3,851-token prompt), two model turns."""
    out, tasks = tmp_path / "run", tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task_id": "multi_turn_base_100"}) + "\n")
    argv = [
        "--env",
        "bfcl/multi_turn_base-v0",
        "--tasks",
        str(tasks),
        "--n",
        "1",
        "--max-tokens",
        "8",
        "--max-turns",
        "2",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "rollgym", "generate", *argv, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (rollout,) = rg.read_rollouts(out / "rollouts.jsonl")
    assert rollout.task_id == "multi_turn_base_100" and rollout.error is None, rollout.error
    assert rollout.reward in (0.0, 1.0) and set(rollout.reward_components) == {"valid", "turns_reached"}
    assert rollout.token_exact and rollout.model == "smollm2-135m" and len(rollout.turns) >= 1
