"""OpenEnv servers written with OpenEnv's own package, run through rollgym's loop with scripted policies: the reward
is the server's, each tool result the server's observation, token-exact; a refused action is told to the model; an
unreachable or dying server is an infrastructure failure of that rollout (not a reward of 0), and the batch goes on;
`rg.check_env` on both kinds of server."""

from __future__ import annotations

import random

import pytest
from support.openenv import bisecting_policy, free_port, note_policy, serve

import rollgym as rg
from rollgym.envs.suites.openenv.errors import OpenEnvServerError
from rollgym.limits import Limits

LIMITS = Limits(max_turns=10, max_tokens_per_turn=64)


def secret(seed: int) -> int:
    """The guessing game's number for a seed (servers/guess_env.py)."""
    return random.Random(seed).randint(1, 100)


def wrong_guesses(seed: int) -> int:
    """How many wrong guesses bisection makes before the number."""
    low, high, wrong = 1, 100, 0
    while (guess := (low + high) // 2) != secret(seed):
        low, high = (guess + 1, high) if guess < secret(seed) else (low, guess - 1)
        wrong += 1
    return wrong


def assert_token_exact(rollout) -> None:
    """Each turn's prompt is the previous sequence plus its completion; the sampled ids are the record's."""
    view = rollout.token_view()
    full = view["prompt_ids"] + view["completion_ids"]
    for turn in rollout.turns:
        assert full[turn.prompt_len : turn.prompt_len + len(turn.completion_ids)] == turn.completion_ids
    assert rollout.token_exact and len(view["completion_ids"]) == len(view["logprobs"]) == len(view["env_mask"])


async def test_the_guessing_game_is_won_and_lost_and_scored_as_the_server_says(guess_url, tool_tok, say):
    tasks = [{"seed": s, "task_id": f"seed{s}"} for s in (1, 9, 7)]  # bisection needs 4, 6 and 7 guesses
    rollouts = await rg.run_rollouts(
        "openenv/env-v0", tasks, bisecting_policy(tool_tok, say), limits=LIMITS, env_kwargs={"url": guess_url}
    )
    for rollout, task in zip(rollouts, tasks, strict=True):
        won = wrong_guesses(task["seed"]) < 6  # the game ends after 6 guesses
        wrong = wrong_guesses(task["seed"]) if won else 6
        assert rollout.error is None and rollout.stop_reason == "env_terminated"
        assert rollout.reward == pytest.approx(won - 0.1 * wrong)  # the sum of the server's step rewards
        assert rollout.reward_components == {"server_steps": wrong + won, "server_done": 1.0}
        results = [call.result for turn in rollout.turns for call in turn.tool_calls]
        assert (results[-1] == "correct") == won and set(results[:wrong]) <= {"higher", "lower"}
        assert rollout.messages()[1]["content"] == "I picked a number from 1 to 100. You have 6 guesses."
        assert_token_exact(rollout)


async def test_the_last_reward_mode_and_a_refused_action_told_to_the_model(guess_url, tool_tok, say):
    (rollout,) = await rg.run_rollouts(
        "openenv/env-v0",
        [{"seed": 3}],
        bisecting_policy(tool_tok, say, bad_first=500),
        limits=LIMITS,
        env_kwargs={"url": guess_url, "reward": "last"},
    )
    refused = rollout.turns[0].tool_calls[0]
    assert refused.failed and "Input should be less than or equal to 100" in refused.result
    assert rollout.error is None and rollout.reward == 1.0  # the last step's reward: the right guess


async def test_an_mcp_environments_tools_are_the_models_tools(notes_url, tool_tok, say):
    tasks = [{"seed": s} for s in range(3)]
    rollouts = await rg.run_rollouts(
        "openenv/env-v0", tasks, note_policy(tool_tok, say), limits=LIMITS, env_kwargs={"url": notes_url}
    )
    for rollout in rollouts:
        assert rollout.error is None and rollout.reward == 1.0 and rollout.stop_reason == "env_terminated"
        assert [c.result for t in rollout.turns for c in t.tool_calls] == ["1 note(s) kept", "submitted"]
        assert {t["function"]["name"] for t in rollout.tools} == {"write_note", "submit"}
        assert_token_exact(rollout)
    (wrong,) = await rg.run_rollouts(
        "openenv/env-v0", [{"seed": 0}], note_policy(tool_tok, say, note="nothing"), limits=LIMITS,
        env_kwargs={"url": notes_url},
    )  # fmt: skip
    assert wrong.error is None and wrong.reward == 0.0


async def test_an_unreachable_server_is_an_infrastructure_failure_not_reward_0(tool_tok, say):

    url = f"http://127.0.0.1:{free_port()}"
    rollouts = await rg.run_rollouts(
        "openenv/env-v0", [{"seed": 1}, {"seed": 2}], bisecting_policy(tool_tok, say), limits=LIMITS,
        env_kwargs={"url": url, "connect_timeout_s": 5},
    )  # fmt: skip
    for rollout in rollouts:
        assert rollout.error is not None and rollout.error.category == "sandbox" and rollout.error.phase == "setup"
        assert rollout.error.type == "OpenEnvServerError" and url in rollout.error.message
        assert rollout.reward is None or rollout.error is not None


def test_a_server_that_goes_away_mid_episode_fails_the_episode(tmp_path):

    process, url = serve("guess_env:app", tmp_path)
    env = rg.make("openenv/env-v0", url=url)
    try:
        env.reset(options={"task": {"seed": 3}})
        process.kill()
        process.wait()
        call = {"id": "c1", "type": "function", "function": {"name": "act", "arguments": '{"guess": 50}'}}
        _, reward, terminated, _, info = env.step({"role": "assistant", "content": "", "tool_calls": [call]})
        assert terminated and info["finish_reason"] == "error" and isinstance(info["error"], OpenEnvServerError)
    finally:
        env.close()
        process.kill()


def test_make_refuses_neither_or_both_servers():
    from rollgym.errors import UsageError

    with pytest.raises(UsageError, match="exactly one of `url`"):
        rg.make("openenv/env-v0")
    with pytest.raises(UsageError, match="exactly one of `url`"):
        rg.make("openenv/env-v0", url="http://127.0.0.1:1", image="x")


@pytest.mark.parametrize("server", ["guess", "notes"])
def test_check_env(openenv_servers, server):
    env = rg.make("openenv/env-v0", url=openenv_servers[server])
    try:
        rg.check_env(env)
    finally:
        env.close()


def test_rollgym_generate_runs_an_openenv_server_named_by_env_arg(guess_url, tmp_path):
    """The CLI with the real SmolLM2: the server's reset as the first message, its action model as the tool."""
    import json

    from typer.testing import CliRunner

    from rollgym.cli import app

    out = tmp_path / "run"
    args = ["generate", "--env", "openenv/env-v0", "--env-arg", f"url={guess_url}", "--num-tasks", "1", "--n", "1"]
    result = CliRunner().invoke(app, [*args, "--max-turns", "2", "--max-tokens", "16", "--out", str(out)])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert row["env_id"] == "openenv/env-v0" and row["error"] is None and row["turns"]
    assert "I picked a number from 1 to 100" in row["initial_messages"][-1]["content"]
