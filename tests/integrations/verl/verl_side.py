"""Runs in verl's own venv (.ci/trainers-up verl): verl 0.9.1's real `AgentLoopWorker` drives rollgym's agent loop
over rows read by verl's `RLHFDataset`, then verl's GRPO advantage, its log-prob function and its PPO policy loss
read the batch. Sampling is the real SmolLM2-135M (rollgym's in-process engine) behind verl's server-client
interface. Writes what verl produced as JSON for test_verl_own_code.py to check against rollgym's records.

usage: python verl_side.py OUT.json WORKDIR MODEL_DIR
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.trainer.ppo import core_algos
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.utils.torch_functional import logprobs_from_logits
from verl.workers.config import ActorConfig
from verl.workers.rollout.replica import TokenOutput

import rollgym as rg
from rollgym.engines.base import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.integrations.verl import dataset_rows

PROMPT_LENGTH, RESPONSE_LENGTH, N = 512, 96, 2
GLOBAL_STEPS = 3


class ServerClient:
    """verl 0.9.1's `LLMServerClient.generate` contract (verl/workers/rollout/llm_server.py:98-168), answering as its
    vLLM server does (vllm_async_server.py:585-760): `max_tokens` popped from the request, logprobs only when asked,
    vLLM's 'stop' and 'length' both 'completed', `extra_fields` with `global_steps`. The real SmolLM2 samples; the
    episodes of `scripted_question` are scripted instead (an `add` call, then `submit`, right in the group's first
    episode and wrong in its second), so the batch also holds tool turns and rewards that differ within a group."""

    def __init__(self, model_engine, tokenizer, scripted_question: str, answer: int):
        self.model_engine, self.tokenizer = model_engine, tokenizer
        self.scripted_question, self.answer = scripted_question, answer
        self.routes: dict[str, object] = {}
        self.request_ids: list[str] = []

    def engine_for(self, request_id: str, prompt_ids: list[int]):
        if request_id not in self.routes:
            if self.scripted_question in self.tokenizer.decode(prompt_ids):
                right = sum(isinstance(e, ScriptedEngine) for e in self.routes.values()) % 2 == 0
                self.routes[request_id] = ScriptedEngine(
                    [self.call("add", a=2, b=2), self.call("submit", answer=self.answer if right else self.answer + 1)],
                    logprob=-0.5,
                )
            else:
                self.routes[request_id] = self.model_engine
        return self.routes[request_id]

    def call(self, name: str, **args) -> list[int]:
        body = json.dumps({"name": name, "arguments": args})
        return self.tokenizer.encode(f"<tool_call>\n{body}\n</tool_call>") + [self.tokenizer.end_of_turn_id]

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        params = dict(sampling_params)
        self.request_ids.append(request_id)
        top_k = int(params.get("top_k", -1))
        gen = await self.engine_for(request_id, list(prompt_ids)).generate(
            prompt_ids,
            SamplingParams(
                temperature=params["temperature"],
                top_p=params["top_p"],
                top_k=top_k if top_k > 0 else 0,
                max_tokens=params.pop("max_tokens", RESPONSE_LENGTH),
                stop_token_ids=list(params.get("stop_token_ids") or [self.tokenizer.end_of_turn_id]),
                seed=params.get("seed"),
            ),
        )
        return TokenOutput(
            token_ids=gen.completion_ids,
            log_probs=gen.logprobs if params.get("logprobs") else None,
            stop_reason="completed",
            extra_fields={"global_steps": GLOBAL_STEPS},
        )


def config(workdir: Path, model_dir: str):
    import verl

    cfg = OmegaConf.load(Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml")
    loops = workdir / "agent_loops.yaml"
    loops.write_text(
        "- name: rollgym\n"
        "  _target_: rollgym.integrations.verl.agent_loop.RollgymAgentLoop\n"
        "  env: rollgym/Calculator-v0\n"
        "  max_turns: 3\n"
        "  max_tokens_per_turn: 48\n"
        f"  record_dir: {workdir / 'records'}\n"
    )
    OmegaConf.update(cfg, "actor_rollout_ref.model.path", model_dir)
    rollout = cfg.actor_rollout_ref.rollout
    rollout.name = "vllm"  # the backend verl would start; this script answers in its place
    rollout.prompt_length, rollout.response_length = PROMPT_LENGTH, RESPONSE_LENGTH
    rollout.temperature, rollout.top_p, rollout.top_k = 1.0, 1.0, -1
    rollout.calculate_log_probs = True
    rollout.agent.agent_loop_config_path = str(loops)
    rollout.agent.default_agent_loop = "rollgym"
    rollout.trace.backend = None
    cfg.data.max_prompt_length, cfg.data.max_response_length = PROMPT_LENGTH, RESPONSE_LENGTH
    cfg.data.cache_dir = str(workdir / "verl-cache")
    return cfg


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
    out, workdir, model_dir = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    torch.manual_seed(0)
    cfg = config(workdir, model_dir)
    policy = rg.Policy(f"hf:{model_dir}")
    scripted = CalculatorEnv.default_tasks(2, seed=3)[1]
    server = ServerClient(policy.engine, policy.tokenizer, scripted["question"], scripted["answer"])
    worker = AgentLoopWorker(cfg, llm_client=server)

    dataset = RLHFDataset(str(rows(workdir)), worker.tokenizer, cfg.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
    batch.non_tensor_batch["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch))], dtype=object)
    batch = batch.repeat(repeat_times=N, interleave=True)  # a GRPO group of N per prompt, as verl's trainer does
    gen = asyncio.run(worker.generate_sequences(batch))

    # verl's GRPO advantage over rm_scores, grouped by uid
    advantages, _ = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=gen.batch["rm_scores"],
        response_mask=gen.batch["response_mask"],
        index=batch.non_tensor_batch["uid"],
    )
    # the actor's recomputation of the response's log-probs, with verl's own function
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    with torch.no_grad():
        logits = model(
            input_ids=gen.batch["input_ids"],
            attention_mask=gen.batch["attention_mask"],
            position_ids=gen.batch["position_ids"],
        ).logits
    responses = gen.batch["responses"]
    width = responses.shape[1]
    log_prob = logprobs_from_logits(logits[:, -width - 1 : -1, :], responses)
    actor = ActorConfig(strategy="fsdp", rollout_n=N, ppo_mini_batch_size=len(gen), ppo_micro_batch_size_per_gpu=1)
    mask = gen.batch["response_mask"]
    actor.global_batch_info.update(dp_size=1, batch_num_tokens=int(mask.sum()), global_batch_size=len(gen))
    loss, metrics = core_algos.compute_policy_loss_vanilla(
        old_log_prob=gen.batch["rollout_log_probs"],
        log_prob=log_prob,
        advantages=advantages,
        response_mask=mask,
        loss_agg_mode="token-mean",
        config=actor,
    )
    model_rows = torch.tensor([t == "calc-3-0" for t in gen.non_tensor_batch["rollgym_task_id"]], dtype=torch.bool)
    on = mask.bool() & model_rows[:, None]
    lp_gap = (log_prob - gen.batch["rollout_log_probs"]).abs()[on]
    extra = {
        k: [
            None if v is None else (v if isinstance(v, str | int | float | bool) else str(v))
            for v in gen.non_tensor_batch[k]
        ]
        for k in gen.non_tensor_batch
        if k.startswith("rollgym_") or k.endswith("global_steps")
    }
    result = {
        "keys": sorted(gen.batch.keys()),
        "prompts": gen.batch["prompts"].tolist(),
        "responses": responses.tolist(),
        "response_mask": mask.tolist(),
        "attention_mask": gen.batch["attention_mask"].tolist(),
        "rollout_log_probs": gen.batch["rollout_log_probs"].tolist(),
        "rm_scores": gen.batch["rm_scores"].tolist(),
        "advantages": advantages.tolist(),
        "num_turns": gen.non_tensor_batch["__num_turns__"].tolist(),
        "extra_fields": extra,
        "loss": float(loss),
        "ppo_kl": float(metrics["actor/ppo_kl"]),
        "max_logprob_gap": float(lp_gap.max()) if lp_gap.numel() else 0.0,
        "sampled_tokens": int(on.sum()),
        "request_ids": server.request_ids,
        "records": [str(p) for p in sorted((workdir / "records").glob("*.jsonl"))],
        "uids": batch.non_tensor_batch["uid"].tolist(),
    }
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
