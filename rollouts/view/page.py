"""Assemble the viewer's single HTML file: the page's CSS and JS inlined, the data in inert JSON blocks.

Nothing is fetched: no CDN, no network, so the file opens offline. Each rollout's detail, token strip
and shared prompt sit in their own `<script type="application/json">` block, parsed only on demand.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Iterator

from .payload import Payload

_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _json(value: Any) -> str:
    """JSON that is safe inside a <script> block (no `</script>`, no `<!--`)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).translate(_ESCAPES)


def _asset(name: str) -> str:
    return resources.files("rollgym.rollouts.view").joinpath("assets", name).read_text(encoding="utf-8")


def _block(block_id: str, value: Any) -> str:
    return f'<script type="application/json" id="{block_id}">{_json(value)}</script>\n'


def render_html(payload: Payload) -> Iterator[str]:
    """The page, in chunks (a 10,000-rollout run is written without holding the whole file as one string)."""
    head, tail = _asset("viewer.html").split("<!--DATA-->")
    title = json.dumps(payload.meta.get("title", "rollgym run"))[1:-1].replace("<", "&lt;")
    yield head.replace("{{TITLE}}", title).replace("/*CSS*/", _asset("viewer.css"))
    yield _block("rg-index", payload.index())
    for k, prompt in enumerate(payload.prompts):
        yield _block(f"rg-p-{k}", prompt)
    for i, (detail, strip) in enumerate(zip(payload.details, payload.strips)):
        yield _block(f"rg-d-{i}", detail)
        yield _block(f"rg-t-{i}", strip)
    yield tail.replace("/*JS*/", _asset("viewer.js"))
