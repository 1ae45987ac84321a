"""(b) A batch to disk: n samples per task (a GRPO group) into runs/calc/rollouts.jsonl, resumable."""

import rollgym as rg

limits = rg.Limits(max_turns=3, max_tokens_per_turn=64)
summary = rg.generate(
    "rollgym/Calculator-v0", "smollm2-135m", out="runs/calc", num_tasks=2, n=2, resume=True, limits=limits
)
print("reward mean", summary.reward_mean, "pass@1", summary.pass_at_k[1], "stop reasons", summary.stop_reasons)
for rollout in rg.read_rollouts("runs/calc/rollouts.jsonl"):
    print(rollout.task_id, rollout.sample_index, rollout.reward, len(rollout.turns), "turns")
