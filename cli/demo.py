"""`rollgym demo`: the main job on the embedded model that calls tools, what it proved, and a viewer to look at it.

The demo runs the bundled SWE tasks with the environment's own tools and system prompt, to which it adds one
worked tool call rendered by the model's own chat template (`demo_env_kwargs`), and says so in its output. The
budgets keep a 0.5B model on 2 CPU cores to minutes: each turn re-reads the whole conversation, so turns and
tokens per turn are what the wall time is made of.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rollgym.engines.default_model import DEMO_MODEL
from rollgym.errors import RollgymError
from rollgym.limits import Limits

if TYPE_CHECKING:  # the CLI imports this module for its defaults: keep it light
    from rollgym.rollouts.records import Rollout
    from rollgym.tokenization import ChatTokenizer

DEMO_LIMITS = Limits(max_turns=4, max_tokens_per_turn=96, timeout_s=900)
DEMO_TASKS = 3  # of the 6 bundled SWE tasks, x 2 samples: 6 rollouts, one batch for the engine
DEMO_TEMPERATURE = 0.7
DEMO_EXAMPLE = ("bash", {"command": 'grep -rn "def " {workdir} | head -20'})


def tool_call_example(tok: ChatTokenizer, name: str, arguments: dict[str, Any]) -> str:
    """The text the model's own chat template renders for one tool call: exactly what the parser reads back."""
    from rollgym.tokenization.messages import make_tool_call

    context = [{"role": "user", "content": "x"}]
    opening = tok.render(context, add_generation_prompt=True)
    full = tok.render([*context, {"role": "assistant", "content": "", "tool_calls": [make_tool_call(name, arguments)]}])
    if not full.startswith(opening):
        raise ValueError("the chat template does not render an assistant turn after its generation prompt")
    text = full[len(opening) :]
    end = tok.hf.decode([tok.end_of_turn_id])
    return text[: text.rfind(end)].strip() if end in text else text.strip()


def demo_env_kwargs(tok: ChatTokenizer) -> dict[str, Any]:
    """SWE's system prompt plus one worked tool call in the model's own format, and a nudge (after a reply
    without a tool call) that repeats it."""
    from rollgym.envs.swe.env import NUDGE, SYSTEM_PROMPT

    name, args = DEMO_EXAMPLE
    example = tool_call_example(tok, name, args)
    return {
        "system_prompt": f"{SYSTEM_PROMPT}\n\nCall exactly one tool per reply, and write nothing else. For example, "
        f"to list the functions in the repository, reply with:\n{example}",
        "nudge": f"{NUDGE} Reply with one tool call only, in this format:\n{example}",
    }


def replay(r: Rollout, tok: ChatTokenizer) -> dict[str, list]:
    """Rebuild a rollout's token view from its messages and sampled ids alone: the prompt rendered from the
    initial messages, each turn's sampled ids kept verbatim, each bridge derived from the environment's
    messages. Equal to the stored view iff the stored ids, logprobs and env_mask are what the messages imply."""
    traj = tok.start(r.initial_messages, r.tools or None)
    for t in r.turns:
        traj.add_completion(t.completion_ids, t.logprobs, t.finish_reason)
        if t.bridge_ids:
            traj.add_messages(t.env_messages)
    return traj.to_rollout_dict()


def prove(rollouts: list[Rollout], tok: ChatTokenizer | None) -> dict[str, Any]:
    """Check, rollout by rollout, what a token-exact multi-turn run must satisfy, and count what the model did.

    - token exact: replaying the rollout through the tokenizer (`replay`) gives the stored prompt and
      completion ids exactly, and each turn's prompt (`Turn.prompt_len`) is the one before + its sampled
      ids + its bridge;
    - masks aligned: the replay gives the stored logprobs and env_mask exactly (1 on sampled ids only);
    - re-tokenized: whether rendering the decoded conversation and tokenizing it again would give other ids.
    Without a tokenizer only the prompt-length chain is checked.
    """
    exact = aligned = multi = with_call = rewarded = retokenized_differs = 0
    calls = failed = sampled = env_ids = 0
    turns = []
    for r in rollouts:
        view = r.token_view(keep_trailing_bridge=True)
        expected, chained = len(r.prompt_ids), bool(r.turns)
        for t in r.turns:
            chained = chained and t.prompt_len == expected
            expected += len(t.completion_ids) + len(t.bridge_ids)
        same_ids = same_masks = chained
        if tok is not None and chained:
            try:
                again = replay(r, tok)
            except RollgymError:  # the records do not replay: neither claim holds
                again = {}
            same_ids = (again.get("prompt_ids"), again.get("completion_ids")) == (r.prompt_ids, view["completion_ids"])
            same_masks = (again.get("logprobs"), again.get("env_mask")) == (view["logprobs"], view["env_mask"])
        exact += same_ids and r.token_exact
        aligned += same_masks
        multi += len(r.turns) >= 2
        executed = [c for t in r.turns for c in t.tool_calls]
        with_call += any(not c.failed for c in executed)
        rewarded += r.reward > 0
        calls, failed = calls + len(executed), failed + sum(c.failed for c in executed)
        sampled, env_ids = sampled + sum(view["env_mask"]), env_ids + len(view["env_mask"]) - sum(view["env_mask"])
        turns.append(len(r.turns))
        if tok is not None and r.turns:
            ids = r.prompt_ids + r.token_view()["completion_ids"]
            try:
                rendered = tok.encode(tok.render(r.messages(), tools=r.tools or None))
            except RollgymError:  # a conversation the template refuses to re-render counts as differing
                rendered = []
            retokenized_differs += rendered[: len(ids)] != ids
    return {
        "rollouts": len(rollouts),
        "token_exact": exact,
        "masks_aligned": aligned,
        "multi_turn": multi,
        "with_tool_call": with_call,
        "tool_calls": calls,
        "tool_calls_failed": failed,
        "rewarded": rewarded,
        "sampled_ids": sampled,
        "environment_ids": env_ids,
        "turns_max": max(turns, default=0),
        "turns_mean": sum(turns) / len(turns) if turns else 0.0,
        "retokenized_differs": retokenized_differs if tok is not None else None,
    }


def proof_lines(p: dict[str, Any], sandbox: str) -> list[str]:
    """What the run proved, one short line per claim (each fits 80 columns)."""
    n = p["rollouts"]
    lines = [
        f"token-exact    {p['token_exact']}/{n}  replaying the messages rebuilds the stored ids exactly",
        f"masks aligned  {p['masks_aligned']}/{n}  env_mask 1 on {p['sampled_ids']:,} sampled ids, 0 on "
        f"{p['environment_ids']:,} environment ids",
        f"multi-turn     {p['multi_turn']}/{n}  reached 2 turns or more (max {p['turns_max']}, mean {p['turns_mean']:.1f})",
        f"tool calls     {p['with_tool_call']}/{n}  ran a well-formed call {sandbox} ({p['tool_calls']} calls, "
        f"{p['tool_calls_failed']} failed)",
        f"rewarded       {p['rewarded']}/{n}  earned a reward above 0 (the task's own grading)",
    ]
    if p["retokenized_differs"] is not None:
        lines.append(
            f"re-tokenized   {p['retokenized_differs']}/{n}  would train on other ids if decoded and re-tokenized"
        )
    return lines


def run_lines(rollouts: list[Rollout], prompt_note: str) -> list[str]:
    """What the run was given, stated so a reader can tell it is what a user gets: the environment, the tasks,
    the tools and where the system prompt comes from."""
    if not rollouts:
        return []
    env = rollouts[0].env_id
    tasks = list(dict.fromkeys(r.task_id for r in rollouts))
    tools = sorted({t["function"]["name"] for r in rollouts for t in (r.tools or [])})
    return [
        f"environment    {env}: {len(tasks)} tasks x {len(rollouts) // max(len(tasks), 1)} samples ({', '.join(tasks)})",
        f"tools          {', '.join(tools) or 'none'} (the environment's own)",
        f"system prompt  {prompt_note}",
    ]


def write_proof(out: str | Path, proof: dict[str, Any]) -> Path:
    path = Path(out) / "proof.json"
    path.write_text(json.dumps(proof, indent=2))
    return path


def demo_cmd(
    out: str = typer.Option("runs/demo", "--out", help="output directory (re-running resumes it)"),
    model: str = typer.Option(DEMO_MODEL, "--model", help="engine spec (`smollm2-135m`: the fast model, no tools)"),
    n: int = typer.Option(2, "--n", min=1, help="samples per task"),
    num_tasks: int = typer.Option(DEMO_TASKS, "--num-tasks", min=1, help="how many of the bundled tasks"),
    max_turns: int = typer.Option(DEMO_LIMITS.max_turns, "--max-turns", min=1),
    max_tokens_per_turn: int = typer.Option(DEMO_LIMITS.max_tokens_per_turn, "--max-tokens-per-turn", min=1),
) -> None:
    """The main job on the embedded model that calls tools: rollouts on the bundled SWE tasks in Docker sandboxes
    (or, when no Docker engine can run, on the no-Docker Calculator environment), written to --out; then
    what the run proved, and a viewer (OUT/view.html)."""
    from rich.console import Console

    from rollgym.cli.generate import run_generate
    from rollgym.engines import SamplingParams
    from rollgym.engines.specs import parse_spec
    from rollgym.rollouts.output import ROLLOUTS_FILE, read_rollouts
    from rollgym.rollouts.policy import certified_tokenizer
    from rollgym.tokenization import ChatTokenizer
    from rollgym.view import write_viewer

    env, tasks, env_kwargs, where = "rollgym/SWE-v0", "bundled", {}, "in Docker"
    try:
        from rollgym.envs.sandbox import ensure_engine

        ok, why = ensure_engine()
    except Exception as exc:  # noqa: BLE001 - no docker SDK connection at all
        ok, why = False, str(exc)
    if not ok:
        typer.echo(
            f"note: no Docker engine can run here ({why}); running the no-Docker environment "
            "rollgym/Calculator-v0 instead",
            err=True,
        )
        env, tasks, where = "rollgym/Calculator-v0", None, "in the environment"
    tok, prompt_note = None, "the environment's own"
    try:
        tok = certified_tokenizer(parse_spec(model).tokenizer_source or model, need_tools=True)
        # A turn cut by max_tokens is closed and answered (truncation "close"), so one long reply does not end the episode.
        tok = ChatTokenizer(tok.hf, chat_template=tok.template, tool_parser=tok.tool_parser_name, truncation="close")
        if env == "rollgym/SWE-v0":
            env_kwargs = demo_env_kwargs(tok)
            prompt_note = (
                "SWE's own (envs/swe/env.py) + one worked bash call in this model's template (demo_env_kwargs)"
            )
    except RollgymError:  # the model's own error is reported by run_generate below
        pass
    limits = DEMO_LIMITS.model_copy(update={"max_turns": max_turns, "max_tokens_per_turn": max_tokens_per_turn})
    code = run_generate(
        env=env,
        tasks=tasks,
        model=model,
        n=n,
        concurrency=n * num_tasks,
        out=out,
        resume=True,
        num_tasks=num_tasks,
        limits=limits,
        sampling=SamplingParams(temperature=DEMO_TEMPERATURE, seed=0),
        env_kwargs=env_kwargs,
        tokenizer=tok,
        truncation="close",
    )
    path = os.path.join(out, ROLLOUTS_FILE)
    if code != 0 or not os.path.exists(path):  # a setup error, Ctrl-C (130) or SIGTERM (143)
        raise typer.Exit(code)
    console = Console(stderr=True)
    rollouts = list(read_rollouts(path))
    proof = prove(rollouts, tok)
    write_proof(out, proof)
    console.print(f"[bold]What it ran[/bold] ({model}, {limits.max_turns} turns x {limits.max_tokens_per_turn} tokens)")
    for line in run_lines(rollouts, prompt_note):
        console.print("  " + line, soft_wrap=True)
    console.print(f"[bold]What this run shows[/bold] ({proof['rollouts']} rollouts, {out}/proof.json)")
    for line in proof_lines(proof, where):
        console.print("  " + line, soft_wrap=True)
    view_path = write_viewer(out, tokenizer=model, log=lambda m: console.print(m))
    console.print(f"[bold]viewer[/bold]: {view_path}", soft_wrap=True)
    console.print(f"  open it in a browser, or serve it: rollgym view {out} --serve", soft_wrap=True)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add `rollgym demo` to the CLI."""
    app.command("demo")(demo_cmd)
