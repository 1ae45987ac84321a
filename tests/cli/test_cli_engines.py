"""The engine commands of the `rollgym` CLI: list specs, sample once from a spec."""

from __future__ import annotations

import json

import pytest
from standins.loopback import LoopbackServer
from standins.vllm_standin import make_vllm_standin
from typer.testing import CliRunner

from rollgym.cli import app

runner = CliRunner()


def test_engines_lists_every_scheme():
    result = runner.invoke(app, ["engines"])
    assert result.exit_code == 0
    for needle in (
        "hf:",
        "vllm:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B",
        "vllm-local:",
        "openai:gpt-4o-mini",
        "smollm2-135m",
    ):
        assert needle in result.output


def test_generate_from_a_vllm_spec_prints_the_generation():
    standin, control = make_vllm_standin("m/x", max_model_len=128)
    with LoopbackServer(standin) as server:
        result = runner.invoke(
            app,
            ["sample", f"vllm:{server.base_url}/v1#m/x", "--prompt-ids", "5,6,7", "--max-tokens", "4", "--seed", "1"],
        )
    assert result.exit_code == 0, result.output
    gen = json.loads(result.output)
    assert (
        gen["engine"] == "vllm-server" and gen["prompt_len"] == 3 and len(gen["completion_ids"]) == len(gen["logprobs"])
    )
    assert control.requests[-1]["prompt"] == [5, 6, 7] and control.requests[-1]["seed"] == 1


@pytest.mark.slow
def test_generate_with_an_unknown_spec_or_unreachable_server_fails_clearly():
    unknown = runner.invoke(app, ["sample", "vlm:http://127.0.0.1:9/v1", "--prompt-ids", "1"])
    assert unknown.exit_code == 2 and "Did you mean: vllm" in unknown.output
    one_retry = ["-E", "max_retries=1", "-E", "backoff_s=0.1"]  # the default budget rides out restarts: 25 s here
    down = runner.invoke(app, ["sample", "vllm:http://127.0.0.1:9/v1#m", "--prompt-ids", "1", *one_retry])
    assert down.exit_code == 2 and "could not reach" in down.output
    both = runner.invoke(app, ["sample", "smollm2-135m"])
    assert both.exit_code != 0 and "exactly one of --prompt-ids or --text" in both.output


def test_generate_from_a_chat_spec_prints_a_non_token_exact_message(monkeypatch):
    from standins.openai_standin import make_openai_standin

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    standin, _ = make_openai_standin()
    with LoopbackServer(standin) as server:
        result = runner.invoke(app, ["sample", f"openai:{server.base_url}/v1#gpt-4o-mini", "--text", "hello there"])
        ids_only = runner.invoke(app, ["sample", f"openai:{server.base_url}/v1#gpt-4o-mini", "--prompt-ids", "1,2"])
    assert result.exit_code == 0, result.output
    gen = json.loads(result.output)
    assert gen["token_exact"] is False and gen["message"]["content"] == "hello there"
    assert ids_only.exit_code != 0 and "chat engine (not token-exact): pass --text" in ids_only.output
