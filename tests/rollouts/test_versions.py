"""The weights version on every turn (asynchronous RL): records of schema 2 and 1, the loop stamping turns through a
`VersionedEngine`, a sync at a turn boundary and one inside a turn (the engine paused mid-generation and resumed),
and a failed sync."""

from __future__ import annotations

import asyncio
import json

from rollgym.engines.base import VersionChange
from rollgym.engines.scripted import ScriptedEngine
from rollgym.engines.weights import VersionedEngine, WeightsVersion
from rollgym.envs.builtin.calculator import CalculatorEnv
from rollgym.limits import Limits
from rollgym.rollouts.loop import run_rollout
from rollgym.rollouts.policy import Policy
from rollgym.rollouts.records import SCHEMA_VERSION, Rollout, Turn
from rollgym.rollouts.versions import changed_inside_a_turn, oldest_version, staleness, token_versions

TASK = CalculatorEnv.default_tasks(1)[0]


def _run(engine, tool_tok, max_turns: int = 3) -> Rollout:
    return asyncio.run(
        run_rollout(
            CalculatorEnv(), Policy(engine=engine, tokenizer=tool_tok), TASK, limits=Limits(max_turns=max_turns)
        )
    )


def test_a_schema_1_record_still_loads_and_new_records_are_schema_2():
    old = {
        "schema_version": 1,
        "task_id": "calc-0",
        "prompt_ids": [1, 2],
        "turns": [{"index": 0, "prompt_len": 2, "completion_ids": [5, 6], "logprobs": [-0.1, -0.2], "bridge_ids": [7]}],
    }
    loaded = Rollout.model_validate_json(json.dumps(old))
    assert (
        loaded.schema_version == 1 and loaded.turns[0].policy_version is None and loaded.turns[0].version_changes == []
    )
    assert token_versions(loaded, keep_trailing_bridge=True) == [None, None, None] and oldest_version(loaded) is None
    assert Rollout().schema_version == SCHEMA_VERSION == 3


def test_token_versions_staleness_and_changes_inside_a_turn():
    turns = [
        Turn(index=0, prompt_len=3, completion_ids=[1, 2, 3], logprobs=[0.0] * 3, bridge_ids=[9], policy_version=4),
        Turn(
            index=1,
            prompt_len=7,
            completion_ids=[4, 5, 6, 7],
            logprobs=[0.0] * 4,
            policy_version=5,
            version_changes=[VersionChange(at=2, version=6)],
        ),
    ]
    rollout = Rollout(turns=turns)
    assert token_versions(rollout) == [4, 4, 4, None, 5, 5, 6, 6]
    assert len(token_versions(rollout)) == len(rollout.token_view()["completion_ids"])
    assert oldest_version(rollout) == 4 and staleness(rollout, 7) == 3 and changed_inside_a_turn(rollout)
    unknown = Turn(
        index=0,
        prompt_len=1,
        completion_ids=[1, 2],
        policy_version=1,
        version_changes=[VersionChange(at=None, version=2)],
    )
    assert token_versions(Rollout(turns=[unknown])) == [2, 2]  # where is unknown: the newer version, conservatively
    again = Rollout.model_validate_json(rollout.to_json())
    assert again.turns[1].version_changes == [VersionChange(at=2, version=6)]


def test_the_loop_records_the_version_of_each_turn_and_a_sync_between_turns(tool_tok, say):
    weights = WeightsVersion(3)
    script = [say.call("add", a=1, b=2), say.call("submit", answer=TASK["answer"])]
    calls = []

    def sample(prompt, sampling):
        calls.append(len(calls))
        if len(calls) == 1:  # the trainer syncs while the first turn samples; it was not aborted: old weights
            weights.pause()
            weights.resume()
        return script[len(calls) - 1]

    rollout = _run(VersionedEngine(ScriptedEngine(sample), weights), tool_tok)
    assert rollout.error is None and [t.policy_version for t in rollout.turns] == [3, 4]
    assert all(t.version_changes == [] for t in rollout.turns)
    assert oldest_version(rollout) == 3 and not changed_inside_a_turn(rollout)


class SyncedMidGeneration:
    """Injects a weight sync into the first request, answered as vLLM 0.32 answers a request in flight when the
    server is paused with `POST /pause?mode=abort` (checked on the real server, tests/integrations/
    trl/async_grpo/test_async_weight_sync_real.py): `finish_reason` "abort" and the ids sampled so far."""

    name, model, token_exact, max_model_len = "synced", "scripted", True, None

    def __init__(self, inner: ScriptedEngine, weights: WeightsVersion, cut: int, fail: bool = False) -> None:
        self.inner, self.weights, self.cut, self.fail, self.requests = inner, weights, cut, fail, []

    async def generate(self, prompt_ids, sampling=None):
        self.requests.append(list(prompt_ids))
        gen = await self.inner.generate(prompt_ids, sampling)
        if len(self.requests) > 1:
            return gen
        self.weights.pause()
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, (lambda: self.weights.fail("reload refused")) if self.fail else self.weights.resume)
        cut = self.cut
        return gen.model_copy(
            update={
                "completion_ids": gen.completion_ids[:cut],
                "logprobs": gen.logprobs[:cut],
                "finish_reason": "abort",
                "stop_token_id": None,
            }
        )

    async def aclose(self):
        return None


def test_a_sync_inside_a_turn_continues_with_the_new_weights_where_the_old_ones_stopped(tool_tok, say):
    weights = WeightsVersion(0)
    full = say.call("submit", answer=TASK["answer"])
    remaining = [full, full[5:]]  # the first request samples it all (cut at 5 by the sync); the rest is asked for
    engine = SyncedMidGeneration(ScriptedEngine(lambda p, s: remaining.pop(0), logprob=-0.25), weights, cut=5)
    rollout = _run(VersionedEngine(engine, weights), tool_tok)
    assert rollout.error is None and rollout.reward == 1.0
    (turn,) = rollout.turns
    assert turn.completion_ids == full and len(turn.logprobs) == len(full)  # one turn, token-exact across the sync
    assert turn.policy_version == 0 and turn.version_changes == [VersionChange(at=5, version=1)]
    assert engine.requests[1] == engine.requests[0] + full[:5]  # the new weights continue from the very ids sampled
    assert token_versions(rollout) == [0] * 5 + [1] * (len(full) - 5) and changed_inside_a_turn(rollout)


class LateCopy(WeightsVersion):
    """A copy of `original` that hears of its changes only when it asks (a Ray actor's mirror between two reads)."""

    def __init__(self, original: WeightsVersion) -> None:
        super().__init__(original.current)
        self.original = original

    async def catch_up(self, seen):
        await asyncio.sleep(0.1)  # the sync is over by then
        self.apply(self.original.snapshot())


def test_a_copy_of_the_version_that_learns_of_the_sync_after_the_abort_still_continues_the_turn(tool_tok, say):
    weights = WeightsVersion(0)
    full = say.call("submit", answer=TASK["answer"])
    remaining = [full, full[4:]]
    engine = SyncedMidGeneration(ScriptedEngine(lambda p, s: remaining.pop(0)), weights, cut=4)
    rollout = _run(VersionedEngine(engine, LateCopy(weights)), tool_tok)
    (turn,) = rollout.turns
    assert rollout.error is None and turn.completion_ids == full
    assert turn.version_changes == [VersionChange(at=4, version=1)]


def test_a_sync_that_fails_under_a_request_makes_its_rollout_an_infrastructure_failure(tool_tok, say):
    weights = WeightsVersion(2)
    engine = SyncedMidGeneration(ScriptedEngine([say.call("submit", answer=1)] * 2), weights, cut=3, fail=True)
    rollout = _run(VersionedEngine(engine, weights), tool_tok)
    assert rollout.error is not None and rollout.error.category == "engine" and rollout.error.type == "WeightSyncError"
    assert "reload refused" in rollout.error.message and weights.current == 2 and not weights.paused


def test_the_viewer_shows_the_version_of_each_turn():
    from rollgym.view.payload import detail, token_strip

    turn = Turn(
        index=0, prompt_len=1, completion_ids=[4, 5], policy_version=2, version_changes=[VersionChange(at=1, version=3)]
    )
    rollout = Rollout(turns=[turn])
    assert token_strip(rollout, 0)["turns"][0]["v"] == 2 and token_strip(rollout, 0)["turns"][0]["vc"] == [[1, 3]]
    shown = detail(rollout)["turns"][0]
    assert shown["policy_version"] == 2 and shown["version_changes"] == [{"at": 1, "version": 3}]
    assert "v" not in token_strip(Rollout(turns=[Turn(index=0, prompt_len=1)]), 0)["turns"][0]  # none recorded: no mark
