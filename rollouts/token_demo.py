"""`rollgym token-demo`: show a token-exact multi-turn trajectory on the embedded default model's tokenizer."""

from __future__ import annotations

import json

from rich.console import Console

from .tokenizer_loading import load_chat_tokenizer


def run_demo(model: str) -> None:
    """Certify the pair, build a two-turn trajectory with a non-canonical sampled split, and compare."""
    console = Console()
    tok = load_chat_tokenizer(model)
    report = tok.certify(strict=False)
    console.print(f"[bold]{model}[/bold]: certification {'passed' if report.passed else 'FAILED'} "
                  f"({sum(p.status == 'pass' for p in report.probes)} probes equal a full render)")
    messages = [{"role": "user", "content": "Say hello world, then add 2 and 3."}]
    traj = tok.start(messages)
    # A sampler may emit ' hello' + 'world' as two tokens; BPE would re-encode the text differently.
    first = tok.encode(" hello") + tok.encode("world") + [tok.end_of_turn_id]
    traj.add_completion(first, [-0.7] * len(first), "stop")
    bridge = traj.add_messages([{"role": "user", "content": "Now 2 + 3?"}])
    second = tok.encode("5") + [tok.end_of_turn_id]
    traj.add_completion(second, [-0.1] * len(second), "stop")
    out = traj.to_rollout_dict()
    console.print(f"prompt: {len(out['prompt_ids'])} ids; completion: {len(out['completion_ids'])} ids "
                  f"({sum(out['env_mask'])} sampled, {len(out['env_mask']) - sum(out['env_mask'])} environment)")
    console.print(f"bridge text: {tok.hf.decode(bridge)!r}")
    rerendered = tok.encode(tok.render(messages + [
        {"role": "assistant", "content": tok.hf.decode(first[:-1])}, {"role": "user", "content": "Now 2 + 3?"},
        {"role": "assistant", "content": "5"}]))
    exact = out["prompt_ids"] + out["completion_ids"]
    console.print(f"sampled ids kept verbatim: {exact[len(out['prompt_ids']):][:len(first)] == first}")
    console.print(f"decode + re-render gives the same ids: {rerendered[:len(exact)] == exact} "
                  "(a text-based loop would train on ids the model never sampled)")
    console.print(json.dumps({k: v[:12] + (['...'] if len(v) > 12 else []) for k, v in out.items()}))
