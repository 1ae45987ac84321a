"""Placement through a shared `Ledger` (hosts.share): the ledger's choice is used and counted here too, slots go
back to it on release, machine-local addresses are keyed by machine, and a ledger that fails (its process died)
leaves placement to this process's own count. No daemon is contacted: hosts are in rotation until one fails."""

from __future__ import annotations

import socket
import uuid

import pytest

from rollgym.envs.sandbox import hosts


class DictLedger:
    """The `hosts.Ledger` protocol over a dict, as another process's ledger would answer it."""

    def __init__(self, live: dict[str, int] | None = None, fail: bool = False):
        self.live, self.fail, self.given = dict(live or {}), fail, []

    def take(self, candidates, cap):
        if self.fail:
            raise ConnectionError("the ledger's actor died")
        free = [k for k in candidates if cap is None or self.live.get(k, 0) < cap]
        if not free:
            return None
        key = min(free, key=lambda k: self.live.get(k, 0))
        self.live[key] = self.live.get(key, 0) + 1
        return key

    async def atake(self, candidates, cap):
        return self.take(candidates, cap)

    def give(self, key):
        self.given.append(key)
        self.live[key] -= 1


@pytest.fixture
def addresses():
    token = uuid.uuid4().hex[:6]
    yield [f"tcp://a-{token}:2376", f"tcp://b-{token}:2376"]
    hosts.share(None)


async def test_the_shared_count_decides_and_slots_go_back(addresses):
    a, b = addresses
    ledger = DictLedger({a: 1})  # another process holds one on a
    hosts.share(ledger)
    assert await hosts.areserve([a, b], cap=1) == b  # least-loaded in the shared count, though this process has none
    assert hosts.try_reserve([a, b], cap=1) is None  # both at the cap, cluster-wide
    assert hosts.load([a, b]) == {a: 0, b: 1}
    hosts.release(b)
    assert ledger.given == [b] and ledger.live[b] == 0


def test_machine_local_addresses_are_keyed_by_machine():
    assert hosts.ledger_key("tcp://box:2376") == "tcp://box:2376"
    assert hosts.ledger_key("ssh://me@box") == "ssh://me@box"
    assert hosts.ledger_key("default") == f"{socket.gethostname()}|default"
    assert hosts.ledger_key("unix:///var/run/docker.sock") == f"{socket.gethostname()}|unix:///var/run/docker.sock"


def test_one_host_without_a_cap_is_not_shared(addresses):
    ledger = DictLedger(fail=True)
    hosts.share(ledger)
    assert hosts.try_reserve(addresses[:1], cap=None) == addresses[0]  # nothing to choose: the ledger is not asked
    hosts.release(addresses[0])
    assert hosts._LEDGER is ledger


def test_a_failed_ledger_leaves_placement_to_this_process(addresses, caplog):
    a, b = addresses
    hosts.share(DictLedger(fail=True))
    assert hosts.try_reserve([a, b], cap=1) == a
    assert hosts._LEDGER is None and "placing by this process's own count" in caplog.text
    hosts.release(a)
    assert hosts.load([a, b]) == {a: 0, b: 0}
