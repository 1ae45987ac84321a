"""Connect to a Ray cluster, or start a local Ray instance, within a bounded time and with a clear error.

`ray.init` installs its own SIGTERM handler (which aborts the driver); rollgym's handlers are put back at
once, so SIGTERM still unwinds the run (exit 143) and Ctrl-C still exits 130.
"""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any

from rollgym.errors import ClusterConnectError, UsageError

from .config import RayConfig


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
        raise ClusterConnectError(f"no Ray cluster answers at {address} ({exc}); start one with `ray start --head` "
                                  "(and pass its address: `--ray auto` on a node of the cluster, or "
                                  "`--ray ray://HEAD:10001` from outside it)") from None


def connect(config: RayConfig, actors: int) -> Any:
    """`ray`, initialised: to `config.address`, or a new local instance with room for `actors` actors."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = dict(log_to_driver=False, include_dashboard=False, configure_logging=True,
                                  logging_level="WARNING")
    if config.address is None:
        kwargs.update(address="local", num_cpus=max(1, int(actors * config.num_cpus + 0.999)),
                      resources={k: v * actors for k, v in config.resources.items()} or None)
    else:
        probe(config.address, config.connect_timeout_s)
        kwargs["address"] = config.address
        kwargs.pop("include_dashboard")
    saved = _handlers()
    try:
        ray.init(**kwargs)
    except (ConnectionError, TimeoutError) as exc:
        raise ClusterConnectError(f"could not connect to the Ray cluster at {config.address}: {exc} (start one with "
                                  "`ray start --head`, or drop --ray to run in one process)") from None
    finally:
        _restore(saved)
    return ray


def _handlers() -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}


def _restore(saved: dict[int, Any]) -> None:
    for sig, handler in saved.items():
        if handler is not None:
            signal.signal(sig, handler)
