"""`RenderRecipes`: a chat-template render compiled once per message shape, then filled in with new values.

Rendering the chat template for every environment reply (a bridge) or every episode's prompt costs more
than the rest of a turn. For a shape (roles, field names, tools, template options) the template is
rendered once with traced placeholder strings in the messages' string fields. A placeholder logs every
use the template makes of it other than inserting it verbatim (method calls, `length`, `is iterable`,
comparisons, formatting); if there is none, the rendered text is literal text and field slots: a recipe.

Tracing cannot follow a value once Jinja turns it into a new plain string (`~`, `join`, `format`, a
macro's output), so each recipe is also compared with full renders of probe values: generic ones (every
printable ASCII character, edge whitespace, numbers, JSON, non-ASCII, a long value) and the template's
own vocabulary, because a test on a value compares it with something the template names: every string
constant in the template, alone and inside other text, the special-token values, and strings as long as
(and one longer than) every number in it. A shape that fails either check is never compiled: it is
rendered in full every time. Templates that read the clock (`strftime_now`) or draw random numbers get
no recipes at all.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable
from typing import Literal

#: Private-use delimiters plus characters every escaping filter rewrites (so an escaped placeholder is not found).
_OPEN, _CLOSE, _BODY = "\ue000", "\ue001", "\"\\<&'\n\t "
_PLACEHOLDER = re.compile(re.escape(_OPEN) + r"(\d+)" + re.escape(_BODY) + re.escape(_CLOSE))

#: Generic field values each recipe is checked against (full render == recipe fill for every one): every
#: printable ASCII character (per-character rewrites), edge whitespace (trim), numbers and JSON (conversions),
#: markup, special-token text, non-ASCII and a long value (length-dependent branches). `template_probes` adds
#: the template's own vocabulary.
PROBES = [
    "",
    string.printable,
    " lead and trail \n",
    "x",
    "0",
    "42",
    "-1.5",
    "true",
    "None",
    "line1\nline2\n",
    "\n\n",
    "<tool_response>\nr\n</tool_response>",
    "<|im_end|>",
    "{{ x }} {% y %}",
    "naïve 日本語 🙂\u00a0\u2028",
    "[1, 2]",
    '{"a": 1}',
    "x" * 5000,
]

Key = tuple


def _placeholder(index: int) -> str:
    return f"{_OPEN}{index}{_BODY}{_CLOSE}"


def _touch(value: _Traced, what: str) -> None:
    object.__getattribute__(value, "__dict__")["log"].append(what)


class _Traced(str):
    """A string the template should only insert verbatim; every other use is logged."""

    def __new__(cls, text: str, log: list[str]) -> _Traced:
        obj = super().__new__(cls, text)
        object.__getattribute__(obj, "__dict__")["log"] = log
        return obj

    def __getattribute__(self, name: str):
        if name != "__class__":  # isinstance() against ABCs reads it; the answer is the same for every str
            _touch(self, f".{name}")
        return str.__getattribute__(self, name)

    def __str__(self):  # `str()`, `|string` and filters that call `str(s)` first keep the trace
        return self

    # Concatenation is insertion: the result stays traced.
    def __add__(self, other):
        return _Traced(str.__add__(self, other), object.__getattribute__(self, "__dict__")["log"])

    def __radd__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return _Traced(str.__add__(other, self), object.__getattribute__(self, "__dict__")["log"])

    def __bool__(self):  # str has none (its truth is its length): defined so that `{% if value %}` is seen
        _touch(self, "__bool__")
        return str.__len__(self) > 0


def _logged(name: str):
    base = getattr(str, name)

    def method(self, *args):
        _touch(self, name)
        return base(self, *args)

    method.__name__ = name
    return method


for _name in (
    "__len__",
    "__iter__",
    "__contains__",
    "__getitem__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__mul__",
    "__rmul__",
    "__mod__",
    "__rmod__",
    "__format__",
    "__reversed__",
    "__repr__",
):
    if hasattr(str, _name):
        setattr(_Traced, _name, _logged(_name))


class Recipe:
    """A render's body as literal parts and slots (indexes into the shape's field values), and its fixed head."""

    __slots__ = ("head", "parts")

    def __init__(self, head: str, parts: list[str | int]):
        self.head, self.parts = head, parts

    def fill(self, values: list[str]) -> str:
        return "".join([p if isinstance(p, str) else values[p] for p in self.parts])


#: `render(messages, template_kwargs, tools) -> (head, body)`: a full render with field values passed to the
#: template untouched; `head` is text that must not depend on the values (a bridge's dummy context), `body`
#: the text the recipe stands for.
Render = Callable[[list[dict], dict, "list[dict] | None"], tuple[str, str]]


def template_probes(environment, source: str, names: Iterable[str] = ()) -> list[str]:
    """Probe values from a template's own vocabulary: its string constants (alone and inside other text),
    the given `names` (special-token values), and strings of the lengths its numbers name."""
    from jinja2 import nodes

    words, numbers = set(names), set()
    for const in environment.parse(source).find_all(nodes.Const):
        if isinstance(const.value, str) and const.value:
            words.add(const.value)
            numbers.update(int(d) for d in re.findall(r"\d{1,6}", const.value))
        elif isinstance(const.value, int) and not isinstance(const.value, bool):
            numbers.add(const.value)
    probes = []
    for word in sorted(w for w in words if len(w) <= 200):
        probes += [word, f"a{word}b"]
    for n in sorted(n for n in numbers if 0 < n <= 20000):
        probes += ["y" * n, "y" * (n + 1)]
    return probes


def deterministic(template: str) -> bool:
    """Whether a template's output can only depend on its inputs (no clock, no random numbers)."""
    return "strftime_now" not in template and "random" not in template


class RenderRecipes:
    """Recipes by shape; `render()` answers from a recipe, or None when the shape must be rendered in full."""

    def __init__(self, render: Render, probes: list[str] = PROBES, max_shapes: int = 1024):
        self._render = render
        self._probes = list(dict.fromkeys(probes))
        self._max = max_shapes
        self._recipes: dict[Key, Recipe | None] = {}
        self.refusals: dict[Key, str] = {}  # why a shape is rendered in full (for `explain()` and tests)

    @staticmethod
    def shape(messages: list[dict], options_key: str) -> tuple[Key, list[str]] | None:
        """The shape key and the field values in slot order; None when a value is not plain text."""
        shape, values = [], []
        for m in messages:
            fields = []
            for k, v in m.items():
                if v is None:
                    continue  # templates never see None fields (the renderer drops them)
                if type(v) is not str:
                    return None  # content parts, numbers, ...: rendered in full
                if k == "role":
                    fields.append((k, v))
                else:
                    fields.append(k)
                    values.append(v)
            shape.append(tuple(fields))
        return (tuple(shape), options_key), values

    def render(
        self, messages: list[dict], template_kwargs: dict, options_key: str, tools: list[dict] | None = None
    ) -> tuple[str, str] | None:
        """(head, body) for `messages` from the shape's recipe; None when it is rendered in full.

        `options_key` must identify everything else the render depends on (template options, tools).
        """
        found = self.shape(messages, options_key)
        if found is None:
            return None
        key, values = found
        recipe: Recipe | None | Literal[False] = self._recipes.get(key, False)  # False: not compiled yet
        if recipe is False:
            recipe = self._compile(key, messages, template_kwargs, tools)
            if len(self._recipes) >= self._max:
                self._recipes.pop(next(iter(self._recipes)), None)
            self._recipes[key] = recipe
        if recipe is None:
            return None
        return recipe.head, recipe.fill(values)

    def _with_values(self, messages: list[dict], value_of: Callable[[int], str]) -> list[dict]:
        out, index = [], 0
        for m in messages:
            msg = {}
            for k, v in m.items():
                if v is None:
                    continue
                if k == "role":
                    msg[k] = v
                else:
                    msg[k] = value_of(index)
                    index += 1
            out.append(msg)
        return out

    def _compile(
        self, key: Key, messages: list[dict], template_kwargs: dict, tools: list[dict] | None
    ) -> Recipe | None:
        log: list[str] = []
        traced = self._with_values(messages, lambda i: _Traced(_placeholder(i), log))
        try:
            head, body = self._render(traced, template_kwargs, tools)
        except Exception as exc:  # noqa: BLE001 - the full render will raise the same error, with its own message
            return self._refuse(key, f"the template failed on placeholders: {exc}")
        if log:
            return self._refuse(key, f"the template looks inside message fields ({', '.join(dict.fromkeys(log))})")
        if _OPEN in head or _CLOSE in head:
            return self._refuse(key, "a field value is rendered before the new messages")
        pieces = _PLACEHOLDER.split(body)
        if any(_OPEN in p or _CLOSE in p for p in pieces[0::2]):
            return self._refuse(key, "the template transforms field values (a placeholder was escaped or cut)")
        parts = [p if i % 2 == 0 else int(p) for i, p in enumerate(pieces) if i % 2 or p]
        recipe = Recipe(head, parts)
        n = sum(1 for m in traced for k in m if k != "role")  # the shape's slots
        for probe in self._probes:
            plain = self._with_values(messages, lambda i, probe=probe: probe)
            try:
                expected = self._render(plain, template_kwargs, tools)
            except Exception as exc:  # noqa: BLE001 - a template that refuses a probe gets no recipe: the full render is used
                return self._refuse(key, f"the template refused a probe value {probe!r}: {exc}")
            if expected != (head, recipe.fill([probe] * n)):
                return self._refuse(key, f"the template renders field value {probe!r} differently from verbatim")
        return recipe

    def _refuse(self, key: Key, why: str) -> None:
        self.refusals[key] = why
        return None

    def explain(self) -> dict[str, str]:
        """Each compiled or refused shape (roles and fields) and its status."""
        out = {}
        for key, recipe in self._recipes.items():
            out[repr(key)] = "compiled" if recipe is not None else f"rendered in full: {self.refusals.get(key, '')}"
        return out
