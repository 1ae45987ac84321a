"""Shared by the proxy tests: an engine wrapper that logs the exact prompt ids it was asked to complete, and a
black-box agent on the real `openai` client."""

from __future__ import annotations

from collections.abc import Sequence


class SpyEngine:
    """A real engine, plus a log of the exact prompt ids it was asked to complete."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name, self.model, self.token_exact = inner.name, inner.model, inner.token_exact
        self.max_model_len = inner.max_model_len
        self.prompts: list[list[int]] = []

    async def generate(self, prompt_ids: Sequence[int], sampling=None):
        self.prompts.append(list(prompt_ids))
        return await self.inner.generate(prompt_ids, sampling)

    async def aclose(self) -> None:
        await self.inner.aclose()


def two_call_agent(row, base_url, api_key):
    """A black-box agent: the real `openai` client, two calls on its own session of a recording proxy."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=api_key or "x", max_retries=0)
    msgs = [{"role": "user", "content": row["question"]}]
    for _ in range(2):
        out = client.chat.completions.create(model="m", messages=msgs)
        msgs += [out.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "again"}]
    return out.choices[0].message.content
