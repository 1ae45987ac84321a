"""Assemble the viewer: the page's CSS and JS inlined, the data in inert JSON blocks, or in chunk files.

Nothing is fetched from the network: the file opens offline. A run up to `SPLIT_ABOVE` rollouts is one
self-contained file; each rollout's detail, token strip and shared prompt sit in their own
`<script type="application/json">` block, parsed only on demand. A bigger run keeps only its index in
the page and writes the rest to `<page>_files/` in chunks of `CHUNK` rollouts, which the page loads
with script tags when a rollout is opened (this works from `file://` too), so it loads in the time of
its index, whatever the run's size.
"""

from __future__ import annotations

import html
import json
import shutil
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from rollgym.errors import UsageError
from rollgym.view.payload import Payload

SPLIT_ABOVE = 2000  # rollouts: above this, the page loads its data from chunk files
SPLIT_ABOVE_BYTES = 64_000_000  # ... or above this much data, whatever the count (long rollouts)
CHUNK = 100  # rollouts (or prompts) per chunk file
MARKER = ".rollgym-view"  # marks a chunk folder as ours: only such a folder is ever replaced


class ViewOutputError(UsageError, FileExistsError):
    """The page's chunk folder would replace a folder rollgym view did not write."""


_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _json(value: Any) -> str:
    """JSON that is safe inside a <script> block (no `</script>`, no `<!--`)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).translate(_ESCAPES)


def _asset(name: str) -> str:
    return resources.files("rollgym.view").joinpath("assets", name).read_text(encoding="utf-8")


def _block(block_id: str, text: str) -> str:
    return f'<script type="application/json" id="{block_id}">{text}</script>\n'


def _data_blocks(payload: Payload) -> Iterator[tuple[str, str]]:
    """(block id, its JSON) for every prompt and every rollout's detail, strip and search text."""
    for k, prompt in enumerate(payload.prompts):
        yield f"rg-p-{k}", _json(prompt)
    for i, (detail, strip, text) in enumerate(zip(payload.details, payload.strips, payload.texts, strict=True)):
        yield f"rg-d-{i}", _json(detail)
        yield f"rg-t-{i}", _json(strip)
        yield f"rg-s-{i}", _json(text)


def chunk_name(block_id: str) -> str:
    """The chunk file holding a block: `rg-d-123` -> `d-1.js` (details, strips, search texts and prompts
    apart, so a search reads only the texts). viewer.js computes the same name."""
    kind, index = block_id.split("-")[1], int(block_id.split("-")[2])
    return f"{kind}-{index // CHUNK}.js"


def write_page(payload: Payload, path: Path, split: bool | None = None) -> Path:
    """Write the page to `path`, and its chunk files when split (by default: above `SPLIT_ABOVE` rollouts
    or `SPLIT_ABOVE_BYTES` of data)."""
    blocks = list(_data_blocks(payload))
    if split is None:
        split = len(payload.rows) > SPLIT_ABOVE or sum(len(text) for _, text in blocks) > SPLIT_ABOVE_BYTES
    files = path.with_name(path.stem + "_files")
    if (files / MARKER).exists():  # an earlier page's chunks; a folder rollgym did not write is left alone
        shutil.rmtree(files)
    if split:
        if files.exists():
            raise ViewOutputError(f"{files} exists and was not written by rollgym view: choose another --out")
        files.mkdir(parents=True)
        (files / MARKER).write_text("chunk files of a rollgym view page; rewritten with it\n")
        payload.meta["chunks"] = {"dir": files.name, "size": CHUNK}
        chunks: dict[str, list[str]] = {}
        for block_id, text in blocks:
            chunks.setdefault(chunk_name(block_id), []).append(f"{json.dumps(block_id)}:{text}")
        for name, items in chunks.items():
            (files / name).write_text(f"rgChunk({json.dumps(name)},{{{','.join(items)}}});\n", encoding="utf-8")
    head, tail = _asset("viewer.html").split("<!--DATA-->")
    title = html.escape(str(payload.meta.get("title", "rollgym run")))
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        script_src = "'unsafe-inline' 'self'" if split else "'unsafe-inline'"
        fh.write(
            head.replace("{{TITLE}}", title)
            .replace("{{SCRIPT_SRC}}", script_src)
            .replace("/*CSS*/", _asset("viewer.css"))
        )
        fh.write(_block("rg-index", _json(payload.index())))
        if not split:
            for block_id, text in blocks:
                fh.write(_block(block_id, text))
        fh.write(tail.replace("/*JS*/", _asset("viewer.js")))
    tmp.replace(path)
    return path
