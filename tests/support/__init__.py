"""Shared test data: the shipped chat templates and how to pair them with a vocabulary."""

from __future__ import annotations

import copy
from pathlib import Path

from rollgym.tokenization.families import family

FIXTURES = Path(__file__).parents[1] / "fixtures"
TEMPLATE_DIR = Path(__file__).parents[2] / "tokenization" / "families" / "templates"
TEMPLATES = ["qwen2_5", "qwen3", "qwen3_5_think", "llama3_1", "glm4moe", "gemma3"]
VOCABS = ["smollm2", "qwen"]

#: Special tokens each template's own model family has; a vocabulary paired with the template gets
#: the ones it lacks, as a model fine-tuned on that template would.
TEMPLATE_SPECIALS = {
    "qwen2_5": ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"],
    "qwen3": [
        "<|im_start|>",
        "<|im_end|>",
        "<tool_call>",
        "</tool_call>",
        "<tool_response>",
        "</tool_response>",
        "<think>",
        "</think>",
    ],
    "qwen3_5_think": [
        "<|im_start|>",
        "<|im_end|>",
        "<tool_call>",
        "</tool_call>",
        "<tool_response>",
        "</tool_response>",
        "<think>",
        "</think>",
    ],
    "llama3_1": [
        "<|begin_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|python_tag|>",
    ],
    "glm4moe": family("glm-4.5").special_tokens,
    "gemma3": ["<bos>", "<start_of_turn>", "<end_of_turn>"],
}


def template_text(name: str) -> str:
    return (TEMPLATE_DIR / f"{name}.jinja").read_text()


def paired_tokenizer(hf, template: str, add_specials: bool = True):
    """A copy of `hf` with `template` as its chat template and the template family's special tokens."""
    from tokenizers import AddedToken

    tok = copy.deepcopy(hf)
    if add_specials:
        vocab = tok.get_vocab()
        missing = [t for t in TEMPLATE_SPECIALS[template] if t not in vocab]
        if missing:
            tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in missing], special_tokens=True)
        if template == "gemma3":
            tok.bos_token = "<bos>"
        if template == "llama3_1":
            tok.bos_token = "<|begin_of_text|>"
    tok.chat_template = template_text(template)
    return tok


def written_turn(tok, message: dict, tools=None) -> list[int]:
    """The ids a model of `tok`'s family writes for assistant `message`, through its stop token, as the family's
    reference writes that turn (a Jinja template's rendering, or the library's)."""
    results = [
        {"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"], "content": "ok"}
        for c in message.get("tool_calls") or []
    ]
    conv = [{"role": "user", "content": "x"}, message, *(results or [{"role": "user", "content": "y"}])]
    return tok.ids_of(tok.canonical_completion(conv, 1, tools, {}))


def call_message(name: str, call_id: str | None = None, **args) -> dict:
    """An assistant message making one tool call."""
    from rollgym.tokenization.messages import make_tool_call

    return {"role": "assistant", "content": "", "tool_calls": [make_tool_call(name, args, call_id)]}
