"""Shared by the proxy tests: an engine wrapper that logs the exact prompt ids it was asked to complete."""

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
