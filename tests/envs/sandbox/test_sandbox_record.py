"""The record of a run's sandboxes (envs/sandbox/record.py): each listed as it starts and as it ends, and
`rollgym sandbox prune --run DIR` ends what it lists as not ended and writes down how, so it accounts for every one."""

from __future__ import annotations

import uuid

import pytest
from typer.testing import CliRunner

from rollgym.envs.sandbox import DockerSandbox, SandboxConfig
from rollgym.envs.sandbox.record import RECORD_FILE, RecordFile, read_record, record_path, recording


def test_a_torn_last_line_is_skipped_and_ends_are_matched_to_starts(tmp_path):
    started = '{"event": "started", "name": "a", "id": "1", "host": "default", "at": 10.0, "owner": "m:1"}\n'
    ended = '{"event": "ended", "name": "a", "id": "1", "host": "default", "at": 12.0, "how": "closed"}\n'
    other_host = '{"event": "started", "name": "b", "id": "1", "host": "ssh://h", "at": 11.0}\n'
    (tmp_path / RECORD_FILE).write_text(started + other_host + ended + '{"event": "ended", "na')
    a, b = read_record(tmp_path)
    assert (a.name, a.created, a.ended, a.how, a.owner) == ("a", 10.0, 12.0, "closed", "m:1")
    assert (b.name, b.host, b.ended) == ("b", "ssh://h", None)  # the same id on another host is another sandbox


@pytest.mark.docker
def test_the_record_accounts_for_every_sandbox_and_prune_run_ends_the_rest(base_image, tmp_path):
    from rollgym.cli import app

    cfg = SandboxConfig(image=base_image, task_id="record", run_id=f"rec-{uuid.uuid4().hex[:8]}", use_runner=False)
    with recording(RecordFile(record_path(tmp_path))):
        closed, left, removed = (DockerSandbox(cfg) for _ in range(3))
    closed.close()  # ended by its owner
    removed.client.api.remove_container(removed.container.id, force=True)  # ended by someone else
    try:
        entries = {e.name: e for e in read_record(tmp_path)}
        assert list(entries) == [closed.name, left.name, removed.name]
        assert entries[closed.name].how == "closed" and entries[closed.name].ended is not None
        assert entries[left.name].ended is None and entries[left.name].id == left.container.id
        assert entries[left.name].host == "default" and entries[left.name].runtime == "docker"
        pruned = CliRunner().invoke(app, ["sandbox", "prune", "--run", str(tmp_path)])
        assert pruned.exit_code == 0, pruned.output
        assert f"removed 1 sandbox(es) still running: {left.name}" in pruned.output
        assert "1 had ended by themselves" in pruned.output and "1 were closed by the run" in pruned.output
        assert left.status() == "gone"
        after = {e.name: (e.ended is not None, e.how) for e in read_record(tmp_path)}
        assert after == {closed.name: (True, "closed"), left.name: (True, "pruned"), removed.name: (True, "gone")}
        missing = CliRunner().invoke(app, ["sandbox", "prune", "--run", str(tmp_path / "nothing")])
        assert missing.exit_code == 2 and "sandboxes.jsonl does not exist" in missing.output
    finally:
        for sb in (left, removed):
            sb.close()
