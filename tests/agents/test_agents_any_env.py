"""Agents run in the sandbox of any environment that has one (`rollgym.envs.SandboxedEnv`), not only the SWE
environment's, and their reward is that environment's own: a task that is not a repository (write the answer into a
file), its agent a script the tests define, the real SmolLM2 behind a real recording proxy, a real Docker sandbox."""

from __future__ import annotations

from typing import Any

import pytest
from support.agent import ASK, PYTHON

import rollgym as rg
from rollgym.agents import AgentRun, AgentSpec
from rollgym.envs import AgentWorkspace, is_sandboxed
from rollgym.envs.sandbox import SandboxConfig, base_image_name, start_sandbox
from rollgym.errors import UsageError

ENV_ID = "tests/NoteInSandbox-v0"


class NoteEnv(rg.Env):
    """Not a repository: the answer goes into `/work/answer.txt`; the reward reads it there."""

    def __init__(self, sandbox: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.sandbox_overrides, self.sandbox, self.row = dict(sandbox or {}), None, {}

    @classmethod
    def sandbox_placement(cls, row: dict, overrides: dict) -> dict:
        return dict(overrides)

    async def setup(self, task):
        self.row = task or {"task_id": "note-0", "question": "Write 7.", "answer": "7"}
        config = SandboxConfig(image=base_image_name(), workdir="/work", **self.sandbox_overrides)
        self.sandbox = await start_sandbox(config)
        await self.sandbox.aexec("mkdir -p /work", timeout=30)
        return [{"role": "user", "content": self.row["question"]}], {"task_id": self.row["task_id"]}

    def agent_workspace(self) -> AgentWorkspace:
        return AgentWorkspace(workdir="/work", instructions=self.row["question"], task=self.row)

    async def agent_outcome(self) -> dict:
        return {}

    async def compute_reward(self):
        assert self.sandbox is not None
        res = await self.sandbox.aexec("cat /work/answer.txt", timeout=30)
        right = res.exit_code == 0 and res.output.strip() == str(self.row["answer"])
        return float(right), {"wrote_answer": float(res.exit_code == 0)}

    async def teardown(self) -> None:
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            await sandbox.aclose()


class NoteAgent(AgentSpec):
    """Asks the model once (a call to record), then writes the answer the row's question names."""

    name, env_var, install, cache_path = "note-agent", "ROLLGYM_TEST_NOTE", "nothing to install", "-"

    def __init__(self, **kwargs) -> None:
        super().__init__(executable=PYTHON, **kwargs)

    def host_paths(self) -> list[str]:
        return []

    def files(self, run: AgentRun) -> dict[str, str]:
        script = ASK + (
            "import sys\nprint('model said:', ask(sys.argv[1][:200]))\n"
            "open('/work/answer.txt', 'w').write(sys.argv[1].split()[-1].rstrip('.'))\n"
        )
        return {f"{run.home}/agent.py": script}

    def environment(self, run: AgentRun) -> dict[str, str]:
        return {"BASE_URL": run.base_url, "API_KEY": run.api_key}

    def command(self, run: AgentRun, prompt: str) -> list[str]:
        return [PYTHON, "-I", f"{run.home}/agent.py", prompt]


@pytest.fixture(scope="module", autouse=True)
def note_env():
    rg.register(ENV_ID, NoteEnv)
    yield


def test_the_note_environment_offers_a_sandbox_and_the_calculator_does_not():
    assert is_sandboxed(NoteEnv) and not is_sandboxed(rg.make("rollgym/Calculator-v0").unwrapped)
    with pytest.raises(UsageError, match="offers none.*lacks sandbox_placement"):
        rg.run_agents(NoteAgent(), [{"task_id": "x"}], "smollm2-135m", out="/nonexistent", env="rollgym/Calculator-v0")


@pytest.mark.docker
@pytest.mark.slow
def test_an_agent_runs_in_another_environments_sandbox_and_gets_its_reward(tool_tok, tmp_path, docker_engine):
    from rollgym.engines.transformers_engine import TransformersEngine

    policy = rg.Policy(engine=TransformersEngine("smollm2-135m"), tokenizer=tool_tok)
    rows = [
        {"task_id": "note-a", "question": "Write the number 42.", "answer": "42"},
        {"task_id": "note-b", "question": "Write the number 7.", "answer": "8"},  # the agent writes 7: wrong
    ]
    summary = rg.run_agents(NoteAgent(timeout_s=300), rows, policy, out=tmp_path / "run", env=ENV_ID, concurrency=1)
    got = {r.task_id: r for r in rg.read_rollouts(tmp_path / "run" / "rollouts.jsonl")}
    assert summary.rollouts == 2 and all(r.error is None for r in got.values()), [r.error for r in got.values()]
    assert got["note-a"].reward == 1.0 and got["note-b"].reward == 0.0  # the environment's own reward, each
    assert got["note-a"].reward_components == {"wrote_answer": 1.0} and got["note-a"].env_id == ENV_ID
    assert all(r.token_exact and len(r.turns) == 1 for r in got.values())  # the agent's one call, recorded
