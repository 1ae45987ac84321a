"""Assemble the viewer: the page's CSS and JS inlined, the data in inert JSON blocks, or in chunk files.

Nothing is fetched from the network: the file opens offline. A run up to `SPLIT_ABOVE` rollouts is one
self-contained file; each rollout's detail, token strip and shared prompt sit in their own
`<script type="application/json">` block, parsed only on demand. A bigger run keeps only its index in
the page and writes the rest to `<page>_files/` in chunks of `CHUNK` rollouts, which the page loads
with script tags when a rollout is opened (this works from `file://` too), so it loads in the time of
its index, whatever the run's size.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

from .payload import Payload

SPLIT_ABOVE = 2000  # rollouts: above this, the page loads its data from chunk files
CHUNK = 100  # rollouts (or prompts) per chunk file
_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _json(value: Any) -> str:
    """JSON that is safe inside a <script> block (no `</script>`, no `<!--`)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).translate(_ESCAPES)


def _asset(name: str) -> str:
    return resources.files("rollgym.rollouts.view").joinpath("assets", name).read_text(encoding="utf-8")


def _block(block_id: str, value: Any) -> str:
    return f'<script type="application/json" id="{block_id}">{_json(value)}</script>\n'


def _data_blocks(payload: Payload) -> Iterator[tuple[str, Any]]:
    for k, prompt in enumerate(payload.prompts):
        yield f"rg-p-{k}", prompt
    for i, (detail, strip) in enumerate(zip(payload.details, payload.strips)):
        yield f"rg-d-{i}", detail
        yield f"rg-t-{i}", strip


def chunk_name(block_id: str) -> str:
    """The chunk file holding a block: `rg-d-123` -> `d-1.js` (details, strips and prompts apart, so a
    search reads only the messages). viewer.js computes the same name."""
    kind, index = block_id.split("-")[1], int(block_id.split("-")[2])
    return f"{kind}-{index // CHUNK}.js"


def write_page(payload: Payload, path: Path, split: bool | None = None) -> Path:
    """Write the page to `path` (and its chunk files when split; by default above `SPLIT_ABOVE` rollouts)."""
    split = len(payload.rows) > SPLIT_ABOVE if split is None else split
    files = path.with_name(path.stem + "_files")
    if files.exists():
        shutil.rmtree(files)
    if split:
        files.mkdir(parents=True)
        payload.meta["chunks"] = {"dir": files.name, "size": CHUNK}
        chunks: dict[str, dict[str, Any]] = {}
        for block_id, value in _data_blocks(payload):
            chunks.setdefault(chunk_name(block_id), {})[block_id] = value
        for name, blocks in chunks.items():
            (files / name).write_text(f"rgChunk({json.dumps(name)},{_json(blocks)});\n", encoding="utf-8")
    head, tail = _asset("viewer.html").split("<!--DATA-->")
    title = json.dumps(payload.meta.get("title", "rollgym run"))[1:-1].replace("<", "&lt;")
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        script_src = "'unsafe-inline' 'self'" if split else "'unsafe-inline'"
        fh.write(head.replace("{{TITLE}}", title).replace("{{SCRIPT_SRC}}", script_src).replace("/*CSS*/", _asset("viewer.css")))
        fh.write(_block("rg-index", payload.index()))
        if not split:
            for block_id, value in _data_blocks(payload):
                fh.write(_block(block_id, value))
        fh.write(tail.replace("/*JS*/", _asset("viewer.js")))
    tmp.replace(path)
    return path
