"""A model NAME or spec (`smollm2-135m`, `hf:DIR`) resolves to a directory, loaded by the tokenization layer's route
(tests/tokenization/test_loading.py); the tool-template fallback refuses a template that renders no tool schemas."""

from __future__ import annotations

import re

import pytest

from rollgym.rollouts.policy import Policy
from rollgym.rollouts.tokenizer_loading import TokenizerNotFoundError, load_chat_tokenizer


def test_a_template_that_renders_no_tool_schemas_is_refused_naming_the_shipped_ones():
    """DeepSeek's own templates write its tool-call format but never show the model its tools."""
    import copy

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


def test_a_model_name_loads_without_torch_as_its_directory_does():
    """The embedded model's NAME resolves to its directory, loaded without torch (the generic fast class)."""
    import subprocess
    import sys

    from rollgym.engines.default_model import smollm2_dir
    from rollgym.tokenization import ChatTokenizer

    probe = (
        "import sys\n"
        "from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer\n"
        "tok = load_chat_tokenizer('smollm2-135m')\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False"], done.stdout + done.stderr
    by_name, by_dir = load_chat_tokenizer("smollm2-135m"), ChatTokenizer.from_pretrained(smollm2_dir())
    assert by_name.template == by_dir.template and by_name.hf.get_vocab() == by_dir.hf.get_vocab()
    assert load_chat_tokenizer(f"hf:{smollm2_dir()}").template == by_dir.template


def test_a_spec_that_names_no_model_is_named_as_written(tmp_path):
    """The error names what the caller wrote (`hf:DIR`), not only the directory it resolved to."""
    with pytest.raises(
        TokenizerNotFoundError, match=re.escape(f"cannot load a tokenizer from 'hf:{tmp_path}/nowhere'")
    ):
        load_chat_tokenizer(f"hf:{tmp_path / 'nowhere'}")
