"""Engine specs: each scheme builds its engine; unknown or malformed specs list what exists."""

from __future__ import annotations

import pytest

from rollgym.engines.errors import ModelUnavailableError, UnknownEngineError
from rollgym.engines.openai_chat import OpenAIChatEngine
from rollgym.engines.specs import available_engines, make_engine
from rollgym.engines.vllm_inprocess import VLLMEngine
from rollgym.engines.vllm_server import VLLMServerEngine


async def test_vllm_spec_parses_url_and_model():
    engine = make_engine("vllm:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B")
    assert isinstance(engine, VLLMServerEngine)
    assert engine.base_url == "http://127.0.0.1:8000/v1" and engine.model == "Qwen/Qwen3-8B"
    await engine.aclose()
    bare = make_engine("vllm:http://127.0.0.1:8000/v1", max_concurrency=4)
    assert bare.model == "" and bare.max_concurrency == 4  # model discovered from /v1/models on first use
    await bare.aclose()


async def test_openai_and_vllm_local_specs(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    hosted = make_engine("openai:gpt-4o-mini")
    assert isinstance(hosted, OpenAIChatEngine) and hosted.model == "gpt-4o-mini" and hosted.token_exact is False
    await hosted.aclose()
    local = make_engine("openai:http://127.0.0.1:9000/v1#my-model")
    assert local.model == "my-model" and str(local._client.base_url).startswith("http://127.0.0.1:9000/v1")
    await local.aclose()
    offline = make_engine("vllm-local:Qwen/Qwen3-8B", gpu_memory_utilization=0.5)
    assert isinstance(offline, VLLMEngine) and offline.engine_args()["logprobs_mode"] == "processed_logprobs"


@pytest.mark.slow
def test_default_model_name_and_hf_dir_build_transformers_engines(smollm2_engine):
    from rollgym.engines.default_model import smollm2_dir

    engine = make_engine("smollm2-135m")
    assert engine.name == "transformers" and engine.model == "smollm2-135m" and engine.max_model_len == 8192
    by_dir = make_engine(f"hf:{smollm2_dir()}", max_model_len=512)
    assert by_dir.model == str(smollm2_dir()) and by_dir.max_model_len == 512


def test_unknown_spec_lists_schemes_and_close_matches():
    with pytest.raises(UnknownEngineError, match=r"Did you mean: vllm.*Known engines: hf: .*openai: .*smollm2-135m"):
        make_engine("vlm:http://x/v1")
    with pytest.raises(UnknownEngineError, match="Did you mean: smollm2-135m"):
        make_engine("smollm2-135")
    with pytest.raises(UnknownEngineError, match="names no model"):
        make_engine("hf:")
    with pytest.raises(UnknownEngineError, match="needs the server URL"):
        make_engine("vllm:127.0.0.1:8000")
    with pytest.raises(UnknownEngineError, match="non-empty"):
        make_engine("")
    assert {s.scheme for s in available_engines()} >= {"hf", "vllm", "vllm-local", "openai"}


def test_hub_id_without_network_says_what_to_do(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ModelUnavailableError, match=r"HF_HUB_OFFLINE=1.*hf download Qwen/Qwen3-8B.*hf:DIR.*smollm2-135m"
    ):
        make_engine("hf:Qwen/Qwen3-8B")


def test_missing_or_non_model_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ModelUnavailableError, match="no model directory"):
        make_engine(f"hf:{tmp_path}/nope")
    with pytest.raises(ModelUnavailableError, match="no config.json"):
        make_engine(f"hf:{tmp_path}")


def test_directory_that_is_not_a_loadable_model_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "no-such-architecture"}')
    with pytest.raises(ModelUnavailableError, match="could not load a causal LM"):
        make_engine(f"hf:{tmp_path}")
