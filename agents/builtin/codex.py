"""Codex CLI (npm `@openai/codex`, tested with 0.169.0), through the proxy's OpenAI Responses route
(`{session}/v1/responses`; this version refuses `wire_api = "chat"`). The native binary runs directly (a static musl
build: no Node in the sandbox). Everything is set with `-c` flags: a provider whose base URL is the session, and the
switches that stop Codex reaching GitHub, ChatGPT and its plugin registry. `model_instructions_file` replaces the
~17 KB base prompt and the `include_*` switches drop the environment and permissions messages (~1.3k tokens).

MCP: the environment's servers go in `$CODEX_HOME/config.toml` as `[mcp_servers.NAME]` tables (`command`, `args`,
`env`, `cwd` or `url`, `http_headers`; `startup_timeout_sec`, `tool_timeout_sec`), the keys `codex mcp add` writes
and `codex mcp list --json` reads back."""

from __future__ import annotations

import json
from pathlib import Path

from rollgym.agents.spec import AgentRun, AgentSpec
from rollgym.envs.mcp.declaration import MCPServerConfig

BINARY = "npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl"


def toml_value(value: object) -> str:
    """A string, number, list of strings or table of strings as a TOML value (JSON's string escapes are TOML's)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def mcp_config(servers: tuple[MCPServerConfig, ...]) -> str:
    """Codex's `config.toml` declaring `servers` (nothing else: every other setting is a `-c` flag)."""
    tables = []
    for server in servers:
        if server.is_stdio:
            keys: dict[str, object] = {"command": server.command, "args": list(server.args)}
            keys.update({"env": dict(server.env)} if server.env else {})
            keys.update({"cwd": server.cwd} if server.cwd else {})
        else:
            keys = {"url": server.url, **({"http_headers": dict(server.headers)} if server.headers else {})}
        keys.update(startup_timeout_sec=float(server.start_timeout_s), tool_timeout_sec=float(server.call_timeout_s))
        lines = [f"[mcp_servers.{json.dumps(server.name)}]", *(f"{k} = {toml_value(v)}" for k, v in keys.items())]
        tables.append("\n".join(lines) + "\n")
    return "\n".join(tables)


class Codex(AgentSpec):
    name, env_var, install = "codex", "ROLLGYM_CODEX", ".ci/agents-up (npm @openai/codex)"
    cache_path = f"{BINARY}/bin/codex"
    mcp_client = True

    def files(self, run: AgentRun) -> dict[str, str]:
        home = {f"{run.home}/codex/.keep": "", f"{run.home}/instructions.md": self.system_prompt + "\n"}
        return {**home, f"{run.home}/codex/config.toml": mcp_config(run.mcp_servers)} if run.mcp_servers else home

    def environment(self, run: AgentRun) -> dict[str, str]:
        package = Path(self.executable()).parents[4] / "codex"  # what its npm launcher would say
        return {
            "CODEX_HOME": f"{run.home}/codex",
            "ROLLGYM_API_KEY": run.api_key,
            "CODEX_MANAGED_BY_NPM": "1",
            "CODEX_MANAGED_PACKAGE_ROOT": str(package),
        }

    def command(self, run: AgentRun, prompt: str) -> list[str]:
        provider = (
            f'{{name="rollgym",base_url={json.dumps(run.base_url)},wire_api="responses",'
            f'env_key="ROLLGYM_API_KEY",request_max_retries=1,stream_max_retries=1}}'
        )
        settings = {
            "model_provider": "rollgym",
            "model_providers.rollgym": provider,
            "model_instructions_file": json.dumps(f"{run.home}/instructions.md"),
            "model_context_window": "8192",
            "check_for_update_on_startup": "false",
            "analytics.enabled": "false",
            "feedback.enabled": "false",
            "features.plugins": "false",
            "features.apps": "false",
            "features.goals": "false",
            "features.multi_agent": "false",
            "skills.bundled.enabled": "false",
            "web_search": '"disabled"',
            "include_permissions_instructions": "false",
            "include_apps_instructions": "false",
            "include_collaboration_mode_instructions": "false",
            "include_environment_context": "false",
        }
        flags = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        resume = ["resume", "--last"] if run.turn else []  # the newest conversation in this run's CODEX_HOME
        head = [
            self.executable(),
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
        ]
        return [*head, "-m", self.model, *flags, *resume, prompt]
