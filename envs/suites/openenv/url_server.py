"""Where an OpenEnv environment's server is: a URL rollgym connects to (`URLServer`), or an image rollgym runs in a
sandbox (`sandboxed.ImageServer`); both open one `Channel` per episode and know the server's schemas."""

from __future__ import annotations

from typing import Protocol

from rollgym.envs.suites.openenv.channels import Channel, WebSocketChannel, fetch_schemas
from rollgym.envs.suites.openenv.wire import ServerSchemas

#: each URL's schemas, read once per process (a batch makes an environment per rollout; the server computes its
#: schemas on every `GET /schema`)
_SCHEMAS: dict[str, ServerSchemas] = {}


class Server(Protocol):
    """A running OpenEnv server: its name (in errors), its schemas, a session per episode, and its end."""

    name: str
    schemas: ServerSchemas

    async def open(self) -> Channel: ...

    async def close(self) -> None: ...


class URLServer:
    """A server that runs elsewhere (a Space, a container of the user's, a process): only connected to."""

    def __init__(self, url: str, schemas: ServerSchemas, connect_timeout_s: float) -> None:
        self.name, self.url, self.schemas, self.connect_timeout_s = url, url, schemas, connect_timeout_s

    @classmethod
    async def connect(cls, url: str, connect_timeout_s: float) -> URLServer:
        """The server at `url`, once its `/schema` answered (the first time in this process); `OpenEnvServerError` when
        it does not. A server that cannot be reached later fails at its session's connection."""
        if url not in _SCHEMAS:
            _SCHEMAS[url] = await fetch_schemas(url, connect_timeout_s)
        return cls(url, _SCHEMAS[url], connect_timeout_s)

    async def open(self) -> Channel:
        return await WebSocketChannel.open(self.url, self.connect_timeout_s)

    async def close(self) -> None:
        """Nothing to stop: rollgym did not start it."""
