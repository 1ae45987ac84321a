"""`task.toml` of a Harbor task folder (schema 1.x, as Harbor 0.25's `models/task/config.py` reads it), parsed with
`tomllib` into pydantic models: the fields rollgym uses, the ones it refuses with a clear message, the rest kept."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rollgym.envs.harbor.mcp import mcp_refusals

NetworkMode = Literal["no-network", "public", "allowlist"]


def size_to_mb(size: str) -> int:
    """Harbor's deprecated `memory`/`storage` sizes ('2G', '512M', '1024K') in MB, as Harbor converts them."""
    text = size.strip().upper()
    factor = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}.get(text[-1:])
    if factor is None:
        raise ValueError(f"invalid size {size!r}: expected e.g. '1G' or '512M'")
    return int(float(text[:-1]) * factor)


class HarborSection(BaseModel):
    """A task.toml section: unknown keys are kept (newer schema fields do not break reading)."""

    model_config = ConfigDict(extra="allow")


class AgentSection(HarborSection):
    timeout_sec: float | None = None
    user: str | int | None = None
    network_mode: NetworkMode | None = None


class VerifierSection(HarborSection):
    timeout_sec: float = 600.0
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    environment_mode: Literal["shared", "separate"] | None = None
    environment: dict[str, Any] | None = None


class EnvironmentSection(HarborSection):
    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    os: str = "linux"
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None
    network_mode: NetworkMode | None = None  # None: no network (Harbor: public)
    allowed_hosts: list[str] | None = None
    allow_internet: bool | None = None  # deprecated in Harbor: network_mode
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_sizes(cls, data: Any) -> Any:
        """`memory`/`storage` ('2G') as Harbor maps them to `memory_mb`/`storage_mb`; `allow_internet` to the mode."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
            if isinstance(data.get(old), str):
                data.setdefault(new, size_to_mb(data.pop(old)))
        if data.get("allow_internet") is not None and "network_mode" not in data:
            data["network_mode"] = "public" if data["allow_internet"] else "no-network"
        return data


class HarborTaskConfig(HarborSection):
    """A whole task.toml."""

    version: str = "1.0"
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent: AgentSection = Field(default_factory=AgentSection)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)
    solution: dict[str, Any] = Field(default_factory=dict)
    steps: list[dict[str, Any]] = Field(default_factory=list)

    def refusals(self) -> list[str]:
        """What in this task rollgym does not run, one phrase each (empty: it runs)."""
        env, out = self.environment, []
        if env.os.lower() != "linux":
            out.append(f"[environment] os = {env.os!r} (only Linux containers are supported)")
        if env.gpus:
            out.append("[environment] gpus (GPU sandboxes are not supported yet)")
        out.extend(mcp_refusals(env.mcp_servers))
        if "allowlist" in (env.network_mode, self.agent.network_mode, self.verifier.network_mode):
            out.append("network_mode = 'allowlist' (the sandbox has no network or the Docker network, nothing between)")
        verifier_net = self.verifier.network_mode
        if verifier_net == "public" and self.agent_network() != "public":
            out.append("[verifier] network_mode = 'public' while the agent has none (one network for both phases)")
        if self.verifier.environment_mode == "separate" or self.verifier.environment is not None:
            out.append("[verifier] environment_mode = 'separate' (the verifier runs in the agent's container)")
        if self.agent.user is not None or self.verifier.user is not None:
            out.append("[agent] user / [verifier] user (the agent and the verifier run as the image's user)")
        if self.steps:
            out.append("[[steps]] (multi-step tasks are not supported yet)")
        return out

    def agent_network(self) -> NetworkMode:
        """The sandbox's network: the agent's override, else the environment's, else none (rollgym's default;
        Harbor's is public)."""
        return self.agent.network_mode or self.environment.network_mode or "no-network"
