"""The loop on the SWE environment in real Docker sandboxes: a scripted fix is rewarded; cancelling releases sandboxes."""

from __future__ import annotations

import asyncio
import json

import pytest

from rollgym.engines.scripted import ScriptedEngine
from rollgym.limits import Limits
from rollgym.rollouts.loop import run_rollout
from rollgym.rollouts.policy import Policy


@pytest.fixture(scope="module")
def swe_task(docker_engine):
    from rollgym.envs.swe.images import ensure_task_image
    from rollgym.envs.swe.task import load_bundled_tasks

    task = load_bundled_tasks()[0]
    ensure_task_image(task, log=lambda _m: None)
    return task


def test_scripted_fix_resolves_a_bundled_task_end_to_end(tool_tok, say, swe_task):
    """Tool call (look), fix (apply the gold patch with bash), submit: reward 1 from the real grader."""
    from rollgym.envs import make

    fix = f"cd {swe_task.workdir} && git apply <<'PATCH'\n{swe_task.patch}PATCH\n"
    script = [say.call("bash", command="git status --short && ls"), say.call("bash", command=fix), say.call("submit")]
    env = make("rollgym/SWE-v0")
    rollout = asyncio.run(
        run_rollout(
            env,
            Policy(engine=ScriptedEngine(script), tokenizer=tool_tok),
            swe_task.model_dump(mode="json"),
            env_id="rollgym/SWE-v0",
            limits=Limits(max_turns=5, max_model_len=8192),
        )
    )
    assert rollout.error is None, rollout.error
    assert rollout.stop_reason == "env_terminated"
    assert rollout.reward == 1.0 and rollout.reward_components["resolved"] == 1.0
    assert rollout.reward_components["f2p_passed_frac"] == 1.0 and rollout.reward_components["p2p_passed_frac"] == 1.0
    assert [t.tool_calls[0].name for t in rollout.turns] == ["bash", "bash", "submit"]
    assert not rollout.turns[1].tool_calls[0].failed
    sampled = [
        i for i, m in zip(rollout.token_view()["completion_ids"], rollout.token_view()["env_mask"], strict=True) if m
    ]
    assert sampled == sum(script, [])
    assert json.loads(rollout.model_dump_json())["task_id"] == swe_task.instance_id


def test_an_unfixed_submission_is_not_rewarded(tool_tok, say, swe_task):
    from rollgym.envs import make

    rollout = asyncio.run(
        run_rollout(
            make("rollgym/SWE-v0"),
            Policy(engine=ScriptedEngine([say.call("submit")]), tokenizer=tool_tok),
            swe_task.model_dump(mode="json"),
            limits=Limits(max_model_len=8192),
        )
    )
    assert rollout.error is None and rollout.reward == 0.0 and rollout.reward_components["resolved"] == 0.0


def test_cancelling_a_batch_releases_every_sandbox(tool_tok, say, swe_task):
    """What Ctrl-C does to `rollgym generate`: every running rollout is cancelled and its container removed."""
    from rollgym.envs.sandbox import RUN_ID, list_containers
    from rollgym.rollouts.batch import run_rollouts

    engine = ScriptedEngine(lambda prompt, s: say.call("bash", command="sleep 30"))
    before = set(list_containers(run_id=RUN_ID))

    async def main():
        job = asyncio.create_task(
            run_rollouts(
                "rollgym/SWE-v0",
                [swe_task.model_dump(mode="json")],
                Policy(engine=engine, tokenizer=tool_tok),
                n=3,
                concurrency=3,
                limits=Limits(max_model_len=8192),
            )
        )
        for _ in range(600):  # wait until all three sandboxes run a command
            await asyncio.sleep(0.1)
            if len(set(list_containers(run_id=RUN_ID)) - before) >= 3 and engine.calls >= 3:
                break
        assert len(set(list_containers(run_id=RUN_ID)) - before) >= 3
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(main())
    assert set(list_containers(run_id=RUN_ID)) - before == set()


@pytest.mark.parametrize("cut_short", [False, True])
def test_grading_that_did_not_complete_is_a_sandbox_error_on_the_rollout(
    tool_tok, say, swe_task, monkeypatch, cut_short
):
    """Whether the agent submits or the loop cuts the episode short, an infrastructure grading status puts a
    `sandbox` error on the rollout, so `env_reward` gives None (dropped) instead of a reward of 0 to train on.
    The grader's fault is injected here; the real kill of a grading container is in test_swe_grading.py."""
    import rollgym as rg
    from rollgym.envs.sandbox import hosts
    from rollgym.envs.swe import GradeResult
    from rollgym.envs.swe import env as swe_env

    def grade_patch(task, diff, slot=None, **_placement):  # frees the episode's slot it is given, as the real one does
        if slot is not None:
            hosts.release(slot)
        return GradeResult(
            instance_id=task.instance_id, status="infra_error", error="the test run did not complete (container exited)"
        )

    monkeypatch.setattr(swe_env, "grade_patch", grade_patch)
    script = [say.call("bash", command="echo edit >> README.rst")] + ([] if cut_short else [say.call("submit")])
    rollout = asyncio.run(
        run_rollout(
            rg.make("rollgym/SWE-v0"),
            Policy(engine=ScriptedEngine(script), tokenizer=tool_tok),
            swe_task.model_dump(mode="json"),
            limits=Limits(max_turns=1 if cut_short else 3),
        )
    )
    assert rollout.error is not None and rollout.error.category == "sandbox" and rollout.error.type == "GradingFailed"
    assert "did not complete" in rollout.error.message and rollout.reward == 0.0
    from rollgym.integrations.trl.rollout_func import to_trl_columns

    assert rg.env_reward(**to_trl_columns([rollout], pad_id=0)) == [None]


def test_writing_past_the_disk_budget_is_the_agents_failure_not_infrastructure(tool_tok, say, swe_task):
    """Issue 17, item 6: the sandbox is stopped, the rollout records `disk`, and resume does not rerun it."""
    from rollgym.envs import make
    from rollgym.rollouts.output import is_infra_failure

    script = [say.call("bash", command="head -c 300M /dev/zero > /tmp/fill; echo written"), say.call("submit")]
    env = make("rollgym/SWE-v0", sandbox={"disk_limit": "64m"})
    rollout = asyncio.run(
        run_rollout(
            env,
            Policy(engine=ScriptedEngine(script), tokenizer=tool_tok),
            swe_task.model_dump(mode="json"),
            limits=Limits(max_turns=4, max_model_len=8192),
        )
    )
    assert rollout.stop_reason == "error" and rollout.error.category == "disk", rollout.error
    assert "over its disk budget of 64m" in rollout.error.message
    assert not is_infra_failure(rollout) and rollout.reward == 0.0
