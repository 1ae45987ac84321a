"""The fast paths give exactly the reference results: `TemplateRenderer` renders what transformers'
`apply_chat_template` renders, and `SegmentedEncoder` encodes what the Rust tokenizer encodes."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import LOOKALIKES, conversations, env_text
from support import TEMPLATE_SPECIALS, TEMPLATES, VOCABS
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from rollgym.tokenization import ChatTokenizer
from rollgym.tokenization.certify import TOOLS
from rollgym.tokenization.messages import normalize_for_template
from rollgym.tokenization.segmented import SegmentedEncoder

ALL_SPECIALS = sorted({t for specials in TEMPLATE_SPECIALS.values() for t in specials})
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def reference_render(tok: ChatTokenizer, conv, tools, gen, **kwargs) -> str:
    return tok.hf.apply_chat_template(
        normalize_for_template(conv),
        tools=tools,
        chat_template=tok.template,
        tokenize=False,
        add_generation_prompt=gen,
        **kwargs,
    )


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("template", TEMPLATES)
def test_renderer_matches_apply_chat_template(chat_tokenizers, vocab, template):
    tok = chat_tokenizers[(vocab, template)]
    assert tok._renderer is not None  # the fast path is what is under test
    tools = TOOLS if tok.supports_tools else None
    max_calls = 0 if tools is None else 1 if template == "llama3_1" else 2
    options = [{}, {"enable_thinking": False}] if tok.has_reasoning else [{}]

    @SETTINGS
    @given(
        conv=conversations(max_calls, tok.has_reasoning, tools is not None),
        gen=st.booleans(),
        kwargs=st.sampled_from(options),
    )
    def check(conv, gen, kwargs):
        assert tok.render(conv, tools, gen, **kwargs) == reference_render(tok, conv, tools, gen, **kwargs)

    check()


def test_renderer_drops_none_fields_and_rejects_like_the_template(chat_tokenizers):
    tok = chat_tokenizers[("qwen", "qwen2_5")]
    conv = [
        {"role": "user", "content": "hi", "name": None},
        {"role": "assistant", "content": None, "reasoning_content": None},
    ]
    assert tok.render(conv) == reference_render(tok, conv, None, False)
    gemma = chat_tokenizers[("qwen", "gemma3")]
    from rollgym.tokenization import TemplateError

    with pytest.raises(TemplateError, match="alternate"):
        gemma.render([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])


@pytest.mark.parametrize("vocab", VOCABS)
def test_segmented_encoding_equals_the_whole_encoding(chat_tokenizers, vocab):
    tok = chat_tokenizers[(vocab, "glm4moe")]  # the pairing with the most added tokens
    assert tok._segmented is not None
    pieces = st.one_of(env_text, st.sampled_from(ALL_SPECIALS + LOOKALIKES), st.sampled_from([" ", "\n", "  x", "'s"]))

    @SETTINGS
    @given(parts=st.lists(pieces, min_size=1, max_size=8))
    def check(parts):
        text = "".join(parts)
        expected = tok.hf.encode(text, add_special_tokens=False)
        assert tok.encode(text) == expected
        assert tok.encode(text) == expected  # second time from the cache

    check()


def test_rendered_chats_encode_identically(chat_tokenizers):
    for (vocab, template), tok in chat_tokenizers.items():
        tools = TOOLS if tok.supports_tools else None
        conv = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}]
        text = tok.render(conv, tools, True)
        assert tok.encode(text) == tok.hf.encode(text, add_special_tokens=False), (vocab, template)


def test_cache_is_bounded_and_never_shared(chat_tokenizers):
    backend = chat_tokenizers[("qwen", "qwen2_5")].hf.backend_tokenizer
    enc = SegmentedEncoder(backend, max_entries=4)
    first = enc.encode("<|im_start|>user\nhello<|im_end|>")
    first.append(-1)  # callers own what they get
    assert enc.encode("<|im_start|>user\nhello<|im_end|>")[-1] != -1
    for i in range(20):
        enc.encode(f"<|im_start|>piece {i}<|im_end|>")
    assert len(enc._cache) <= 4


def _tiny_tokenizer(pre_tokenizer) -> Tokenizer:
    vocab = {c: i for i, c in enumerate(["<unk>", "▁", "a", "b", " ", "Ġ", "h", "i", "Ċ"])}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.Metaspace()
    return tok


def test_refuses_tokenizers_where_pieces_are_not_independent():
    # An added token that swallows the spaces around it.
    stripping = _tiny_tokenizer(pre_tokenizers.ByteLevel(add_prefix_space=False))
    stripping.add_special_tokens([AddedToken("<s>", lstrip=True, rstrip=True)])
    assert SegmentedEncoder.for_backend(stripping) is None
    # A pre-tokenizer that marks only the very start of the text: a piece after a special token is not a start.
    first_only = _tiny_tokenizer(pre_tokenizers.Metaspace(prepend_scheme="first"))
    first_only.add_special_tokens([AddedToken("<s>", normalized=False)])
    alone = [first_only.token_to_id("<s>")] + first_only.encode("ab", add_special_tokens=False).ids
    assert first_only.encode("<s>ab", add_special_tokens=False).ids != alone  # so piece-wise would be wrong
    assert SegmentedEncoder.for_backend(first_only) is None
    # The plain byte-level case is accepted.
    plain = _tiny_tokenizer(pre_tokenizers.ByteLevel(add_prefix_space=False))
    plain.add_special_tokens([AddedToken("<s>", normalized=False)])
    assert SegmentedEncoder.for_backend(plain) is not None
