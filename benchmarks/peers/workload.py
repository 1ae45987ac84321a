"""The one workload every framework runs, written once by the orchestrator (rollgym's venv) as JSON for the runners.

The Calculator task: a system prompt, a question, the tools add/subtract/multiply/submit (rollgym's own schemas),
the same tasks (seed 0), the same sampling (temperature 1.0, top_p 1.0, seed 0), a turn budget, a token budget per
turn, and one rule for a reply without a tool call: the nudge below, so an episode always runs its turn budget.
"""

from __future__ import annotations

import json
from pathlib import Path

NUDGE = "Use the tools: call add, subtract or multiply, then submit."
TOKENIZER = "smollm2-135m"


def calculator_tools() -> list[dict]:
    """The Calculator's tool schemas in OpenAI's format, as rollgym hands them to the template."""
    import asyncio

    from rollgym.envs.builtin.calculator import CalculatorEnv

    async def reset() -> list[dict]:
        env = CalculatorEnv()
        _, info = await env.areset(options={"task": CalculatorEnv.default_tasks(1)[0]})
        await env.aclose()
        return info["tools"]

    return asyncio.run(reset())


def write_workload(path: Path, episodes: int, max_turns: int, max_tokens: int, model_dir: str) -> dict:
    from rollgym.envs.builtin.calculator import SYSTEM_PROMPT, CalculatorEnv
    from rollgym.tokenization.templates import CHATML_TOOLS

    work = {
        "system": SYSTEM_PROMPT,
        "tools": calculator_tools(),
        "tasks": CalculatorEnv.default_tasks(episodes),
        "nudge": NUDGE,
        "max_turns": max_turns,
        "sampling": {"temperature": 1.0, "top_p": 1.0, "seed": 0, "max_tokens": max_tokens},
        "tokenizer": TOKENIZER,
        "model_dir": model_dir,
        "chat_template": CHATML_TOOLS,
        "eos_token": "<|im_end|>",
    }
    path.write_text(json.dumps(work))
    return work


def write_instant_ids(path: Path) -> None:
    """The ids the instant server answers `/v1/completions` with: SmolLM2's tokenization of the call, one id per
    digit (any id sequence that decodes to the call is a valid sample)."""
    from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
    from rollgym.tokenization.templates import CHATML_TOOLS

    tok = load_chat_tokenizer(TOKENIZER, CHATML_TOOLS)
    digits = {d: tok.encode(d) for d in "0123456789"}
    assert all(len(ids) == 1 for ids in digits.values())
    ids = {
        "head": tok.encode('<tool_call>\n{"name": "add", "arguments": {"a": '),
        "tail": tok.encode(', "b": 2}}\n</tool_call>'),
        "digits": {d: ids[0] for d, ids in digits.items()},
        "stop": tok.end_of_turn_id,
    }
    path.write_text(json.dumps(ids))
