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

REQUIRED = {"Policy", "rollout", "run_rollouts", "generate", "make", "register", "Env", "tool", "check_env", "Limits",
            "SamplingParams", "Rollout", "RecordingProxy", "make_rollout_func", "RollgymError", "__version__"}


def test_the_namespace_names_the_public_api():
    assert REQUIRED <= set(rg.__all__)
    for name in rg.__all__:
        assert getattr(rg, name) is not None, name
    assert rg.register is importlib.import_module("rollgym.envs").register_env
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rg.nope  # noqa: B018


def test_import_is_lazy_and_never_imports_torch():
    code = ("import sys, time; t = time.perf_counter(); import rollgym as rg; d = time.perf_counter() - t; "
            "print(d, 'torch' in sys.modules, 'rollgym.rollouts' in sys.modules, 'transformers' in sys.modules)")
    seconds, torch, rollouts, transformers = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                            check=True).stdout.split()
    assert (torch, rollouts, transformers) == ("False", "False", "False")
    print(f"import rollgym: {float(seconds) * 1000:.1f} ms")  # the figure is benchmarks' job; the laziness is ours


def test_python_dash_m_rollgym_is_the_cli():
    out = subprocess.run([sys.executable, "-m", "rollgym", "version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == rg.__version__
    helps = subprocess.run([sys.executable, "-m", "rollgym", "--help"], capture_output=True, text=True, check=True).stdout
    assert "generate" in helps and "proxy" in helps


def _all_modules():
    import rollgym

    skip = ("rollgym.rollouts.engines.vllm_inprocess", "rollgym.rollouts.engines.vllm_colocate", "rollgym.__main__")
    for info in pkgutil.walk_packages(rollgym.__path__, "rollgym."):
        if info.name not in skip and ".testing" not in info.name:
            yield importlib.import_module(info.name)


def test_every_exception_rollgym_defines_is_a_rollgym_error():
    """One `except rollgym.RollgymError` catches every error rollgym raises on purpose."""
    strays = []
    for module in _all_modules():
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__ \
                    and not name.startswith("_"):  # private control flow (the loop's `_Stop`) never escapes
                # an interruption (SIGTERM's `Terminated`, a KeyboardInterrupt like Ctrl-C) is not an error
                if not issubclass(obj, (RollgymError, KeyboardInterrupt)):
                    strays.append(f"{module.__name__}.{name}")
    assert strays == []


def test_the_tree_has_the_layer_roots_and_keeps_builtin_bases():
    from rollgym.envs import InvalidTaskError, UnknownEnvironmentError
    from rollgym.envs.sandbox import SandboxDeadError
    from rollgym.rollouts.engines import BadRequestError, EngineTimeoutError
    from rollgym.rollouts.proxy import APIError
    from rollgym.rollouts.distributed import ClusterLostError, WorkerStartError
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
    for bad in (lambda: rg.Policy("no-such-engine:x"), lambda: rg.make("rollgym/Calculater-v0"),
                lambda: rg.Policy("vllm:http://127.0.0.1:1/v1"), lambda: rg.load_tasks("rollgym/Calculator-v0", "/nope.jsonl"),
                lambda: rg.Policy(), lambda: rg.Limits(max_turns=0) and None):
        try:
            bad()
        except RollgymError:
            continue
        except Exception as exc:  # pydantic's own validation of Limits is the one documented exception
            assert type(exc).__name__ == "ValidationError", repr(exc)
        else:
            raise AssertionError("no error")


def test_one_source_of_defaults():
    from typer.main import get_command

    from rollgym.rollouts.cli import app
    from rollgym.rollouts.proxy import ProxySettings

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
