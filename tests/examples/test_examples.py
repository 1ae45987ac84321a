"""Every README snippet is a file in examples/, run here as a newcomer would run it (the embedded model)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
README = EXAMPLES.parent / "README.md"
SNIPPETS = ["one_rollout.py", "batch_to_disk.py", "train_grpo.py", "write_an_env.py", "proxy_agent.py", "view_a_run.py"]
#: what a snippet may import besides rollgym: the standard library and the libraries a use belongs to
ALLOWED = {"asyncio", "json", "sys", "datasets", "trl", "openai", "rollgym"}


def run(name: str, cwd: Path, *args: str, timeout: float = 900) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", "TQDM_DISABLE": "1"}
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.parametrize("name", SNIPPETS)
def test_each_snippet_is_short_uses_the_front_door_and_is_in_the_readme(name):
    source = (EXAMPLES / name).read_text()
    tree = ast.parse(source)
    code_lines = {
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.stmt)
        and not (isinstance(n, ast.Expr) and isinstance(getattr(n, "value", None), ast.Constant))
    }
    assert len(code_lines) < 17, f"{name} has {len(code_lines)} statements' lines"  # (d) shows default_tasks too
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= ALLOWED, imported - ALLOWED
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module.startswith("rollgym")], (
        "snippets import rollgym as rg: the front door only"
    )
    body = source.split('"""', 2)[2].strip()  # the README shows the file without its docstring
    assert body in README.read_text(), f"the README's snippet differs from examples/{name}"


def test_write_an_env_passes_check_env(tmp_path):
    assert "passes check_env" in run("write_an_env.py", tmp_path)


@pytest.mark.slow
def test_one_rollout(tmp_path):
    stop, reward, sampled = run("one_rollout.py", tmp_path).split()[:3]
    assert stop in {"no_tool_call", "env_terminated", "max_turns", "truncated_completion", "context_limit"}
    assert float(reward) in (0.0, 1.0) and int(sampled.split("/")[0]) > 0


@pytest.mark.slow
def test_batch_to_disk_is_resumable(tmp_path):
    first = run("batch_to_disk.py", tmp_path)
    lines = (tmp_path / "runs/calc/rollouts.jsonl").read_text().splitlines()
    assert len(lines) == 4 and "reward mean" in first
    assert {(json.loads(x)["task_id"], json.loads(x)["sample_index"]) for x in lines} == {
        ("calc-0", 0),
        ("calc-0", 1),
        ("calc-1", 0),
        ("calc-1", 1),
    }
    run("batch_to_disk.py", tmp_path)  # resumes: nothing left to do, nothing written twice
    assert (tmp_path / "runs/calc/rollouts.jsonl").read_text().splitlines() == lines


@pytest.mark.slow
def test_view_a_run_writes_the_page(tmp_path):
    out = run("view_a_run.py", tmp_path)
    page = tmp_path / "runs/calc/view.html"
    assert f"open {Path('runs/calc/view.html')} in a browser" in out and page.exists()
    html = page.read_text()
    assert html.count('id="rg-d-') == 4 and 'id="rg-index"' in html


@pytest.mark.slow
def test_proxy_agent_records_the_call(tmp_path):
    out = run("proxy_agent.py", tmp_path).strip().splitlines()[-1]
    ids = json.loads(out[out.index("[") :])
    assert ids and all(isinstance(i, int) for i in ids)


@pytest.mark.slow
def test_train_grpo_one_step(tmp_path):
    out = run("train_grpo.py", tmp_path, "1", timeout=1500)
    assert "TrainOutput(global_step=1," in out, out[-2000:]


@pytest.mark.docker
@pytest.mark.slow
def test_run_agent_example_runs_a_built_in_agent_in_its_sandbox(tmp_path, docker_engine):
    from rollgym.agents import agent_spec
    from rollgym.errors import UsageError

    try:
        agent_spec("mini-swe-agent").executable()
    except UsageError as exc:
        print(f"{exc}; skipping the example's real run")
        pytest.skip(str(exc))
    out = run("agents/run_agent.py", tmp_path, "--agent", "mini-swe-agent", "--option", "step_limit=1")
    assert "task inflection__ordinal-teens" in out and "reward mean" in out
    assert (tmp_path / "runs" / "mini-swe-agent" / "rollouts.jsonl").is_file()
