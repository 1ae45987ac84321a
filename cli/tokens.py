"""`rollgym check-template` and `rollgym token-demo`: certify a (tokenizer, template) pair, and show what
token-exact means on a scripted two-turn conversation."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from rollgym.errors import RollgymError
from rollgym.rollouts.tokenizer_loading import load_chat_tokenizer


def check_template(
    model: str | None = typer.Argument(None, help="Tokenizer directory, `hf:/path`, or `smollm2-135m`."),
    chat_template: str | None = typer.Option(
        None, "--chat-template", help="A Jinja chat template file to use instead."
    ),
    all_families: bool = typer.Option(
        False, "--all", help="The conformance matrix: every model family rollgym knows against its own reference."
    ),
    markdown: bool = typer.Option(
        False, "--markdown", help="With --all: print the matrix as docs/tokenization.md has it."
    ),
) -> None:
    """Certify a (tokenizer, chat template) pair for token-exact multi-turn rollouts (or every family: --all)."""
    from rich.table import Table

    console = Console()
    if all_families:
        conformance_matrix(console, markdown)
        return
    if model is None:
        console.print("[red]error:[/red] name a MODEL, or pass --all for every model family")
        raise typer.Exit(2)
    try:
        tok = load_chat_tokenizer(model, chat_template)
    except RollgymError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    report = tok.certify(strict=False)
    table = Table(title=f"check-template {model}" + (f" --chat-template {chat_template}" if chat_template else ""))
    for col in ("probe", "status", "detail"):
        table.add_column(col, overflow="fold")
    colors = {"pass": "green", "fail": "red", "unsupported": "yellow"}
    for p in report.probes:
        table.add_row(p.name, f"[{colors.get(p.status, 'cyan')}]{p.status}[/]", p.detail)
    console.print(table)
    console.print(f"tool-call format: {report.tool_parser or 'none'}; stop token ids: {report.stop_token_ids}")
    if not report.passed:
        first = report.failures()[0]
        console.print(f"[red]REFUSED[/red]: probe {first.name!r} failed: {first.detail}")
        raise typer.Exit(1)
    console.print("[green]CERTIFIED[/green]: bridged trajectories are token-exact for this pair")


def conformance_matrix(console: Console, markdown: bool) -> None:
    """Print the families x scenarios matrix; exit 1 when a cell fails."""
    from rich.table import Table

    from rollgym.cli.vocabularies import family_tokenizer
    from rollgym.tokenization import conformance
    from rollgym.tokenization.families import FAMILIES

    rows = []
    for fam in FAMILIES:
        try:
            rows.append(conformance.row(family_tokenizer(fam), fam))
        except RollgymError as exc:
            console.print(f"[red]error:[/red] {fam.name}: {exc}")
            raise typer.Exit(2) from None
    if markdown:
        print(conformance.markdown(rows), end="")
    else:
        table = Table(title="rollgym check-template --all: each family against its own reference")
        for col in ["family", "reference", *(conformance.TITLES[s] for s in conformance.SCENARIOS)]:
            table.add_column(col, overflow="fold")
        colors = {"exact": "green", "exact (rewrites)": "cyan", "unsupported": "yellow", "fail": "red"}
        for r in rows:
            cells = [f"[{colors[c.status]}]{c.status}[/]" for c in r.cells]
            table.add_row(r.family, r.reference, *cells)
        console.print(table)
        for r in rows:
            for c in r.cells:
                if c.status in ("unsupported", "fail"):
                    console.print(f"{r.family} / {conformance.TITLES[c.scenario]}: {c.status}: {c.detail}")
    if any(c.status == "fail" for r in rows for c in r.cells):
        raise typer.Exit(1)


def token_demo(
    model: str = typer.Option("smollm2-135m", help="Model spec whose tokenizer and template to use."),
) -> None:
    """A token-exact demo: a scripted conversation, its trajectory, and what re-tokenizing would change."""
    run_demo(model)


def run_demo(model: str) -> None:
    """Certify the pair, build a two-turn trajectory with a non-canonical sampled split, and compare."""
    console = Console()
    tok = load_chat_tokenizer(model)
    report = tok.certify(strict=False)
    console.print(
        f"[bold]{model}[/bold]: certification {'passed' if report.passed else 'FAILED'} "
        f"({sum(p.status == 'pass' for p in report.probes)} probes equal a full render)"
    )
    messages = [{"role": "user", "content": "Say hello world, then add 2 and 3."}]
    traj = tok.start(messages)
    # A sampler may emit ' hello' + 'world' as two tokens; BPE would re-encode the text differently.
    first = tok.encode(" hello") + tok.encode("world") + [tok.end_of_turn_id]
    traj.add_completion(first, [-0.7] * len(first), "stop")
    bridge = traj.add_messages([{"role": "user", "content": "Now 2 + 3?"}])
    second = tok.encode("5") + [tok.end_of_turn_id]
    traj.add_completion(second, [-0.1] * len(second), "stop")
    out = traj.to_rollout_dict()
    console.print(
        f"prompt: {len(out['prompt_ids'])} ids; completion: {len(out['completion_ids'])} ids "
        f"({sum(out['env_mask'])} sampled, {len(out['env_mask']) - sum(out['env_mask'])} environment)"
    )
    console.print(f"bridge text: {tok.hf.decode(bridge)!r}")
    rerendered = tok.encode(
        tok.render(
            messages
            + [
                {"role": "assistant", "content": tok.hf.decode(first[:-1])},
                {"role": "user", "content": "Now 2 + 3?"},
                {"role": "assistant", "content": "5"},
            ]
        )
    )
    exact = out["prompt_ids"] + out["completion_ids"]
    console.print(f"sampled ids kept verbatim: {exact[len(out['prompt_ids']) :][: len(first)] == first}")
    console.print(
        f"decode + re-render gives the same ids: {rerendered[: len(exact)] == exact} "
        "(a text-based loop would train on ids the model never sampled)"
    )
    console.print(json.dumps({k: v[:12] + (["..."] if len(v) > 12 else []) for k, v in out.items()}))


def history_cost(
    run_dir: str = typer.Argument(..., help="a `rollgym generate --out` directory"),
    model: str = typer.Option(..., "--model", help="the tokenizer the run used: a spec, `hf:/dir` or a directory"),
    chat_template: str | None = typer.Option(None, "--chat-template", help="the Jinja template the run used"),
) -> None:
    """Per rollout, the training samples and tokens `--history keep` and `--history template` give; writes
    RUN_DIR/history_costs.jsonl."""
    from pathlib import Path

    from rollgym.rollouts.history import history_costs
    from rollgym.rollouts.output import ROLLOUTS_FILE, read_rollouts

    console = Console()
    try:
        tok = load_chat_tokenizer(model, chat_template)
        rollouts = [r for r in read_rollouts(Path(run_dir) / ROLLOUTS_FILE) if r.token_exact and r.turns]
    except (RollgymError, OSError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    totals = {"keep": [0, 0], "template": [0, 0]}
    lines = []
    for r in rollouts:
        try:
            cost = history_costs(r, tok)
        except RollgymError as exc:
            console.print(f"{r.task_id}#{r.sample_index}: cannot render again ({exc})")
            continue
        for mode, c in cost.items():
            totals[mode][0] += c.samples
            totals[mode][1] += c.tokens
        lines.append(
            json.dumps(
                {
                    "id": r.id,
                    "task_id": r.task_id,
                    "sample_index": r.sample_index,
                    "history": r.history,
                    **{m: c.model_dump() for m, c in cost.items()},
                }
            )
        )
    (Path(run_dir) / "history_costs.jsonl").write_text("".join(f"{line}\n" for line in lines))
    n = max(len(lines), 1)
    console.print(f"{len(lines)} rollouts ({run_dir}/history_costs.jsonl):")
    for mode, (samples, tokens) in totals.items():
        console.print(f"  {mode:<8} {samples:>7} samples ({samples / n:.2f} per rollout), {tokens:>10,} tokens")


def register(app: typer.Typer) -> None:
    """Add the tokenization commands to the `rollgym` CLI."""
    app.command("check-template")(check_template)
    app.command("token-demo")(token_demo)
    app.command("history-cost")(history_cost)
