"""Runs in SkyRL's own venv (.ci/trainers-up skyrl): SkyRL 0.4.0's `PromptDataset` reads rows written by rollgym's
`dataset_rows`, its `prepare_generator_input` makes the GRPO batch, rollgym's `RollgymGenerator` answers it, and then
SkyRL's own trainer steps read the output: `validate_generator_output`, `RayPPOTrainer.postprocess_generator_output`
and `convert_to_training_input` (on a trainer holding SkyRL's default config), its GRPO advantage and its PPO policy
loss. Sampling is the real SmolLM2-135M behind SkyRL's inference-client interface. Writes JSON for
test_skyrl_own_code.py to check against rollgym's records.

usage: python skyrl_side.py OUT.json WORKDIR MODEL_DIR
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from skyrl.backends.skyrl_train.utils import ppo_utils
from skyrl.train.config.config import SkyRLTrainConfig
from skyrl.train.dataset.dataset import PromptDataset
from skyrl.train.generators.utils import prepare_generator_input
from skyrl.train.trainer import RayPPOTrainer
from skyrl.train.utils.trainer_utils import validate_generator_output
from transformers import AutoModelForCausalLM, AutoTokenizer

import rollgym as rg
from rollgym.engines.base import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.skyrl import dataset_rows
from rollgym.integrations.skyrl.generator import RollgymGenerator
from rollgym.limits import Limits

MAX_GENERATE, N, WEIGHT_VERSION = 96, 2, 5


class EngineClient:
    """SkyRL 0.4.0's `InferenceEngineInterface.generate(InferenceEngineInput) -> InferenceEngineOutput` contract
    (skyrl/backends/skyrl_train/inference_servers/base.py:25-77) over a real model: one row per request, vLLM's
    sampling dict, `response_ids`, vLLM's `stop_reasons`, `response_logprobs` when `logprobs` is set, and the
    client's `weight_version`. The real SmolLM2 samples; the episodes of `scripted_question` are scripted instead (an
    `add` call, then `submit`, right in the group's first episode and wrong in its second)."""

    weight_version = WEIGHT_VERSION
    model_name = "smollm2-135m"

    def __init__(self, model_engine, tokenizer, scripted_question: str, answer: int):
        self.model_engine, self.tokenizer = model_engine, tokenizer
        self.scripted_question, self.answer = scripted_question, answer
        self.routes: dict[str, object] = {}
        self.sessions: list[str] = []

    def engine_for(self, session: str, prompt_ids: list[int]):
        if session not in self.routes:
            if self.scripted_question in self.tokenizer.decode(prompt_ids):
                right = sum(isinstance(e, ScriptedEngine) for e in self.routes.values()) % 2 == 0
                self.routes[session] = ScriptedEngine(
                    [self.call("add", a=2, b=2), self.call("submit", answer=self.answer if right else self.answer + 1)],
                    logprob=-0.5,
                )
            else:
                self.routes[session] = self.model_engine
        return self.routes[session]

    def call(self, name: str, **args) -> list[int]:
        body = json.dumps({"name": name, "arguments": args})
        return self.tokenizer.encode(f"<tool_call>\n{body}\n</tool_call>") + [self.tokenizer.end_of_turn_id]

    async def generate(self, input_batch, model=None):
        [prompt], [session] = input_batch["prompt_token_ids"], input_batch["session_ids"]
        params = input_batch["sampling_params"]
        self.sessions.append(session)
        top_k = int(params.get("top_k", -1))
        gen = await self.engine_for(session, prompt).generate(
            prompt,
            SamplingParams(
                temperature=params["temperature"],
                top_p=params["top_p"],
                top_k=top_k if top_k > 0 else 0,
                max_tokens=params["max_tokens"],
                stop_token_ids=list(params.get("stop_token_ids") or [self.tokenizer.end_of_turn_id]),
            ),
        )
        return {
            "responses": [self.tokenizer.decode(gen.completion_ids)],
            "response_ids": [gen.completion_ids],
            "stop_reasons": [gen.finish_reason],
            "response_logprobs": [gen.logprobs] if params.get("logprobs") is not None else None,
            "prompt_logprobs": None,
        }


def rows(workdir: Path) -> Path:
    import datasets

    tasks = CalculatorEnv.default_tasks(2, seed=3)
    data = dataset_rows("rollgym/Calculator-v0", tasks)
    unknown = dataset_rows("rollgym/NoSuchEnv-v0", tasks[:1])[0]
    bad = dataset_rows("rollgym/Calculator-v0", [{"task_id": "no-answer", "question": "What is 2 + 2?"}])[0]
    path = workdir / "train.parquet"
    datasets.Dataset.from_list([*data, unknown, bad]).to_parquet(str(path))
    return path


def main() -> None:
    out_path, workdir, model_dir = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    torch.manual_seed(0)
    hf = AutoTokenizer.from_pretrained(model_dir)
    policy = rg.Policy(f"hf:{model_dir}")
    scripted = CalculatorEnv.default_tasks(2, seed=3)[1]
    client = EngineClient(policy.engine, policy.tokenizer, scripted["question"], scripted["answer"])

    dataset = PromptDataset([str(rows(workdir))], hf, max_prompt_length=512, num_workers=1)
    prompts = dataset.collate_fn([dataset[i] for i in range(len(dataset))])
    cfg = SkyRLTrainConfig()
    cfg.generator.n_samples_per_prompt = N
    cfg.trainer.train_batch_size = cfg.trainer.policy_mini_batch_size = len(prompts)  # one step, one mini-batch
    gen_input, uids = prepare_generator_input(
        prompts,
        n_samples_per_prompt=N,
        sampling_params={"temperature": 1.0, "top_p": 1.0, "top_k": -1, "max_generate_length": MAX_GENERATE},
        default_env_class="rollgym/Calculator-v0",
        training_phase="train",
        global_step=1,
    )
    generator = RollgymGenerator(
        client,
        hf,
        max_generate_length=MAX_GENERATE,
        limits=Limits(max_turns=3, max_tokens_per_turn=48),
        record_dir=str(workdir / "records"),
    )
    output = asyncio.run(generator.generate(gen_input))
    validate_generator_output(len(gen_input["prompts"]), output)
    raw = json.loads(
        json.dumps(
            {
                k: output[k]
                for k in (
                    "prompt_token_ids",
                    "response_ids",
                    "loss_masks",
                    "rollout_logprobs",
                    "rewards",
                    "stop_reasons",
                )
            }
        )
    )

    trainer = object.__new__(RayPPOTrainer)  # SkyRL's own conversion steps, on its default config
    trainer.cfg, trainer.all_metrics, trainer.tokenizer = cfg, {}, hf
    trainer.dispatch = SimpleNamespace(get_lcm_dp_size=lambda: 1)  # one data-parallel rank: no padding rows
    output, uids = trainer.postprocess_generator_output(output, uids)
    batch = trainer.convert_to_training_input(output, uids)
    advantages, _ = ppo_utils.compute_advantages_and_returns(
        token_level_rewards=batch["rewards"],
        response_mask=batch["response_mask"],
        index=np.array(uids),
        adv_estimator="grpo",
        config=cfg.trainer.algorithm,
    )
    # the actor's recomputation of the response's log-probs over SkyRL's left-padded sequences
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.eval()
    sequences, attention = batch["sequences"], batch["attention_mask"]
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = model(input_ids=sequences, attention_mask=attention, position_ids=positions).logits
    width = batch["loss_mask"].shape[1]
    logp = torch.log_softmax(logits[:, -width - 1 : -1, :].float(), dim=-1)
    log_prob = logp.gather(-1, sequences[:, -width:].unsqueeze(-1)).squeeze(-1)
    loss, metrics = ppo_utils.ppo_policy_loss(
        log_prob,
        batch["rollout_logprobs"],
        advantages,
        cfg.trainer.algorithm,
        loss_mask=batch["loss_mask"],
        rollout_logprobs=batch["rollout_logprobs"],
    )
    model_rows = torch.tensor(
        [
            e == "rollgym/Calculator-v0" and not p.startswith("no")
            for e, p in zip(
                gen_input["env_classes"], [str(x.get("task_id")) for x in gen_input["env_extras"]], strict=True
            )
        ]
    )
    scripted_rows = torch.tensor([r is not None and r.task_id == "calc-3-1" for r in generator.rollouts])
    on = batch["loss_mask"].bool() & (model_rows & ~scripted_rows)[:, None]
    gap = (log_prob - batch["rollout_logprobs"]).abs()[on]
    result = {
        "raw": raw,
        "uids": uids,
        "rollout_ids": [r.id if r is not None else None for r in generator.rollouts],
        "scripted_rows": [i for i, scripted in enumerate(scripted_rows.tolist()) if scripted],
        "loss_mask": batch["loss_mask"].tolist(),
        "response_mask": batch["response_mask"].tolist(),
        "rewards": batch["rewards"].tolist(),
        "rollout_logprobs": batch["rollout_logprobs"].tolist(),
        "sequences": sequences.tolist(),
        "advantages": advantages.tolist(),
        "loss": float(loss),
        "max_logprob_gap": float(gap.max()) if gap.numel() else None,
        "sampled_tokens": int(on.sum()),
        "sessions": client.sessions,
        "rollout_metrics": output.get("rollout_metrics"),
        "records": [str(p) for p in sorted((workdir / "records").glob("*.jsonl"))],
    }
    out_path.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
