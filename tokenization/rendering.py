"""`TemplateRenderer`: a chat template compiled once and rendered exactly as transformers'
`apply_chat_template(tokenize=False)` renders it, without that method's per-call overhead.

It uses transformers' own sandboxed Jinja environment (same filters, globals and security checks)
and prepares the template's inputs the same way: keys whose value is None dropped, everything the
template sees rebuilt from plain JSON types, reasoning fields aliased, the tokenizer's special
tokens passed as variables. A test renders every shipped template both ways and compares the text.
"""

from __future__ import annotations

from typing import Any

from rollgym.tokenization.errors import InvalidInputError

try:  # private helpers of transformers: when they move, ChatTokenizer falls back to apply_chat_template
    from transformers.utils.chat_template_utils import (
        _alias_reasoning_fields,
        _compile_jinja_template,
        _plain_template_data,
    )
except ImportError:  # pragma: no cover - depends on the installed transformers
    _compile_jinja_template = None

_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """`_plain_template_data` with a fast path for the exact JSON types rollouts are made of."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {k if type(k) is str else _plain_template_data(k): _plain(v) for k, v in value.items()}
    if kind is list:
        return [_plain(v) for v in value]
    return _plain_template_data(value)


class TemplateRenderer:
    """Renders one chat template with one tokenizer's special-token variables."""

    def __init__(self, template: str, special_tokens: dict[str, Any]):
        if _compile_jinja_template is None:
            raise ImportError("this transformers version has no _compile_jinja_template")
        self.template = template
        self._compiled = _compile_jinja_template(template)
        self._special_tokens = _plain(dict(special_tokens))

    @property
    def environment(self):
        """The Jinja environment the template was compiled in (to parse it, e.g. for its constants)."""
        return self._compiled.environment

    @property
    def special_token_values(self) -> list[str]:
        """The special-token strings the template sees as variables (`bos_token`, ...)."""
        values = []
        for value in self._special_tokens.values():
            values += value if isinstance(value, list) else [value]
        return [v for v in values if isinstance(v, str) and v]

    @classmethod
    def for_tokenizer(cls, hf_tokenizer, template: str) -> TemplateRenderer | None:
        """A renderer for `hf_tokenizer` and `template`, or None when this transformers has none to build on."""
        try:
            return cls(template, dict(getattr(hf_tokenizer, "special_tokens_map", {}) or {}))
        except ImportError:
            return None

    def render(
        self, messages: list[dict], tools: list[dict] | None, add_generation_prompt: bool, **template_kwargs: Any
    ) -> str:
        """The rendered text; raises whatever the template raises (Jinja errors, `raise_exception`)."""
        chat = [_plain({k: v for k, v in m.items() if v is not None}) for m in messages]
        for message in chat:
            if type(message) is not dict:
                raise InvalidInputError(f"chat messages must be dicts, got {message!r}")
        return self.render_plain(chat, tools, add_generation_prompt, template_kwargs)

    def render_plain(
        self, chat: list[dict], tools: list[dict] | None, add_generation_prompt: bool, template_kwargs: dict[str, Any]
    ) -> str:
        """`render` for messages that are already dicts of plain values without None: no copy, no conversion
        (so the bridge recipes' traced strings reach the template as they are)."""
        variables = {**self._special_tokens, **_plain(template_kwargs)} if template_kwargs else self._special_tokens
        return self._compiled.render(
            messages=_alias_reasoning_fields(chat),
            tools=_plain(tools),
            documents=None,
            add_generation_prompt=add_generation_prompt,
            **variables,
        )
