"""`rollgym view`: a run, a rollouts file or a proxy session as one self-contained HTML page.

The page shows the run's summary and plots, a filterable list, each rollout turn by turn, and its token
strip (every id as text, sampled vs environment, shaded by sampling logprob, with turn, bridge and
proxy-segment marks), and two samples of one task side by side. It requests nothing from the network.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rollgym.view.page import ViewOutputError, write_page
from rollgym.view.payload import Payload
from rollgym.view.sources import ViewSourceError, is_url, load_rollouts

__all__ = ["ViewOutputError", "ViewSourceError", "default_output", "serve_viewer", "token_texts_for", "write_viewer"]


def default_output(source: str) -> Path:
    """Where `rollgym view SOURCE` writes: `view.html` beside the rollouts (or in the current directory for a URL)."""
    if is_url(source):
        return Path(f"view-{source.rstrip('/').split('/sessions/')[-1].split('/')[0]}.html")
    path = Path(source)
    return (path if path.is_dir() else path.parent) / "view.html"


def token_texts_for(spec: str) -> Callable[[list[int]], dict[int, str]]:
    """Each id's own text under the tokenizer of `spec` (a model spec or directory), decoded one id at a time."""
    from transformers import AutoTokenizer

    from rollgym.engines.default_model import resolve_model_dir
    from rollgym.errors import RollgymError
    from rollgym.rollouts.policy import model_dir

    try:  # an engine spec (`vllm:URL#MODEL`, `hf:/dir`, `smollm2-135m`) names where its tokenizer lives
        directory = model_dir(spec)
    except RollgymError:  # a bare directory or model name
        directory = resolve_model_dir(spec)
    hf = AutoTokenizer.from_pretrained(directory)

    def texts(ids: list[int]) -> dict[int, str]:
        return {i: hf.decode([i], skip_special_tokens=False, clean_up_tokenization_spaces=False) for i in ids}

    return texts


def write_viewer(
    source: str | Path,
    out: str | Path | None = None,
    *,
    tokenizer: str | None = None,
    api_key: str | None = None,
    title: str | None = None,
    split: bool | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Write the viewer for `source` (see `load_rollouts`) and return its path.

    Token texts come from `tokenizer`, else from the rollouts' own `model`; when neither loads, the strip
    shows ids only and the page says so. `split`: data in `<page>_files/` chunks instead of the page
    (default: only for runs over `page.SPLIT_ABOVE` rollouts).
    """
    rollouts, origin = load_rollouts(str(source), api_key=api_key)
    spec = tokenizer or next((r.model for r in rollouts if r.model), None)
    texts = None
    if spec:
        try:
            texts = token_texts_for(spec)
        except Exception as exc:  # noqa: BLE001 - a model that is not on this machine: ids only, said once
            log(
                f"note: no tokenizer for {spec!r} ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); "
                "the token strip shows ids only (pass --tokenizer)"
            )
    payload = Payload(
        rollouts,
        texts,
        {
            "title": title or origin,
            "source": origin,
            "tokenizer": spec if texts else None,
            "generated_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        },
    )
    path = Path(out) if out else default_output(str(source))
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_page(payload, path, split=split)


def serve_viewer(path: str | Path, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the viewer file at `http://host:port/` until interrupted (loopback by default)."""
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import FileResponse
    from fastapi.staticfiles import StaticFiles

    app = FastAPI(title="rollgym view", docs_url=None, redoc_url=None, openapi_url=None)
    target = Path(path).resolve()
    files = target.with_name(target.stem + "_files")

    @app.get("/")
    async def page() -> FileResponse:
        return FileResponse(target, media_type="text/html; charset=utf-8")

    if files.is_dir():  # a split page's chunks, at the relative path the page asks for
        app.mount(f"/{files.name}", StaticFiles(directory=files), name="chunks")

    uvicorn.run(app, host=host, port=port, log_level="warning")
