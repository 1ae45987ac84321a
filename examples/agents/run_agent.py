"""A built-in agent CLI on bundled SWE tasks, inside each task's sandbox, through rollgym's recording proxy.

    bash .ci/agents-up                                            # installs the five CLIs once
    python examples/agents/run_agent.py --agent claude-code       # runs/claude-code/rollouts.jsonl, graded
    python examples/agents/run_agent.py --agent mini-swe-agent --option step_limit=4 --num-tasks 3

The same from the command line: `rollgym generate --agent claude-code --tasks bundled --out runs/cc`. In a trainer:
`GRPOTrainer(..., rollout_func=rg.agent_rollout_func("codex"))` (the trainer's own model serves the proxy).
"""

from __future__ import annotations

import argparse
import json

import rollgym as rg
from rollgym.proxy import ProxySettings


def main() -> None:
    parser = argparse.ArgumentParser(description="an agent CLI on bundled SWE tasks, in their sandboxes")
    parser.add_argument("--agent", default="claude-code", help="claude-code, codex, opencode, mini-swe-agent, aider")
    parser.add_argument("--model", default="smollm2-135m", help="engine spec")
    parser.add_argument("--num-tasks", type=int, default=1, help="how many bundled SWE tasks")
    parser.add_argument("--max-tokens", type=int, default=256, help="tokens per reply (the proxy's cap)")
    parser.add_argument("--option", action="append", default=[], help="KEY=VALUE for the agent, e.g. step_limit=4")
    parser.add_argument("--out", default=None, help="output directory (re-running resumes it)")
    args = parser.parse_args()
    options = {"max_output_tokens": args.max_tokens}
    for item in args.option:
        key, _, value = item.partition("=")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    out = args.out or f"runs/{args.agent}"
    summary = rg.run_agents(
        args.agent,
        "bundled",
        args.model,
        out=out,
        num_tasks=args.num_tasks,
        agent_options=options,
        settings=ProxySettings(default_max_tokens=args.max_tokens),
        resume=True,
    )
    for rollout in rg.read_rollouts(f"{out}/rollouts.jsonl"):
        sampled = sum(len(t.completion_ids) for t in rollout.turns)
        print(
            f"task {rollout.task_id}: {len(rollout.turns)} call(s), {sampled} sampled tokens, reward {rollout.reward}"
        )
    print("reward mean", summary.reward_mean)


if __name__ == "__main__":
    main()
