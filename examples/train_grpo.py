"""(c) TRL's GRPOTrainer on multi-turn Calculator episodes; `python examples/train_grpo.py STEPS` (CPU)."""

import json
import sys

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

import rollgym as rg

prompts = Dataset.from_list([{"prompt": json.dumps(t)} for t in rg.load_tasks("rollgym/Calculator-v0", num_tasks=8)])
config = GRPOConfig(
    output_dir="runs/grpo",
    max_steps=int(sys.argv[1]) if sys.argv[1:] else 2,
    per_device_train_batch_size=2,
    num_generations=2,
    max_completion_length=32,
    use_cpu=True,
    bf16=False,  # TRL defaults to bf16, which a CPU emulates slowly
    report_to=[],
    save_strategy="no",
)
func = rg.make_rollout_func("rollgym/Calculator-v0", limits=rg.Limits(max_turns=2, max_tokens_per_turn=32))
model = rg.model_dir("smollm2-135m")
trainer = GRPOTrainer(model, args=config, train_dataset=prompts, reward_funcs=[rg.trl.env_reward], rollout_func=func)
print(trainer.train())
