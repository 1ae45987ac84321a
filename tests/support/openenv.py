"""OpenEnv for the OpenEnv suite's tests: environments written with OpenEnv's own package
(tests/envs/suites/openenv/servers/), served by uvicorn from the venv `.ci/openenv-up` builds (openenv pins mcp<2, so
not the project's venv); scripted policies that play them, reading the decoded prompt (SmolLM2's ChatML with tools)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

import rollgym as rg
from rollgym.engines.scripted import ScriptedEngine

SERVERS = Path(__file__).resolve().parents[1] / "envs" / "suites" / "openenv" / "servers"
OPENENV_HOME = Path(os.environ.get("ROLLGYM_CACHE", Path.home() / ".cache" / "rollgym")) / "openenv"


def openenv_python() -> Path:
    """The Python of the venv with openenv 0.10.0, or a skip saying how to make it."""
    python = OPENENV_HOME / "venv" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no openenv venv at {python.parent.parent}: run `bash .ci/openenv-up`")
    return python


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(app: str, log_dir: Path) -> tuple[subprocess.Popen, str]:
    """`uvicorn <app>` on a free loopback port, once its `/health` answers: the process and its URL."""
    port = free_port()
    log = (log_dir / f"{app.split(':')[0]}.log").open("wb")
    process = subprocess.Popen(
        [str(openenv_python()), "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port)],
        cwd=SERVERS,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{app} exited: {(log_dir / log.name).read_text()[-1500:]}")
        try:
            urllib.request.urlopen(url + "/health", timeout=2).read()
            return process, url
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"{app} did not answer on {url} within 60s")


_CALL = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.S)
_RESPONSE = re.compile(r"<tool_response>\n?(.*?)\n?</tool_response>", re.S)


def calls_and_responses(prompt: str) -> list[tuple[dict, str]]:
    """The episode so far (after the system prompt's own tool-call example): each call made, with the answer."""
    episode = prompt.split("<|im_start|>assistant", 1)[1] if "<|im_start|>assistant" in prompt else ""
    calls = [json.loads(body) for body in _CALL.findall(episode)]
    responses = [text.strip() for text in _RESPONSE.findall(episode)]
    return list(zip(calls, responses, strict=False))


def bisecting_policy(tool_tok, say, bad_first: int | None = None) -> rg.Policy:
    """Plays the guessing game by bisection on "higher"/"lower"; `bad_first`: an out-of-range guess made first."""

    def reply(prompt_ids, sampling):
        history = calls_and_responses(tool_tok.decode(prompt_ids))
        if bad_first is not None and not history:
            return say.call("act", guess=bad_first)
        low, high = 1, 100
        for call, answer in history:
            guess = call["arguments"].get("guess")
            if answer == "higher":
                low = max(low, guess + 1)
            elif answer == "lower":
                high = min(high, guess - 1)
        return say.call("act", guess=(low + high) // 2)

    return rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)


def note_policy(tool_tok, say, note: str | None = None) -> rg.Policy:
    """Writes a note holding the word the prompt asks for (or `note`), then submits."""

    def reply(prompt_ids, sampling):
        prompt = tool_tok.decode(prompt_ids)
        if not calls_and_responses(prompt):
            word = re.search(r"contains the word '(\w+)'", prompt).group(1)  # pyright: ignore[reportOptionalMemberAccess] - the server's prompt always names the word
            return say.call("write_note", text=note or f"a note about the {word}")
        return say.call("submit")

    return rg.Policy(engine=ScriptedEngine(reply), tokenizer=tool_tok)


DOCKERFILE = """FROM {base}
COPY wheels /wheels
RUN python3 "$(ls /wheels/pip-*.whl)/pip" install --quiet --no-index --find-links /wheels --break-system-packages \\
    --root-user-action=ignore openenv==0.10.0 && rm -rf /wheels
COPY servers /app/env
WORKDIR /app/env
CMD ["sh", "-c", "cd /app/env && python3 -m uvicorn {app} --host 0.0.0.0 --port 8000"]
"""


def openenv_image(base_image: str, app: str, context: Path) -> str:
    """An OpenEnv server image as OpenEnv's template builds one (the server's folder, openenv installed, uvicorn as
    its command), FROM rollgym's offline base image with openenv installed from `.ci/openenv-up`'s wheels (no
    registry here): `rollgym-tests/openenv:<content hash>`, built once."""
    from rollgym.envs.sandbox.images import build_image

    wheels = OPENENV_HOME / "wheels"
    if not (wheels / ".complete").exists():
        pytest.skip(f"no openenv wheels at {wheels}: run `bash .ci/openenv-up`")
    (context / "wheels").mkdir(parents=True)
    for wheel in sorted(wheels.glob("*.whl")):
        os.link(wheel, context / "wheels" / wheel.name)
    (context / "servers").mkdir()
    for server in sorted(SERVERS.glob("*.py")):
        (context / "servers" / server.name).write_bytes(server.read_bytes())
    (context / "Dockerfile").write_text(DOCKERFILE.format(base=base_image, app=app))
    return build_image(context, "rollgym-tests/openenv")


def replay_with_openenv_client(url: str, reset: dict, actions: list[dict]) -> list[dict]:
    """The episode `reset` then `actions` played again with OpenEnv's own client, in openenv's venv: each step's
    {"observation", "reward", "done"}, the reset's first."""
    done = subprocess.run(
        [str(openenv_python()), str(SERVERS / "openenv_client_replay.py"), url],
        input=json.dumps({"reset": reset, "actions": actions}),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]
