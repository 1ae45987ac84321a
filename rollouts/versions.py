"""The weights versions in a rollout (asynchronous RL): which version sampled each token, and how stale it is.

A turn records the version that sampled its first token (`Turn.policy_version`) and any weights that took over
inside it (`Turn.version_changes`); a rollout that lived through a sync has turns of several versions. Its
staleness is its oldest version's: `current - oldest`, what a trainer's `max_staleness` bounds. Off-policy
corrections (truncated importance sampling, huggingface/trl #3867) read the per-token view: each sampled token's
logprob (`token_view()["logprobs"]`) and version (`token_versions`).
"""

from __future__ import annotations

from rollgym.rollouts.records import Rollout, Turn, concat_turns


def turn_token_versions(turn: Turn) -> list[int | None]:
    """The version of each sampled token of `turn` (`Turn.token_versions`)."""
    return turn.token_versions()


def token_versions(rollout: Rollout, keep_trailing_bridge: bool = False) -> list[int | None]:
    """One entry per id of `rollout.token_view(keep_trailing_bridge)["completion_ids"]`: the version that sampled
    it, None for the environment's ids (and for every id of an engine without versions)."""
    return concat_turns(rollout.turns, keep_trailing_bridge, versions=True)["versions"]


def versions_of(rollout: Rollout) -> list[int]:
    """Every version that sampled a token of `rollout`, oldest first (empty when none was recorded)."""
    seen = {v for turn in rollout.turns for v in turn_token_versions(turn) if v is not None}
    return sorted(seen)


def oldest_version(rollout: Rollout) -> int | None:
    """The oldest version that sampled any of `rollout`'s tokens: the one its staleness is measured by."""
    versions = versions_of(rollout)
    return versions[0] if versions else None


def staleness(rollout: Rollout, current: int) -> int | None:
    """How many versions behind `current` the rollout's oldest token is (None: no version recorded)."""
    oldest = oldest_version(rollout)
    return None if oldest is None else current - oldest


def changed_inside_a_turn(rollout: Rollout) -> bool:
    """Some turn was sampled by two versions (the engine was paused and resumed mid-generation)."""
    return any(turn.version_changes for turn in rollout.turns)
