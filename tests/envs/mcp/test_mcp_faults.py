"""A real stdio MCP server's tools through an environment, and each way a server fails: an error result, a refused
call and a time-out are tool errors told to the model (the episode goes on); a server that dies fails the episode,
and the next reset starts it afresh; a server that cannot start fails the reset, naming it."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time

import pytest
from support.mcp import FAULTY, PLAIN, ServerInSandboxEnv, ServerToolsEnv, call, faulty, plain_in_sandbox

from rollgym.envs.core.tools import ToolSet
from rollgym.envs.mcp import MCPServerDiedError, MCPServerError


@pytest.fixture(scope="module")
def episode():
    """One environment on the faulty server, reset once for the module's tests that do not kill the server."""
    loop = asyncio.new_event_loop()
    env = ServerToolsEnv(mcp_servers=[faulty(call_timeout_s=1.0)])
    _, info = loop.run_until_complete(env.areset())
    yield env, info, loop
    loop.run_until_complete(env.aclose())
    loop.close()


def _step(episode, action):
    env, _, loop = episode
    return loop.run_until_complete(env.astep(action))


def test_the_servers_tools_join_the_environments_with_their_schemas(episode):
    _, info, _ = episode
    schemas = {t["function"]["name"]: t["function"] for t in info["tools"]}
    assert set(schemas) == {"echo", "fail", "crash", "hang"}
    assert schemas["echo"]["description"] == "Return the text unchanged."
    assert schemas["echo"]["parameters"]["properties"]["text"]["type"] == "string"
    assert schemas["echo"]["parameters"]["required"] == ["text"]


def test_a_call_is_recorded_with_its_result(episode):
    messages, _, terminated, _, info = _step(episode, call("echo", text="hello"))
    (record,) = info["tool_calls"]
    assert (record.name, record.arguments, record.result, record.failed) == ("echo", {"text": "hello"}, "hello", False)
    assert messages == [{"role": "tool", "tool_call_id": "c1", "name": "echo", "content": "hello"}]
    assert not terminated and "error" not in info


def test_an_error_result_is_a_tool_error_told_to_the_model(episode):
    messages, _, terminated, _, info = _step(episode, call("fail", reason="the disk is full"))
    (record,) = info["tool_calls"]
    assert record.failed and record.error_kind == "tool_error"
    assert "the disk is full" in messages[0]["content"]
    assert not terminated and "error" not in info


def test_arguments_the_server_refuses_are_a_tool_error(episode):
    _, _, terminated, _, info = _step(episode, call("echo", txt="typo"))
    (record,) = info["tool_calls"]
    assert record.failed and record.error_kind == "tool_error" and "text" in record.result
    assert not terminated


def test_a_call_that_never_answers_times_out_as_a_tool_error_and_the_episode_goes_on(episode):
    start = time.monotonic()
    _, _, terminated, _, info = _step(episode, call("hang", seconds=30))
    (record,) = info["tool_calls"]
    assert record.failed and record.error_kind == "timeout", record
    assert "no answer from MCP server 'faulty' within 1s" in record.result
    assert time.monotonic() - start < 5 and not terminated and "error" not in info
    _, _, _, _, info = _step(episode, call("echo", text="still here"))
    assert info["tool_calls"][0].result == "still here"


def test_a_server_that_dies_fails_the_episode_and_the_next_reset_starts_it_again():
    async def run():
        env = ServerToolsEnv(mcp_servers=[faulty()])
        try:
            await env.areset()
            messages, _, terminated, _, info = await env.astep(call("crash"))
            (record,) = info["tool_calls"]
            assert record.failed and record.error_kind == "fatal"
            assert terminated and info["finish_reason"] == "error"
            assert isinstance(info["error"], MCPServerDiedError) and info["error"].rollgym_phase == "tool"  # pyright: ignore[reportAttributeAccessIssue]  # rollgym's mark on the exception
            assert "MCP server 'faulty' died mid-episode" in messages[0]["content"]
            await env.areset()  # a fresh server
            _, _, _, _, info = await env.astep(call("echo", text="again"))
            assert info["tool_calls"][0].result == "again"
        finally:
            await env.aclose()

    asyncio.run(run())


def test_a_server_that_cannot_start_fails_the_reset_naming_it_and_what_it_said():
    env = ServerToolsEnv(
        mcp_servers=[
            {
                "name": "broken",
                "command": sys.executable,
                "args": ["-c", "import sys; sys.exit('no config file')"],
                "host": True,
            }
        ]
    )
    with pytest.raises(MCPServerError, match=r"MCP server 'broken' did not start.*no config file"):
        env.reset()
    env.close()


def test_a_server_that_does_not_shake_hands_in_time_fails_the_reset():
    env = ServerToolsEnv(mcp_servers=[faulty(start_timeout_s=0.5, env={"FAULTY_START_DELAY": "30"})])
    start = time.monotonic()
    with pytest.raises(MCPServerError, match=r"'faulty' did not start \(no handshake within 0.5s\)"):
        env.reset()
    assert time.monotonic() - start < 5
    env.close()


def test_a_tool_name_the_environment_has_needs_a_prefix():
    class WithEcho(ServerToolsEnv):
        def __init__(self, **kwargs):
            super().__init__(tools=[_echo], **kwargs)

    env = WithEcho(mcp_servers=[faulty()])
    with pytest.raises(
        MCPServerError, match="tool named 'echo', which the environment has already; give the server a `prefix`"
    ):
        env.reset()
    assert set(env.toolset.tools) == {"echo"}  # nothing of the server joined
    env.close()
    env = WithEcho(mcp_servers=[faulty(prefix="faulty_")])
    try:
        _, info = env.reset()
        assert {"echo", "faulty_echo", "faulty_hang"} <= {t["function"]["name"] for t in info["tools"]}
        _, _, _, _, info = env.step(call("faulty_echo", text="x"))
        assert info["tool_calls"][0].result == "x"
    finally:
        env.close()
    assert set(env.toolset.tools) == {"echo"}  # the servers' tools leave with them


def _echo(text: str) -> str:
    """The environment's own echo."""
    return text


_echo.__name__ = "echo"


@pytest.fixture(scope="module")
def http_server():
    """The faulty server serving streamable HTTP on a free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, str(FAULTY), "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


def test_a_url_server_over_streamable_http(http_server):
    env = ServerToolsEnv(mcp_servers=[{"name": "remote", "url": http_server, "call_timeout_s": 1.0}])
    try:
        _, info = env.reset()
        assert "echo" in {t["function"]["name"] for t in info["tools"]}
        _, _, _, _, info = env.step(call("echo", text="over http"))
        assert info["tool_calls"][0].result == "over http"
        _, _, terminated, _, info = env.step(call("fail", reason="nope"))
        assert info["tool_calls"][0].error_kind == "tool_error" and "nope" in info["tool_calls"][0].result
        assert not terminated
    finally:
        env.close()


def test_toolset_has_no_mcp_tools_before_reset():
    env = ServerToolsEnv(mcp_servers=[faulty()])
    assert isinstance(env.toolset, ToolSet) and env.toolset.tools == {}
    env.close()


def test_a_malformed_result_is_a_tool_error_and_the_server_goes_on():
    env = ServerToolsEnv(mcp_servers=[{"name": "plain", "command": sys.executable, "args": [str(PLAIN)], "host": True}])
    try:
        env.reset()
        _, _, terminated, _, info = env.step(call("malformed"))
        (record,) = info["tool_calls"]
        assert record.failed and record.error_kind == "bad_result" and "malformed" in record.result
        assert not terminated and "error" not in info
        _, _, _, _, info = env.step(call("echo", text="after"))
        assert info["tool_calls"][0].result == "after"
    finally:
        env.close()


def test_a_sandboxed_environment_whose_setup_left_no_sandbox_says_so():
    env = ServerInSandboxEnv(mcp_servers=[plain_in_sandbox()])  # declared to run inside: not refused when made

    async def no_sandbox(task):
        return [{"role": "user", "content": "hi"}], {"task_id": "t"}

    env.setup = no_sandbox  # pyright: ignore[reportAttributeAccessIssue]  # a setup that starts no sandbox
    with pytest.raises(MCPServerError, match="runs inside the environment's sandbox.*has none that can attach"):
        env.reset()
    env.close()
