"""Tools: typed Python callables marked with `@tool`; JSON schema from the signature and docstring
(pydantic), model arguments validated against it, and every bad call answered with a clear message."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from rollgym.envs.core.errors import EnvCheckError
from rollgym.errors import EnvError

_MARK = "__rollgym_tool__"
#: Non-string tool results as JSON (`json.dumps(x, default=str)`, with the encoder built once).
_RESULT_JSON = json.JSONEncoder(default=str)


class ToolCallRecord(BaseModel):
    """What happened to one tool call (kept in `info["tool_calls"]`).

    Two records are equal when the calls did the same thing: `duration_s` is a measurement, not part
    of the outcome, so it is left out of `==` (gymnasium's determinism check compares step infos).
    """

    id: str
    name: str
    arguments: Any  # the parsed dict, or the raw string when it was not valid JSON
    result: str
    failed: bool
    duration_s: float
    error_kind: str | None = None  # unknown_tool | bad_json | bad_arguments | tool_error | timeout | bad_result | fatal

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolCallRecord):
            return NotImplemented
        return (self.id, self.name, self.arguments, self.result, self.failed, self.error_kind) == (
            other.id,
            other.name,
            other.arguments,
            other.result,
            other.failed,
            other.error_kind,
        )

    __hash__ = None  # mutable, like every pydantic model


class ToolFailure(EnvError):
    """A tool's failure told to the model as it is (`kind`: the record's `error_kind`), the episode going on."""

    kind = "tool_error"

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind or self.kind


def tool(
    fn: Callable | None = None, *, name: str | None = None, description: str | None = None, parallel: bool = False
):
    """Mark a function or method as a tool. `parallel=True`: safe to run concurrently with other calls."""

    def mark(f: Callable) -> Callable:
        setattr(f, _MARK, {"name": name or f.__name__, "description": description, "parallel": parallel})
        return f

    return mark(fn) if fn is not None else mark


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary text, and per-argument descriptions from a Google-style `Args:` section."""
    doc = inspect.cleandoc(doc or "")
    parts = re.split(r"\n\s*(?:Args|Arguments|Parameters):\s*\n", doc, maxsplit=1)
    summary = parts[0].strip()
    args: dict[str, str] = {}
    if len(parts) > 1:
        current = None
        for line in parts[1].splitlines():
            m = re.match(r"\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)", line)
            if m and (not line.startswith(" " * 8) or current is None):
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current and line.strip():
                args[current] += " " + line.strip()
            elif re.match(r"\s*(Returns|Raises):", line):
                break
    return summary, args


@functools.lru_cache(maxsize=4096)
def _shared_schema(schema_json: str) -> dict:
    """One parsed schema per distinct tool schema, shared (see `ToolSet.schemas`)."""
    return json.loads(schema_json)


@functools.cache
def _spec(fn: Callable, name: str, description: str | None) -> tuple[str, type[BaseModel], str]:
    """Description, argument model and JSON schema (as JSON text) of a tool function; built once per function."""
    summary, arg_docs = _parse_docstring(fn.__doc__ or "")
    description = description or summary or name
    fields: dict[str, Any] = {}
    hints = inspect.get_annotations(fn, eval_str=True)
    for pname, param in inspect.signature(fn).parameters.items():
        if pname in ("self", "cls") or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if pname not in hints:
            raise EnvCheckError(
                f"tool {name!r}: parameter {pname!r} has no type hint; annotate it ({pname}: str, {pname}: int, ...) "
                f"so the model is shown its type and its arguments are checked"
            )
        annotation = hints[pname]
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, Field(default=default, description=arg_docs.get(pname)))
    model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    params = model.model_json_schema()
    params.pop("title", None)
    for prop in params.get("properties", {}).values():
        prop.pop("title", None)
    params.setdefault("properties", {})
    params.setdefault("required", [])
    return (
        description,
        model,
        json.dumps({"type": "function", "function": {"name": name, "description": description, "parameters": params}}),
    )


class Tool:
    """One tool: its name, description, pydantic argument model, and the callable behind it."""

    def __init__(
        self, fn: Callable, name: str | None = None, description: str | None = None, parallel: bool = False
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.parallel = parallel
        self.is_async = inspect.iscoroutinefunction(fn)
        self.description, self.args_model, self._schema_json = _spec(
            getattr(fn, "__func__", fn), self.name, description
        )

    def schema(self) -> dict:
        """The OpenAI tool schema: {"type": "function", "function": {name, description, parameters}}; a fresh copy."""
        return json.loads(self._schema_json)

    def validate(self, arguments: dict) -> dict:
        """Validated keyword arguments (pydantic types), or `ValidationError`."""
        return dict(self.args_model.model_validate(arguments).__dict__)  # the fields (extra arguments are refused)

    async def invoke(self, kwargs: dict) -> Any:
        """`async def` tools run on the event loop; plain functions in a worker thread, so they may block."""
        if self.is_async:
            return await self.fn(**kwargs)
        return await asyncio.to_thread(self.fn, **kwargs)


def _describe_validation_error(name: str, exc: ValidationError) -> str:
    lines = [f"Error: invalid arguments for tool '{name}':"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        got = (
            f" (got {err['input']!r})"
            if err["type"] not in ("missing",) and not isinstance(err.get("input"), dict)
            else ""
        )
        lines.append(f"- {loc}: {err['msg']}{got}"[:500])
    return "\n".join(lines)


@functools.cache
def _marked_methods(cls: type) -> tuple[tuple[str, dict], ...]:
    """The `@tool` methods of a class and their options; scanned once per class, not per environment."""
    found = []
    for attr in dir(cls):
        meta = getattr(getattr(cls, attr, None), _MARK, None)
        if meta is not None:
            found.append((attr, meta))
    return tuple(found)


class ToolSet:
    """The tools of one environment, dispatching a turn's tool calls and turning every failure into text."""

    def __init__(self, tools: Iterable[Tool], fatal_errors: tuple[type[BaseException], ...] = ()) -> None:
        self.tools = {t.name: t for t in tools}
        self.fatal_errors = fatal_errors
        self.fatal: BaseException | None = None

    @classmethod
    def from_object(
        cls, obj: Any, extra: Iterable[Callable] = (), fatal_errors: tuple[type[BaseException], ...] = ()
    ) -> ToolSet:
        """Collect `obj`'s methods marked with `@tool`, plus `extra` functions (marked or not)."""
        tools = [Tool(getattr(obj, attr), **meta) for attr, meta in _marked_methods(type(obj))]
        for fn in extra:
            tools.append(Tool(fn, **getattr(fn, _MARK, {})))
        return cls(tools, fatal_errors)

    def schemas(self) -> list[dict]:
        """The tools' OpenAI schemas, shared by every environment with the same tools: read them, do not change them
        in place (`Tool.schema()` gives a fresh copy). A copy per reset was the largest part of an idle rollout's
        memory (~8 KiB of the Calculator's 27 at 65,000 rollouts, benchmarks/bench_concurrency.py)."""
        return [_shared_schema(t._schema_json) for t in self.tools.values()]

    async def call(self, call: dict) -> ToolCallRecord:
        """Run one OpenAI-format tool call; never raises (fatal errors are kept in `self.fatal`)."""
        start = time.monotonic()
        fn = call.get("function") or {}
        call_id, name, raw = str(call.get("id") or ""), str(fn.get("name") or ""), fn.get("arguments")

        def record(result: str, failed: bool, kind: str | None, args: Any) -> ToolCallRecord:
            return ToolCallRecord(
                id=call_id,
                name=name,
                arguments=args,
                result=result,
                failed=failed,
                duration_s=time.monotonic() - start,
                error_kind=kind,
            )

        tool_ = self.tools.get(name)
        if tool_ is None:
            from difflib import get_close_matches

            close = get_close_matches(name, list(self.tools), n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            return record(
                f"Error: unknown tool '{name}'.{hint} Available tools: {', '.join(self.tools)}.",
                True,
                "unknown_tool",
                raw,
            )
        if raw is None or raw == "":
            args: Any = {}
        elif isinstance(raw, dict):
            args = raw
        else:
            try:
                args = json.loads(raw)
            except (ValueError, TypeError, RecursionError) as exc:  # bad JSON, a >4,300-digit integer, deep nesting
                why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
                return record(
                    f"Error: the arguments of tool '{name}' are not valid JSON ({why}). "
                    f"Send one JSON object matching the tool's parameters.",
                    True,
                    "bad_json",
                    raw,
                )
        if not isinstance(args, dict):
            return record(
                f"Error: the arguments of tool '{name}' must be a JSON object, got {type(args).__name__}.",
                True,
                "bad_json",
                args,
            )
        try:
            kwargs = tool_.validate(args)
        except ValidationError as exc:
            return record(_describe_validation_error(name, exc), True, "bad_arguments", args)
        try:
            result = await tool_.invoke(kwargs)
        except self.fatal_errors as exc:
            self.fatal = self.fatal or exc
            return record(f"Error: the environment failed while running '{name}': {exc}", True, "fatal", args)
        except ToolFailure as exc:
            return record(f"Error: tool '{name}' failed: {exc}", True, exc.kind, args)
        except Exception as exc:  # noqa: BLE001 - a tool's own failure is reported to the model
            return record(f"Error: tool '{name}' failed: {type(exc).__name__}: {exc}", True, "tool_error", args)
        if type(result) is not str and (result is None or isinstance(result, (bytes, bytearray))):
            what = "None" if result is None else "bytes"
            return record(
                f"Error: tool '{name}' returned {what}; the environment's tool must return text or JSON data",
                True,
                "bad_result",
                args,
            )
        text = result if isinstance(result, str) else _RESULT_JSON.encode(result)
        return record(text, False, None, args)

    def _named_tool(self, call: dict) -> Tool | None:
        """The tool a call names, or None (no name, or one no tool has)."""
        name = (call.get("function") or {}).get("name")
        return None if name is None else self.tools.get(name)

    async def dispatch(self, calls: list[dict]) -> list[ToolCallRecord]:
        """Run a turn's calls: all at once if every tool is parallel-safe, otherwise in order."""
        if len(calls) == 1:
            return [await self.call(calls[0])]
        if all(getattr(self._named_tool(c), "parallel", True) for c in calls):
            return list(await asyncio.gather(*(self.call(c) for c in calls)))
        return [await self.call(c) for c in calls]
