"""The OpenEnv servers the suite's tests drive, one uvicorn process per server for the whole session (a machine
without the venv `.ci/openenv-up` builds skips, saying how to build it)."""

from __future__ import annotations

import pytest
from support.openenv import serve


@pytest.fixture(scope="session")
def openenv_servers(tmp_path_factory):
    """{"guess": url, "notes": url}: the number-guessing game and the MCP note pad, served for the session."""
    log_dir = tmp_path_factory.mktemp("openenv-servers")
    started = {name: serve(app, log_dir) for name, app in (("guess", "guess_env:app"), ("notes", "notes_mcp_env:app"))}
    yield {name: url for name, (_, url) in started.items()}
    for process, _ in started.values():
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def guess_url(openenv_servers) -> str:
    return openenv_servers["guess"]


@pytest.fixture
def notes_url(openenv_servers) -> str:
    return openenv_servers["notes"]
