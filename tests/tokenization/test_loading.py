"""A model directory names its family: GPT-OSS's vocabulary is rendered by openai-harmony, a `tekken.json` by
mistral-common, everything else by its own Jinja template; `ChatTokenizer.from_pretrained` takes that same route."""

from __future__ import annotations

import json
import shutil

import pytest

from rollgym.cli.vocabularies import o200k_dir, tekken_file
from rollgym.rollouts.policy import Policy
from rollgym.tokenization import ChatTokenizer
from rollgym.tokenization.formats import FormatTokenizer
from rollgym.tokenization.loading import TokenizerNotFoundError, load_tokenizer
from rollgym.tokenization.vocab import harmony_tokenizer

CALC_TOOL = {
    "type": "function",
    "function": {
        "name": "calculate",
        "description": "Evaluate an arithmetic expression.",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    },
}
CONVERSATION = [
    {"role": "system", "content": "You are a careful calculator."},
    {"role": "user", "content": "What is 12 + 7?"},
]


def _model_dir(path):
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": "test"}))
    return path


@pytest.fixture
def gpt_oss_dir(tmp_path, family_tok):
    harmony = family_tok("gpt-oss")
    hf = harmony_tokenizer(o200k_dir() / "o200k_base.tiktoken", harmony.codec.special_vocab)
    hf.save_pretrained(_model_dir(tmp_path / "gpt-oss"))
    return tmp_path / "gpt-oss"


@pytest.fixture
def mistral_dir(tmp_path):
    model = _model_dir(tmp_path / "mistral")
    shutil.copy(tekken_file("v11"), model / "tekken.json")
    return model


def test_a_gpt_oss_directory_is_rendered_by_harmony_and_its_vocabulary_matches_the_library(gpt_oss_dir, family_tok):
    harmony = family_tok("gpt-oss")
    tok = load_tokenizer(gpt_oss_dir)
    assert isinstance(tok, FormatTokenizer) and tok.codec.name == "harmony"
    enc = harmony.codec._encoding
    for text in ["Hello wörld 123456 ", "<|start|>user<|message|>x<|end|>", "  spaces\n\n\tdef f(): return 1 日本"]:
        assert tok.encode(text) == list(enc.encode(text, allowed_special="all"))  # the HF vocabulary is the library's
    assert Policy(engine=object(), tokenizer=str(gpt_oss_dir)).tokenizer.codec.name == "harmony"
    # A Jinja template given by name wins over the library.
    from rollgym.tokenization.families import template_text

    jinja = load_tokenizer(gpt_oss_dir, template_text("gpt_oss.jinja"))
    assert type(jinja) is ChatTokenizer


def test_a_directory_with_tekken_json_is_rendered_by_mistral_common(mistral_dir):
    tok = load_tokenizer(mistral_dir)
    assert isinstance(tok, FormatTokenizer) and tok.codec.name == "mistral" and tok.codec.version == "v11"
    assert tok.certify().passed and tok.stop_token_ids == [tok.codec.eos_id]


@pytest.mark.parametrize(("model", "library"), [("gpt_oss_dir", "harmony"), ("mistral_dir", "mistral")])
def test_from_pretrained_takes_the_library_route_and_renders_what_policy_renders(model, library, request):
    """The documented entry and `rg.Policy` load a library-rendered directory the same way, to the same ids."""
    import rollgym as rg

    directory = request.getfixturevalue(model)
    tok = ChatTokenizer.from_pretrained(directory)
    assert isinstance(tok, FormatTokenizer) and tok.codec.name == library
    policy_tok = rg.Policy(engine=object(), tokenizer=str(directory)).tokenizer
    assert type(policy_tok) is type(tok) and policy_tok.codec.name == library
    ids = tok.prompt_ids(CONVERSATION, [CALC_TOOL])
    assert ids == policy_tok.prompt_ids(CONVERSATION, [CALC_TOOL]) and len(ids) > 20
    assert ids == tok.codec.render_ids(CONVERSATION, [CALC_TOOL], True)  # the library's own rendering


def test_from_pretrained_renders_a_plain_directory_with_its_jinja_template():
    from rollgym.engines.default_model import smollm2_dir

    tok = ChatTokenizer.from_pretrained(smollm2_dir())
    assert type(tok) is ChatTokenizer and "<|im_start|>" in tok.render(CONVERSATION, add_generation_prompt=True)


def test_a_path_that_holds_no_tokenizer_is_named_in_the_error(tmp_path):
    with pytest.raises(TokenizerNotFoundError, match="cannot load a tokenizer from .*nowhere"):
        ChatTokenizer.from_pretrained(tmp_path / "nowhere")


def test_a_generic_fast_tokenizer_loads_without_torch_and_tokenizes_as_autotokenizer():
    """AutoTokenizer imports transformers' model configuration code and with it torch (~200 MiB per process that
    only samples through a server); the generic fast class loads the same tokenizer without it."""
    import subprocess
    import sys

    from transformers import AutoTokenizer

    from rollgym.engines.default_model import smollm2_dir

    probe = (
        "import sys\n"
        "from rollgym.engines.default_model import smollm2_dir\n"
        "from rollgym.tokenization.loading import load_tokenizer\n"
        "tok = load_tokenizer(smollm2_dir())\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False"], done.stdout + done.stderr

    tok = load_tokenizer(smollm2_dir())
    auto = AutoTokenizer.from_pretrained(str(smollm2_dir()))
    text = '<|im_start|>user\nWhat is 12 + 7?<|im_end|>\n<tool_call>{"a": 1}</tool_call>'
    assert tok.hf.encode(text) == auto.encode(text)
    assert tok.hf.get_vocab() == auto.get_vocab()
    assert tok.hf.chat_template == auto.chat_template and tok.hf.all_special_ids == auto.all_special_ids
