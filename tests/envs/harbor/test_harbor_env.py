"""Harbor task folders through rollgym, for real: validated by the CLI (solution 1, nothing below 1), solved through
the tool loop by a scripted model; each task sampled by the real small model and run by a script agent (recorded
token-exact, graded); a model that writes its own reward gets 0; the agent's shell sees neither tests/ nor solution/;
faulty tasks fail alone, by category."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

import rollgym as rg
from rollgym.cli import app
from rollgym.engines.scripted import ScriptedEngine
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.output import read_rollouts
from rollgym.rollouts.policy import Policy

pytestmark = [pytest.mark.docker]

FIXTURES = Path(__file__).parents[2] / "fixtures"
TASKS = FIXTURES / "harbor"
PREBUILT = "rollgym-tests/harbor-prebuilt:v1"


@pytest.fixture(scope="module")
def harbor_images(base_image):
    """rollgym's base image as `rollgym/base:latest` (what the fixtures' Dockerfiles start FROM) and the prebuilt
    image `partial-credit` names, built once per module."""
    client = docker.from_env()
    client.images.get(base_image).tag("rollgym/base", "latest")
    client.images.build(path=str(FIXTURES / "harbor-images" / "prebuilt"), tag=PREBUILT, rm=True, network_mode="none")
    return TASKS


def _row(task: str) -> dict:
    (row,) = rg.load_tasks("rollgym/Harbor-v0", str(TASKS / task))
    return row


def _scripted(tool_tok, *steps: list[int]) -> ScriptedEngine:
    """A model that plays `steps` in order within each episode (the turn is told from the assistant turns in the prompt)."""
    return ScriptedEngine(
        lambda p, s: steps[min(tool_tok.decode(list(p)).count("<|im_start|>assistant") - 1, len(steps) - 1)]
    )


def _run(task_rows: list[dict], engine, tool_tok, n: int = 1, max_turns: int = 4):
    policy = Policy(engine=engine, tokenizer=tool_tok)
    return asyncio.run(
        run_rollouts("rollgym/Harbor-v0", task_rows, policy, n=n, concurrency=4, limits=Limits(max_turns=max_turns))
    )


def test_validate_the_task_folders_by_path(harbor_images):
    done = CliRunner().invoke(app, ["validate", str(harbor_images), "--json"])
    assert done.exit_code == 0, done.output
    rows = {r["instance_id"]: r for r in map(json.loads, re.findall(r"^\{.*\}$", done.output, re.M))}
    assert {k: r["verdict"] for k, r in rows.items()} == dict.fromkeys(
        ("partial-credit", "use-mcp-tool", "write-greeting"), "valid"
    )
    assert rows["partial-credit"]["gold"]["components"] == {"reward": 1.0, "add": 1.0, "mul": 1.0}
    assert {r["empty"]["reward"] for r in rows.values()} == {0.0}


def test_validate_starts_each_mcp_server_and_names_one_that_does_not_start(harbor_images, tmp_path):
    """`use-mcp-tool` with a second server whose script is not in the image: validate starts both in the task's
    sandbox; the task is invalid, naming the server that did not start and why (its stderr), not the one that did."""
    folder = Path(shutil.copytree(TASKS / "use-mcp-tool", tmp_path / "broken-server"))
    toml = folder / "task.toml"
    broken = '\n[[environment.mcp_servers]]\nname = "gone"\ntransport = "stdio"\ncommand = "python3"\n'
    toml.write_text(toml.read_text() + broken + 'args = ["/opt/mcp/not_there.py"]\n')
    done = CliRunner().invoke(app, ["validate", str(folder), "--json"])
    (row,) = map(json.loads, re.findall(r"^\{.*\}$", done.output, re.M))
    assert row["verdict"] == "invalid" and done.exit_code != 0, done.output
    assert list(row["mcp_not_started"]) == ["gone"], row  # `plain` started
    assert "MCP server 'gone' did not start" in row["problem"] and "not_there.py" in row["problem"], row["problem"]


def test_a_task_whose_tests_pass_without_the_solution_is_invalid(harbor_images, tmp_path):
    folder = Path(shutil.copytree(TASKS / "write-greeting", tmp_path / "always-passes"))
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    done = CliRunner().invoke(app, ["validate", str(folder), "--json"])
    assert done.exit_code == 1, done.output
    assert "doing nothing scores 1" in done.output


def test_scripted_model_solves_both_tasks_through_the_tool_loop(harbor_images, tool_tok, say):
    greet = _scripted(tool_tok, say.call("bash", command="echo 'hello harbor' > greeting.txt"), say.call("submit"))
    group = _run([_row("write-greeting")], greet, tool_tok, n=4)  # a GRPO group: four sandboxes of the one image
    assert [(r.error, r.reward) for r in group] == [(None, 1.0)] * 4, [r.error for r in group]
    fix = "sed -i 's/return a - b/return a + b/' calc.py"  # half the task: `add` only
    [half] = _run(
        [_row("partial-credit")], _scripted(tool_tok, say.call("bash", command=fix), say.call("submit")), tool_tok
    )
    assert half.error is None and half.reward == 0.5
    assert half.reward_components == {"reward": 0.5, "add": 1.0, "mul": 0.0}


def test_a_tasks_mcp_server_runs_in_its_sandbox_and_its_tool_is_called_through_the_loop(harbor_images, tool_tok, say):
    """`[[environment.mcp_servers]]`: the stdio server starts inside the task's container, its `where` tool joins
    bash and the editor, and the model solves the task from the tool's answer (the container's hostname)."""

    def model(prompt, _sampling):
        text = tool_tok.decode(list(prompt))
        turn = text.count("<|im_start|>assistant") - 1
        if turn == 0:
            return say.call("where")
        if turn == 1:
            host = json.loads(re.findall(r'\{"hostname".*?\}', text)[-1])["hostname"]
            return say.call("bash", command=f"echo {host} > /app/host.txt")
        return say.call("submit")

    [r] = _run([_row("use-mcp-tool")], ScriptedEngine(model), tool_tok)
    assert r.error is None and r.reward == 1.0, r.error
    where = r.turns[0].tool_calls[0]
    assert where.name == "where" and not where.failed, where
    seen = json.loads(where.result)
    assert seen["in_container"] and seen["hostname"] != socket.gethostname()  # inside the sandbox, not on the host
    assert [c.name for t in r.turns for c in t.tool_calls] == ["where", "bash", "submit"]


def test_a_model_that_writes_its_own_reward_gets_nothing_and_cannot_see_the_tests(harbor_images, tool_tok, say):
    peek = "ls /tests /solution; mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt; echo '{\"reward\": 1}' > /logs/verifier/reward.json"
    [hack] = _run(
        [_row("write-greeting")], _scripted(tool_tok, say.call("bash", command=peek), say.call("submit")), tool_tok
    )
    assert hack.error is None and hack.reward == 0.0, hack.error
    seen = hack.turns[0].tool_calls[0].result
    assert "/tests': No such file" in seen and "/solution': No such file" in seen, seen


def test_faulty_tasks_fail_alone_each_with_its_category(harbor_images, tmp_path, tool_tok, say):
    root = tmp_path / "faults"
    for name in ("empty-reward", "missing-base", "verifier-timeout", "build-fails", "build-too-slow"):
        shutil.copytree(TASKS / "write-greeting", root / name)
    shutil.copytree(TASKS / "write-greeting", root / "write-greeting")
    (root / "empty-reward" / "tests" / "test.sh").write_text("#!/bin/bash\n: > /logs/verifier/reward.txt\n")
    (root / "missing-base" / "environment" / "Dockerfile").write_text("FROM rollgym-tests/no-such-base:v1\n")
    (root / "verifier-timeout" / "tests" / "test.sh").write_text("#!/bin/bash\nsleep 60\n")
    (root / "build-fails" / "environment" / "Dockerfile").write_text("FROM rollgym/base:latest\nRUN exit 7\n")
    (root / "build-too-slow" / "environment" / "Dockerfile").write_text("FROM rollgym/base:latest\nRUN sleep 15\n")
    toml = root / "build-too-slow" / "task.toml"
    toml.write_text(toml.read_text().replace("build_timeout_sec = 300.0", "build_timeout_sec = 2.0"))
    toml = root / "verifier-timeout" / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60.0", "timeout_sec = 2.0"))
    rows = rg.load_tasks("rollgym/Harbor-v0", str(root))
    rollouts = {r.task_id: r for r in _run(rows, ScriptedEngine(lambda p, s: say.call("submit")), tool_tok)}
    empty, missing, slow, good = (
        rollouts[k] for k in ("empty-reward", "missing-base", "verifier-timeout", "write-greeting")
    )
    assert (empty.error.category, empty.error.type) == ("environment", "RewardFileError")
    assert "reward.txt is empty" in empty.error.message
    assert (missing.error.category, missing.error.type) == ("sandbox", "ImageMissingError") and not missing.turns
    assert "rollgym-tests/no-such-base:v1" in missing.error.message
    assert (slow.error.category, slow.error.type) == (
        "timeout",
        "VerifierTimeoutError",
    ) and "over 2s" in slow.error.message
    assert good.error is None and good.reward == 0.0  # submitted nothing: graded, 0
    broken = rollouts["build-fails"]
    assert (broken.error.category, broken.error.type) == ("sandbox", "ImageError") and "exit 7" in broken.error.message
    slow_build = rollouts["build-too-slow"]
    assert slow_build.error.type == "ImageError" and "build_timeout_sec=2" in slow_build.error.message


#: what each fixture task's verifier reports beside `reward` (reward.json's named components)
COMPONENTS = {"write-greeting": set(), "partial-credit": {"add", "mul"}, "use-mcp-tool": set()}


def _tool_names(rollout) -> set[str]:
    return {(t.get("function") or t)["name"] for t in rollout.tools}


@pytest.mark.parametrize("task", ["write-greeting", "partial-credit", "use-mcp-tool"])
def test_real_small_model_through_generate_is_recorded_token_exact_and_graded(harbor_images, tmp_path, tool_tok, task):
    """Each task through the tool loop with the real small model (2 turns x 16 tokens: it solves none of them): each
    rollout token-exact, graded by the task's own verifier, no infrastructure error."""
    out = tmp_path / "run"
    args = ["generate", "--env", "rollgym/Harbor-v0", "--tasks", str(TASKS / task), "--model", "smollm2-135m"]
    done = CliRunner().invoke(app, [*args, "--n", "1", "--max-turns", "2", "--max-tokens", "16", "--out", str(out)])
    assert done.exit_code == 0, done.output
    [r] = list(read_rollouts(out / "rollouts.jsonl"))
    assert r.task_id == task and r.error is None and r.token_exact, r.error
    assert 0.0 <= r.reward <= 1.0 and r.reward_components.get("reward", r.reward) == r.reward
    assert COMPONENTS[task] <= set(r.reward_components), r.reward_components  # reward.json's keys: its verifier ran
    view = r.token_view()
    assert len(view["completion_ids"]) == len(view["logprobs"]) == len(view["env_mask"]) > 0
    assert all(lp <= 0.0 for lp, m in zip(view["logprobs"], view["env_mask"], strict=True) if m)
    assert {"bash", "submit"} <= _tool_names(r)
    if task == "use-mcp-tool":  # the task's MCP server's tool is offered to the model, in its tools and its prompt
        assert "where" in _tool_names(r), _tool_names(r)
        assert '"where"' in tool_tok.decode(list(r.prompt_ids))


#: per task, what the script agent does after asking the model, and the reward Harbor's verifier gives it
AGENT_ACTS = {
    "write-greeting": ("open('/app/greeting.txt', 'w').write('hello harbor\\n')", 1.0),
    "partial-credit": (  # half the task: `add` only
        "p = '/work/calc.py'; s = open(p).read(); open(p, 'w').write(s.replace('return a - b', 'return a + b'))",
        0.5,
    ),
}


@pytest.mark.parametrize("task", list(AGENT_ACTS))
def test_an_agent_inside_the_sandbox_solves_a_harbor_task(harbor_images, tool_tok, tmp_path, task):
    """The agents machinery is not tied to the SWE environment: a script agent runs in each Harbor task's container,
    its model call (the real small model) recorded through the proxy, and Harbor's verifier grades what it left."""
    from support.agent import ScriptAgent

    from rollgym.engines.transformers_engine import TransformersEngine

    act, reward = AGENT_ACTS[task]
    script = f"import sys\nprint('model said:', ask(sys.argv[1][:200], 4))\n{act}\n"
    policy = rg.Policy(engine=TransformersEngine("smollm2-135m"), tokenizer=tool_tok)
    summary = rg.run_agents(
        ScriptAgent(script, timeout_s=120), [_row(task)], policy, out=tmp_path / "run", env="rollgym/Harbor-v0"
    )
    (rollout,) = rg.read_rollouts(tmp_path / "run" / "rollouts.jsonl")
    assert summary.rollouts == 1 and rollout.error is None, rollout.error
    assert rollout.token_exact and len(rollout.turns) == 1, rollout.turns
    assert rollout.reward == reward and COMPONENTS[task] <= set(rollout.reward_components), rollout.reward_components


def test_an_agent_without_an_mcp_client_is_refused_on_a_task_with_mcp_servers(harbor_images, tool_tok, tmp_path, say):
    """The script agent has no MCP client (`mcp_client` False, as mini-swe-agent and Aider): on `use-mcp-tool` its
    run is an errored rollout naming the agent and the server, not a run scored 0 without the task's tools (the
    agents that have one get the servers in their own config: tests/agents/test_agents_mcp.py)."""
    from support.agent import ScriptAgent

    policy = rg.Policy(engine=ScriptedEngine([say.text("unused")]), tokenizer=tool_tok)
    rg.run_agents(
        ScriptAgent("print(ask('hi'))\n"), [_row("use-mcp-tool")], policy, out=tmp_path / "run", env="rollgym/Harbor-v0"
    )
    (rollout,) = rg.read_rollouts(tmp_path / "run" / "rollouts.jsonl")
    assert rollout.error is not None and rollout.error.type == "AgentWithoutMCPError", rollout.error
    assert "script has no MCP client" in rollout.error.message and "plain" in rollout.error.message


def test_the_agents_time_limit_ends_the_episode_and_it_is_graded(harbor_images, tmp_path, tool_tok, say):
    folder = Path(shutil.copytree(TASKS / "write-greeting", tmp_path / "short-limit"))
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 120.0", "timeout_sec = 1.0"))
    rows = rg.load_tasks("rollgym/Harbor-v0", str(folder))
    slow = _scripted(
        tool_tok,
        say.call("bash", command="sleep 5; echo late"),
        say.call("bash", command="echo hello harbor > greeting.txt"),
    )
    [r] = _run(rows, slow, tool_tok, max_turns=6)
    assert r.error is None and r.reward == 0.0 and len(r.turns) == 2, r.error
    assert "timed out" in r.turns[0].tool_calls[0].result and "time limit" in r.turns[1].tool_calls[0].result


def test_images_build_builds_a_datasets_images_ahead_and_names_a_missing_base(harbor_images, tmp_path):
    root = Path(shutil.copytree(TASKS, tmp_path / "tasks"))
    built = CliRunner().invoke(app, ["images", "build", str(root)])
    assert built.exit_code == 0, built.output
    assert (
        f"[1/3] partial-credit: {PREBUILT}" in built.output and "[3/3] write-greeting: rollgym-harbor/" in built.output
    )
    (root / "write-greeting" / "environment" / "Dockerfile").write_text("FROM rollgym-tests/no-such-base:v1\n")
    missing = CliRunner().invoke(app, ["images", "build", str(root)])
    assert missing.exit_code == 3 and "FAILED" in missing.output and "rollgym-tests/no-such-base:v1" in missing.output


def test_the_sandbox_has_a_network_only_when_the_task_allows_it(harbor_images, tmp_path, tool_tok, say):
    root = tmp_path / "net"
    shutil.copytree(TASKS / "write-greeting", root / "offline")
    online = Path(shutil.copytree(TASKS / "write-greeting", root / "online"))
    toml = online / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]", '[environment]\nnetwork_mode = "public"'))
    routes = _scripted(
        tool_tok, say.call("bash", command="echo routes=$(tail -n +2 /proc/net/route | wc -l)"), say.call("submit")
    )
    rollouts = {r.task_id: r for r in _run(rg.load_tasks("rollgym/Harbor-v0", str(root)), routes, tool_tok)}
    seen = {k: r.turns[0].tool_calls[0].result.strip() for k, r in rollouts.items()}
    assert seen["offline"] == "routes=0" and seen["online"] != "routes=0", seen
