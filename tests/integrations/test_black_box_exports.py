"""Black-box agents' rollouts reach every trainer as the loop's do: the real `openai` and `anthropic` clients through
rollgym's recording proxy (`rg.run_agents`; the real SmolLM2-135M, and a scripted model for tool turns), then
`rollgym export RUN --format F` for every trainer. Each export holds the proxy's rollouts token by token (ids, mask,
sampling logprobs, reward, GRPO group), and verl's, SkyRL's, OpenRLHF's, verifiers' and ART's own code read theirs
(side scripts beside their own tests); mini-swe-agent, the real CLI in a sandbox, reaches every export the same way."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from black_box_runs import TOOL_QUESTION, black_box_run
from support.trainer_venv import run_side
from typer.testing import CliRunner

from rollgym.cli.app import app
from rollgym.rollouts.output import read_rollouts

pytestmark = pytest.mark.slow
FORMATS = ["trl", "verl", "skyrl", "openrlhf", "verifiers", "slime", "areal", "art"]
FILES = {
    "trl": "rollouts.parquet",
    "verl": "verl.jsonl",
    "skyrl": "skyrl.json",
    "openrlhf": "openrlhf.jsonl",
    "verifiers": "verifiers.jsonl",
    "slime": "slime.jsonl",
    "areal": "areal.jsonl",
    "art": "art.jsonl",
}
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def black_box(tool_tok, tmp_path_factory):
    run = black_box_run(tmp_path_factory.mktemp("black-box") / "run", tool_tok)
    export_all(run, 8)
    return run, list(read_rollouts(run / "rollouts.jsonl"))


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a, b, strict=True))


def test_the_proxy_run_holds_multi_turn_token_exact_rollouts_from_both_clients_with_tool_calls(black_box):
    _, rollouts = black_box
    assert len(rollouts) == 8 and all(r.error is None and r.token_exact and r.samples() for r in rollouts)
    assert {r.task_id for r in rollouts} == {"openai-model", "anthropic-model", "openai-tools", "anthropic-tools"}
    for r in rollouts:
        roles = [m["role"] for m in r.messages()]
        assert len(r.turns) >= 2 and roles.count("assistant") == len(r.turns)
        if r.task_id.endswith("tools"):  # two tool calls, their results, an answer: environment ids between turns
            assert roles.count("tool") == 2 and 0 in r.token_view()["env_mask"]
    assert {r.engine for r in rollouts if r.task_id.endswith("model")} != {"scripted"}


def views(rollouts) -> dict[str, dict]:
    return {r.id: r.token_view() | {"reward": r.reward, "group": r.group_id} for r in rollouts}


def check_exports(run: Path, rollouts) -> None:
    """Every offline export of `run` (not verifiers' and ART's, read by their own code) holds `rollouts` token by
    token: prompt, completion, mask and sampling logprobs per rollout, its reward."""
    import datasets

    want = views(rollouts)
    by_sample = {(r.group_id, r.sample_index): r.id for r in rollouts}
    got: dict[str, dict[str, tuple]] = {f: {} for f in FORMATS if f not in ("verifiers", "art")}
    for row in datasets.Dataset.from_parquet(str(run / FILES["trl"])):
        got["trl"][row["id"]] = (row["prompt_ids"], row["completion_ids"], row["env_mask"], row["logprobs"])
    for row in lines(run / FILES["verl"]):
        rid = row["extra_fields"]["rollgym_rollout_id"]
        got["verl"][rid] = (row["prompt_ids"], row["response_ids"], row["response_mask"], row["response_logprobs"])
        assert row["reward_score"] == want[rid]["reward"] and row["uid"] == want[rid]["group"]
    sky = json.loads((run / FILES["skyrl"]).read_text())
    for i, tid in enumerate(sky["trajectory_ids"]):
        rid = by_sample[(tid["instance_id"], tid["repetition_id"])]
        got["skyrl"][rid] = (
            sky["prompt_token_ids"][i],
            sky["response_ids"][i],
            sky["loss_masks"][i],
            sky["rollout_logprobs"][i],
        )
        assert sky["rewards"][i] == want[rid]["reward"]
    for row in lines(run / FILES["openrlhf"]):  # whole sequence: the actions are the sampled ranges
        rid, seq = row["rollgym"]["rollout_id"], row["observation_tokens"]
        n = len(want[rid]["prompt_ids"])
        mask = [0] * len(seq)
        for start, end in row["action_ranges"]:
            mask[start:end] = [1] * (end - start)
        got["openrlhf"][rid] = (seq[:n], seq[n:], mask[n:], row["rollout_log_probs"][n:])
        assert row["reward"] == want[rid]["reward"]
    for row in lines(run / FILES["slime"]):
        rid, cut = row["metadata"]["rollgym_rollout_id"], len(row["tokens"]) - row["response_length"]
        got["slime"][rid] = (row["tokens"][:cut], row["tokens"][cut:], row["loss_mask"], row["rollout_log_probs"])
        assert row["reward"] == want[rid]["reward"] and row["status"] in ("completed", "truncated")
    for row in lines(run / FILES["areal"]):  # whole sequence, unshifted
        rid, n = row["rollout_id"], len(want[row["rollout_id"]]["prompt_ids"])
        ids, mask, logprobs = row["input_ids"][0], row["loss_mask"][0], row["logprobs"][0]
        got["areal"][rid] = (ids[:n], ids[n:], mask[n:], logprobs[n:])
        assert row["rewards"] == [want[rid]["reward"]] and not any(mask[:n])
    for fmt, rows in got.items():
        assert set(rows) == set(want), fmt
        for rid, (prompt, completion, mask, logprobs) in rows.items():
            view = want[rid]
            assert prompt == view["prompt_ids"] and completion == view["completion_ids"], fmt
            assert list(mask) == view["env_mask"] and close(list(logprobs), view["logprobs"]), fmt


def export_all(run: Path, rows: int) -> None:
    for fmt in FORMATS:
        done = CliRunner().invoke(app, ["export", str(run), "--format", fmt])
        assert done.exit_code == 0 and f"wrote {rows} rows" in done.output, (fmt, done.output)


def test_every_trainers_export_holds_the_proxy_rollouts_token_by_token(black_box):
    check_exports(*black_box)


def test_verls_own_worker_steps_batch_the_proxy_rollouts(black_box, tmp_path):
    """verl's `AgentLoopOutput`, its worker's post-processing into a batch and its GRPO advantage over the export,
    fitted to the lengths verl_side.py configures (`--prompt-length 512 --response-length 96`)."""
    from rollgym.engines.default_model import smollm2_dir

    run, rollouts = black_box
    exported = tmp_path / "verl.jsonl"
    args = ["export", str(run), "--format", "verl", "--prompt-length", "512", "--response-length", "96"]
    assert CliRunner().invoke(app, [*args, "--out", str(exported)]).exit_code == 0
    work = tmp_path / "work"
    work.mkdir()
    side = HERE / "verl" / "verl_export_side.py"
    out = tmp_path / "out.json"
    batch = run_side("verl", side, [exported, work, smollm2_dir(), out], out, extra_path=side.parent)
    by_id = {r.id: r for r in rollouts}
    assert sorted(batch["rollout_ids"]) == sorted(by_id)
    for i, rid in enumerate(batch["rollout_ids"]):
        rollout = by_id[rid]
        view = rollout.token_view()
        response, prompt = view["completion_ids"][:96], view["prompt_ids"][-512:]
        n = len(response)  # verl's layout: prompts left-padded, responses right-padded
        assert batch["responses"][i][:n] == response and batch["prompts"][i][-len(prompt) :] == prompt
        assert batch["response_mask"][i][:n] == view["env_mask"][:n] and not any(batch["response_mask"][i][n:])
        assert close(batch["rollout_log_probs"][i][:n], view["logprobs"][:n])
        assert max(batch["rm_scores"][i], key=abs) == rollout.reward
        expected = {1.0: 0.7071, 0.0: -0.7071, 0.5: 0.0}[rollout.reward]  # GRPO by uid, on sampled ids only
        for a, m in zip(batch["advantages"][i], batch["response_mask"][i], strict=True):
            assert math.isclose(a, expected if m else 0.0, abs_tol=1e-3)


def test_openrlhfs_own_experience_steps_read_the_proxy_rollouts(black_box, tmp_path):
    """OpenRLHF's `_process_response_into_experience` per exported executor output, its batching and its
    `group_norm` advantage: the whole sequence, the action mask and logprobs shifted by one as OpenRLHF shifts them."""
    from rollgym.engines.default_model import smollm2_dir

    run, rollouts = black_box
    side = HERE / "openrlhf" / "openrlhf_export_side.py"
    out = tmp_path / "out.json"
    batch = run_side("openrlhf", side, [run / FILES["openrlhf"], 1024, smollm2_dir(), out], out, extra_path=side.parent)
    by_id = {r.id: r for r in rollouts}
    assert sorted(batch["rollout_ids"]) == sorted(by_id)
    for i, rid in enumerate(batch["rollout_ids"]):
        rollout, attention = by_id[rid], batch["attention_mask"][i]
        view = rollout.token_view()
        start, n, p = attention.index(1), sum(attention), len(view["prompt_ids"])
        assert batch["sequences"][i][start : start + n] == view["prompt_ids"] + view["completion_ids"]
        # position j scores token j + 1: an action where that token was sampled, with its sampling logprob
        want_mask = [0] * (p - 1) + view["env_mask"]
        want_lp = [0.0] * (p - 1) + view["logprobs"]
        assert batch["action_mask"][i][start : start + n - 1] == want_mask
        assert close(batch["rollout_log_probs"][i][start : start + n - 1], want_lp)
        expected = {1.0: 0.7071, 0.0: -0.7071, 0.5: 0.0}[rollout.reward]  # group_norm over each group of two
        for a, m in zip(batch["advantages"][i], batch["action_mask"][i], strict=True):
            assert not m or math.isclose(a, expected, abs_tol=1e-3)


def test_skyrls_own_trainer_steps_read_the_proxy_rollouts(black_box, tmp_path):
    """SkyRL's validation, post-processing, tensorizing, GRPO advantage and PPO loss over the proxy runs' export."""
    from rollgym.engines.default_model import smollm2_dir

    run, rollouts = black_box
    side = HERE / "skyrl" / "skyrl_export_side.py"
    batch = run_side("skyrl", side, [run / FILES["skyrl"], smollm2_dir(), tmp_path / "out.json"], tmp_path / "out.json")
    by_sample = {(r.group_id, r.sample_index): r for r in rollouts}
    groups = [g for g, _ in batch["trajectory_ids"]]
    assert [g for k, g in enumerate(groups) if k == 0 or g != groups[k - 1]] == list(dict.fromkeys(groups))
    for i, (group, k) in enumerate(batch["trajectory_ids"]):
        rollout = by_sample[(group, k)]
        view = rollout.token_view()
        response, prompt = view["completion_ids"], view["prompt_ids"]
        n = len(response)  # SkyRL's layout: the whole sequence left-padded, response-level tensors right-aligned
        assert batch["sequences"][i][-n:] == response and batch["sequences"][i][-n - len(prompt) : -n] == prompt
        assert batch["loss_mask"][i][-n:] == [float(m) for m in view["env_mask"]] and not any(
            batch["loss_mask"][i][:-n]
        )
        assert close(batch["rollout_logprobs"][i][-n:], view["logprobs"])
        # GRPO over each group of two, on the whole response (SkyRL's response_mask; its loss mask drops tool ids)
        expected = {1.0: 0.7071, 0.0: -0.7071, 0.5: 0.0}[rollout.reward]
        assert all(math.isclose(a, expected, abs_tol=1e-3) for a in batch["advantages"][i][-n:])
    assert math.isfinite(batch["loss"])


def test_verifiers_own_code_reads_the_proxy_rollouts(black_box, tmp_path):
    from rollgym.integrations.verifiers import branch_view

    run, rollouts = black_box
    side = HERE / "verifiers" / "verifiers_side.py"
    args = [run / FILES["verifiers"], run / "rollouts.jsonl", tmp_path / "out.json"]
    read = run_side("verifiers", side, args, tmp_path / "out.json", timeout=600, extra_path=side.parent)
    assert read["verifiers"] == "0.4.0" and len(read["episodes"]) == 8
    for rollout in rollouts:
        got, want = read["episodes"][rollout.id], branch_view(rollout)
        assert [b["token_ids"] for b in got["branches"]] == [w["token_ids"] for w in want]
        assert [b["sampled_mask"] for b in got["branches"]] == [w["sampled_mask"] for w in want]
        assert [b["logprobs"] for b in got["branches"]] == [w["logprobs"] for w in want]
        assert got["roundtrip_differs"] == [] and got["same_as_rollgyms_episode"]
        assert got["num_turns"] == len(rollout.turns) and got["group"] == rollout.group_id


def test_arts_own_code_tokenizes_the_proxy_rollouts_into_their_ids(black_box, tool_tok, tmp_path):
    """ART re-renders the messages the clients sent with the template rollgym rendered them with: its tokens are the
    proxy's ids, its mask the env_mask, its logprobs the sampling ones."""
    from rollgym.engines.default_model import smollm2_dir

    run, rollouts = black_box
    template = tmp_path / "template.jinja"
    template.write_text(tool_tok.template)
    side = HERE / "art" / "art_side.py"
    read = run_side(
        "art", side, [run / FILES["art"], template, smollm2_dir(), tmp_path / "out.json"], tmp_path / "out.json"
    )
    for rollout in rollouts:
        (row,) = [r for r in read["rows"] if r["rollout_id"] == rollout.id]
        view = rollout.token_view()
        n = len(view["prompt_ids"])
        assert row["token_ids"] == view["prompt_ids"] + view["completion_ids"], rollout.task_id
        assert row["assistant_mask"] == [0] * n + view["env_mask"], rollout.task_id
        want = [None] * n + [lp if m else None for lp, m in zip(view["logprobs"], view["env_mask"], strict=True)]
        assert row["logprobs"] == want and row["reward"] == rollout.reward
    assert any(TOOL_QUESTION in json.dumps(r.messages()) for r in rollouts)


@pytest.mark.docker
def test_a_built_in_agent_cli_in_its_sandbox_reaches_every_trainers_export(tool_tok, tmp_path, docker_engine):
    """mini-swe-agent (the real CLI, the cheapest built-in agent) in a bundled SWE task's sandbox, through its proxy
    session, over a scripted model (a shell command, then its submit command), n=2: every export holds its
    rollouts token by token, the command's output in the environment ids between its two turns."""
    import rollgym as rg
    from rollgym.agents import agent_spec
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.envs.swe import load_bundled_tasks
    from rollgym.errors import UsageError
    from rollgym.proxy import ProxySettings

    spec = agent_spec("mini-swe-agent", step_limit=2, textbased=True, short_prompts=True, timeout_s=300)
    try:
        spec.executable()
    except UsageError as exc:
        pytest.skip(f"{exc}; skipping the real run")

    def policy(prompt, sampling):
        done = "echo hello-from-sandbox" in tool_tok.decode(list(prompt))  # its first command is in the prompt
        command = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" if done else "echo hello-from-sandbox"
        return tool_tok.encode(f"```bash\n{command}\n```") + [tool_tok.end_of_turn_id]

    run = tmp_path / "run"
    rows = [load_bundled_tasks()[0].model_dump(mode="json")]
    rg.run_agents(
        spec,
        rows,
        rg.Policy(engine=ScriptedEngine(policy), tokenizer=tool_tok),
        out=run,
        n=2,
        grade=False,
        concurrency=1,
        settings=ProxySettings(default_max_tokens=64),
    )
    rollouts = list(read_rollouts(run / "rollouts.jsonl"))
    assert len(rollouts) == 2 and all(r.token_exact and len(r.turns) == 2 for r in rollouts), rollouts[0].error
    view = rollouts[0].token_view()
    bridge = [t for t, m in zip(view["completion_ids"], view["env_mask"], strict=True) if not m]
    assert "hello-from-sandbox" in tool_tok.decode(bridge)  # mini ran the command in its sandbox and sent its output
    export_all(run, 2)
    check_exports(run, rollouts)
