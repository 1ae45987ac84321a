"""The front door: `import rollgym as rg` is light, names the public API, and every error has one root."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import rollgym as rg
from rollgym.errors import RollgymError

REQUIRED = {
    "Policy",
    "rollout",
    "run_rollouts",
    "generate",
    "make",
    "register",
    "Env",
    "tool",
    "check_env",
    "Limits",
    "SamplingParams",
    "Rollout",
    "RecordingProxy",
    "make_rollout_func",
    "RollgymError",
    "__version__",
}


def test_the_namespace_names_the_public_api():
    assert REQUIRED <= set(rg.__all__)
    for name in rg.__all__:
        assert getattr(rg, name) is not None, name
    assert rg.register is importlib.import_module("rollgym.envs").register_env
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rg.nope  # noqa: B018 - the attribute lookup is what raises


def test_import_is_lazy_and_never_imports_torch():
    code = (
        "import sys, time; t = time.perf_counter(); import rollgym as rg; d = time.perf_counter() - t; "
        "print(d, 'torch' in sys.modules, 'rollgym.rollouts' in sys.modules, 'transformers' in sys.modules)"
    )
    seconds, torch, rollouts, transformers = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert (torch, rollouts, transformers) == ("False", "False", "False")
    print(f"import rollgym: {float(seconds) * 1000:.1f} ms")  # the figure is benchmarks' job; the laziness is ours


def test_python_dash_m_rollgym_is_the_cli():
    out = subprocess.run(
        [sys.executable, "-m", "rollgym", "version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == rg.__version__
    helps = subprocess.run(
        [sys.executable, "-m", "rollgym", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "generate" in helps and "proxy" in helps


def _all_modules():
    import rollgym

    skip = (
        "rollgym.engines.vllm_inprocess",
        "rollgym.engines.vllm_colocate",
        "rollgym.integrations.verl.agent_loop",  # imports verl: loaded by verl only (tests/integrations/verl)
        "rollgym.integrations.skyrl.generator",  # imports SkyRL: loaded by SkyRL only (tests/integrations/skyrl)
        "rollgym.integrations.openrlhf.agent_executor",  # imports openrlhf: loaded by OpenRLHF only
        "rollgym.integrations.art.trajectory_groups",  # imports art: loaded in ART's venv only (tests/integrations/art)
        "rollgym.integrations.art.rollout_function",  # imports art: ART's live hook
        "rollgym.integrations.areal.workflow",  # imports areal: AReaL's live hook, loaded in AReaL's venv
        "rollgym.__main__",
    )
    for info in pkgutil.walk_packages(rollgym.__path__, "rollgym."):
        if info.name not in skip and ".testing" not in info.name:
            yield importlib.import_module(info.name)


def test_every_exception_rollgym_defines_is_a_rollgym_error():
    """One `except rollgym.RollgymError` catches every error rollgym raises on purpose."""
    strays = []
    for module in _all_modules():
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):  # private control flow (the loop's `_Stop`) never escapes
                # an interruption (SIGTERM's `Terminated`, a KeyboardInterrupt like Ctrl-C) is not an error
                if not issubclass(obj, (RollgymError, KeyboardInterrupt)):
                    strays.append(f"{module.__name__}.{name}")
    assert strays == []


def test_the_tree_has_the_layer_roots_and_keeps_builtin_bases():
    from rollgym.engines import BadRequestError, EngineTimeoutError
    from rollgym.envs import InvalidTaskError, UnknownEnvironmentError
    from rollgym.envs.sandbox import SandboxDeadError
    from rollgym.integrations.ray import ClusterLostError, WorkerStartError
    from rollgym.proxy import APIError
    from rollgym.tokenization import CertificationError, InvalidInputError

    assert issubclass(SandboxDeadError, rg.SandboxError) and issubclass(rg.SandboxError, rg.EnvError)
    assert issubclass(CertificationError, rg.TokenizationError) and issubclass(InvalidInputError, ValueError)
    assert issubclass(BadRequestError, rg.EngineError) and issubclass(EngineTimeoutError, TimeoutError)
    assert issubclass(APIError, rg.ProxyError) and issubclass(WorkerStartError, rg.WorkerError)
    assert issubclass(ClusterLostError, rg.WorkerError)
    assert issubclass(UnknownEnvironmentError, rg.EnvError) and issubclass(InvalidTaskError, ValueError)
    for cls in (rg.TokenizationError, rg.EngineError, rg.EnvError, rg.ProxyError, rg.WorkerError, rg.UsageError):
        assert issubclass(cls, RollgymError)


def test_errors_raised_through_the_front_door_are_rollgym_errors():
    for bad in (
        lambda: rg.Policy("no-such-engine:x"),
        lambda: rg.make("rollgym/Calculater-v0"),
        lambda: rg.Policy("vllm:http://127.0.0.1:1/v1"),
        lambda: rg.load_tasks("rollgym/Calculator-v0", "/nope.jsonl"),
        lambda: rg.Policy(),
        lambda: rg.Limits(max_turns=0) and None,
    ):
        with pytest.raises(RollgymError):
            bad()


@pytest.mark.parametrize(
    "build, says",
    [
        (lambda: rg.Limits(max_turns=0), "Limits(max_turns=0): Input should be greater than or equal to 1"),
        (lambda: rg.SamplingParams(temperature=-1), "SamplingParams(temperature=-1)"),
        (lambda: rg.Limits(max_turn=3), "Limits(max_turn=3): Extra inputs are not permitted"),
        (
            lambda: __import__("rollgym.envs.sandbox", fromlist=["SandboxConfig"]).SandboxConfig(
                image="x", pids_limit="many"
            ),
            "SandboxConfig(pids_limit='many')",
        ),
        (
            lambda: __import__("rollgym.integrations.ray", fromlist=["RayConfig"]).RayConfig(actors=0),
            "RayConfig(actors=0)",
        ),
        (
            lambda: __import__("rollgym.proxy", fromlist=["ProxySettings"]).ProxySettings(truncation="cut"),
            "ProxySettings(truncation='cut')",
        ),
    ],
)
def test_bad_settings_are_usage_errors_naming_the_field_and_the_value(build, says):
    with pytest.raises(rg.UsageError) as info:
        build()
    assert says in str(info.value)
    assert isinstance(info.value, ValueError)  # as pydantic's own error was


def test_one_source_of_defaults():
    from typer.main import get_command

    from rollgym.cli import app
    from rollgym.proxy import ProxySettings

    limits, sampling = rg.Limits(), rg.SamplingParams()
    assert (limits.max_turns, limits.max_tokens_per_turn) == (30, 1024)
    assert sampling.max_tokens == limits.max_tokens_per_turn == ProxySettings().default_max_tokens
    assert rg.Env.max_turns is None  # environments do not impose a turn budget of their own
    params = {p.name: p.default for p in get_command(app).commands["generate"].params}
    assert (params["max_turns"], params["max_tokens"]) == (limits.max_turns, limits.max_tokens_per_turn)
    proxy = {p.name: p.default for p in get_command(app).commands["proxy"].params}
    assert proxy["max_tokens"] == limits.max_tokens_per_turn


async def test_a_rollout_refuses_max_tokens_in_sampling_params():
    with pytest.raises(rg.UsageError, match="max_tokens_per_turn"):
        await rg.rollout("rollgym/Calculator-v0", "smollm2-135m", sampling=rg.SamplingParams(max_tokens=8))


MOVED_TO_TRL = [
    "agent_rollout_func",
    "policy_from_trainer",
    "env_reward",
    "component_reward",
    "trl_environment",
    "from_trl_environment",
    "AsyncRolloutWorker",
    "AsyncRolloutConfig",
    "VLLMServerWeightTransfer",
]


def test_trainer_names_live_in_their_trainers_room_and_the_old_names_warn():
    """Everything TRL is `rg.trl.<name>`; the old front-door names still work, each use warning with the new home;
    the CPU-only patches are no public name at all."""
    import rollgym.integrations.trl as trl_room

    assert rg.trl is trl_room and rg.make_rollout_func is trl_room.make_rollout_func
    for name in MOVED_TO_TRL:
        assert name not in rg.__all__ and name in trl_room.__all__
        with pytest.warns(DeprecationWarning, match=rf"rollgym\.{name} moved: use rollgym\.trl\.{name}"):
            old = getattr(rg, name)
        assert old is getattr(rg.trl, name)
    for name, module in [("patch_trl_for_vllm_cpu", "cpu_vllm"), ("patch_async_grpo_for_cpu", "cpu_async")]:
        assert name not in rg.__all__ and name not in trl_room.__all__
        with pytest.warns(DeprecationWarning, match=rf"use rollgym\.integrations\.trl\.{module}\.{name}"):
            old = getattr(rg, name)
        assert old is getattr(importlib.import_module(f"rollgym.integrations.trl.{module}"), name)
    with pytest.raises(AttributeError, match="rollgym.trl' has no attribute 'nope'"):
        rg.trl.nope  # noqa: B018 - the attribute lookup is what raises


def test_rg_trl_loads_no_trainer_until_a_name_is_used():
    code = "import sys, rollgym as rg; rg.trl; print('trl' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
