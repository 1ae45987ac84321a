"""Connect to a Ray cluster, or start a local Ray instance, within a bounded time and with a clear error.

`ray.init` installs its own SIGTERM handler (which aborts the driver); rollgym's handlers are put back at
once, so SIGTERM still unwinds the run (exit 143) and Ctrl-C still exits 130.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from typing import Any

from rollgym.errors import ClusterConnectError, UsageError
from rollgym.integrations.ray.config import RayConfig


def import_ray() -> Any:
    """Ray itself, or a `UsageError` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise UsageError("distributed rollouts need Ray: pip install 'rollgym[ray]' (or 'ray[client]>=2.40')") from exc
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of an explicit address (`ray://h:10001`, `h:6379`); None for 'auto' and 'local'."""
    rest = address.removeprefix("ray://")
    if rest in ("auto", "local") or ":" not in rest:
        return None
    host, _, port = rest.rpartition(":")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise UsageError(f"--ray {address!r}: expected 'auto', 'host:port' or 'ray://host:10001'") from None


def probe(address: str, timeout_s: float) -> None:
    """Fail within `timeout_s` when nothing listens at an explicit address (ray.init may wait minutes)."""
    target = _host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=timeout_s).close()
    except OSError as exc:
        raise ClusterConnectError(
            f"no Ray cluster answers at {address} ({exc}); start one with `ray start --head` "
            "(and pass its address: `--ray auto` on a node of the cluster, or "
            "`--ray ray://HEAD:10001` from outside it)"
        ) from None


def connect(config: RayConfig, actors: int) -> Any:
    """`ray`, initialised: to `config.address`, or a new local instance with room for `actors` actors."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {
        "log_to_driver": False,
        "include_dashboard": False,
        "configure_logging": True,
        "logging_level": "WARNING",
    }
    if config.address is None:
        kwargs.update(
            address="local",
            num_cpus=max(1, int(actors * config.num_cpus + 0.999)),
            resources={k: v * actors for k, v in config.resources.items()} or None,
        )
    else:
        probe(config.address, config.connect_timeout_s)
        kwargs["address"] = config.address
        kwargs.pop("include_dashboard")
    saved = _handlers()
    try:
        ray.init(**kwargs)
    except (ConnectionError, TimeoutError) as exc:
        raise ClusterConnectError(
            f"could not connect to the Ray cluster at {config.address}: {exc} ({_connect_hint(str(exc))})"
        ) from None
    finally:
        _restore(saved)
    return ray


def _connect_hint(error: str) -> str:
    if "Starting Ray client server failed" in error:
        return (
            "the head's Ray Client server could not start a server for this driver; when its log "
            "(ray_client_server_NNNNN.err) is empty, the child crashed in grpcio's fork handlers: start the head "
            "with GRPC_ENABLE_FORK_SUPPORT=false ray start --head (see docs/scale.md), or run on a node of the "
            "cluster with --ray auto"
        )
    return (
        "start one with `ray start --head`, or drop --ray to run in one process; a cluster with token "
        "authentication, the default of `ray start` since Ray 2.59, needs RAY_AUTH_MODE=token here, and "
        "RAY_AUTH_TOKEN from `ray get-auth-token` off the head node"
    )


def head_of(ray: Any, config: RayConfig) -> tuple[str, int] | None:
    """(host, port) that answers while the cluster's head lives: the Ray Client server for a `ray://` address,
    else the GCS this driver is connected to; None when it cannot be told."""
    if config.address and config.address.startswith("ray://"):
        return _host_port(config.address)
    try:
        host, _, port = ray.get_runtime_context().gcs_address.rpartition(":")
        return host.strip("[]"), int(port)
    except Exception:  # noqa: BLE001 - no GCS address: the head cannot be told
        return None


async def head_lost(target: tuple[str, int], timeout_s: float, period_s: float = 1.0) -> float:
    """Return once `target` has not accepted a TCP connection for `timeout_s` (how long it has not): the head
    is gone. A head that comes back within `timeout_s` (a GCS restarted by Ray's fault tolerance) is not lost."""
    loop = asyncio.get_running_loop()
    answered = loop.time()
    while True:
        try:
            wait_s = max(0.1, min(period_s, timeout_s))
            _, writer = await asyncio.wait_for(asyncio.open_connection(*target), timeout=wait_s)
        except (OSError, TimeoutError):
            if loop.time() - answered >= timeout_s:
                return loop.time() - answered
        else:
            answered = loop.time()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        await asyncio.sleep(period_s)


async def off_loop(fn: Any, *args: Any) -> Any:
    """`fn(*args)` in a daemon thread: a Ray call that waits on the GCS (`ray.nodes()`) blocks for a minute when
    the head is gone; the loop (and the head watchdog) keeps running, and the process can still exit."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            future.set_result(value) if ok else future.set_exception(value)

    def work() -> None:
        try:
            outcome = (True, fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="rollgym-ray-call", daemon=True).start()
    return await future


def _handlers() -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}


def _restore(saved: dict[int, Any]) -> None:
    for sig, handler in saved.items():
        if handler is not None:
            signal.signal(sig, handler)
