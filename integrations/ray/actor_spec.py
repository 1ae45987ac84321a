"""`ActorSpec`: what every rollout actor needs besides its jobs; put in Ray's object store once per call."""

from __future__ import annotations

from dataclasses import dataclass

from rollgym.rollouts.jobs import RunSpec


@dataclass
class ActorSpec:
    """The call's `RunSpec` (its policy pickled as its spec: each actor builds its own in-process engine, while a
    network engine such as a vLLM server is shared) and the name of the call's placement ledger (ledger.py)."""

    run: RunSpec
    call: str = ""


def split_slots(concurrency: int, actors: int) -> list[int]:
    """`concurrency` rollouts shared out over at most `actors` actors, each running at least one."""
    n = max(1, min(actors, concurrency))
    return [concurrency // n + (1 if i < concurrency % n else 0) for i in range(n)]


def prefetch_for(slots: int) -> int:
    """Jobs an actor holds beyond its running ones, so it never waits for the driver between two rollouts."""
    return max(1, slots // 8)
