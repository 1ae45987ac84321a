"""`SandboxPool`: warm, pre-started sandboxes per configuration, with a creation rate limit, a cap on
concurrent daemon calls, and retries with backoff. Sandboxes are never reused: release closes them."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rollgym.envs.sandbox.docker_sandbox import DockerSandbox, start_sandbox
from rollgym.envs.sandbox.errors import ImageError, SandboxError
from rollgym.envs.sandbox.models import SandboxConfig


def _key(config: SandboxConfig) -> str:
    """Sandboxes are interchangeable when everything but their task identity matches."""
    return config.model_dump_json(exclude={"task_id", "run_id", "labels"})


class SandboxPool:
    """Hands out running sandboxes fast: `warm` spares per configuration are kept started in the background."""

    def __init__(
        self,
        warm: int = 2,
        max_daemon_calls: int = 8,
        creates_per_s: float = 20.0,
        retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        self.warm = warm
        self.retries = retries
        self.backoff_s = backoff_s
        self._daemon = asyncio.Semaphore(max_daemon_calls)
        self._interval = 1.0 / creates_per_s if creates_per_s > 0 else 0.0
        self._next_slot = 0.0
        self._rate_lock = asyncio.Lock()
        self._spares: dict[str, deque[DockerSandbox]] = defaultdict(deque)
        self._configs: dict[str, SandboxConfig] = {}
        self._refills: set[asyncio.Task] = set()
        self._pending: dict[str, int] = defaultdict(int)
        self._closed = False
        self.created = 0

    async def _rate_limit(self) -> None:
        async with self._rate_lock:
            now = time.monotonic()
            wait = self._next_slot - now
            self._next_slot = max(now, self._next_slot) + self._interval
        if wait > 0:
            await asyncio.sleep(wait)

    async def _create(self, config: SandboxConfig) -> DockerSandbox:
        """Create one sandbox, rate-limited, under the daemon-call cap, retrying daemon errors with backoff."""
        for attempt in range(self.retries + 1):
            await self._rate_limit()
            try:
                async with self._daemon:
                    sb = await start_sandbox(config)
                self.created += 1
                return sb
            except ImageError:
                raise
            except SandboxError:
                if attempt == self.retries:
                    raise
                await asyncio.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")

    def _refill(self, key: str) -> None:
        missing = self.warm - len(self._spares[key]) - self._pending[key]
        for _ in range(max(missing, 0)):
            self._pending[key] += 1
            task = asyncio.create_task(self._add_spare(key))
            self._refills.add(task)
            task.add_done_callback(self._refills.discard)

    async def _add_spare(self, key: str) -> None:
        try:
            sb = await self._create(self._configs[key])
        except Exception:  # noqa: BLE001 - a failed spare is retried at the next acquire
            return
        finally:
            self._pending[key] -= 1
        if self._closed:
            await sb.aclose()
        else:
            self._spares[key].append(sb)

    async def prewarm(self, config: SandboxConfig, n: int | None = None) -> None:
        """Start spares for `config` now and wait until `n` (default: `warm`) are ready."""
        key = _key(config)
        self._configs[key] = config
        target = self.warm if n is None else n
        need = target - len(self._spares[key])
        if need > 0:
            made = await asyncio.gather(*(self._create(config) for _ in range(need)))
            self._spares[key].extend(made)

    async def acquire(self, config: SandboxConfig) -> DockerSandbox:
        """A running sandbox for `config`: a warm spare if one is ready (then refilled), else a new one."""
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        key = _key(config)
        self._configs.setdefault(key, config)
        spares = self._spares[key]
        sb = None
        while spares:
            candidate = spares.popleft()
            if not candidate.closed:
                sb = candidate
                break
        self._refill(key)
        return sb if sb is not None else await self._create(config)

    async def release(self, sb: DockerSandbox) -> None:
        """Close a sandbox (its state is the previous episode's: never handed out again)."""
        async with self._daemon:
            await sb.aclose()

    @asynccontextmanager
    async def sandbox(self, config: SandboxConfig) -> AsyncIterator[DockerSandbox]:
        sb = await self.acquire(config)
        try:
            yield sb
        finally:
            await self.release(sb)

    async def aclose(self) -> None:
        """Stop refilling and close every spare."""
        self._closed = True
        await asyncio.gather(*self._refills, return_exceptions=True)  # each closes its sandbox once it sees _closed
        spares = [sb for q in self._spares.values() for sb in q]
        self._spares.clear()
        await asyncio.gather(*(sb.aclose() for sb in spares), return_exceptions=True)
