"""Records: what rollgym writes about a rollout's making is typed; older records load into the typed fields; one
rule bounds every recorded failure's message; one builder records a rollout that failed outside the loop."""

from __future__ import annotations

from rollgym.errors import SandboxError
from rollgym.rollouts.records import (
    MAX_ERROR_MESSAGE,
    AsyncWorkerRecord,
    ErrorRecord,
    ProxyProvenance,
    Rollout,
    Turn,
    concat_turns,
    errored_rollout,
)


def test_a_version_2_record_loads_its_meta_into_the_typed_fields():
    old = {
        "schema_version": 2,
        "task_id": "t",
        "meta": {
            "proxy_session": "sess-1",
            "segment": 1,
            "segment_reason": "first call",
            "calls": [0, 1],
            "env_task_id": "own-t",
            "agent_output": "done",
            "async": {"group": 3, "started_version": 2, "fate": "pushed"},
            "mine": "kept",
        },
    }
    loaded = Rollout.model_validate(old)
    assert loaded.proxy == ProxyProvenance(session="sess-1", segment=1, segment_reason="first call", calls=[0, 1])
    assert (loaded.env_task_id, loaded.agent_output) == ("own-t", "done")
    assert loaded.async_worker == AsyncWorkerRecord(group=3, started_version=2, fate="pushed")
    assert loaded.meta == {"mine": "kept"}  # the user's own provenance stays where it was
    again = Rollout.model_validate_json(loaded.to_json())
    assert again == loaded and again.schema_version == 2  # a record keeps the version it was written with


def test_a_new_record_keeps_a_meta_key_that_looks_like_an_old_one():
    """From schema 3 on `meta` is the user's: a key of rollgym's old names is not moved."""
    rollout = Rollout.model_validate({"schema_version": 3, "meta": {"env_task_id": "theirs"}})
    assert rollout.meta == {"env_task_id": "theirs"} and rollout.env_task_id is None


def test_every_failure_message_is_bounded_by_one_rule():
    long = "x" * (MAX_ERROR_MESSAGE * 3)
    assert len(ErrorRecord(category="internal", type="E", message=long).message) == MAX_ERROR_MESSAGE
    record = ErrorRecord.of(SandboxError(long), turn=2)
    assert (record.category, record.type, record.turn, len(record.message)) == (
        "sandbox",
        "SandboxError",
        2,
        MAX_ERROR_MESSAGE,
    )
    assert ErrorRecord.of(ValueError("bad")).category == "environment"
    failed = errored_rollout(record, task_id="t", sample_index=1)
    assert (failed.stop_reason, failed.error, failed.task_id, failed.sample_index) == ("error", record, "t", 1)


def test_the_completion_side_is_put_together_in_one_place():
    turns = [
        Turn(index=0, prompt_len=3, completion_ids=[1, 2], logprobs=[-0.1, -0.2], bridge_ids=[9], policy_version=4),
        Turn(index=1, prompt_len=6, completion_ids=[3], logprobs=[-0.3], bridge_ids=[8, 7], policy_version=5),
    ]
    view = concat_turns(turns, versions=True)
    assert view == {
        "completion_ids": [1, 2, 9, 3],
        "logprobs": [-0.1, -0.2, 0.0, -0.3],
        "env_mask": [1, 1, 0, 1],
        "versions": [4, 4, None, 5],
    }
    kept = concat_turns(turns, keep_trailing_bridge=True)
    assert kept["completion_ids"] == [1, 2, 9, 3, 8, 7] and kept["env_mask"][-2:] == [0, 0] and "versions" not in kept
    rollout = Rollout(prompt_ids=[5, 6, 7], turns=turns)
    assert rollout.token_view() == {"prompt_ids": [5, 6, 7], **concat_turns(turns)}
    assert rollout.samples() == [rollout.token_view()]


def test_a_rollout_records_the_budgets_it_ran_under_and_the_viewer_shows_them(tool_tok, say):
    """The tokens per turn are a budget: the rollout keeps `limits` (what it ran under), not the sampling default's
    `max_tokens`, and the rollout page's detail carries them."""
    import asyncio

    import rollgym as rg
    from rollgym.engines.scripted import ScriptedEngine
    from rollgym.view.payload import detail

    limits = rg.Limits(max_turns=2, max_tokens_per_turn=32)
    policy = rg.Policy(engine=ScriptedEngine(lambda p, s: say.text("7")), tokenizer=tool_tok)
    rollout = asyncio.run(rg.rollout("rollgym/Calculator-v0", policy, limits=limits))
    assert rollout.limits["max_tokens_per_turn"] == 32 and rollout.limits["max_turns"] == 2
    assert "max_tokens" not in rollout.sampling
    page = detail(rollout)
    assert page["limits"]["max_tokens_per_turn"] == 32 and "max_tokens" not in page["sampling"]
