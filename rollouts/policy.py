"""`Policy`: the model a rollout samples from, built from one spec: an engine, its certified
`ChatTokenizer`, the stop ids and the pad id. Spec parsing, the tool-template fallback and
certification happen here and nowhere else."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from rollgym.engines.default_model import embedded_tool_parser
from rollgym.engines.specs import EngineSpec, parse_spec
from rollgym.errors import UsageError
from rollgym.rollouts.history import check_history
from rollgym.tokenization import ChatTokenizer


def certified_tokenizer(
    tokenizer: Any,
    *,
    chat_template: str | None = None,
    need_tools: bool = True,
    log: Callable[[str], None] | None = None,
) -> ChatTokenizer:
    """A certified `ChatTokenizer` from a directory/spec, a Hugging Face tokenizer or a `ChatTokenizer`.

    When the model's own template cannot call tools (and no `chat_template` was given), a ChatML
    vocabulary gets rollgym's ChatML + Hermes tool template, and says so through `log`.
    """
    if isinstance(tokenizer, ChatTokenizer):
        tok = (
            tokenizer
            if chat_template is None
            else ChatTokenizer(tokenizer.hf, chat_template=chat_template, truncation=tokenizer.truncation)
        )
    elif isinstance(tokenizer, str):
        from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer

        tok = load_chat_tokenizer(tokenizer, chat_template)
    else:  # a transformers tokenizer (e.g. a trainer's processing_class); GPT-OSS's is rendered by openai-harmony
        from rollgym.tokenization.formats import library_tokenizer

        found = library_tokenizer(None, tokenizer) if chat_template is None else None
        # an embedded model loaded from its directory (a trainer's processing_class) keeps its own tool parser
        parser = embedded_tool_parser(getattr(tokenizer, "name_or_path", None)) if chat_template is None else None
        tok = found if found is not None else ChatTokenizer(tokenizer, chat_template=chat_template, tool_parser=parser)
    if need_tools and not tok.supports_tools and chat_template is None:
        from rollgym.tokenization.tools_fallback import chatml_tools_fallback

        tok = chatml_tools_fallback(tok, log=log or (lambda _m: None))
    tok.certify()
    return tok


class Policy:
    """An engine and its certified tokenizer, built from one spec; an async context manager.

        Policy("smollm2-135m")                               # the embedded default model, in-process
        Policy("vllm:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B") # a vLLM server (tokenizer: the #model)
        Policy(engine=my_engine, tokenizer="/path/to/model")  # your own engine object
        Policy(engine_factory=build, tokenizer=...)          # a function that builds the engine on each use
        Policy("...", history="template")                     # each turn's prompt as the template renders it
        Policy("...", truncation="close")                     # a turn cut by its token budget is closed, not the end
        rg.policy_from_trainer(trainer)                       # TRL: the trainer's generator, current weights

    The tokenizer is built (and certified) at once, so a wrong spec fails here; the engine is built on
    first use. `aclose()` (or leaving `async with`) closes the engine if this policy built it; a later
    use builds it again. A policy made from a spec pickles as its spec (worker processes build their own
    engine); one holding an engine object pickles that object.
    """

    def __init__(
        self,
        spec: str | None = None,
        *,
        engine: Any = None,
        engine_factory: Callable[[], Any] | None = None,
        tokenizer: Any = None,
        chat_template: str | None = None,
        need_tools: bool = True,
        log: Callable[[str], None] | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        history: str = "keep",
        truncation: str | None = None,
    ) -> None:
        self.history = check_history(history)  # how each turn's prompt is built (rollgym.rollouts.history)
        if sum(x is not None for x in (spec, engine, engine_factory)) != 1:
            raise UsageError(
                "give a Policy either a spec string (e.g. 'smollm2-135m'), engine=... or engine_factory=..., "
                "exactly one of them"
            )
        self.spec = spec
        self._parsed: EngineSpec | None = parse_spec(spec) if spec is not None else None
        self._engine_kwargs = dict(engine_kwargs or {})
        self._given_engine = engine
        self._engine: Any = engine
        self._factory = engine_factory
        self._wrapper: Callable[[Any], Any] | None = None  # see `wrapped`
        self._wrapped: Any = None
        self.token_exact = bool(
            self._parsed.scheme.token_exact if self._parsed else getattr(engine, "token_exact", True)
        )
        self.tokenizer: ChatTokenizer | None = None
        if self.token_exact:
            source = tokenizer if tokenizer is not None else (self._parsed.tokenizer_source if self._parsed else None)
            if source is None:
                where = f"{spec!r} names no tokenizer" if spec else "this engine comes without a tokenizer"
                raise UsageError(
                    f"{where}: pass tokenizer= (a ChatTokenizer, a Hugging Face tokenizer, or the model's "
                    "directory), or write a vllm: spec with #MODEL"
                )
            self.tokenizer = certified_tokenizer(source, chat_template=chat_template, need_tools=need_tools, log=log)
        if truncation is not None:
            self.tokenizer = with_truncation(self.tokenizer, truncation)

    # --- the engine -------------------------------------------------------------------------------
    @property
    def engine(self) -> Any:
        """The engine, built on first use from the spec (or the factory)."""
        if self._engine is None:
            if self._parsed is not None:
                self._engine = self._parsed.build(**self._engine_kwargs)
            elif self._factory is not None:
                self._engine = self._factory()
        if self._wrapper is None:
            return self._engine
        if self._wrapped is None:
            self._wrapped = self._wrapper(self._engine)
        return self._wrapped

    def wrapped(self, wrapper: Callable[[Any], Any]) -> Policy:
        """A copy whose engine is `wrapper(engine)`, applied where the engine is built: a Ray actor wraps its own
        (the asynchronous worker's version stamping, `rollgym.integrations.ray.versions`)."""
        copy = object.__new__(Policy)
        copy.__dict__.update(self.__dict__)
        copy._engine, copy._wrapper, copy._wrapped = self._given_engine, wrapper, None  # builds its own engine
        return copy

    @property
    def name(self) -> str:
        """The spec, or the engine's name (without building an engine just to name it)."""
        engine = self._engine or self._factory
        return self.spec or str(getattr(engine, "name", None) or getattr(engine, "__name__", type(engine).__name__))

    @property
    def stop_token_ids(self) -> list[int]:
        """The ids that end a model turn (from the template, plus EOS); empty for chat engines."""
        return list(self.tokenizer.stop_token_ids) if self.tokenizer is not None else []

    @property
    def pad_token_id(self) -> int:
        """The tokenizer's pad id, else its end-of-turn id (what TRL pads sequences with)."""
        if self.tokenizer is None:
            raise UsageError(f"{self.name} is a chat engine: it has no token ids to pad")
        pad = self.tokenizer.pad_token_id
        return pad if pad is not None else self.tokenizer.end_of_turn_id

    async def aclose(self) -> None:
        """Close the engine if this policy built it (a later use builds a new one)."""
        engine, owned = self._engine, self._engine is not self._given_engine
        self._wrapped = None
        if engine is not None and owned:
            self._engine = None
            await engine.aclose()

    async def __aenter__(self) -> Policy:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if state["_engine"] is not state["_given_engine"]:
            state["_engine"] = None  # built here: the other process builds its own from the spec
        if state["_factory"] is not None:
            raise UsageError(
                "a Policy that builds its engine with a function (e.g. from a trainer) cannot leave this "
                "process: give worker processes a spec string"
            )
        state["_wrapped"] = None  # the wrapper wraps the other process's engine there
        state["_parsed"] = None  # the registry's functions stay here; the spec is parsed again on arrival
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({"_wrapper": None, "_wrapped": None, **state})
        if self.spec is not None:
            self._parsed = parse_spec(self.spec)

    def __repr__(self) -> str:
        return f"Policy({self.spec!r})" if self.spec else f"Policy(engine={self.name})"


TRUNCATIONS = ("end", "close")


def with_truncation(tokenizer: Any, truncation: str) -> Any:
    """A copy of `tokenizer` whose turns cut by the token budget are handled by `truncation`: `end` (the rollout stops,
    `truncated_completion`) or `close` (the turn is closed with the template's end token, masked, and the episode goes
    on: a small budget still gives multi-turn rollouts)."""
    if truncation not in TRUNCATIONS:
        raise UsageError(
            f"truncation must be 'end' (a cut turn ends the rollout) or 'close' (it is closed and the "
            f"episode goes on), got {truncation!r}"
        )
    if tokenizer is None:
        raise UsageError("truncation applies to a token-exact policy's tokenizer; this policy has none (a chat engine)")
    copied = copy.copy(tokenizer)
    copied.truncation = truncation
    return copied


def as_policy(policy: Policy | str, **kwargs: Any) -> tuple[Policy, bool]:
    """`policy`, or a new one from a spec string; the flag says whether the caller made it (and must close it)."""
    if isinstance(policy, Policy):
        return policy, False
    if isinstance(policy, str):
        return Policy(policy, **kwargs), True
    raise UsageError(
        f"expected a rollgym.Policy or an engine spec string, got {type(policy).__name__}; "
        "wrap your engine as Policy(engine=..., tokenizer=...)"
    )


def model_dir(spec: str) -> str:
    """The local Hugging Face directory of a spec's model (e.g. for a trainer: `GRPOTrainer(model=model_dir(...))`)."""
    from rollgym.engines.default_model import resolve_model_dir

    source = parse_spec(spec).tokenizer_source
    if source is None:
        raise UsageError(f"{spec!r} names no local model (a vllm: spec needs #MODEL; openai: models are hosted)")
    return str(resolve_model_dir(source))
