"""Server-sent events for `stream: true`: a finished completion replayed as OpenAI chunks.

The engine is not streaming, so the proxy samples fully, then emits what OpenAI streams: a role delta,
reasoning/content deltas, tool-call deltas (first chunk of each call: index, id, type, function name and
empty arguments; then its arguments), a finish chunk with `finish_reason`, a usage chunk with empty
`choices` when `stream_options.include_usage` is set, and `data: [DONE]` (OpenAI API reference,
"The chat completion chunk object"; parsed by openai-python `lib/streaming/chat/_completions.py`).
"""

from __future__ import annotations

from collections.abc import Iterator

from rollgym.proxy.schemas import ChatCompletionChunk, ChatCompletionResponse, ChunkChoice, CompletionResponse

#: Content is split into pieces of at most this many characters, so clients see several deltas.
PIECE = 64


def _sse(model) -> str:
    return f"data: {model.model_dump_json(exclude_none=False)}\n\n"


def _pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)]


def chat_chunks(resp: ChatCompletionResponse, include_usage: bool) -> Iterator[str]:
    """The SSE lines of `resp` as a chat-completion stream."""
    choice = resp.choices[0]
    msg = choice.message

    def chunk(delta: dict, finish: str | None = None, logprobs=None) -> str:
        return _sse(
            ChatCompletionChunk(
                id=resp.id,
                created=resp.created,
                model=resp.model,
                choices=[ChunkChoice(delta=delta, finish_reason=finish, logprobs=logprobs)],
            )
        )

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(msg.get("reasoning_content") or ""):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(msg.get("content") or ""):
        yield chunk({"content": piece})
    for i, call in enumerate(msg.get("tool_calls") or []):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]})
    yield chunk({}, choice.finish_reason, choice.logprobs)
    if include_usage:
        yield _sse(
            ChatCompletionChunk(id=resp.id, created=resp.created, model=resp.model, choices=[], usage=resp.usage)
        )
    yield "data: [DONE]\n\n"


def completion_chunks(resp: CompletionResponse, include_usage: bool) -> Iterator[str]:
    """The SSE lines of a legacy completion: text pieces, then the finish reason."""
    choice = resp.choices[0]
    base = resp.model_copy(update={"usage": None})
    for piece in _pieces(choice.text):
        yield _sse(
            base.model_copy(
                update={"choices": [choice.model_copy(update={"text": piece, "finish_reason": None, "logprobs": None})]}
            )
        )
    yield _sse(base.model_copy(update={"choices": [choice.model_copy(update={"text": ""})]}))
    if include_usage:
        yield _sse(base.model_copy(update={"choices": [], "usage": resp.usage}))
    yield "data: [DONE]\n\n"
