"""`rollgym proxy`: build the engine and tokenizer from specs, pre-create a session, serve until Ctrl-C or
SIGTERM; either one shuts the server down gracefully and closes the engine (exit 130 or 143)."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable

import typer

from rollgym.cli.engines import ENGINE_ARG_HELP, parse_engine_args
from rollgym.errors import RollgymError, UsageError
from rollgym.limits import DEFAULT_MAX_TOKENS_PER_TURN
from rollgym.proxy.access_log import LOGGER
from rollgym.proxy.server import RecordingProxy
from rollgym.proxy.store import ProxySettings
from rollgym.rollouts.policy import Policy

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _print_access_log() -> None:
    """The CLI prints one line per request (`rollgym.proxy.access`) to stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False


def serve(
    model: str,
    *,
    chat_template: str | None = None,
    tokenizer: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    session_id: str = "default",
    settings: ProxySettings | None = None,
    log: Callable[[str], None] = print,
    engine_kwargs: dict | None = None,
) -> int:
    """Serve a recording proxy for engine spec `model` until SIGINT or SIGTERM (blocks); return the exit code
    (128 + the signal). Refuses a public bind without an API key."""
    if host not in LOOPBACK and not api_key:
        raise UsageError(
            f"refusing to listen on {host} without --api-key (anyone who can reach it could use the model)"
        )
    policy = Policy(model, tokenizer=tokenizer, chat_template=chat_template, log=log, engine_kwargs=engine_kwargs)
    proxy = RecordingProxy(policy, host=host, port=port, api_key=api_key, settings=settings, log_level="info")
    _print_access_log()
    stopped_by: list[int] = []

    def on_signal(signum: int) -> None:
        stopped_by.append(signum)
        if proxy._server is not None:
            proxy._server.should_exit = True  # graceful: uvicorn finishes in-flight requests (5 s at most)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
        try:
            await proxy.start()
            sess = proxy.session(session_id)
            log(f"rollgym proxy for {model} on {proxy.base_url}")
            log(f"session {sess.id!r}: OPENAI_BASE_URL={sess.base_url}")
            log(f"  Anthropic clients (Claude Code): ANTHROPIC_BASE_URL={sess.base_url.removesuffix('/v1')}")
            log(f"new sessions: POST {proxy.base_url}/sessions; trajectory: GET {proxy.base_url}/sessions/<id>")
            assert proxy._task is not None
            await proxy._task
        finally:
            await proxy.stop()
            await policy.aclose()

    asyncio.run(main())
    return 128 + (stopped_by[0] if stopped_by else signal.SIGINT)


def proxy_cmd(
    model: str = typer.Option(
        "smollm2-135m", "--model", help="engine spec (token-in/token-out; see `rollgym engines`)"
    ),
    chat_template: str | None = typer.Option(None, "--chat-template", help="Jinja chat template file"),
    tokenizer: str | None = typer.Option(
        None, "--tokenizer", help="tokenizer directory (for vllm: specs without #MODEL)"
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind (other than loopback needs --api-key)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="ROLLGYM_PROXY_API_KEY", help="require `Authorization: Bearer KEY` on every request"
    ),
    session: str = typer.Option("default", "--session", help="id of a session created at startup"),
    max_tokens: int = typer.Option(
        DEFAULT_MAX_TOKENS_PER_TURN, "--max-tokens", min=1, help="max_tokens when a request gives none"
    ),
    idle_timeout: float = typer.Option(3600.0, "--idle-timeout", help="seconds before an unused session expires"),
    temperature: float | None = typer.Option(
        None, "--temperature", min=0.0, help="sample every call at this temperature, whatever the agent sends"
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="sample calls that send no seed reproducibly (per session and call)"
    ),
    truncation: str = typer.Option(
        "close",
        "--truncation",
        help="a reply cut at max_tokens: 'close' (the agent's next call continues the segment) or 'end'",
    ),
    engine_arg: list[str] | None = typer.Option(None, "--engine-arg", "-E", help=ENGINE_ARG_HELP),
) -> None:
    """Serve a recording OpenAI-compatible proxy: agents call /sessions/{id}/v1, rollgym records token-exact rollouts."""

    if truncation not in ("close", "end"):
        raise typer.BadParameter(f"must be 'close' or 'end', got {truncation!r}", param_hint="--truncation")
    settings = ProxySettings(
        default_max_tokens=max_tokens,
        idle_timeout_s=idle_timeout,
        seed=seed,
        truncation=truncation,
        temperature=temperature,
    )
    try:
        code = serve(
            model,
            chat_template=chat_template,
            tokenizer=tokenizer,
            host=host,
            port=port,
            api_key=api_key,
            session_id=session,
            settings=settings,
            log=typer.echo,
            engine_kwargs=parse_engine_args(engine_arg),
        )
    except RollgymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:  # Ctrl-C while the model loads, before the server runs
        code = 130
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add `rollgym proxy` to the CLI."""
    app.command("proxy")(proxy_cmd)
