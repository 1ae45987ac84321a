"""Runs made by black-box agents through rollgym's recording proxy, for the trainer-export tests: the real `openai`
and `anthropic` clients, each in a multi-turn conversation, over the real SmolLM2-135M (plain turns with a follow-up)
and over a scripted model that calls the `add` tool twice, then answers (tool turns and tool results); n=2 per task,
so each task is a GRPO group, the scripted groups with rewards 1 and 0."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai

import rollgym as rg
from rollgym.engines.base import SamplingParams
from rollgym.engines.scripted import ScriptedEngine
from rollgym.proxy import ProxySettings

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
SYSTEM = "You are a calculator. Call the add tool, then answer."
TOOL_QUESTION = "Scripted: what is 2 + 3 + 4?"
ROWS = [
    {"task_id": "openai-model", "client": "openai", "question": "Say hello."},
    {"task_id": "anthropic-model", "client": "anthropic", "question": "Say hello."},
    {"task_id": "openai-tools", "client": "openai", "question": TOOL_QUESTION},
    {"task_id": "anthropic-tools", "client": "anthropic", "question": TOOL_QUESTION},
]
MAX_CALLS, MODEL_MAX_TOKENS, SCRIPTED_MAX_TOKENS = 3, 10, 64


def max_tokens(row: dict) -> int:
    return SCRIPTED_MAX_TOKENS if row["question"] == TOOL_QUESTION else MODEL_MAX_TOKENS


def openai_agent(row: dict, base_url: str, api_key: str | None) -> str:
    """The real `openai` client, Chat Completions with tools: tool results sent back, a follow-up after a text reply."""
    client = openai.OpenAI(base_url=base_url, api_key=api_key or "x", max_retries=0)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": row["question"]}]
    text = ""
    for turn in range(MAX_CALLS if row["question"] == TOOL_QUESTION else 2):
        reply = client.chat.completions.create(
            model="rollgym", messages=messages, tools=[ADD], seed=turn, max_tokens=max_tokens(row)
        ).choices[0]
        messages.append(reply.message.model_dump(exclude_none=True))
        if reply.message.tool_calls:
            messages += [{"role": "tool", "tool_call_id": c.id, "content": "5"} for c in reply.message.tool_calls]
        else:
            text = reply.message.content or ""
            messages.append({"role": "user", "content": "Thanks. Once more?"})
            if row["question"] == TOOL_QUESTION:
                break
    return text


def anthropic_agent(row: dict, base_url: str, api_key: str | None) -> str:
    """The real `anthropic` client, Messages with tools: `tool_result` blocks sent back, a follow-up after text."""
    client = anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key=api_key or "x", max_retries=0)
    tool = {"name": "add", "description": "Add two integers.", "input_schema": ADD["function"]["parameters"]}
    messages: list[dict] = [{"role": "user", "content": row["question"]}]
    text = ""
    for _ in range(MAX_CALLS if row["question"] == TOOL_QUESTION else 2):
        reply = client.messages.create(
            model="rollgym", system=SYSTEM, messages=messages, tools=[tool], max_tokens=max_tokens(row)
        )
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        uses = [b for b in reply.content if b.type == "tool_use"]
        if uses:
            results = [{"type": "tool_result", "tool_use_id": b.id, "content": "5"} for b in uses]
            messages.append({"role": "user", "content": results})
        else:
            text = "".join(b.text for b in reply.content if b.type == "text")
            messages.append({"role": "user", "content": "Thanks. Once more?"})
            if row["question"] == TOOL_QUESTION:
                break
    return text


def agent(row: dict, base_url: str, api_key: str | None) -> str:
    return (openai_agent if row["client"] == "openai" else anthropic_agent)(row, base_url, api_key)


def reward(row: dict, output: str, rollout) -> float:
    """The scripted groups get 1 and 0 (so their GRPO advantages differ); the model's replies 0.5."""
    return (1.0 - rollout.sample_index) if row["question"] == TOOL_QUESTION else 0.5


class RoutedEngine:
    """The real model for the plain conversations, a scripted one (two `add` calls, then a text answer) for those that
    ask `TOOL_QUESTION`: the turn is read from the prompt (the calls it already holds after the question)."""

    name, token_exact = "routed", True

    def __init__(self, model_engine, tokenizer) -> None:
        self.model_engine, self.tokenizer = model_engine, tokenizer
        self.model, self.max_model_len = model_engine.model, model_engine.max_model_len
        self.scripted = ScriptedEngine(self.script, logprob=-0.25)

    def script(self, prompt_ids, sampling) -> list[int]:
        after = self.tokenizer.decode(list(prompt_ids)).split(TOOL_QUESTION, 1)[1]
        calls = after.count("<tool_call>")
        if calls < 2:
            body = json.dumps({"name": "add", "arguments": {"a": 2 + 3 * calls, "b": 3 + calls}})
            return self.tokenizer.encode(f"<tool_call>\n{body}\n</tool_call>") + [self.tokenizer.end_of_turn_id]
        return self.tokenizer.encode("It is 9.") + [self.tokenizer.end_of_turn_id]

    async def generate(self, prompt_ids, sampling: SamplingParams | None = None):
        scripted = TOOL_QUESTION in self.tokenizer.decode(list(prompt_ids))
        return await (self.scripted if scripted else self.model_engine).generate(prompt_ids, sampling)

    async def aclose(self) -> None:
        await self.model_engine.aclose()


def black_box_run(out: Path, tokenizer) -> Path:
    """`rg.run_agents` over ROWS, n=2, to `out` (rollouts.jsonl); returns `out`."""
    from rollgym.engines.transformers_engine import TransformersEngine

    policy = rg.Policy(engine=RoutedEngine(TransformersEngine("smollm2-135m"), tokenizer), tokenizer=tokenizer)
    rg.run_agents(
        agent,
        ROWS,
        policy,
        out=out,
        n=2,
        reward=reward,
        concurrency=2,
        settings=ProxySettings(default_max_tokens=SCRIPTED_MAX_TOKENS),  # Anthropic requests are capped by it,
    )
    return out
