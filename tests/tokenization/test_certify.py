"""Certification of every shipped (vocabulary, template) pair, and refusal of broken pairs."""

import pytest
from support import TEMPLATES, VOCABS, paired_tokenizer, template_text

from rollgym.tokenization import CertificationError, ChatTokenizer, UnsupportedFeatureError
from rollgym.tokenization.certify import PROBES


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("template", TEMPLATES)
def test_shipped_pairs_certify(chat_tokenizers, vocab, template):
    report = chat_tokenizers[(vocab, template)].certify()
    assert report.passed
    assert {p.name for p in report.probes} == {p.name for p in PROBES}
    statuses = {p.name: p.status for p in report.probes}
    # Bridges are really checked: a full-render match, or a bridge-by-bridge check in context.
    assert statuses["user_followup"] in ("pass", "rewrites_history", "noncanonical")
    if template != "gemma3":
        assert statuses["tool_result"] in ("pass", "noncanonical")
        assert report.supports_tools
    else:
        assert statuses["tool_result"] == "unsupported" and not report.supports_tools


@pytest.mark.parametrize("template", ["qwen2_5", "llama3_1"])
def test_prefix_stable_templates_match_full_render_exactly(chat_tokenizers, template):
    """On the Qwen vocabulary these templates never rewrite history: every applicable probe equals a full render."""
    report = chat_tokenizers[("qwen", template)].certify()
    assert {p.status for p in report.probes} <= {"pass", "unsupported"}
    assert sum(p.status == "pass" for p in report.probes) >= 6


def test_qwen3_history_rewrite_is_reported_not_hidden(chat_tokenizers):
    report = chat_tokenizers[("qwen", "qwen3")].certify()
    statuses = {p.name: p.status for p in report.probes}
    assert statuses["tool_result"] == "pass"  # reasoning after the last user query is kept by the template
    assert statuses["user_followup"] == "rewrites_history"  # earlier <think> dropped by the template


def test_llama3_parallel_tool_calls_are_unsupported(chat_tokenizers):
    report = chat_tokenizers[("qwen", "llama3_1")].certify()
    probe = next(p for p in report.probes if p.name == "parallel_tool_calls")
    assert probe.status == "unsupported" and "single tool-calls" in probe.detail


def test_gemma_refuses_tools_with_clear_message(chat_tokenizers):
    tok = chat_tokenizers[("qwen", "gemma3")]
    with pytest.raises(UnsupportedFeatureError, match="no tool calling"):
        tok.start([{"role": "user", "content": "hi"}], tools=PROBES[0].tools)
    traj = tok.start([{"role": "user", "content": "hi"}])
    traj.add_completion(tok.encode("Hello<end_of_turn>"), None, "stop")
    with pytest.raises(UnsupportedFeatureError, match="no tool role"):
        traj.add_messages([{"role": "tool", "tool_call_id": "c", "content": "x"}])


def test_missing_end_of_turn_token_is_refused(hf_tokenizers):
    """Llama 3.1's template on the bare SmolLM2 vocabulary: <|eot_id|> is not a token, the engine could never stop."""
    tok = ChatTokenizer(paired_tokenizer(hf_tokenizers["smollm2"], "llama3_1", add_specials=False))
    with pytest.raises(CertificationError, match="turn_structure.*<\\|eot_id\\|>"):
        tok.certify()


def test_history_dependent_template_fails_with_probe_name(hf_tokenizers):
    """A template that numbers messages renders bridges differently in context: certification must fail."""
    numbered = template_text("qwen2_5").replace(
        "'<|im_start|>' + message.role + '\\n' + message.content",
        "'<|im_start|>' + message.role + '\\n' + loop.index|string + message.content",
    )
    assert numbered != template_text("qwen2_5")
    tok = ChatTokenizer(paired_tokenizer(hf_tokenizers["qwen"], "qwen2_5"), chat_template=numbered)
    with pytest.raises(CertificationError) as info:
        tok.certify()
    assert "probe 'user_followup'" in str(info.value) or "probe 'tool_result'" in str(info.value)
    report = tok.certify(strict=False)
    assert not report.passed and report.failures()
