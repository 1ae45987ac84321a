"""The `Sandbox` interface environments program against; `DockerSandbox` is the implementation."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rollgym.envs.sandbox.models import ExecResult


@runtime_checkable
class Sandbox(Protocol):
    """An isolated machine to run commands and move files in; `close()` is idempotent."""

    @property
    def closed(self) -> bool: ...

    def exec(
        self,
        cmd: str,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        max_output: int | None = None,
    ) -> ExecResult: ...

    async def aexec(
        self,
        cmd: str,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        max_output: int | None = None,
    ) -> ExecResult: ...

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None: ...

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes: ...

    def upload_dir(self, local_dir: str, dest: str) -> None: ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...
