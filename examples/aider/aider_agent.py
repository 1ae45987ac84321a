"""Aider as a rollgym rollout function: Aider edits a checkout of an SWE task through a recording-proxy session.

Aider is scripted as its docs describe (https://aider.chat/docs/scripting.html): `--message` does one
instruction and exits; `--yes-always` answers confirmations; `--no-auto-commits` leaves the edits as a
working-tree diff; `--no-suggest-shell-commands` stops it proposing commands. It reaches the proxy as an
OpenAI-compatible endpoint: model `openai/<name>` with `--openai-api-base` (aider/args.py; LiteLLM's
`openai/` provider prefix), and `--edit-format` set explicitly (small models cannot follow "diff" reliably).
The diff is graded by the SWE environment's grader (`rollgym.envs.swe.grading.grade_patch`, needs Docker).

    pip install 'rollgym[aider]'
    python examples/aider/aider_agent.py --num-tasks 1 --no-grade
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from rollgym.envs.swe import SWETask, checkout_task, working_tree_diff
from rollgym.envs.swe.checkout import GIT_IDENTITY
from rollgym.envs.swe.diffs import diff_paths


def find_aider() -> str | None:
    """The `aider` executable: $ROLLGYM_AIDER, then PATH, next to this Python, then where `.ci/agents-up` installs it."""
    cache = Path(os.environ.get("ROLLGYM_CACHE") or Path.home() / ".cache" / "rollgym")
    for cand in (
        os.environ.get("ROLLGYM_AIDER"),
        shutil.which("aider"),
        str(Path(sys.executable).parent / "aider"),
        str(cache / "agents" / "aider-venv" / "bin" / "aider"),
    ):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def aider_command(
    aider: str,
    base_url: str,
    api_key: str | None,
    message: str,
    files: list[str],
    *,
    model: str = "rollgym",
    edit_format: str = "whole",
    map_tokens: int = 0,
    history_dir: str | None = None,
) -> list[str]:
    """The Aider command line for one scripted request against an OpenAI-compatible `base_url`."""
    history = (
        [
            "--chat-history-file",
            f"{history_dir}/chat.md",
            "--input-history-file",
            f"{history_dir}/input",
            "--llm-history-file",
            f"{history_dir}/llm.log",
        ]
        if history_dir
        else []
    )
    return [
        aider,
        *history,
        "--model",
        f"openai/{model}",
        "--openai-api-base",
        base_url,
        "--openai-api-key",
        api_key or "rollgym",
        "--edit-format",
        edit_format,
        "--no-auto-commits",
        "--no-dirty-commits",
        "--no-suggest-shell-commands",
        "--yes-always",
        "--message",
        message,
        "--map-tokens",
        str(map_tokens),
        "--no-check-update",
        "--no-analytics",
        "--no-show-model-warnings",
        "--no-gitignore",
        "--no-pretty",
        "--no-fancy-input",
        "--no-auto-lint",
        "--no-auto-test",
        "--no-detect-urls",
        "--no-restore-chat-history",
        *files,
    ]


def aider_env() -> dict[str, str]:
    """Aider's environment: no network look-ups (LiteLLM's bundled model map), no history files in $HOME."""
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_CHECK_UPDATE": "false", **GIT_IDENTITY}


class AiderAgent:
    """`agent(row, base_url, api_key) -> diff`: Aider on a fresh checkout of the row's SWE task.

    Files added to the chat are those the gold patch touches (SWE-bench's "oracle" retrieval), so Aider
    needs no repository map; pass `files=` a function of the task to choose otherwise.
    """

    def __init__(
        self,
        *,
        edit_format: str = "whole",
        timeout_s: float = 900.0,
        aider: str | None = None,
        files=None,
        model: str = "rollgym",
    ) -> None:
        self.edit_format, self.timeout_s, self.model = edit_format, timeout_s, model
        self.aider = aider or find_aider()
        self.files = files or (lambda task: sorted(diff_paths(task.patch)))

    async def __call__(self, row: dict, base_url: str, api_key: str | None) -> str:
        if self.aider is None:
            raise RuntimeError("aider is not installed: pip install 'rollgym[aider]' (or set ROLLGYM_AIDER)")
        task = SWETask.model_validate(row)
        with tempfile.TemporaryDirectory(prefix="rollgym-aider-") as tmp:
            (Path(tmp) / "aider").mkdir()
            repo = checkout_task(task, Path(tmp) / "src", ignore=[".aider*"])  # Aider's files stay out of the diff
            cmd = aider_command(
                self.aider,
                base_url,
                api_key,
                task.problem_statement,
                self.files(task),
                model=self.model,
                edit_format=self.edit_format,
                history_dir=f"{tmp}/aider",
            )
            proc = await asyncio.create_subprocess_exec(
                *cmd,
                cwd=repo,
                env=aider_env(),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), self.timeout_s)
            except BaseException:
                proc.kill()
                await proc.wait()
                raise
            if proc.returncode != 0:
                raise RuntimeError(f"aider exited with {proc.returncode}: {out.decode(errors='replace')[-2000:]}")
            return working_tree_diff(repo)


def make_aider_rollout_func(
    policy: Any = None, *, edit_format: str = "whole", concurrency: int = 2, grade: bool = True, **kwargs: Any
):
    """A TRL `rollout_func` whose rollouts are Aider sessions on SWE tasks, rewarded by the SWE grader
    (without `policy`: the trainer's own model)."""
    import rollgym as rg

    return rg.agent_rollout_func(
        AiderAgent(edit_format=edit_format),
        rg.swe_reward if grade else None,
        policy=policy,
        concurrency=concurrency,
        **kwargs,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="engine spec")
    parser.add_argument("--num-tasks", type=int, default=1, help="how many bundled SWE tasks")
    parser.add_argument("--edit-format", default="whole")
    parser.add_argument("--out", default="runs/aider", help="output directory (re-running resumes it)")
    parser.add_argument("--no-grade", action="store_true", help="skip grading (no Docker)")
    parser.add_argument("--max-tokens", type=int, default=256, help="tokens per reply when Aider sends no max_tokens")
    args = parser.parse_args()

    import rollgym as rg
    from rollgym.rollouts.proxy import ProxySettings

    summary = rg.run_agents(
        AiderAgent(edit_format=args.edit_format),
        "bundled",
        args.model,
        out=args.out,
        num_tasks=args.num_tasks,
        reward=None if args.no_grade else rg.swe_reward,
        resume=True,
        settings=ProxySettings(default_max_tokens=args.max_tokens),
    )
    for rollout in rg.read_rollouts(f"{args.out}/rollouts.jsonl"):
        print(
            f"task {rollout.task_id}: {len(rollout.turns)} call(s), {sum(len(t.completion_ids) for t in rollout.turns)} "
            f"sampled tokens, reward {rollout.reward}, error {rollout.error}, segments {rollout.meta.get('segment_reasons')}"
        )
    print("reward mean", summary.reward_mean)


if __name__ == "__main__":
    main()
