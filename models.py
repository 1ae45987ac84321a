"""`BoundaryModel`: the pydantic base of the settings users build (`Limits`, `SamplingParams`, `SandboxConfig`,
`RayConfig`, `ProxySettings`). A value that fails validation is a `UsageError` naming the model, the field and
the value, so `except rollgym.RollgymError` catches it like every other error rollgym raises on purpose."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from rollgym.errors import UsageError


def _value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def usage_error(model: str, exc: ValidationError) -> UsageError:
    """One line per problem: `Limits(max_turns=0): Input should be greater than or equal to 1`."""
    problems = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        shown = f"{field}={_value(err['input'])}" if err["type"] != "missing" else f"{field} missing"
        problems.append(f"{model}({shown}): {err['msg']}")
    error = UsageError("; ".join(problems))
    error.errors = exc.errors()  # type: ignore[attr-defined]  # pydantic's own records, for callers that want them
    return error


class BoundaryModel(BaseModel):
    """A pydantic model users construct: a bad value raises `UsageError` (a `ValueError`, as pydantic's is)."""

    if not TYPE_CHECKING:  # type checkers keep pydantic's own signature, with every field by name

        def __init__(self, /, **data: Any) -> None:
            try:
                super().__init__(**data)
            except ValidationError as exc:
                raise usage_error(type(self).__name__, exc) from None
