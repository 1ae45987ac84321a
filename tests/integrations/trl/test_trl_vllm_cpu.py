"""TRL's GRPOTrainer with the real vLLM colocated (vllm_mode="colocate") on this CPU, through make_rollout_func with
no engine of rollgym's own: rollouts sample with the trainer's current weights at every step."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.vllm import json_result, run_in_vllm_venv


def test_the_patch_changes_nothing_without_vllm_on_a_cpu():
    import importlib.util

    import rollgym as rg

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed in this Python; the colocate test below covers the patched path")
    assert rg.patch_trl_for_vllm_cpu() is False


def _max_abs(a: list[float], b: list[float]) -> float:
    assert len(a) == len(b) > 0
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


def test_the_patch_builds_a_cpu_friendly_llm_and_swaps_the_colocate_sync(monkeypatch):
    """TRL 1.16's real VLLMGeneration, with the LLM constructor recorded (no vLLM in this Python)."""
    from trl.generation import vllm_generation

    from rollgym.integrations.trl import cpu_vllm as trl_vllm_cpu

    built = []
    monkeypatch.setattr(vllm_generation, "LLM", lambda *a, **kw: built.append(kw), raising=False)
    monkeypatch.setattr(vllm_generation.VLLMGeneration, "sync_weights", vllm_generation.VLLMGeneration.sync_weights)
    monkeypatch.setattr(trl_vllm_cpu, "vllm_on_cpu", lambda: True)
    synced = []
    monkeypatch.setattr(trl_vllm_cpu, "sync_colocated_weights", synced.append)
    try:
        assert trl_vllm_cpu.patch_trl_for_vllm_cpu() and trl_vllm_cpu.patch_trl_for_vllm_cpu()  # idempotent
        vllm_generation.LLM(model="m", max_model_len=None, max_num_batched_tokens=4096)
        vllm_generation.LLM(model="m", max_model_len=8192, max_num_batched_tokens=4096)
        assert built[0] == {
            "model": "m",
            "max_model_len": None,
            "dtype": "float32",
            "enforce_eager": True,
            "enable_chunked_prefill": False,
        }  # TRL's 4096 dropped: vLLM sizes it to the model
        assert built[1]["max_num_batched_tokens"] == 8192
        generation = type("Gen", (), {"mode": "colocate"})()
        vllm_generation.VLLMGeneration.sync_weights(generation)
        assert synced == [generation]
    finally:
        delattr(vllm_generation.VLLMGeneration, trl_vllm_cpu._PATCHED)


@pytest.mark.vllm
@pytest.mark.slow
def test_grpo_colocate_on_cpu_syncs_weights_into_vllm(tmp_path, vllm_venv):
    from rollgym.engines.default_model import smollm2_dir

    script = Path(__file__).with_name("trl_colocate_run.py")
    result = json_result(
        run_in_vllm_venv([str(script), str(smollm2_dir()), str(tmp_path / "out")], tmp_path, timeout=1500)
    )
    assert result["patched"] and result["dtype"] == "torch.float32" and result["global_step"] == 2
    steps = result["steps"]
    assert [s["global_step"] for s in steps] == [0, 1] and all(s["engines"] == ["vllm-colocate"] for s in steps)
    for s in steps:  # after each sync vLLM is the trainer's model: on a fixed continuation and on what it sampled
        assert _max_abs(s["vllm"], s["trainer"]) < 1e-3
        assert s["sampled_vs_trainer_max_abs"] < 1e-3
    assert _max_abs(steps[1]["vllm"], steps[0]["vllm"]) > 0.05  # the optimizer step reached vLLM
    final = result["final"]
    assert _max_abs(final["vllm"], final["trainer"]) < 1e-3 and _max_abs(final["vllm"], steps[1]["vllm"]) > 0.05
