"""Token fidelity side by side: for the same scripted episodes on real chat templates, what each framework's method
makes of the ids the engine sampled. Runs in rollgym's venv (TRL 1.16 is installed there, so its own bridge code runs).

The engine is scripted and exact (it returns ids and text, as vLLM does with `return_token_ids`): every turn it
writes the family's own rendering of a tool call (with a reasoning block where the family reasons), sampled in a
non-canonical segmentation (one multi-character token split in two that decode to the same text; real samplers do
this), so a method that decodes the text and tokenizes it again cannot get the sampled ids back. Four turns per
episode, 8 episodes per family. Counted per method:
- differing: samples whose training ids (the tokens trained on) are not the ids the engine sampled;
- samples/rollout: training samples one episode becomes (a rewritten history splits it);
- bridges off-template: turns whose environment tokens differ from the template's rendering in context (what
  rollgym certifies against; a bridge that differs teaches the model a format its template never shows);
- logprob coverage: the share of trained sampled tokens that carry the engine's logprob.
Methods: rollgym `keep` and `template` (its real loop, a ScriptedEngine); TRL 1.16's tool loop (prompt + sampled ids
+ `GRPOTrainer._get_tool_suffix_ids`, TRL's own code, called on a stand-in `self` holding the tokenizer); on Qwen3,
verl 0.9.1's `ToolAgentLoop` and SkyRL 0.4.0's `SkyRLGymGenerator.agent_loop`, each trainer's own loop run in its own
venv (run_verl_loop.py, run_skyrl_loop.py; skipped, saying why, where .ci/trainers-up has not built it), with their
loop time per turn beside rollgym's (engine time excluded); SkyRL's
generator as its docs describe it (codepath 1, the fixed base; Qwen3 goes through codepath 3, the whole chat
re-tokenized each turn); a chat-completions client (verifiers' eval client, OpenAI-client loops around OpenEnv):
messages come back as text, and a trainer tokenizes the final conversation again.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

FAMILIES = {"qwen3": "qwen3", "llama-3.1": "llama3_1", "glm-4.5": "glm-4.5"}
LLAMA_SPECIALS = [
    "<|begin_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
]
TURNS, EPISODES = 4, 8


def family_chat_tokenizer(name: str):
    """rollgym's ChatTokenizer for a family, on the vocabulary its tests use."""
    from rollgym.cli.vocabularies import family_tokenizer, qwen_vocabulary
    from rollgym.tokenization import ChatTokenizer
    from rollgym.tokenization.families import family, template_text

    if name != "llama3_1":
        tok = family_tokenizer(name)
        tok.published_template = family(name).template_text()
        return tok
    from tokenizers import AddedToken

    hf = copy.deepcopy(qwen_vocabulary())
    hf.add_tokens([AddedToken(t, special=True, normalized=False) for t in LLAMA_SPECIALS], special_tokens=True)
    hf.bos_token = "<|begin_of_text|>"
    tok = ChatTokenizer(hf, chat_template=template_text("llama3_1.jinja"))
    tok.published_template = template_text("llama3_1.jinja")
    return tok


def split_one_token(tok, ids: list[int]) -> list[int]:
    """`ids` with its first plain multi-character token split in two tokens that decode to the same text."""
    special = set(tok.hf.all_special_ids)
    for i, t in enumerate(ids):
        piece = tok.decode([t])
        if t in special or len(piece) < 3 or not piece.strip():
            continue
        head, tail = tok.encode(piece[0]), tok.encode(piece[1:])
        if len(head) == 1 and tok.decode(head + tail) == piece and head + tail != [t]:
            return ids[:i] + head + tail + ids[i + 1 :]
    return ids


def scripted_turns(tok, tools, reasoning: bool, episode: int) -> list[list[int]]:
    """The ids the model samples each turn: the family's rendering of a call (reasoning first where it reasons)."""
    out = []
    for k in range(TURNS):
        name, args = ("submit", {"answer": 7}) if k == TURNS - 1 else ("add", {"a": 10 * episode + k, "b": 2})
        call = {"id": f"call_{k}", "type": "function", "function": {"name": name, "arguments": args}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        if reasoning:
            message["reasoning_content"] = f"I need {name} with {json.dumps(args)}."
        result = {"role": "tool", "tool_call_id": call["id"], "name": name, "content": "12"}
        conv = [{"role": "user", "content": "x"}, message, result]
        written = tok.canonical_completion(conv, 1, tools, {})
        out.append(split_one_token(tok, tok.ids_of(written)))
    return out


def calculator_tools() -> list[dict]:
    from workload import calculator_tools as tools

    return tools()


async def rollgym_method(tok, turns_of, history: str, timed: bool = False) -> dict:
    """rollgym's own loop on the Calculator with a ScriptedEngine replaying each episode's sampled ids."""
    from rollgym import Limits, Policy
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.envs.builtin.calculator import CalculatorEnv
    from rollgym.rollouts.loop import run_rollout

    stats = {"differing": 0, "samples": 0, "off_template": 0, "covered": 0, "sampled": 0, "episodes": 0}
    for e, turns in enumerate(turns_of):
        policy = Policy(engine=ScriptedEngine(turns), tokenizer=tok, history=history)
        env = CalculatorEnv()
        t = time.perf_counter()
        r = await run_rollout(env, policy, CalculatorEnv.default_tasks(EPISODES)[e], limits=Limits(max_turns=TURNS))
        if timed:
            TURN_SECONDS.setdefault(f"rollgym ({history})", []).append((time.perf_counter() - t) / max(len(r.turns), 1))
        samples = r.samples()
        stats["episodes"] += 1
        stats["samples"] += len(samples)
        trained = [s["completion_ids"][i] for s in samples for i, m in enumerate(s["env_mask"]) if m]
        sampled = [t for turn in turns[: len(r.turns)] for t in turn]
        stats["differing"] += _differing(samples, turns[: len(r.turns)])
        stats["covered"] += sum(
            1 for s in samples for i, m in enumerate(s["env_mask"]) if m and s["logprobs"][i] != 0.0
        )
        stats["sampled"] += len(trained)
        stats["off_template"] += 0 if len(trained) == len(sampled) else 1  # bridges are certified in context
    return stats


def _differing(samples: list[dict], turns: list[list[int]]) -> int:
    """How many samples train on tokens that are not the sampled ones: each sample's trained (mask 1) tokens must be
    the next sampled turns, verbatim and in order."""
    differing, at = 0, 0
    for sample in samples:
        trained = [t for t, m in zip(sample["completion_ids"], sample["env_mask"], strict=True) if m]
        end, run = at, []
        while end < len(turns) and len(run) < len(trained):
            run += turns[end]
            end += 1
        differing += run != trained
        at = end
    return differing


def reference_bridges(tok, tools, turns) -> list[list[int]]:
    """The template's bridges in context, as rollgym builds (and certifies) them, for one episode."""
    traj = tok.start([{"role": "user", "content": "What is 1 + 2?"}], tools)
    bridges = []
    for ids in turns[:-1]:
        traj.add_completion(ids, None, "stop")
        parsed = tok.parse_completion(ids, tools)
        traj.messages.append(parsed.message)
        call = parsed.message["tool_calls"][0]
        t = time.perf_counter()
        bridges.append(
            traj.add_messages([{"role": "tool", "tool_call_id": call["id"], "name": "add", "content": "12"}])
        )
        BRIDGE_SECONDS["rollgym"].append(time.perf_counter() - t)
    return bridges


#: Seconds per bridge (the tokens of one tool result) by method, filled as the methods run.
BRIDGE_SECONDS: dict[str, list[float]] = {"rollgym": [], "TRL": [], "SkyRL": []}
#: Loop seconds per turn (an episode's wall time, minus the engine's, over its turns) by agent loop, on qwen3.
TURN_SECONDS: dict[str, list[float]] = {}


def templated_hf(tok):
    """A copy of the family's Hugging Face tokenizer with its published chat template (what a trainer is handed)."""
    hf = copy.deepcopy(tok.hf)
    hf.chat_template = tok.published_template
    return hf


def trl_method(tok, tools, turns_of) -> dict:
    """TRL 1.16's tool loop: prompt + sampled ids + its own `_get_tool_suffix_ids` bridge per tool turn."""
    from trl import GRPOTrainer
    from trl.chat_template_utils import get_training_chat_template

    hf = templated_hf(tok)
    stats = {"differing": 0, "samples": 0, "off_template": 0, "covered": 0, "sampled": 0, "episodes": 0}
    try:
        training_template = get_training_chat_template(hf)
    except ValueError as exc:  # GRPOTrainer(tools=...) refuses the template at start: nothing can be trained
        return {
            **stats,
            "refused": f"{exc}"[:100],
            "episodes": len(turns_of),
            "off_template": len(turns_of) * (TURNS - 1),
        }
    stand_in = SimpleNamespace(  # what GRPOTrainer.__init__ sets: its prefix-preserving training template, if any
        processing_class=hf, chat_template=training_template, chat_template_kwargs={}, _is_vlm=False, _tokenizer=hf
    )
    for turns in turns_of:
        reference = reference_bridges(tok, tools, turns)
        stats["episodes"] += 1
        stats["samples"] += 1  # one sequence: prompt + completions + suffixes
        for ref in reference:
            try:
                t = time.perf_counter()
                suffix = GRPOTrainer._get_tool_suffix_ids(stand_in, [{"role": "tool", "name": "add", "content": "12"}])
                BRIDGE_SECONDS["TRL"].append(time.perf_counter() - t)
            except ValueError as exc:  # TRL refuses the template: the episode cannot be trained
                stats["refused"] = f"{exc}"[:120]
                stats["off_template"] += 1
                continue
            stats["off_template"] += suffix != ref
        n = sum(len(t) for t in turns)
        stats["sampled"] += n
        stats["covered"] += n  # vLLM's logprobs for every sampled token, tool tokens masked
    return stats


def skyrl_method(tok, tools, turns_of, retokenize: bool) -> dict:
    """SkyRL's generator (its docs): codepath 1 (fixed base) keeps sampled ids; codepath 3 re-tokenizes the chat."""
    hf = templated_hf(tok)
    base = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "I am a user."},
        {"role": "assistant", "content": "I am an assistant."},
    ]
    base_ids = hf.apply_chat_template(base, tokenize=True, return_dict=False)
    if hf.eos_token_id in base_ids:
        base_ids = base_ids[: len(base_ids) - base_ids[::-1].index(hf.eos_token_id)]
    stats = {"differing": 0, "samples": 0, "off_template": 0, "covered": 0, "sampled": 0, "episodes": 0}
    for turns in turns_of:
        stats["episodes"] += 1
        stats["samples"] += 1
        n = sum(len(t) for t in turns)
        if retokenize:
            chat = [{"role": "user", "content": "What is 1 + 2?"}]
            for ids in turns:
                chat.append({"role": "assistant", "content": tok.decode(ids)})
                chat.append({"role": "tool", "content": "12"})
            final = hf.apply_chat_template(chat[:-1], tools=tools, tokenize=True, return_dict=False)
            stats["differing"] += not _all_in(final, turns)
            stats["sampled"] += n  # trained on re-tokenized text; no engine logprobs on this path
            continue
        reference = reference_bridges(tok, tools, turns)
        for ref in reference:
            t = time.perf_counter()
            obs = hf.apply_chat_template(
                [*base, {"role": "tool", "content": "12"}], add_generation_prompt=True, tokenize=True, return_dict=False
            )[len(base_ids) :]
            BRIDGE_SECONDS["SkyRL"].append(time.perf_counter() - t)
            stats["off_template"] += obs != ref
        stats["sampled"] += n
        stats["covered"] += n
    return stats


def trainer_loop_method(trainer: str, tok, tools, turns_of, work_dir: Path) -> dict:
    """A trainer's own agent loop in its venv (run_verl_loop.py: verl 0.9.1's `ToolAgentLoop`; run_skyrl_loop.py:
    SkyRL 0.4.0's `SkyRLGymGenerator.agent_loop`) on the same episodes: its training ids are the response ids it masks
    1, its bridges the ids it masks 0 between them, its logprobs the ones it returns for training."""
    python = trainer_python(trainer)
    if python is None:
        return {"unavailable": f"{trainer}'s venv is not built (bash .ci/trainers-up {trainer})"}
    tokenizer_dir = work_dir / "qwen3-tokenizer"
    if not tokenizer_dir.exists():
        templated_hf(tok).save_pretrained(tokenizer_dir)
    episodes = work_dir / "trainer-episodes.json"
    question = "What is 1 + 2?"
    episodes.write_text(json.dumps({"turns": TURNS, "episodes": turns_of, "tools": tools, "question": question}))
    script, extra = {"verl": ("run_verl_loop.py", ["qwen3"]), "skyrl": ("run_skyrl_loop.py", [])}[trainer]
    done = subprocess.run(
        [python, str(Path(__file__).with_name(script)), str(episodes), str(tokenizer_dir), *extra],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": "", "HF_HUB_OFFLINE": "1"},
    )
    rows = [json.loads(line[8:]) for line in done.stdout.splitlines() if line.startswith("EPISODE ")]
    if done.returncode or len(rows) != len(turns_of):
        return {"unavailable": f"{trainer}'s own loop failed: {done.stderr.strip()[-300:]}"}
    stats = {"differing": 0, "samples": 0, "off_template": 0, "covered": 0, "sampled": 0, "episodes": 0}
    label = {"verl": "verl ToolAgentLoop", "skyrl": "SkyRL SkyRLGymGenerator"}[trainer]
    for turns, row in zip(turns_of, rows, strict=True):
        mask = row.get("response_mask") or row["loss_mask"]
        logprobs = row.get("response_logprobs") or row.get("rollout_logprobs") or [0.0] * len(mask)
        ran = turns[: row["generated"]]
        stats["episodes"] += 1
        stats["samples"] += 1
        stats["differing"] += _differing([{"completion_ids": row["response_ids"], "env_mask": mask}], ran)
        stats["sampled"] += sum(mask)
        stats["covered"] += sum(1 for m, lp in zip(mask, logprobs, strict=True) if m and lp != 0.0)
        bridges = _runs(row["response_ids"], mask, 0)
        reference = reference_bridges(tok, tools, turns)
        stats["off_template"] += sum(b != r for b, r in zip(bridges, reference, strict=False))
        stats["off_template"] += abs(len(reference) - len(bridges))
        TURN_SECONDS.setdefault(label, []).append((row["wall_s"] - row["server_s"]) / max(row["generated"], 1))
    return stats


def trainer_python(name: str) -> str | None:
    """A trainer's venv python from .ci/trainers-up, or None where it is not built."""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(["bash", str(root / ".ci" / "trainers-up"), "python", name], capture_output=True, text=True)
    python = out.stdout.strip()
    return python if out.returncode == 0 and python and Path(python).exists() else None


def _runs(ids: list[int], mask: list[int], value: int) -> list[list[int]]:
    """The maximal runs of `ids` whose mask is `value`, between runs of the other value (not at the ends)."""
    runs, current, seen_other = [], [], False
    for t, m in zip(ids, mask, strict=True):
        if m == value and seen_other:
            current.append(t)
        elif m != value:
            if current:
                runs.append(current)
            current, seen_other = [], True
    return runs


def _all_in(seq: list[int], turns: list[list[int]]) -> bool:
    text = "," + ",".join(map(str, seq)) + ","
    return all("," + ",".join(map(str, t)) + "," in text for t in turns)


def chat_client_method(tok, tools, turns_of) -> dict:
    """A chat-completions client (text back): the trainer tokenizes the final conversation again."""
    stats = skyrl_method(tok, tools, turns_of, retokenize=True)
    return stats


def fidelity_rows(work_dir: Path | None = None) -> list[tuple[str, str, dict]]:
    tools = calculator_tools()
    work_dir = Path(work_dir or tempfile.mkdtemp(prefix="fidelity-"))
    rows = []
    for family, name in FAMILIES.items():
        tok = family_chat_tokenizer(name)
        tok.certify()
        reasoning = family != "llama-3.1"
        turns_of = [scripted_turns(tok, tools, reasoning, e) for e in range(EPISODES)]
        rows.append(
            (family, "rollgym, history=keep", asyncio.run(rollgym_method(tok, turns_of, "keep", family == "qwen3")))
        )
        rows.append(
            (
                family,
                "rollgym, history=template",
                asyncio.run(rollgym_method(tok, turns_of, "template", family == "qwen3")),
            )
        )
        rows.append((family, "TRL 1.16 tool loop", trl_method(tok, tools, turns_of)))
        if family == "qwen3":  # the trainers' own loops, on Qwen's format (verl's hermes parser reads its calls)
            verl = trainer_loop_method("verl", tok, tools, turns_of, work_dir)
            rows.append((family, "verl 0.9.1 ToolAgentLoop (its own code)", verl))
            skyrl = trainer_loop_method("skyrl", tok, tools, turns_of, work_dir)
            rows.append((family, "SkyRL 0.4.0 SkyRLGymGenerator (its own code)", skyrl))
        sky = skyrl_method(tok, tools, turns_of, retokenize=family == "qwen3")
        rows.append(
            (family, "SkyRL generator" + (" (codepath 3: Qwen3)" if family == "qwen3" else " (codepath 1)"), sky)
        )
        rows.append(
            (
                family,
                "chat-completions client (verifiers eval, OpenEnv loops)",
                chat_client_method(tok, tools, turns_of),
            )
        )
    return rows


def fidelity_section(_runnable, work_dir) -> None:
    print(f"\n## Token fidelity: {EPISODES} scripted episodes x {TURNS} turns per family, non-canonical sampled ids")
    print(
        "| family | method | samples whose ids differ from the sampled ids | samples per rollout | bridges "
        "off-template | logprob coverage |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for family, method, s in fidelity_rows(work_dir):
        if s.get("unavailable"):
            print(f"| {family} | {method} (not run: {s['unavailable']}) | - | - | - | - |")
            continue
        coverage = s["covered"] / s["sampled"] if s["sampled"] else 0.0
        note = f" (refused: {s['refused']})" if s.get("refused") else ""
        per = f"{s['samples'] / s['episodes']:.2f}" if s["samples"] else "-"
        print(
            f"| {family} | {method}{note} | {s['differing']} of {s['samples']} | {per} | "
            f"{s['off_template']} of {s['episodes'] * (TURNS - 1)} | {coverage:.0%} |"
        )
    print("\nCPU per bridge (one tool result's tokens), median over every family's bridges:")
    import statistics

    for method, seconds in BRIDGE_SECONDS.items():
        if seconds:
            print(f"  {method:<8} {1e3 * statistics.median(seconds):.3f} ms  ({len(seconds)} bridges)")
    print("\nAgent loop wall time per turn, engine time excluded (scripted engine), median over qwen3's episodes:")
    base = statistics.median(TURN_SECONDS.get("rollgym (keep)", [0.0])) or None
    for method, seconds in TURN_SECONDS.items():
        ms = 1e3 * statistics.median(seconds)
        ratio = f", {statistics.median(seconds) / base:.2f}x rollgym keep" if base else ""
        print(f"  {method:<22} {ms:.2f} ms/turn  ({len(seconds)} episodes{ratio})")
