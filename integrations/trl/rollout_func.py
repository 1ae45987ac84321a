"""TRL adapter: a `rollout_func` for `GRPOTrainer` that runs rollgym rollouts, token-exact.

TRL's contract (GRPOTrainer._generate, TRL 1.x): `rollout_func(prompts, trainer) -> dict`; prompts
arrive already repeated `num_generations` times (RepeatSampler), one completion per entry, in order;
required keys `prompt_ids`, `completion_ids`, `logprobs`; optional `env_mask` (1 = model token, used as
the loss mask); every other key is forwarded, per sample, to the reward functions as a keyword.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from rollgym.engines.base import SamplingParams
from rollgym.engines.weights import VersionedEngine, WeightsVersion
from rollgym.errors import UsageError
from rollgym.integrations.ray.config import as_ray_config
from rollgym.integrations.ray.executor import RayExecutor
from rollgym.limits import Limits
from rollgym.proxy.agent import Agent, Reward, agent_rollouts
from rollgym.proxy.server import RecordingProxy
from rollgym.proxy.session import ProxySession
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.loop import check_sampling
from rollgym.rollouts.policy import Policy, as_policy
from rollgym.rollouts.records import Rollout

REWARD_KEY = "reward"
ERROR_KEY = "rollgym_error"


def task_from_prompt(prompt: Any) -> dict:
    """Default prompt -> task mapping: a dict is the task; a string is a JSON task row; messages become `messages`."""
    if isinstance(prompt, dict):
        return prompt
    if isinstance(prompt, str):
        try:
            task = json.loads(prompt)
        except json.JSONDecodeError:
            raise UsageError(
                "a string prompt must be a JSON task row (e.g. json.dumps(row)); "
                "or pass task_from_prompt= to map your prompts to environment tasks"
            ) from None
        if not isinstance(task, dict):
            raise UsageError("a JSON prompt must decode to an object (the task row)")
        return task
    if isinstance(prompt, list):
        return {"messages": prompt}
    raise UsageError(f"cannot turn a prompt of type {type(prompt).__name__} into a task; pass task_from_prompt=")


_default_task_from_prompt = task_from_prompt  # the default, under a name that parameters do not shadow


def policy_for_trainer(policy: Policy | str | None, chat_template: str | None) -> Policy | None:
    """The policy a TRL adapter samples with (None: the trainer's own, made on the first step)."""
    if policy is None:
        return None
    if isinstance(policy, Policy) and chat_template is not None:
        raise UsageError("chat_template= applies when the adapter builds the policy; give it to Policy(...) instead")
    return as_policy(policy, chat_template=chat_template)[0]


def group_positions(tasks: list[Any]) -> tuple[list[int], list[str]]:
    """TRL repeats each prompt `num_generations` times: each entry's index within its group of equal
    tasks (its sample index), and a group id per entry (`group-K`, K = the task's rank among distinct tasks)."""
    keys = [json.dumps(t, sort_keys=True, default=str) for t in tasks]
    rank = {k: i for i, k in enumerate(sorted(set(keys)))}
    seen: Counter = Counter()
    index = []
    for key in keys:
        index.append(seen[key])
        seen[key] += 1
    return index, [f"group-{rank[k]}" for k in keys]


def policy_from_trainer(trainer: Any, *, chat_template: str | None = None) -> Policy:
    """The trainer's own generator (vLLM colocate, TRL's vLLM server, or its live model) and its `processing_class`
    as a `Policy`; the engine is rebuilt after each `aclose()`, so every step uses current weights, and each turn
    records them as the trainer's `global_step` (the weights TRL synced before the step's rollouts)."""
    return Policy(
        engine_factory=lambda: VersionedEngine(
            engine_from_trainer(trainer),
            WeightsVersion(int(getattr(getattr(trainer, "state", None), "global_step", 0))),
        ),
        tokenizer=trainer.processing_class,
        chat_template=chat_template,
    )


def engine_from_trainer(trainer: Any) -> Any:
    """The trainer's own generator, so rollouts always use current weights.

    vLLM colocate -> its `vllm.LLM`; vLLM server -> TRL's server (an OpenAI-compatible vLLM) over HTTP;
    otherwise the trainer's live model in this process (no weight copy).
    """
    if getattr(trainer, "use_vllm", False):
        generation = trainer.vllm_generation
        if getattr(generation, "mode", None) == "colocate":
            from rollgym.engines.vllm_colocate import VLLMColocateEngine

            return VLLMColocateEngine(generation.llm)
        from rollgym.engines.vllm_server import VLLMServerEngine

        client = generation.vllm_client
        return VLLMServerEngine(client.base_url.rstrip("/") + "/v1", getattr(client, "model", None))
    from rollgym.engines.transformers_engine import TransformersEngine

    model = trainer.accelerator.unwrap_model(trainer.model)
    return TransformersEngine(model, tokenizer=getattr(trainer, "processing_class", None))


def to_trl_columns(rollouts: list[Rollout], pad_id: int) -> dict[str, list]:
    """The token view per rollout, plus reward, one column per reward component and per metric."""
    refused = [r for r in rollouts if not r.token_exact]
    if refused:
        raise UsageError(
            f"{len(refused)} rollout(s) are not token-exact (engine {refused[0].engine!r}); "
            "text-only engines cannot be used for training"
        )
    split = [r for r in rollouts if any(t.resample is not None for t in r.turns)]
    if split:
        raise UsageError(
            f"{len(split)} rollout(s) are several training samples (history='template' and the template rewrote "
            "history); TRL's GRPOTrainer takes one sample per rollout: use history='keep' (the default)"
        )
    cols: dict[str, list] = {
        "prompt_ids": [],
        "completion_ids": [],
        "logprobs": [],
        "env_mask": [],
        REWARD_KEY: [],
        ERROR_KEY: [],
    }
    components = sorted({k for r in rollouts for k in r.reward_components})
    metrics = sorted({k for r in rollouts for k in r.metrics()})
    for r in rollouts:
        view = r.token_view()
        if not view["completion_ids"]:  # nothing sampled (e.g. reset failed): one masked token keeps shapes valid
            view.update(completion_ids=[pad_id], logprobs=[0.0], env_mask=[0])
        if not view["prompt_ids"]:
            view["prompt_ids"] = [pad_id]
        for key in ("prompt_ids", "completion_ids", "logprobs", "env_mask"):
            cols[key].append(view[key])
        cols[REWARD_KEY].append(r.reward)
        cols[ERROR_KEY].append(r.error.category if r.error else "")
        for k in components:
            cols.setdefault(f"reward_{k}", []).append(r.reward_components.get(k, 0.0))
        m = r.metrics()
        for k in metrics:
            cols.setdefault("rollgym_" + k.replace("/", "_"), []).append(m.get(k, 0.0))
    return cols


#: Error categories that are the policy's own doing: their reward (0) is trained on, so a policy cannot
#: escape a penalty by filling the disk. Every other error makes a rollout unscorable (None), including
#: `agent` (a crashed agent program may be the scaffold's bug, not the policy's).
SCORED_ERRORS = frozenset({"disk"})


def _scored(value: float, error: str) -> float | None:
    return float(value) if not error or error in SCORED_ERRORS else None


def env_reward(completions=None, reward=None, rollgym_error=None, **_: Any) -> list[float | None]:
    """A TRL reward function returning the environment's reward; None (unscorable) for rollouts that
    failed for a reason that is not the policy's own (`SCORED_ERRORS` keep their reward)."""
    if reward is None:
        raise TypeError("env_reward() needs the rollouts' `reward` column (TRL passes the dataset's columns)")
    errors = rollgym_error or [""] * len(reward)
    return [_scored(r, err) for r, err in zip(reward, errors, strict=True)]


def component_reward(name: str) -> Callable[..., list[float | None]]:
    """A TRL reward function returning one named reward component (e.g. `resolved`)."""

    def reward_fn(completions=None, rollgym_error=None, **kwargs: Any) -> list[float | None]:
        values = kwargs[f"reward_{name}"]
        errors = rollgym_error or [""] * len(values)
        return [_scored(v, err) for v, err in zip(values, errors, strict=True)]

    reward_fn.__name__ = name
    return reward_fn


def make_rollout_func(
    env: str | Callable[[], Any],
    policy: Policy | str | None = None,
    *,
    limits: Limits | None = None,
    sampling: SamplingParams | None = None,
    task_from_prompt: Callable[[Any], dict] = task_from_prompt,
    concurrency: int = 32,
    chat_template: str | None = None,
    env_kwargs: dict | None = None,
    ray: Any = None,
) -> Callable[[list, Any], dict]:
    """A `rollout_func(prompts, trainer)` for TRL's GRPOTrainer.

    Without `policy`, the trainer's own generator and `processing_class` (`policy_from_trainer`) are
    used, so every step samples with current weights. Without `limits`, `Limits` with the trainer's
    `max_completion_length` as the per-turn budget; without `sampling`, the trainer's temperature,
    top_p and top_k. `rollout_func.last_rollouts` keeps the last batch's `Rollout` records.
    `ray` (a `RayConfig`, an address, True) runs each step's rollouts on a Ray cluster through
    `run_rollouts(ray=...)`, its actors kept warm between steps; the policy must then be a spec or a
    picklable engine (a vLLM server the trainer syncs weights to), not the trainer's in-process model.
    """
    check_sampling(sampling)
    if isinstance(policy, Policy) and policy.history != "keep":
        raise UsageError(
            "TRL's GRPOTrainer takes one sample per rollout; a policy with history='template' splits a rollout "
            "wherever the template rewrites history: use history='keep' (the default) with TRL"
        )
    executor = None
    if ray is not None and ray is not False:
        config = as_ray_config(ray)
        assert config is not None
        executor = RayExecutor(config.model_copy(update={"keep_actors": True}))  # start-up once, not every step
    state: dict[str, Any] = {"policy": policy_for_trainer(policy, chat_template)}

    def rollout_func(prompts: list, trainer: Any) -> dict:
        if state["policy"] is None:
            state["policy"] = policy_from_trainer(trainer, chat_template=chat_template)
        pol: Policy = state["policy"]
        args = getattr(trainer, "args", None)
        lim = limits or Limits(
            max_tokens_per_turn=getattr(args, "max_completion_length", None) or Limits().max_tokens_per_turn
        )
        samp = sampling or SamplingParams(
            temperature=getattr(args, "temperature", 1.0) or 1.0,
            top_p=getattr(args, "top_p", 1.0) or 1.0,
            top_k=getattr(args, "top_k", 0) or 0,
        )
        tasks = [task_from_prompt(p) for p in prompts]
        positions, groups = group_positions(tasks)

        async def run() -> list[Rollout]:
            try:
                return await run_rollouts(
                    env,
                    tasks,
                    pol,
                    n=1,
                    concurrency=concurrency,
                    limits=lim,
                    sampling=samp,
                    env_kwargs=env_kwargs,
                    executor=executor,
                )
            finally:  # each step runs on its own event loop: its engine (current weights) closes with it
                await pol.aclose()

        rollouts = asyncio.run(run())
        for r, index, group in zip(rollouts, positions, groups, strict=True):
            r.sample_index, r.group_id = index, group
        rollout_func.last_rollouts = rollouts
        return to_trl_columns(rollouts, pol.pad_token_id)

    rollout_func.last_rollouts = []
    return rollout_func


def agent_rollout_func(
    agent: Agent | str,
    reward: Reward | None = None,
    *,
    env: str = "rollgym/SWE-v0",
    grade: bool = True,
    sandbox: dict | None = None,
    agent_options: dict | None = None,
    policy: Policy | str | None = None,
    concurrency: int = 8,
    timeout_s: float | None = None,
    task_from_prompt: Callable[[Any], dict] | None = None,
    chat_template: str | None = None,
    settings: Any = None,
) -> Callable[[list, Any], dict]:
    """A TRL `rollout_func(prompts, trainer)` that runs `agent` per prompt through a recording proxy.

    Without `policy`, the trainer's own generator (current weights) and `processing_class` serve the proxy
    (`policy_from_trainer`). `reward(row, output, rollout)` scores each outcome (e.g. an SWE grader on the
    agent's diff); errored rows get reward None. `agent` may be a built-in agent's name (`claude-code`, `codex`,
    `opencode`, `mini-swe-agent`, `aider`) or an `AgentSpec`: it then runs inside each task's sandbox of `env`
    (`agent_options` for the agent, `sandbox` for its sandbox) and is graded by `env`'s grader unless `grade=False`.
    """
    from rollgym.agents.run import resolve

    agent, reward = resolve(agent, env, reward, grade, sandbox, agent_options)
    to_task = task_from_prompt or _default_task_from_prompt
    state: dict[str, Any] = {"policy": policy_for_trainer(policy, chat_template)}

    def rollout_func(prompts: list, trainer: Any) -> dict:
        if state["policy"] is None:
            state["policy"] = policy_from_trainer(trainer, chat_template=chat_template)
        pol: Policy = state["policy"]
        rows = [to_task(p) for p in prompts]
        positions, groups = group_positions(rows)
        sessions: list[ProxySession] = []

        async def run() -> list[Rollout]:
            try:
                async with RecordingProxy(pol, settings=settings) as proxy:
                    return await agent_rollouts(
                        proxy,
                        agent,
                        rows,
                        reward=reward,
                        concurrency=concurrency,
                        timeout_s=timeout_s,
                        group_ids=groups,
                        sessions_out=sessions,
                    )
            finally:  # each step runs on its own event loop: its engine (current weights) closes with it
                await pol.aclose()

        rollouts = asyncio.run(run())
        for r, i in zip(rollouts, positions, strict=True):
            r.sample_index = i
        rollout_func.last_rollouts, rollout_func.last_sessions = rollouts, sessions
        return to_trl_columns(rollouts, pol.pad_token_id)

    rollout_func.last_rollouts, rollout_func.last_sessions = [], []
    return rollout_func
