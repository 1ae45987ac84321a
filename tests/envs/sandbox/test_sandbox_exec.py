"""DockerSandbox.exec on both paths (persistent runner and plain exec): results, timeouts, output."""

from __future__ import annotations

import asyncio
import resource
import time

import pytest
import requests

pytestmark = pytest.mark.docker


def test_exit_codes_are_results_not_exceptions(any_sandbox):
    res = any_sandbox.exec("echo out; echo err >&2; exit 3")
    assert res.exit_code == 3 and not res.timed_out
    assert "out" in res.output and "err" in res.output
    assert res.via == ("runner" if any_sandbox.uses_runner else "exec")


def test_cwd_env_and_quiet_defaults(any_sandbox):
    res = any_sandbox.exec('pwd; echo "$FOO"; echo "$PAGER"', cwd="/usr", env={"FOO": "bar baz"})
    assert res.output.split("\n")[:3] == ["/usr", "bar baz", "cat"]


def test_missing_cwd_is_a_clear_result(any_sandbox):
    res = any_sandbox.exec("true", cwd="/does/not/exist")
    assert res.exit_code != 0
    assert "does/not/exist" in res.output or "No such file" in res.output


def test_timeout_kills_a_process_group_that_ignores_sigterm(any_sandbox):
    cmd = "trap '' TERM; (trap '' TERM; sleep 1000) & sleep 1001; echo never"
    start = time.monotonic()
    res = any_sandbox.exec(cmd, timeout=2)
    assert res.timed_out and res.exit_code is None
    assert "never" not in res.output
    assert time.monotonic() - start < 15
    time.sleep(0.3)
    left = any_sandbox.exec("ps -eo args | grep -E '^sleep 100[01]' || true")
    assert left.output.strip() == "", f"processes survived the timeout: {left.output}"


def test_background_child_does_not_hang_exec(any_sandbox):
    start = time.monotonic()
    res = any_sandbox.exec("sleep 30 & echo started", timeout=20)
    assert res.exit_code == 0 and "started" in res.output
    assert time.monotonic() - start < 15
    any_sandbox.exec("pkill -f 'sleep 30' || true")


def test_huge_output_is_capped_with_bounded_memory(any_sandbox):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = any_sandbox.exec("head -c 100000000 /dev/zero | tr '\\0' 'a'; echo; echo THE-END", timeout=120)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert res.exit_code == 0 and res.truncated
    assert res.elided_bytes > 99_000_000
    assert len(res.output) < any_sandbox.config.max_output_bytes + 200
    assert res.output.startswith("aaaa") and res.output.rstrip().endswith("THE-END")
    assert f"{res.elided_bytes} bytes of output elided" in res.output
    assert grown_mb < 60, f"host memory grew by {grown_mb:.0f} MB"


def test_binary_and_ansi_output_is_decoded_safely(any_sandbox):
    res = any_sandbox.exec(r"printf 'ok\377\376\000end\n'; printf '\033[31mred\033[0m\r\n'; head -c 2000 /dev/urandom")
    assert res.exit_code == 0
    assert res.output.startswith("ok\ufffd\ufffd\x00end\nred\n")
    assert "\x1b[31m" not in res.output


async def test_concurrent_commands_run_in_parallel(any_sandbox):
    start = time.monotonic()
    results = await asyncio.gather(*(any_sandbox.aexec(f"sleep 1; echo {i}") for i in range(4)))
    assert [r.output.strip() for r in results] == ["0", "1", "2", "3"]
    assert time.monotonic() - start < 3.5


def test_stdin_through_the_runner(sandbox):
    res = sandbox.exec("wc -c", stdin=b"x" * 100_000)
    assert res.output.strip() == "100000"


def test_timeout_kills_children_that_left_the_session(any_sandbox):
    """`setsid` and a double fork take a child out of the command's session and group: the timeout still
    finds it by the mark it inherited (issue 17, item 11)."""
    cmd = "setsid sleep 1002 & (setsid sh -c 'sleep 1003 &' &) ; sleep 1004"
    res = any_sandbox.exec(cmd, timeout=2)
    assert res.timed_out
    time.sleep(0.3)
    left = any_sandbox.exec("ps -eo args | grep -E '^sleep 100[234]' || true")
    assert left.output.strip() == "", f"processes survived the timeout: {left.output}"


def _dropped(real, when, before=lambda: None):
    """`real` (a docker-py APIClient method) failing as a daemon killed mid-request does (urllib3's reset,
    wrapped by requests 2.x as `ConnectionError`), for the calls `when` picks, after running `before`."""
    from urllib3.exceptions import ProtocolError

    def call(*args, **kwargs):
        if when(kwargs):
            before()
            raise requests.exceptions.ConnectionError(
                ProtocolError("Connection aborted.", ConnectionResetError(104, "Connection reset by peer"))
            )
        return real(*args, **kwargs)

    return call


def test_a_request_the_daemon_drops_is_a_sandbox_error_never_a_raw_one(base_image, monkeypatch):
    """CI once saw a raw requests `ConnectionError` escape `exec` when a daemon was killed between an exec's
    create and start: every daemon failure is translated at the sandbox's boundary."""
    from rollgym.envs.sandbox import DockerSandbox, SandboxConfig, SandboxDeadError, SandboxError

    sb = DockerSandbox(SandboxConfig(image=base_image, task_id="dropped", use_runner=False))
    try:
        monkeypatch.setattr(
            sb.client.api, "exec_start", _dropped(sb.client.api.exec_start, lambda kw: kw.get("stream"))
        )
        with pytest.raises(SandboxError, match="Connection reset by peer") as alive:
            sb.exec("echo hi")
        assert not isinstance(alive.value, SandboxDeadError)  # the container still runs: not called dead
        monkeypatch.setattr(sb.client.api, "get_archive", _dropped(sb.client.api.get_archive, lambda kw: True))
        with pytest.raises(SandboxError, match="read /etc/hostname: Docker daemon error"):
            sb.read_file("/etc/hostname")
        monkeypatch.undo()
        assert sb.exec("echo hi").output.strip() == "hi"  # nothing broken by it
        monkeypatch.setattr(
            sb.client.api,
            "exec_start",  # the container dies with the request (a host going down)
            _dropped(sb.client.api.exec_start, lambda kw: kw.get("stream"), before=sb.container.kill),
        )
        with pytest.raises(SandboxDeadError, match="no longer running"):
            sb.exec("echo hi")
    finally:
        monkeypatch.undo()
        sb.close()
