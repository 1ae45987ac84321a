"""A chat model an environment calls itself (τ²-bench's simulated user), built from any engine spec: the policy's
engine and certified tokenizer for token-exact specs (the sampled ids come back with the message), `chat` for hosted
ones (`openai:http://host/v1#model`)."""

from __future__ import annotations

import functools
from typing import Any

from rollgym.engines.base import SamplingParams
from rollgym.envs.core.chat_models import ChatReply
from rollgym.rollouts.policy import Policy

#: a simulated user's turn is a sentence or two; seeded, so a user model's replies to the same conversation repeat
DEFAULT_SAMPLING = SamplingParams(temperature=1.0, max_tokens=128, seed=0)


class PolicyChatModel:
    """`reply(messages, tools)` through one `Policy`: rendered by its tokenizer, sampled by its engine, parsed back."""

    def __init__(self, spec: str, sampling: SamplingParams = DEFAULT_SAMPLING) -> None:
        self.name = spec
        self.policy = Policy(spec, need_tools=False)
        self.sampling = sampling

    async def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> ChatReply:
        tokenizer = self.policy.tokenizer
        if tokenizer is None:  # a hosted chat model: messages in, a message out
            chat = await self.policy.engine.chat(messages, tools or None, self.sampling)
            return ChatReply(message=chat.message, model=chat.model)
        prompt = tokenizer.prompt_ids(messages, tools or None)
        sampling = self.sampling.model_copy(update={"stop_token_ids": list(tokenizer.stop_token_ids)})
        generation = await self.policy.engine.generate(prompt, sampling)
        parsed = tokenizer.parse_completion(generation.completion_ids, tools or None)
        return ChatReply(message=parsed.message, token_ids=generation.completion_ids, model=generation.model)

    async def aclose(self) -> None:
        await self.policy.aclose()


@functools.cache
def chat_model_of_spec(spec: str) -> PolicyChatModel:
    """The chat model of an engine spec, one per spec and process (a model is loaded once)."""
    return PolicyChatModel(spec)
