"""Request fields -> rollgym `SamplingParams`, refusing what cannot be honoured token-exactly.

`stop` strings work only when each is one special token of the vocabulary (e.g. "<|im_end|>"): a text
stop would cut sampled ids mid-token. Penalties, logit bias, `n > 1`, top logprobs and structured output
change or multiply what is sampled and are refused with a 400 rather than silently ignored.
"""

from __future__ import annotations

from rollgym.engines.base import SamplingParams
from rollgym.proxy.error_responses import APIError, unsupported
from rollgym.proxy.schemas import ChatCompletionRequest, SamplingFields
from rollgym.tokenization import ChatTokenizer


def stop_ids(stop: str | list[str] | None, tokenizer: ChatTokenizer) -> list[int]:
    """Ids for `stop` strings that are single special tokens; a 400 for any other stop string."""
    if stop is None:
        return []
    words = [stop] if isinstance(stop, str) else stop
    vocab = tokenizer.special_vocab
    out = []
    for word in words:
        if word not in vocab:
            raise unsupported(
                "stop",
                f"{word!r} is not a single special token; text stop sequences would cut sampled "
                "tokens (the template's end-of-turn tokens are always stop tokens)",
            )
        out.append(vocab[word])
    return out


def check_common(req: SamplingFields) -> None:
    """Refuse sampling fields that would change what is sampled without the proxy knowing."""
    if (req.n or 1) != 1:
        raise unsupported("n", "one choice per request (run several sessions for a group)")
    if req.presence_penalty or req.frequency_penalty:
        raise unsupported("presence_penalty", "penalties change the sampling distribution the logprobs describe")
    if req.logit_bias:
        raise unsupported("logit_bias", "it changes the sampling distribution the logprobs describe")
    if req.seed is not None and not 0 <= req.seed < 2**63:
        raise APIError(400, "`seed` must be in [0, 2**63)", param="seed")


#: arguments rollgym passes to the chat template itself: a `chat_template_kwargs` key may not replace them
RESERVED_TEMPLATE_KWARGS = frozenset(
    {
        "messages",
        "tools",
        "add_generation_prompt",
        "tokenize",
        "chat_template",
        "continue_final_message",
        "return_dict",
        "return_tensors",
        "tokenizer_kwargs",
    }
)


def check_chat(req: ChatCompletionRequest) -> None:
    check_common(req)
    for key in sorted(set(req.chat_template_kwargs or {}) & RESERVED_TEMPLATE_KWARGS):
        raise APIError(
            400,
            f"`chat_template_kwargs.{key}` is not allowed: rollgym sets `{key}` itself"
            + (" (send tools in the request's `tools` field)" if key == "tools" else ""),
            param=f"chat_template_kwargs.{key}",
        )
    if req.functions is not None:
        raise unsupported("functions", "use `tools` (the legacy `functions` field is not implemented)")
    if req.top_logprobs:
        raise unsupported("top_logprobs", "only the sampled token's logprob is returned (`logprobs: true`)")
    if req.response_format and req.response_format.get("type") not in (None, "text"):
        raise unsupported("response_format", "the engine cannot constrain decoding to a format")
    if isinstance(req.tool_choice, str) and req.tool_choice != "auto" and not req.tools:
        if req.tool_choice == "required":
            raise APIError(400, "`tool_choice` is 'required' but no `tools` were given", param="tool_choice")


def sampling_for(
    req: SamplingFields, tokenizer: ChatTokenizer, prompt_len: int, max_model_len: int | None, default_max_tokens: int
) -> SamplingParams:
    """The engine's `SamplingParams`: OpenAI's defaults (temperature 1, top_p 1), max tokens clamped to the context."""
    wanted = getattr(req, "max_completion_tokens", None) or req.max_tokens or default_max_tokens
    if max_model_len:
        room = max_model_len - prompt_len
        if room < 1:
            raise APIError(
                400,
                f"This model's maximum context length is {max_model_len} tokens; the prompt has "
                f"{prompt_len} tokens, leaving no room to generate.",
                param="messages",
                code="context_length_exceeded",
            )
        wanted = min(wanted, room)
    stops = list(dict.fromkeys(tokenizer.stop_token_ids + stop_ids(req.stop, tokenizer)))
    return SamplingParams(
        temperature=1.0 if req.temperature is None else req.temperature,
        top_p=1.0 if req.top_p is None else req.top_p,
        top_k=max(req.top_k or 0, 0),
        max_tokens=wanted,
        stop_token_ids=stops,
        seed=req.seed,
    )
