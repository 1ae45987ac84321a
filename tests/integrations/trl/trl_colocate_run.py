"""Run inside the real vLLM's venv by test_trl_vllm_cpu.py: TRL's GRPOTrainer with vLLM colocate on this CPU,
rollgym's make_rollout_func and no engine of its own, for 2 steps at a large learning rate. Prints one JSON line:
per rollout step, the logprobs vLLM gives a fixed continuation and the trainer model's own teacher-forced ones,
and the logprobs of the ids vLLM sampled next to the trainer's recomputation of them.

    python trl_colocate_run.py MODEL_DIR OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main(model_dir: str, out_dir: str) -> None:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from vllm import SamplingParams

    import rollgym as rg
    from rollgym.envs.builtin.calculator import CalculatorEnv

    # The rendezvous TRL and vLLM would start (torch's TCPStore on MASTER_PORT) listens on every interface; a file
    # store keeps this one-process run off the network (the tests reach this machine over loopback only), and both
    # use the process group as they find it.
    os.makedirs(out_dir, exist_ok=True)
    torch.distributed.init_process_group("gloo", init_method=f"file://{out_dir}/rendezvous", rank=0, world_size=1)
    patched = rg.patch_trl_for_vllm_cpu()
    tasks = CalculatorEnv.default_tasks(2)
    dataset = Dataset.from_list([{"prompt": json.dumps(t)} for t in tasks])
    rollout_func = rg.make_rollout_func("rollgym/Calculator-v0", limits=rg.Limits(max_turns=1, max_tokens_per_turn=16))
    probe_prompt = [
        1,
        4093,
        198,
        20234,
        17,
        2,
        198,
        1,
        520,
        9531,
        198,
    ]  # <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n
    probe_continuation = [19556, 28, 849, 416, 339, 724, 346, 1834, 30]  # "Hello, how can I help you today."

    def teacher_forced(model, ids: list[int], start: int) -> list[float]:
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([ids])).logits[0].float()
        lp = logits.log_softmax(-1)
        return [lp[i - 1, ids[i]].item() for i in range(start, len(ids))]

    def vllm_probe(trainer) -> list[float]:
        ids = probe_prompt + probe_continuation
        out = trainer.vllm_generation.llm.generate(
            [{"prompt_token_ids": ids}], SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False
        )[0]
        return [out.prompt_logprobs[i][ids[i]].logprob for i in range(len(probe_prompt), len(ids))]

    steps = []

    def recording(prompts, trainer):
        # TRL has just pushed the trainer's weights into vLLM (patched sync): both must agree now.
        model = trainer.accelerator.unwrap_model(trainer.model)
        columns = rollout_func(prompts, trainer)
        sampled = [
            (p, c, lp, m)
            for p, c, lp, m in zip(
                columns["prompt_ids"], columns["completion_ids"], columns["logprobs"], columns["env_mask"], strict=True
            )
        ]
        diffs = []
        for p, c, lps, mask in sampled:
            ref = teacher_forced(model, p + c, len(p))
            diffs += [abs(a - b) for a, b, m in zip(lps, ref, mask, strict=True) if m]
        worst = max(diffs)  # at least one sampled token, or this fails
        steps.append(
            {
                "global_step": trainer.state.global_step,
                "vllm": vllm_probe(trainer),
                "trainer": teacher_forced(model, probe_prompt + probe_continuation, len(probe_prompt)),
                "sampled_vs_trainer_max_abs": worst,
                "engines": sorted({r.engine for r in rollout_func.last_rollouts}),
            }
        )
        return columns

    def confidence(completions, rollgym_logprob_mean, **kwargs):
        return list(rollgym_logprob_mean)  # differs between samples, so GRPO has a gradient

    args = GRPOConfig(
        output_dir=out_dir,
        per_device_train_batch_size=2,
        num_generations=2,
        max_steps=2,
        max_completion_length=16,
        learning_rate=3e-4,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        temperature=1.0,
        seed=0,
        use_vllm=True,
        vllm_mode="colocate",
    )  # TRL's own max length and batch budget
    trainer = GRPOTrainer(
        model=model_dir,
        reward_funcs=[rg.env_reward, confidence],
        args=args,
        train_dataset=dataset,
        rollout_func=recording,
    )
    trainer.train()
    trainer.vllm_generation.sync_weights()  # the weights after the last step
    model = trainer.accelerator.unwrap_model(trainer.model)
    final = {
        "vllm": vllm_probe(trainer),
        "trainer": teacher_forced(model, probe_prompt + probe_continuation, len(probe_prompt)),
    }
    print(
        json.dumps(
            {
                "patched": patched,
                "steps": steps,
                "final": final,
                "global_step": trainer.state.global_step,
                "dtype": str(trainer.vllm_generation.llm.llm_engine.model_config.dtype),
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:3])
