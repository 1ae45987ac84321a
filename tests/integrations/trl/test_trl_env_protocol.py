"""TRL's environment protocol both ways: a TRL-style environment (written as TRL's docs show: a class with tool
methods, `reset` returning text, `get_reward`) run in rollgym's loop; a rollgym environment as an `environment_factory`
that TRL's own trainers accept and run."""

from __future__ import annotations

import asyncio
import copy
import inspect

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.errors import UsageError
from rollgym.integrations.trl.env_protocol import tool_names
from rollgym.limits import Limits
from rollgym.rollouts.batch import run_rollouts
from rollgym.rollouts.policy import Policy
from rollgym.tokenization.templates import CHATML_TOOLS


class CounterEnv:
    """A TRL environment as TRL's docs write one: state in the instance, tools as methods with type hints and
    Google-style docstrings, `reset(**kwargs)` returning the observation, `get_reward()` scoring the final state."""

    def __init__(self):
        self.count = 0
        self.target = 0

    def reset(self, **kwargs) -> str | None:
        self.count = 0
        self.target = int(kwargs.get("target", 3))
        return f" Reach exactly {self.target} by incrementing the counter."

    def increment(self, step: int) -> str:
        """Add a step to the counter.

        Args:
            step: How much to add (1 to 3).

        Returns:
            The counter's new value.
        """
        if not 1 <= step <= 3:
            raise ValueError("step must be between 1 and 3")
        self.count += step
        return f"The counter is now {self.count}."

    def get_reward(self) -> float:
        return 1.0 if self.count == self.target else 0.0


def test_a_trl_environment_runs_in_rollgym_s_loop_token_exact_with_records_and_the_viewer(tool_tok, say, tmp_path):
    env = rg.from_trl_environment(CounterEnv)
    script = [
        say.call("increment", step=2),
        say.call("increment", step=9),
        say.call("increment", step=3),
        say.text("done"),
    ]
    task = {"task_id": "count-5", "target": 5, "prompt": [{"role": "user", "content": "Count."}]}
    (rollout,) = asyncio.run(
        run_rollouts(env, [task], Policy(engine=ScriptedEngine(script), tokenizer=tool_tok), limits=Limits(max_turns=6))
    )
    assert rollout.error is None and rollout.stop_reason == "no_tool_call" and rollout.reward == 1.0
    assert rollout.reward_components == {"CounterEnv": 1.0} and rollout.task_id == "count-5"
    assert rollout.initial_messages == [
        {"role": "user", "content": "Count. Reach exactly 5 by incrementing the counter."}
    ]  # TRL appends reset()'s observation to the prompt's last message
    assert [t["function"]["name"] for t in rollout.tools] == ["increment"]
    params = rollout.tools[0]["function"]["parameters"]
    assert params["required"] == ["step"] and params["properties"]["step"]["type"] == "integer"
    calls = [c for t in rollout.turns for c in t.tool_calls]
    assert [c.result for c in calls if not c.failed] == ["The counter is now 2.", "The counter is now 5."]
    assert [c.failed for c in calls] == [False, True, False] and "between 1 and 3" in calls[1].result
    view = rollout.token_view()
    sampled = [i for i, m in zip(view["completion_ids"], view["env_mask"], strict=True) if m]
    assert sampled == sum(script, [])  # token-exact: what the engine sampled, id for id
    runs = tmp_path / "rollouts.jsonl"
    runs.write_text(rollout.to_json() + "\n")
    page = rg.write_viewer(str(runs), tmp_path / "view.html", tokenizer="smollm2-135m", log=lambda _m: None)
    assert "The counter is now 5." in page.read_text()


def test_a_rollgym_environment_as_trl_s_environment_factory():
    factory = rg.trl_environment("rollgym/Calculator-v0")
    assert tool_names(factory) == ["add", "multiply", "submit", "subtract"]  # what TRL lists as tools
    from transformers.utils import get_json_schema

    rollgym_tools = {t["function"]["name"]: t["function"] for t in CalculatorEnv().toolset.schemas()}
    for name in tool_names(factory):  # TRL's schema reader sees the rollgym tool's arguments and descriptions
        schema = get_json_schema(getattr(factory, name))["function"]
        ours = rollgym_tools[name]
        assert schema["parameters"]["required"] == ours["parameters"]["required"]
        assert {k: v["type"] for k, v in schema["parameters"]["properties"].items()} == {
            k: v["type"] for k, v in ours["parameters"]["properties"].items()
        }
    task = CalculatorEnv.default_tasks(1)[0]
    env = factory()
    observation = env.reset(prompt=[{"role": "user", "content": ""}], **task)
    assert task["question"] in observation
    assert env.add(a=2, b=3) == "5"
    assert "Submitted" in env.submit(answer=task["answer"]) and env.get_reward() == 1.0
    env.reset(**task)  # TRL reuses an instance: a new episode
    assert env.get_reward() == 0.0  # nothing submitted yet: the environment's own score of its state


def test_a_plain_gymnasium_environment_is_refused_by_name():
    with pytest.raises(UsageError, match="'CartPole-v1' makes a CartPoleEnv, not a rollgym Env"):
        rg.trl_environment("CartPole-v1")


@pytest.mark.slow  # builds a real GRPOTrainer (the model loaded)
def test_trl_s_trainers_accept_it(tool_tok, tmp_path):
    """The real `GRPOTrainer` and the async trainer's own rollout loop build their tool tables from it."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen3_template
    from trl.experimental.async_grpo.async_rollout_worker import _AsyncRolloutLoop

    from rollgym.engines.default_model import smollm2_dir

    factory = rg.trl_environment("rollgym/Calculator-v0")
    task = CalculatorEnv.default_tasks(1)[0]
    tokenizer = copy.deepcopy(tool_tok.hf)
    tokenizer.chat_template = CHATML_TOOLS  # a template that renders tool calls, which TRL checks for
    tokenizer.response_template = qwen3_template  # and how to parse them: Hermes-style <tool_call> JSON, as Qwen's
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": ""}], **task}])
    args = GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, report_to=[], num_generations=2, per_device_train_batch_size=2
    )
    trainer = GRPOTrainer(
        model=str(smollm2_dir()),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=factory,
    )
    assert sorted(t.__name__ for t in trainer._env_tools[None]) == ["add", "multiply", "submit", "subtract"]
    assert trainer.reward_func_names[-1] == factory.__name__  # get_reward became a reward source
    loop = _AsyncRolloutLoop(
        model_name="m",
        dataset=dataset,
        reward_funcs=[],
        processing_class=tokenizer,
        eos_token_ids=[tool_tok.end_of_turn_id],
        rollout_buffer=None,
        model_version_value=None,
        heartbeat_value=None,
        failed_event=None,
        exception_info_queue=None,
        metrics_queue=None,
        environment_factory=factory,
    )
    assert sorted(t.__name__ for t in loop._env_tools[None]) == ["add", "multiply", "submit", "subtract"]
    assert loop.reward_func_names == [factory.__name__]
    assert all(inspect.ismethod(t) for t in loop._env_tools[None])


@pytest.mark.docker
def test_the_swe_environment_as_trl_s_environment_factory(base_image):
    """`rg.trl_environment("rollgym/SWE-v0")`: TRL's tools are the SWE tools, an episode in a real sandbox solved
    through them is graded in a fresh container, and the sandbox is released when the instance goes."""
    import gc

    from rollgym.envs.swe import load_bundled_tasks

    factory = rg.trl_environment("rollgym/SWE-v0")
    assert tool_names(factory) == ["bash", "str_replace_editor", "submit"]
    row = next(t for t in load_bundled_tasks() if t.instance_id == "inflection__ordinal-teens").model_dump()
    env = factory()
    observation = env.reset(prompt=[{"role": "user", "content": ""}], **row)
    assert "13rd" in observation
    assert "/testbed" in env.bash(command="pwd")
    edited = env.str_replace_editor(
        command="str_replace",
        path="/testbed/inflection/__init__.py",
        old_str="if number % 100 in (11, 12):",
        new_str="if number % 100 in (11, 12, 13):",
    )
    assert "has been edited" in edited
    env.submit()
    assert env.get_reward() == 1.0
    inner = env._env
    del env
    gc.collect()
    assert inner.sandbox is None  # released with the instance (TRL never closes an environment)


def test_trl_environment_keeps_a_time_limit():
    """`max_episode_steps` (gymnasium's `TimeLimit`) ends the episode after that many tool calls, as the environment
    ends one itself: a later call is refused and the reward is the environment's score where it stopped."""
    from rollgym.envs.core.errors import EpisodeStateError

    env = rg.trl.trl_environment("rollgym/Calculator-v0", max_episode_steps=1)()
    task = CalculatorEnv.default_tasks(1)[0]
    env.reset(**task)
    assert env.add(a=2, b=3) == "5"
    with pytest.raises(EpisodeStateError, match="max_episode_steps=1"):
        env.submit(answer=task["answer"])
    assert env.get_reward() == 0.0  # nothing was submitted within the limit
    env.reset(**task)  # a new episode gets its steps back
    assert "Submitted" in env.submit(answer=task["answer"]) and env.get_reward() == 1.0


def test_trl_environment_refuses_a_reward_wrapper_by_name():
    import gymnasium
    from gymnasium.envs.registration import WrapperSpec

    env_id = "rollgym/ClippedCalculatorTRL-v0"
    gymnasium.register(
        id=env_id,
        entry_point="rollgym.envs.builtin.calculator:CalculatorEnv",
        additional_wrappers=(
            WrapperSpec("ClipReward", "gymnasium.wrappers:ClipReward", {"min_reward": 0.0, "max_reward": 0.5}),
        ),
    )
    try:
        with pytest.raises(UsageError, match="ClipReward wraps this environment"):
            rg.trl.trl_environment(env_id)
    finally:
        del gymnasium.registry[env_id]
