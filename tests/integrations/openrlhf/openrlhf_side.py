"""Runs in OpenRLHF's own venv (.ci/trainers-up openrlhf): OpenRLHF 0.11.2's own rollout machinery drives rollgym's
agent executor, loaded by its own `_load_agent_executor` from the file users give `--train.agent_func_path`:
`PromptDataset` reads `dataset_rows`, `SamplesGenerator.generate_samples` dispatches the prompts to a real
`RolloutRayActor` (its `generate_responses` and `generate`) and turns each executor output into an `Experience`
(`_process_response_into_experience`), `RemoteExperienceMaker` batches them and computes the GRPO advantage
(`group_norm`), and `PolicyLoss` reads the batch. Sampling is the real SmolLM2-135M (rollgym's in-process engine)
behind vLLM's `AsyncLLMEngine.generate` interface; one group's episodes are scripted tool calls. Writes what OpenRLHF
built as JSON for test_openrlhf_own_code.py to check against rollgym's records.

OpenRLHF's requirements pin CUDA-only builds (flash-attn, deepspeed, vLLM) and it runs under Ray. The modules that
cannot load on this CPU machine are stubbed in `sys.modules` before OpenRLHF is imported, as OpenRLHF's own tests do
(tests/test_agent.py:73-86 stubs vllm, ray and the vLLM engine module; tests/test_reward_shaping.py:15-26 the Ray
launcher; tests/test_loss_aggregation.py:13-27 loads openrlhf/models/{utils,loss}.py without the package's
`__init__`, which imports flash_attn; tests/test_actor_entropy_temperature.py:15-30 stubs deepspeed). Ray is a
stand-in that runs each actor call on one event loop thread; vLLM's engine is `AsyncLLM` below.

usage: python openrlhf_side.py OUT.json WORKDIR MODEL_DIR
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.machinery
import importlib.util
import json
import os
import sys
import threading
import types
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from unittest.mock import MagicMock

import torch

MAX_LEN, MAX_NEW, N = 640, 48, 2


# ---- the stand-ins for what needs a GPU or a cluster ----------------------------------------------------------------


@dataclass
class VllmSamplingParams:
    """vLLM's `SamplingParams`, the fields OpenRLHF sets (samples_generator.py:199-207) and rollgym's engine sets."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int | None = 16
    min_tokens: int = 0
    skip_special_tokens: bool = True
    logprobs: int | None = None
    stop_token_ids: list[int] | None = None
    seed: int | None = None


@dataclass
class Logprob:
    """vllm/logprobs.py:13-25 (vllm 0.32.0, the vLLM here; OpenRLHF's [vllm] extra pins 0.29.0)."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    """vllm/outputs.py:51-90: the fields of one completion (OpenRLHF reads token_ids, text, finish_reason, logprobs)."""

    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    """vllm/outputs.py:129-170: what `AsyncLLMEngine.generate` yields; the last one has `finished`."""

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: None
    outputs: list[CompletionOutput] = field(default_factory=list)
    finished: bool = False


class RayStandIn(types.ModuleType):
    """`ray` as OpenRLHF's rollout path uses it: `@ray.remote` classes, `.remote()` calls returning refs,
    `ray.get` and `ray.wait`. Each actor call runs on one event-loop thread, concurrently, as Ray's async actors do."""

    def __init__(self) -> None:
        super().__init__("ray")
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    @staticmethod
    def remote(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda target: target

    def call(self, fn, *args, **kwargs) -> concurrent.futures.Future:
        result = fn(*args, **kwargs)
        if asyncio.iscoroutine(result):
            return asyncio.run_coroutine_threadsafe(result, self.loop)
        done: concurrent.futures.Future = concurrent.futures.Future()
        done.set_result(result)
        return done

    @staticmethod
    def get(refs):
        return [r.result() for r in refs] if isinstance(refs, list) else refs.result()

    @staticmethod
    def wait(refs, num_returns=1, timeout=None):
        done, _ = concurrent.futures.wait(refs, timeout=timeout, return_when=concurrent.futures.FIRST_COMPLETED)
        ready = [r for r in refs if r in done][:num_returns]
        return ready, [r for r in refs if r not in ready]


class ActorHandle:
    """A Ray actor handle: `handle.method.remote(...)` calls the actor's method through the stand-in."""

    def __init__(self, actor, ray: RayStandIn) -> None:
        self._actor, self._ray = actor, ray

    def __getattr__(self, name):
        method = getattr(self._actor, name)
        return SimpleNamespace(remote=lambda *a, **kw: self._ray.call(method, *a, **kw))


def module(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
    sys.modules[name] = mod
    return mod


def stub_gpu_and_cluster_modules() -> RayStandIn:
    """vllm, ray and deepspeed stand-ins; OpenRLHF's Ray launcher (trainer/ray/launcher.py, which builds DeepSpeed
    actors) a MagicMock; openrlhf.models a package whose `__init__` (actor.py: flash_attn) does not run."""
    ray = RayStandIn()
    sys.modules["ray"] = ray
    module("ray.util")
    module("ray.util.placement_group", placement_group=MagicMock(), PlacementGroup=MagicMock())
    module("ray.util.scheduling_strategies", PlacementGroupSchedulingStrategy=MagicMock())
    module("vllm", SamplingParams=VllmSamplingParams, __version__="0.29.0", AsyncEngineArgs=MagicMock())
    module("vllm.inputs", TokensPrompt=dict)
    module("vllm.utils", random_uuid=lambda: uuid.uuid4().hex)
    module("deepspeed")
    sys.modules["openrlhf.trainer.ray.launcher"] = MagicMock()
    import openrlhf

    models = module("openrlhf.models")
    models.__path__ = [str(Path(openrlhf.__file__).parent / "models")]
    return ray


class AsyncLLM:
    """vLLM's `AsyncLLMEngine` as `RolloutRayActor.generate` uses it (vllm_engine.py:167-176): `generate(prompt,
    sampling_params, request_id)` is an async generator of `RequestOutput`s, the last one final; plus
    `output_processor.get_num_unfinished_requests()` (vllm_engine.py:178-180). The real SmolLM2 samples; the
    episodes of `scripted_question` are scripted instead (an `add` call, then `submit`, right in every other
    episode), so the batch also holds tool turns and rewards that differ within a group."""

    def __init__(self, model_engine, tokenizer, scripted_question: str, answer: int) -> None:
        self.model_engine, self.tokenizer = model_engine, tokenizer
        self.scripted_question, self.answer = scripted_question, answer
        self.output_processor = SimpleNamespace(get_num_unfinished_requests=lambda: 0)
        self.submits = 0
        self.requests: list[dict] = []

    def call(self, name: str, **args) -> list[int]:
        body = json.dumps({"name": name, "arguments": args})
        return self.tokenizer.encode(f"<tool_call>\n{body}\n</tool_call>", add_special_tokens=False) + [
            self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        ]

    async def sample(self, ids: list[int], params: VllmSamplingParams) -> tuple[list[int], list[float], str]:
        text = self.tokenizer.decode(ids)
        if self.scripted_question in text:
            if text.count("<|im_start|>assistant") == 1:
                out = self.call("add", a=2, b=2)
            else:
                right = self.submits % 2 == 0
                self.submits += 1
                out = self.call("submit", answer=self.answer if right else self.answer + 1)
            out = out[: params.max_tokens]
            return out, [-0.5] * len(out), "stop" if out[-1] in (params.stop_token_ids or []) else "length"
        from rollgym.engines.base import SamplingParams

        gen = await self.model_engine.generate(
            ids,
            SamplingParams(
                temperature=params.temperature,
                top_p=params.top_p,
                top_k=params.top_k if params.top_k > 0 else 0,
                max_tokens=params.max_tokens,
                stop_token_ids=list(params.stop_token_ids or [self.tokenizer.eos_token_id]),
                seed=params.seed,
            ),
        )
        return list(gen.completion_ids), list(gen.logprobs), gen.finish_reason

    async def generate(self, prompt, sampling_params, request_id):
        ids = list(prompt["prompt_token_ids"])
        out, logprobs, reason = await self.sample(ids, sampling_params)
        self.requests.append({"prompt_len": len(ids), "max_tokens": sampling_params.max_tokens})
        wanted = sampling_params.logprobs is not None
        completion = CompletionOutput(
            index=0,
            text=self.tokenizer.decode(out),
            token_ids=out,
            cumulative_logprob=sum(logprobs) if wanted else None,
            logprobs=[{t: Logprob(lp, rank=None)} for t, lp in zip(out, logprobs, strict=True)] if wanted else None,
            finish_reason=reason,
            stop_reason=out[-1] if reason == "stop" and out else None,
        )
        yield RequestOutput(request_id, None, ids, None, outputs=[completion], finished=True)


# ---- OpenRLHF's own code over rollgym's executor -------------------------------------------------------------------


def args_for(max_len: int, batch_size: int):
    """The slice of OpenRLHF's parsed CLI arguments (cli/train_ppo_ray.py) the code run here reads."""
    return SimpleNamespace(
        rollout=SimpleNamespace(
            batch_size=batch_size, n_samples_per_prompt=N, vllm_generate_batch_size=None, micro_batch_size=64
        ),
        vllm=SimpleNamespace(enable_sleep=False),
        algo=SimpleNamespace(
            dynamic_filtering_enable=False,
            advantage=SimpleNamespace(
                is_correction_level="token", estimator="group_norm", gamma=1.0, lambd=1.0, no_std_norm=False
            ),
        ),
        reward=SimpleNamespace(clip_range=None),
        data=SimpleNamespace(input_key="input", label_key="label", apply_chat_template=True, max_len=max_len),
        train=SimpleNamespace(dynamic_batch_enable=False),
    )


def generate(rows, tokenizer, engines, max_len: int):
    """OpenRLHF's `PromptDataset` over the rows, then `SamplesGenerator.generate_samples`: the rollout Experiences."""
    from openrlhf.datasets.prompts_dataset import PromptDataset
    from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

    args = args_for(max_len, len(rows))
    strategy = SimpleNamespace(args=args, is_rank_0=lambda: True)
    dataset = PromptDataset(rows, tokenizer, strategy)
    loader = torch.utils.data.DataLoader(dataset, batch_size=len(rows), shuffle=False, collate_fn=dataset.collate_fn)
    generator = SamplesGenerator(strategy, loader, None, tokenizer, engines)
    kwargs = {"max_len": max_len, "temperature": 1.0, "top_p": 1.0, "top_k": -1, "max_new_tokens": MAX_NEW}
    samples, _, _, _ = generator.generate_samples(**kwargs)
    return samples, strategy


def rows_of(experience, i: int) -> dict:
    n = int(experience.attention_mask[i].sum())
    info = {k: v[i].item() for k, v in experience.info.items() if isinstance(v, torch.Tensor) and v.numel() > i}
    return {
        "sequence": experience.sequences[i][:n].tolist(),
        "action_mask": experience.action_mask[i][: n - 1].tolist(),
        "rollout_log_probs": experience.rollout_log_probs[i][: n - 1].tolist(),
        "reward": experience.rewards[i].item(),
        "truncated": bool(experience.truncated[i].item()),
        "label": experience.labels[i],
        "info": info,
    }


def main() -> None:
    out, workdir, model_dir = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    torch.manual_seed(0)
    os.environ.update(
        ROLLGYM_ENV="rollgym/Calculator-v0", ROLLGYM_MAX_TURNS="3", ROLLGYM_RECORD_DIR=str(workdir / "records")
    )
    ray = stub_gpu_and_cluster_modules()

    from openrlhf.models.loss import PolicyLoss
    from openrlhf.models.utils import log_probs_from_logits
    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    from openrlhf.trainer.ray import vllm_engine
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import rollgym
    import rollgym as rg
    from rollgym.envs.builtin.calculator import CalculatorEnv
    from rollgym.integrations.openrlhf import dataset_rows

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tasks = CalculatorEnv.default_tasks(2, seed=3)
    scripted = tasks[1]
    policy = rg.Policy(f"hf:{model_dir}")
    llm = AsyncLLM(policy.engine, tokenizer, scripted["question"], scripted["answer"])

    # OpenRLHF's own loader, over the file a user names in --train.agent_func_path; a real RolloutRayActor around it
    hook_file = Path(rollgym.__file__).parent / "integrations" / "openrlhf" / "agent_executor.py"
    actor = vllm_engine.RolloutRayActor.__new__(vllm_engine.RolloutRayActor)
    actor.executor = vllm_engine._load_agent_executor(str(hook_file))
    actor.llm, actor._mm_pad_token_ids = llm, None
    engines = [ActorHandle(actor, ray)]

    rows = dataset_rows("rollgym/Calculator-v0", tasks)
    rows.append(dataset_rows("rollgym/NoSuchEnv-v0", tasks[:1])[0])
    rows.append(dataset_rows("rollgym/Calculator-v0", [{"task_id": "no-answer", "question": "What is 2 + 2?"}])[0])
    samples, strategy = generate(rows, tokenizer, engines, MAX_LEN)

    maker = RemoteExperienceMaker.__new__(RemoteExperienceMaker)
    maker.strategy, maker.args, maker.tokenizer = strategy, strategy.args, tokenizer
    maker.kl_ctl, maker.advantage_estimator = SimpleNamespace(value=0.0), "group_norm"
    (batch,) = maker.split_rollout_samples(samples)  # index per sample, one micro batch (experience_maker.py:44-78)

    # the actor's log-probs of the batch, with OpenRLHF's own function over the next-token shift
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=batch.sequences, attention_mask=batch.attention_mask).logits
    log_probs = log_probs_from_logits(logits[:, :-1, :], batch.sequences[:, 1:])
    mask = batch.action_mask.bool()
    batch.action_log_probs = log_probs
    batch.kl = torch.zeros_like(log_probs)  # no reference model, as experience_maker.py:212-214 sets it
    (batch,) = maker.compute_advantages_and_returns([batch])
    loss, clip_ratio, ppo_kl, vllm_kl, is_filter_ratio = PolicyLoss(is_correction_level="token")(
        log_probs,
        log_probs.detach(),
        batch.advantages,
        action_mask=batch.action_mask,
        rollout_log_probs=batch.rollout_log_probs,
    )
    model_rows = torch.tensor([json.loads(lbl)["task_id"] == tasks[0]["task_id"] for lbl in batch.labels])
    on = mask & model_rows[:, None]
    gap = (log_probs - batch.rollout_log_probs).abs()[on]

    # a max_len shorter than the scripted episode: OpenRLHF's cut and rollgym's flag
    type(actor.executor).record_dir = str(workdir / "records-short")
    first_action = min(s.action_mask[0].nonzero()[0].item() + 1 for s in samples if s.action_mask.any())
    short_len = first_action + 40
    short, _ = generate(dataset_rows("rollgym/Calculator-v0", [scripted]), tokenizer, engines, short_len)

    result = {
        "rows": [rows_of(batch, i) for i in range(len(batch.sequences))],
        "short_rows": [rows_of(s, 0) for s in short],
        "short_len": short_len,
        "action_mask_shape": list(batch.action_mask.shape),
        "rollout_log_probs_shape": list(batch.rollout_log_probs.shape),
        "advantages": batch.advantages.tolist(),
        "index": batch.index,
        "loss": float(loss),
        "ppo_kl": float(ppo_kl),
        "max_logprob_gap": float(gap.max()) if gap.numel() else 0.0,
        "sampled_tokens": int(on.sum()),
        "requests": llm.requests,
        "records": [str(p) for p in sorted((workdir / "records").glob("*.jsonl"))],
        "short_records": [str(p) for p in sorted((workdir / "records-short").glob("*.jsonl"))],
    }
    out.write_text(json.dumps(result))
    asyncio.run_coroutine_threadsafe(policy.engine.aclose(), ray.loop).result()


if __name__ == "__main__":
    main()
