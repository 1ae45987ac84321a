"""Reading Harbor task folders: task.toml into pydantic models (resources, time limits, network), a dataset folder
by path through `rollgym.load_tasks`, and a clear refusal naming each feature rollgym does not run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rollgym as rg
from rollgym.envs.core.errors import InvalidTaskError
from rollgym.envs.harbor.errors import UnsupportedTaskError
from rollgym.envs.harbor.folders import read_task
from rollgym.envs.harbor.images import base_images
from rollgym.envs.harbor.mcp import harbor_mcp_servers
from rollgym.envs.harbor.sandbox_config import task_sandbox

FIXTURES = Path(__file__).parents[2] / "fixtures" / "harbor"


def _copy(tmp_path: Path, name: str = "write-greeting") -> Path:
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


def test_load_tasks_reads_a_dataset_folder_and_one_task_folder():
    rows = rg.load_tasks("rollgym/Harbor-v0", str(FIXTURES))
    assert [r["task_id"] for r in rows] == ["partial-credit", "use-mcp-tool", "write-greeting"]
    assert rg.load_tasks("rollgym/Harbor-v0", str(FIXTURES / "write-greeting")) == [rows[2]]


def test_task_toml_gives_the_sandbox_its_resources_and_no_network():
    task = read_task(FIXTURES / "write-greeting")
    assert task.config.agent.timeout_sec == 120 and task.config.verifier.timeout_sec == 60
    assert task_sandbox(task) == {
        "task_id": "write-greeting",
        "network_mode": "none",
        "cpus": 1.0,
        "mem_limit": "512m",
        "disk_limit": "1024m",
    }
    prebuilt = read_task(FIXTURES / "partial-credit")  # the deprecated `memory = "512M"`, as Harbor reads it
    assert prebuilt.config.environment.memory_mb == 512 and prebuilt.config.verifier.env == {
        "CALC_MODULE": "/work/calc.py"
    }


def test_network_is_the_bridge_only_when_the_task_allows_it(tmp_path):
    folder = _copy(tmp_path)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]", '[environment]\nnetwork_mode = "public"'))
    assert task_sandbox(read_task(folder))["network_mode"] == "bridge"
    toml.write_text(toml.read_text().replace('network_mode = "public"', "allow_internet = false"))
    assert task_sandbox(read_task(folder))["network_mode"] == "none"


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ('mcp_servers = [{name = "fs", url = "http://mcp:8000/sse"}]', "'fs': transport = 'sse'"),  # Harbor's default
        ('mcp_servers = [{name = "fs", transport = "sse", url = "http://mcp:8000/sse"}]', "streamable-http"),
        ('os = "windows"', "os = 'windows'"),
        ('network_mode = "allowlist"\nallowed_hosts = ["pypi.org"]', "allowlist"),
        ("gpus = 1", "gpus"),
    ],
)
def test_a_feature_rollgym_does_not_run_is_refused_by_name(tmp_path, extra, named):
    folder = _copy(tmp_path)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]", f"[environment]\n{extra}"))
    with pytest.raises(UnsupportedTaskError, match=named):
        read_task(folder)


def test_a_tasks_mcp_servers_are_read_as_harbor_declares_them(tmp_path):
    """stdio and streamable-http (Harbor's `http` too) servers are rollgym's; a malformed entry makes the task
    invalid, naming the server."""
    (plain,) = harbor_mcp_servers("t", read_task(FIXTURES / "use-mcp-tool").config.environment.mcp_servers)
    assert (plain.name, plain.is_stdio, plain.host, plain.args) == (
        "plain",
        True,
        False,
        ["-u", "/opt/mcp/plain_server.py"],
    )
    (http,) = harbor_mcp_servers("t", [{"name": "kb", "transport": "http", "url": "http://mcp:8000/mcp"}])
    assert http.transport == "streamable-http" and http.url == "http://mcp:8000/mcp"
    folder = _copy(tmp_path)
    toml = folder / "task.toml"
    toml.write_text(
        toml.read_text().replace("[environment]", '[environment]\nmcp_servers = [{name = "x", transport = "stdio"}]')
    )
    with pytest.raises(InvalidTaskError, match="'x' is not valid"):
        read_task(folder)


def test_a_compose_task_is_refused_and_a_folder_without_tests_is_invalid(tmp_path):
    folder = _copy(tmp_path)
    (folder / "environment" / "docker-compose.yaml").write_text("services: {}\n")
    with pytest.raises(UnsupportedTaskError, match="multi-container"):
        read_task(folder)
    other = _copy(tmp_path, "partial-credit")
    (other / "tests" / "test.sh").unlink()
    with pytest.raises(InvalidTaskError, match="tests/test.sh is missing"):
        read_task(other)


def test_base_images_are_the_stages_sources_with_arg_defaults():
    dockerfile = "ARG BASE=ubuntu:24.04\nFROM ${BASE} AS build\nRUN make\nFROM build\nFROM scratch\nFROM python:3.12\n"
    assert base_images(dockerfile) == ["ubuntu:24.04", "python:3.12"]


def test_harbor_env_is_registered_by_name_and_imported_only_when_made():
    code = (
        "import sys, rollgym as rg; assert 'rollgym.envs.harbor' not in sys.modules; "
        "env = rg.make('rollgym/Harbor-v0'); print(type(env.unwrapped).__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "HarborEnv", done.stderr


def test_the_mcp_task_ships_the_server_the_mcp_tests_drive():
    """A Docker build context holds only its own folder, so the task carries a copy: the two stay one server."""
    shipped = FIXTURES / "use-mcp-tool" / "environment" / "plain_server.py"
    assert shipped.read_bytes() == (FIXTURES.parent / "mcp" / "plain_server.py").read_bytes()
