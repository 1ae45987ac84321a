"""An OpenEnv server image run in rollgym's Docker sandbox (no network, the sandbox's limits), never on the host:
its own command (the image's entrypoint and command, as `docker run` would) is started inside, and each session is
carried by a relay over the attached process's stdio (`relay.py`)."""

from __future__ import annotations

import asyncio
import json
import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, start_sandbox
from rollgym.envs.suites.openenv.errors import OpenEnvServerError
from rollgym.envs.suites.openenv.relay import RELAY_PATH, RELAY_SCRIPT
from rollgym.envs.suites.openenv.wire import ServerSchemas

SERVER_LOG = "/tmp/openenv-server.log"


class ImageServerConfig(BaseModel):
    """How to serve an OpenEnv image: its command (None: the image's own), the port it listens on inside, how long it
    may take to answer, and the sandbox's settings (`SandboxConfig` fields: `mem_limit`, `cpus`, `docker_host`...)."""

    model_config = ConfigDict(extra="forbid")

    image: str
    command: str | None = None
    port: int = Field(default=8000, ge=1, le=65535)
    start_timeout_s: float = Field(default=120.0, gt=0)
    python: str = Field(default="python3", description="the image's Python that has openenv (runs the relay)")
    sandbox: dict[str, Any] = Field(default_factory=dict)


class SandboxChannel:
    """One session through the relay: a line to its stdin is a message to the server, a line of its stdout one back."""

    def __init__(self, process: Any, lines: asyncio.Queue[str | None], name: str) -> None:
        self._process, self._lines, self.name = process, lines, name

    @classmethod
    async def open(cls, sandbox: DockerSandbox, config: ImageServerConfig) -> SandboxChannel:
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        buffer = bytearray()

        def on_stdout(data: bytes | None) -> None:
            if data is None:
                loop.call_soon_threadsafe(lines.put_nowait, None)
                return
            buffer.extend(data)
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:end]).decode(errors="replace")
                del buffer[: end + 1]
                loop.call_soon_threadsafe(lines.put_nowait, line)

        command = [config.python, RELAY_PATH, str(config.port), "session"]
        process = await asyncio.to_thread(sandbox.attach, command, on_stdout)
        return cls(process, lines, config.image)

    async def send(self, text: str) -> None:
        try:
            await asyncio.to_thread(self._process.send, (text + "\n").encode())
        except OSError as exc:
            raise self._ended(f"{type(exc).__name__}: {exc}") from exc

    async def receive(self, timeout_s: float) -> str:
        try:
            line = await asyncio.wait_for(self._lines.get(), timeout_s)
        except TimeoutError as exc:
            raise OpenEnvServerError(f"the OpenEnv server of {self.name} did not answer within {timeout_s:g}s") from exc
        if line is None:
            self._lines.put_nowait(None)
            raise self._ended("its session closed")
        return line

    async def close(self) -> None:
        await asyncio.to_thread(self._process.close)

    def _ended(self, why: str) -> OpenEnvServerError:
        tail = bytes(self._process.stderr_tail).decode(errors="replace").strip()[-600:]
        return OpenEnvServerError(
            f"the OpenEnv server of {self.name} ended the session: {why}{'; ' + tail if tail else ''}"
        )


class ImageServer:
    """An OpenEnv image running in a sandbox of its own, for as long as the environment that started it."""

    def __init__(self, config: ImageServerConfig, sandbox: DockerSandbox, schemas: ServerSchemas) -> None:
        self.config, self.sandbox, self.schemas = config, sandbox, schemas
        self.name = config.image

    @classmethod
    async def start(cls, config: ImageServerConfig) -> ImageServer:
        """Start the image's server in a sandbox and wait for its `/schema`; `OpenEnvServerError` (with its log's
        tail) when it does not answer within `start_timeout_s`."""
        sandbox_config = SandboxConfig.model_validate({"image": config.image, "network_mode": "none", **config.sandbox})
        sandbox = await start_sandbox(sandbox_config)
        try:
            command, workdir = config.command, "/"
            if command is None:
                command, workdir = await asyncio.to_thread(_image_command, sandbox)
            await asyncio.to_thread(sandbox.write_file, RELAY_PATH, RELAY_SCRIPT)
            started = await asyncio.to_thread(
                sandbox.exec,
                f"cd {shlex.quote(workdir)} && (setsid sh -c {shlex.quote(command)} > {SERVER_LOG} 2>&1 < /dev/null &)",
                30,
            )
            if not started.ok:
                raise OpenEnvServerError(f"the OpenEnv server of {config.image} did not start: {started.output[-600:]}")
            ready = await asyncio.to_thread(
                sandbox.exec,
                f"{config.python} {RELAY_PATH} {config.port} schema {config.start_timeout_s}",
                config.start_timeout_s + 30,
                None,
                None,
                None,
                10 * 2**20,
            )
            if not ready.ok:
                log = await asyncio.to_thread(sandbox.exec, f"tail -c 1500 {SERVER_LOG}", 30)
                raise OpenEnvServerError(
                    f"the OpenEnv server of {config.image} ({command}) did not answer on port {config.port} within "
                    f"{config.start_timeout_s:g}s: {ready.output.strip()[-400:]}; its log ends: {log.output.strip()}"
                )
            schemas = ServerSchemas.model_validate(json.loads(ready.output))
        except BaseException:
            await asyncio.to_thread(sandbox.close)
            raise
        return cls(config, sandbox, schemas)

    async def open(self) -> SandboxChannel:
        return await SandboxChannel.open(self.sandbox, self.config)

    async def close(self) -> None:
        await asyncio.to_thread(self.sandbox.close)


def _image_command(sandbox: DockerSandbox) -> tuple[str, str]:
    """The image's own entrypoint and command as one shell command, and its working directory."""
    config = sandbox.client.images.get(sandbox.image).attrs.get("Config") or {}
    argv = [*(config.get("Entrypoint") or []), *(config.get("Cmd") or [])]
    if not argv:
        raise OpenEnvServerError(f"the image {sandbox.image} has no command: pass the server's `command`")
    return shlex.join(argv), config.get("WorkingDir") or "/"
