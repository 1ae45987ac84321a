"""MCP tools through rollgym's rollout loop: a scripted model calls a server's tool and the result is in the record;
a server that dies fails its rollout only (an environment failure in the tool phase), one that never answers is a
tool error the model reads, and the batch goes on; the real small model sees the servers' tools in its prompt."""

from __future__ import annotations

import asyncio

import pytest
from support.mcp import ServerToolsEnv, faulty

from rollgym.engines import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy

TASKS = [
    {"task_id": "echo", "question": "TASK=echo"},
    {"task_id": "crash", "question": "TASK=crash"},
    {"task_id": "hang", "question": "TASK=hang"},
]
FIRST_CALL = {"echo": ("echo", {"text": "hello"}), "crash": ("crash", {}), "hang": ("hang", {"seconds": 30})}


def _env() -> ServerToolsEnv:
    return ServerToolsEnv(mcp_servers=[faulty(call_timeout_s=1.0)])


def test_a_batch_calls_server_tools_records_results_and_survives_a_dying_server(tool_tok, say):
    def reply(prompt, sampling):
        text = tool_tok.hf.decode(prompt)
        if text.count("<|im_start|>assistant") == 1:
            name, arguments = FIRST_CALL[text.split("TASK=")[1].split("<")[0].strip()]
            return say.call(name, **arguments)
        return say.text("done")

    rollouts = asyncio.run(
        run_rollouts(
            _env,
            TASKS,
            Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok),
            concurrency=3,
            limits=Limits(max_turns=3, max_tokens_per_turn=256),
            sampling=SamplingParams(seed=0),
        )
    )
    got = {r.task_id: r for r in rollouts}
    assert set(got) == {"echo", "crash", "hang"}  # the batch went on past the dead server

    echo = got["echo"]
    assert echo.error is None and len(echo.turns) == 2 and echo.token_exact
    (recorded,) = echo.turns[0].tool_calls
    assert (recorded.name, recorded.arguments, recorded.result, recorded.failed) == (
        "echo",
        {"text": "hello"},
        "hello",
        False,
    )
    assert echo.turns[0].env_messages[0]["content"] == "hello"

    crash = got["crash"]
    assert crash.error is not None and crash.error.category == "environment" and crash.error.phase == "tool"
    assert crash.error.type == "MCPServerDiedError" and "'faulty' died mid-episode" in crash.error.message
    assert crash.turns[0].tool_calls[0].failed

    hang = got["hang"]
    assert hang.error is None and len(hang.turns) == 2  # the model read the time-out and answered
    assert hang.turns[0].tool_calls[0].failed and "within 1s" in hang.turns[0].tool_calls[0].result


@pytest.mark.slow
def test_the_real_small_model_is_shown_the_servers_tools(tool_tok):
    from rollgym.engines.transformers_engine import TransformersEngine

    prompts: list[str] = []
    engine = TransformersEngine("smollm2-135m")
    generate = engine.generate

    async def seen(prompt_ids, sampling=None):
        prompts.append(tool_tok.hf.decode(prompt_ids))
        return await generate(prompt_ids, sampling)

    engine.generate = seen  # pyright: ignore[reportAttributeAccessIssue]  # a spy on the real engine
    rollouts = asyncio.run(
        run_rollouts(
            _env,
            [{"task_id": "real", "question": "Echo the word hello with the echo tool."}],
            Policy(engine=engine, tokenizer=tool_tok),
            limits=Limits(max_turns=1, max_tokens_per_turn=16),
            sampling=SamplingParams(seed=0, temperature=0.0),
        )
    )
    (rollout,) = rollouts
    assert rollout.error is None or rollout.error.category != "environment", rollout.error
    assert prompts and '"name": "echo"' in prompts[0] and "Return the text unchanged." in prompts[0]
    assert rollout.token_exact
