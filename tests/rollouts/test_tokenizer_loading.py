"""A model directory names its family: GPT-OSS's vocabulary is rendered by openai-harmony, a `tekken.json` by
mistral-common, everything else by its own Jinja template."""

from __future__ import annotations

import json
import shutil

from rollgym.cli.vocabularies import o200k_dir, tekken_file
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer
from rollgym.tokenization import ChatTokenizer
from rollgym.tokenization.formats import FormatTokenizer
from rollgym.tokenization.vocab import harmony_tokenizer


def _model_dir(path):
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": "test"}))
    return path


def test_a_gpt_oss_directory_is_rendered_by_harmony_and_its_vocabulary_matches_the_library(tmp_path, family_tok):
    harmony = family_tok("gpt-oss")
    hf = harmony_tokenizer(o200k_dir() / "o200k_base.tiktoken", harmony.codec.special_vocab)
    hf.save_pretrained(_model_dir(tmp_path / "gpt-oss"))
    tok = load_chat_tokenizer(str(tmp_path / "gpt-oss"))
    assert isinstance(tok, FormatTokenizer) and tok.codec.name == "harmony"
    enc = harmony.codec._encoding
    for text in ["Hello wörld 123456 ", "<|start|>user<|message|>x<|end|>", "  spaces\n\n\tdef f(): return 1 日本"]:
        assert tok.encode(text) == list(enc.encode(text, allowed_special="all"))  # the HF vocabulary is the library's
    assert Policy(engine=object(), tokenizer=str(tmp_path / "gpt-oss")).tokenizer.codec.name == "harmony"
    # A Jinja template given by name wins over the library.
    from rollgym.tokenization.families import template_text

    jinja = load_chat_tokenizer(str(tmp_path / "gpt-oss"), template_text("gpt_oss.jinja"))
    assert type(jinja) is ChatTokenizer


def test_a_directory_with_tekken_json_is_rendered_by_mistral_common(tmp_path):
    model = _model_dir(tmp_path / "mistral")
    shutil.copy(tekken_file("v11"), model / "tekken.json")
    tok = load_chat_tokenizer(str(model))
    assert isinstance(tok, FormatTokenizer) and tok.codec.name == "mistral" and tok.codec.version == "v11"
    assert tok.certify().passed and tok.stop_token_ids == [tok.codec.eos_id]


def test_a_template_that_renders_no_tool_schemas_is_refused_naming_the_shipped_ones():
    """DeepSeek's own templates write its tool-call format but never show the model its tools."""
    import copy

    import pytest

    from rollgym.cli.vocabularies import deepseek_vocabulary
    from rollgym.tokenization import UnsupportedFeatureError

    hf = copy.deepcopy(deepseek_vocabulary())
    hf.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'user' %}<｜User｜>{{ m['content'] }}{% elif m['role'] == 'assistant' %}"
        "<｜Assistant｜>{{ m['content'] }}<｜tool▁calls▁begin｜><｜end▁of▁sentence｜>{% elif m['role'] == 'tool' %}"
        "<｜tool▁output▁begin｜>{{ m['content'] }}<｜tool▁output▁end｜>{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<｜Assistant｜>{% endif %}"
    )
    with pytest.raises(UnsupportedFeatureError, match="renders no tool schemas.*deepseek_v3_1_tools.jinja"):
        Policy(engine=object(), tokenizer=hf)


def test_a_generic_fast_tokenizer_loads_without_torch_and_tokenizes_as_autotokenizer():
    """AutoTokenizer imports transformers' model configuration code and with it torch (~200 MiB per process that
    only samples through a server); the generic fast class loads the same tokenizer without it."""
    import subprocess
    import sys

    from transformers import AutoTokenizer

    from rollgym.engines.default_model import smollm2_dir

    probe = (
        "import sys\n"
        "from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer\n"
        "tok = load_chat_tokenizer('smollm2-135m')\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False"], done.stdout + done.stderr

    tok = load_chat_tokenizer("smollm2-135m")
    auto = AutoTokenizer.from_pretrained(str(smollm2_dir()))
    text = '<|im_start|>user\nWhat is 12 + 7?<|im_end|>\n<tool_call>{"a": 1}</tool_call>'
    assert tok.hf.encode(text) == auto.encode(text)
    assert tok.hf.get_vocab() == auto.get_vocab()
    assert tok.hf.chat_template == auto.chat_template and tok.hf.all_special_ids == auto.all_special_ids
