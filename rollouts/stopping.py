"""SIGTERM handled as Ctrl-C is: what Kubernetes, SLURM, Ray and `timeout` send must release every sandbox,
flush the output and leave a resumable run, not kill the process where it stands (exit 143, not -15)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator


class Terminated(KeyboardInterrupt):
    """The run was stopped by SIGTERM; it unwinds exactly as a Ctrl-C does (exit code 143)."""

    exit_code = 128 + signal.SIGTERM


def exit_code(exc: KeyboardInterrupt) -> int:
    """143 after SIGTERM, 130 after Ctrl-C."""
    return Terminated.exit_code if isinstance(exc, Terminated) else 130


@contextlib.contextmanager
def sigterm_cancels_this_task() -> Iterator[None]:
    """Inside a coroutine: SIGTERM cancels the current task (the loop runs the handler between callbacks,
    so no write is cut in half), and the cancellation leaves as `Terminated`. Without a main-thread event
    loop (a worker thread, Windows) it does nothing."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None  # used inside a coroutine, so inside its task
    hit = False

    def on_sigterm() -> None:
        nonlocal hit
        hit = True
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signal support
        installed = False
    try:
        yield
    except asyncio.CancelledError:
        if hit:
            raise Terminated() from None
        raise
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGTERM)


@contextlib.contextmanager
def sigterm_raises_terminated() -> Iterator[None]:
    """In synchronous code on the main thread: SIGTERM raises `Terminated` wherever the main thread is, as Ctrl-C
    raises KeyboardInterrupt, so `with` blocks and `except BaseException` clean-ups run. Only the first SIGTERM
    does (a second one cannot cut the clean-up short). Off the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = False

    def on_sigterm(signum, frame) -> None:
        nonlocal fired
        if not fired:
            fired = True
            raise Terminated()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
