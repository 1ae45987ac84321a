"""`rollgym engines` and `rollgym sample`: list engine specs, and sample once from any engine spec."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import typer

from rollgym.engines.base import SamplingParams
from rollgym.engines.errors import BadRequestError, EngineError
from rollgym.engines.specs import available_engines, make_engine

ENGINE_ARG_HELP = (
    "engine constructor argument KEY=VALUE, repeatable; VALUE is read as JSON when it parses (2048, true), "
    "else as a string; e.g. for vllm-local: -E dtype=float32 -E enforce_eager=true -E max_model_len=2048"
)


def parse_engine_args(pairs: list[str] | None, option: str = "--engine-arg") -> dict[str, Any]:
    """`["dtype=float32", "enforce_eager=true"]` -> `{"dtype": "float32", "enforce_eager": True}` (any repeatable
    KEY=VALUE `option`: --engine-arg, --env-arg)."""
    kwargs: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key.isidentifier():
            raise typer.BadParameter(f"{option} takes KEY=VALUE (e.g. dtype=float32), got {pair!r}")
        try:
            kwargs[key] = json.loads(value)
        except ValueError:
            kwargs[key] = value
    return kwargs


def list_engines() -> None:
    """List the engine spec schemes (and bare names) `--engine` accepts."""
    from rollgym.engines.default_model import EMBEDDED_SUMMARIES
    from rollgym.engines.specs import _ALIASES

    for scheme in available_engines():
        typer.echo(f"{scheme.scheme + ':':<12} {scheme.example:<48} {scheme.summary}")
    for name, spec in _ALIASES.items():
        typer.echo(f"{name:<18} {'(= ' + spec + ')':<42} {EMBEDDED_SUMMARIES.get(name, 'an alias')}")


def _tokenize(engine: Any, text: str) -> list[int]:
    """Token ids for `--text`, with the engine's own Hugging Face tokenizer (in-process engines only)."""
    from pathlib import Path

    source = getattr(getattr(engine, "_model", None), "name_or_path", None)
    if not source or not Path(str(source)).is_dir():
        raise typer.BadParameter(
            "--text needs an in-process engine with a tokenizer (hf:, smollm2-135m); pass --prompt-ids"
        )
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(source))(text)["input_ids"]


def sample(
    engine: str = typer.Argument(
        ..., help="engine spec, e.g. smollm2-135m, hf:/dir, vllm:http://h:8000/v1#model, openai:gpt-4o-mini"
    ),
    prompt_ids: str | None = typer.Option(None, help="comma-separated prompt token ids"),
    text: str | None = typer.Option(
        None, help="prompt text (tokenized by an in-process engine; a user message for chat engines)"
    ),
    max_tokens: int = typer.Option(32),
    temperature: float = typer.Option(1.0),
    top_p: float = typer.Option(1.0),
    top_k: int = typer.Option(0),
    seed: int | None = typer.Option(None),
    stop_token_ids: str = typer.Option("", help="comma-separated extra stop ids"),
    engine_arg: list[str] | None = typer.Option(None, "--engine-arg", "-E", help=ENGINE_ARG_HELP),
) -> None:
    """Sample one completion and print it as JSON (ids, logprobs, finish reason, timings)."""
    if (prompt_ids is None) == (text is None):
        raise typer.BadParameter("pass exactly one of --prompt-ids or --text")
    try:
        sampling = SamplingParams(
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            top_k=top_k,
            seed=seed,
            stop_token_ids=[int(x) for x in stop_token_ids.split(",") if x.strip()],
        )
        ids = [int(x) for x in prompt_ids.split(",") if x.strip()] if prompt_ids is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    engine_kwargs = parse_engine_args(engine_arg)

    async def run() -> dict:
        eng = make_engine(engine, **engine_kwargs)
        try:
            if not getattr(eng, "token_exact", True):
                if text is None:
                    raise BadRequestError(f"{engine} is a chat engine (not token-exact): pass --text, not token ids")
                return (await eng.chat([{"role": "user", "content": text}], sampling=sampling)).model_dump()
            return (await eng.generate(ids if ids is not None else _tokenize(eng, text or ""), sampling)).model_dump()
        finally:
            await eng.aclose()

    try:
        result = asyncio.run(run())
    except EngineError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(json.dumps(result))


def register(app: typer.Typer) -> None:
    """Add the engine commands to the `rollgym` CLI."""
    app.command("engines")(list_engines)
    app.command("sample")(sample)
