"""Give a ChatML model without a tool-calling template rollgym's ChatML+tools template, saying so."""

from __future__ import annotations

from rollgym.tokenization.chat_tokenizer import ChatTokenizer
from rollgym.tokenization.errors import UnsupportedFeatureError
from rollgym.tokenization.templates import CHATML_TOOLS


def chatml_tools_fallback(tok: ChatTokenizer, log=print) -> ChatTokenizer:
    """Return `tok` with CHATML_TOOLS when its vocabulary is ChatML; refuse clearly otherwise."""
    vocab = tok.hf.get_vocab()
    if tok.tool_parser_name is not None:  # a tool-call format, but no tool schemas rendered (DeepSeek's own templates)
        from rollgym.tokenization.families import FAMILIES

        shipped = [f.template for f in FAMILIES if f.tool_format == tok.tool_parser_name and f.template]
        raise UnsupportedFeatureError(
            f"the model's chat template writes {tok.tool_parser_name} tool calls but renders no tool schemas, so the "
            "model would never see its tools: pass --chat-template with a template that renders them"
            + (f" (rollgym ships {', '.join(shipped)} in rollgym/tokenization/families/templates/)" if shipped else "")
        )
    if "<|im_start|>" not in vocab or "<|im_end|>" not in vocab:
        raise UnsupportedFeatureError(
            "the model's chat template has no tool calling and its vocabulary is not ChatML: "
            "pass --chat-template with a tool-calling template the model was trained on"
        )
    log("note: the model's chat template has no tool calling; using rollgym's ChatML + Hermes tool-call template")
    return ChatTokenizer(tok.hf, chat_template=CHATML_TOOLS, truncation=tok.truncation)
