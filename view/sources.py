"""Where a viewer's rollouts come from: a run directory, a rollouts JSONL, a saved proxy session, or its URL."""

from __future__ import annotations

import json
from pathlib import Path

from rollgym.errors import UsageError
from rollgym.rollouts.output import ROLLOUTS_FILE, read_rollouts
from rollgym.rollouts.records import Rollout


class ViewSourceError(UsageError):
    """`rollgym view` was given something it cannot read rollouts from."""


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def load_rollouts(source: str | Path, api_key: str | None = None) -> tuple[list[Rollout], str]:
    """The rollouts of `source` and a one-line description of where they came from.

    Accepted: a run directory (holding `rollouts.jsonl`), a `.jsonl` file of rollouts, a `.json` file saved
    from the proxy (`GET /sessions/{id}/rollouts`, a list, or `DELETE /sessions/{id}`, an object with
    `rollouts`), or a proxy session URL (`http://host:port/sessions/{id}`, or the agent's base URL ending in
    `/v1`; `api_key`: the proxy's `--api-key`, if it has one).
    """
    text = str(source)
    if is_url(text):
        return _from_url(text.rstrip("/"), api_key), text
    path = Path(text)
    if path.is_dir():
        path = path / ROLLOUTS_FILE
    if not path.exists():
        raise ViewSourceError(
            f"{text}: no such run directory or file (expected a run directory with {ROLLOUTS_FILE}, "
            "a rollouts .jsonl, a proxy session .json, or a session URL)"
        )
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError) as exc:
            raise ViewSourceError(f"{path}: not JSON ({exc})") from exc
        return _from_json(data, text), str(path)
    with open(path, "rb") as fh:
        first = fh.readline()
    try:
        if first.strip() and "schema_version" not in json.loads(first):
            raise ValueError("its first line has no schema_version")
        return list(read_rollouts(path)), str(path)
    except (ValueError, TypeError) as exc:
        raise ViewSourceError(f"{path}: not a rollouts JSONL file ({str(exc).splitlines()[0]})") from exc


def _from_json(data, origin: str) -> list[Rollout]:
    rows = data.get("rollouts") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise ViewSourceError(f"{origin}: expected a list of rollouts or a proxy session with 'rollouts'")
    if any(not isinstance(r, dict) or "schema_version" not in r for r in rows):
        raise ViewSourceError(f"{origin}: not a list of rollouts (an item has no schema_version)")
    try:
        return [Rollout.model_validate(r) for r in rows]
    except ValueError as exc:
        raise ViewSourceError(f"{origin}: not a list of rollouts ({str(exc).splitlines()[0]})") from exc


def _from_url(url: str, api_key: str | None) -> list[Rollout]:
    """A proxy session's rollouts over HTTP: `.../sessions/{id}` or `.../sessions/{id}/rollouts`."""
    import httpx

    if "/sessions/" not in url:
        raise ViewSourceError(f"{url}: expected a proxy session URL, http://HOST:PORT/sessions/ID")
    url = url[:-3] if url.endswith("/v1") else url  # the base URL an agent was given
    target = url if url.endswith("/rollouts") else url + "/rollouts"
    try:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        response = httpx.get(target, timeout=30, headers=headers)
    except httpx.HTTPError as exc:
        raise ViewSourceError(f"cannot reach {target}: {exc}") from exc
    if response.status_code != 200:
        raise ViewSourceError(f"{target} answered {response.status_code}: {response.text[:300]}")
    try:
        data = response.json()
    except ValueError as exc:
        raise ViewSourceError(f"{target} did not answer JSON: {response.text[:200]!r}") from exc
    return _from_json(data, target)
