"""The real SmolLM2-135M plays both OpenEnv servers through rollgym (a system prompt with one worked call in its own
template, as `rollgym demo` gives it): its rollouts are token-exact (rebuilt from their messages and sampled ids alone,
the demo's `replay`), its tool calls are the server's steps, and replaying the recorded actions with OpenEnv's own
client (`GenericEnvClient`) against the same server gives the same observations and rewards as rollgym recorded."""

from __future__ import annotations

import json

import pytest
from support.openenv import replay_with_openenv_client

import rollgym as rg
from rollgym.engines import SamplingParams
from rollgym.envs.suites.openenv.wire import StepResult, observation_text
from rollgym.limits import Limits

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2():
    from rollgym.engines.transformers_engine import TransformersEngine

    return TransformersEngine("smollm2-135m")


def recorded_actions(rollout, mcp: bool) -> list[dict]:
    """The actions the rollout sent the server: each call that was not refused before reaching it."""
    actions = []
    for turn in rollout.turns:
        for call in turn.tool_calls:
            if call.result.startswith("Error: unknown tool") or not isinstance(call.arguments, dict):
                continue  # answered by rollgym, never sent
            if mcp:
                actions.append({"type": "call_tool", "tool_name": call.name, "arguments": call.arguments})
            elif not call.failed:
                actions.append(call.arguments)
    return actions


#: one worked call per server, in the model's own template
EXAMPLES = {"guess": ("act", {"guess": 50}), "notes": ("write_note", {"text": "my note"})}


@pytest.mark.parametrize(("server", "mcp"), [("guess", False), ("notes", True)])
async def test_the_real_model_token_exact_and_replayed_by_openenvs_client(
    openenv_servers, smollm2, tool_tok, server, mcp
):
    from rollgym.cli.demo import replay, tool_call_example

    url = openenv_servers[server]
    example = tool_call_example(tool_tok, *EXAMPLES[server])
    prompt = f"Call exactly one tool per reply, and write nothing else. For example:\n{example}"
    (rollout,) = await rg.run_rollouts(
        "openenv/env-v0",
        [{"seed": 4}],
        rg.Policy(engine=smollm2, tokenizer=tool_tok),
        limits=Limits(max_turns=2, max_tokens_per_turn=32),
        sampling=SamplingParams(seed=0, temperature=0.0),
        env_kwargs={"url": url, "system_prompt": prompt},
    )
    assert rollout.error is None, rollout.error
    assert rollout.token_exact and rollout.model == "smollm2-135m"
    view = rollout.token_view()
    rebuilt = replay(rollout, tool_tok)
    assert {k: rebuilt[k] for k in view} == view  # the stored ids are exactly what the messages and samples imply
    full = view["prompt_ids"] + view["completion_ids"]
    for turn in rollout.turns:  # each prompt extends the previous sequence with exactly the sampled ids
        assert full[turn.prompt_len : turn.prompt_len + len(turn.completion_ids)] == turn.completion_ids
    names = {t["function"]["name"] for t in rollout.tools}
    assert names == ({"write_note", "submit"} if mcp else {"act"})
    shown = tool_tok.decode(view["prompt_ids"])
    assert all(f'"name": "{name}"' in shown for name in names)  # the model was shown the server's tools

    actions = recorded_actions(rollout, mcp)
    # SmolLM2-135M seldom writes a well-formed call (the scripted tests drive the steps): whatever it did reach the
    # server is replayed, and the reset's observation and the reward agree with OpenEnv's own client either way
    replayed = replay_with_openenv_client(url, {"seed": 4}, [{"type": "list_tools"}, *actions] if mcp else actions)
    assert observation_text(StepResult.model_validate(replayed[0])) == rollout.messages()[1]["content"]
    steps = replayed[2:] if mcp else replayed[1:]
    rewards = [s["reward"] for s in steps if s["reward"] is not None]
    assert rollout.reward == pytest.approx(
        sum(rewards) if rewards else 0.0
    )  # the server's rewards, as OpenEnv's client reads them
    assert rollout.reward_components["server_done"] == float(bool(steps) and steps[-1]["done"])
    if not mcp:  # each observation rollgym showed the model is the one OpenEnv's client got
        results = [c.result for t in rollout.turns for c in t.tool_calls if not c.failed]
        assert results == [observation_text(StepResult.model_validate(s)) for s in steps]
    print(json.dumps({"server": server, "turns": len(rollout.turns), "actions": actions, "reward": rollout.reward}))
