"""BFCL multi-turn inside rollgym vs BFCL's own execution, side by side in one run.

The same work both ways: the ground truth of BFCL's multi_turn_base entries replayed call by call, then scored by
BFCL's `multi_turn_checker`. rollgym: `run_rollouts` on `bfcl/multi_turn_base-v0` with an instant `ScriptedEngine`
(the ground truth's calls as Hermes tool calls, one reply per user turn, then a text reply), the tokenizer and the
loop included. BFCL: its own `execute_multi_turn_func_call` per step, then `multi_turn_checker`, with no model and no
tokenizer (what BFCL's inference loop does besides querying the model). A turn is one model reply (a step with calls,
or the text reply that ends a user turn). Runs in the order rollgym, BFCL, BFCL, rollgym, so the VM's drift cancels.
Run: `.venv/bin/python benchmarks/bench_suite_bfcl.py [--entries N]` (bfcl-eval installed: .ci/setup).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import importlib
import inspect
import json
import os
import time
import uuid

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.suites.bfcl.calls import forget_instances
from rollgym.envs.suites.bfcl.entries import category_entries
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization.templates import CHATML_TOOLS

CATEGORY = "multi_turn_base"


def named_call(entry, call: str) -> tuple[str, dict]:
    """A ground-truth call string as a function-calling model's name and keyword arguments."""
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), call
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    for class_name in entry.involved_classes if node.args else ():
        backend = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
        if hasattr(backend, node.func.id):
            params = [p for p in inspect.signature(getattr(backend, node.func.id)).parameters if p != "self"]
            kwargs.update({params[i]: ast.literal_eval(a) for i, a in enumerate(node.args)})
            break
    return node.func.id, kwargs


def replies_of(entry, tok) -> list[list[int]]:
    """The entry's ground truth as completion ids: per user turn, the turn's calls (if any), then "Done."."""
    out = []
    for turn in entry.ground_truth:
        if turn:
            text = "\n".join(
                f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>"
                for n, a in (named_call(entry, c) for c in turn)
            )
            out.append(tok.encode(text) + [tok.end_of_turn_id])
        out.append(tok.encode("Done.") + [tok.end_of_turn_id])
    return out


async def through_rollgym(entries, tok, replies) -> tuple[int, float, float, list[float]]:
    """(turns, wall s, CPU s, rewards) of the entries' rollouts, one at a time (concurrency 1)."""

    turns, rewards = 0, []
    wall, cpu = time.perf_counter(), time.process_time()
    for entry in entries:
        script = iter(replies[entry.id])
        engine = ScriptedEngine(lambda p, s, it=script: next(it))
        (rollout,) = await rg.run_rollouts(
            f"bfcl/{CATEGORY}-v0",
            [{"task_id": entry.id}],
            rg.Policy(engine=engine, tokenizer=tok),
            limits=rg.Limits(max_turns=60, max_tokens_per_turn=4096),
        )
        turns += len(rollout.turns)
        rewards.append(rollout.reward)
    return turns, time.perf_counter() - wall, time.process_time() - cpu, rewards


def through_bfcl(entries) -> tuple[int, float, float, list[float]]:
    """(turns, wall s, CPU s, rewards) of the same calls run by BFCL's own functions."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call
    from bfcl_eval.model_handler.utils import convert_to_function_call

    turns, rewards = 0, []
    wall, cpu = time.perf_counter(), time.process_time()
    for entry in entries:
        name = f"bench_{uuid.uuid4().hex}"
        made: list[list[list[str]]] = []
        for turn in entry.ground_truth:
            steps = []
            if turn:
                calls = convert_to_function_call([{n: a} for n, a in (named_call(entry, c) for c in turn)])
                execute_multi_turn_func_call(
                    calls, entry.initial_config, entry.involved_classes, name, entry.id, long_context=False
                )
                steps.append(calls)
                turns += 1
            turns += 1  # the text reply that ends the turn
            made.append(steps)
        verdict = multi_turn_checker(made, entry.ground_truth, entry.checker_entry(), CATEGORY, name + "_check")
        rewards.append(1.0 if verdict["valid"] else 0.0)
        forget_instances(name)
        forget_instances(name + "_check")
    return turns, time.perf_counter() - wall, time.process_time() - cpu, rewards


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--entries", type=int, default=100)
    args = parser.parse_args()
    tok = load_chat_tokenizer("smollm2-135m", CHATML_TOOLS)
    entries = list(category_entries(CATEGORY).values())[: args.entries]
    replies = {e.id: replies_of(e, tok) for e in entries}
    asyncio.run(through_rollgym(entries, tok, replies))  # warm: imports, each entry's compiled tools, caches
    rows = []
    for side in ("rollgym", "bfcl", "bfcl", "rollgym"):
        if side == "rollgym":
            turns, wall, cpu, rewards = asyncio.run(through_rollgym(entries, tok, replies))
        else:
            turns, wall, cpu, rewards = through_bfcl(entries)
        rows.append((side, turns, wall, cpu, sum(rewards)))
        print(
            f"{side:<8} entries={len(entries)} turns={turns} solved={sum(rewards):.0f} "
            f"turns/s={turns / wall:8.1f} CPU per turn={cpu / turns * 1e3:6.3f} ms",
            flush=True,
        )
    ours = [r for r in rows if r[0] == "rollgym"]
    theirs = [r for r in rows if r[0] == "bfcl"]
    ours_cpu = sum(r[3] for r in ours) / sum(r[1] for r in ours)
    theirs_cpu = sum(r[3] for r in theirs) / sum(r[1] for r in theirs)
    print(
        f"CPU per turn: rollgym {ours_cpu * 1e3:.3f} ms, BFCL alone {theirs_cpu * 1e3:.3f} ms: "
        f"rollgym's loop, tokenizer and records add {(ours_cpu - theirs_cpu) * 1e3:.3f} ms a turn "
        f"({ours_cpu / theirs_cpu:.1f}x)"
    )


if __name__ == "__main__":
    main()
