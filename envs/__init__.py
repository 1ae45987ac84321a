"""rollgym.envs: gymnasium environments for LLM agents, tools, and Docker sandboxes.

`import rollgym.envs` registers the built-in environments with gymnasium (`rollgym/Calculator-v0`,
`rollgym/SWE-v0`, `rollgym/Harbor-v0`, `rollgym/ToolDB-v0`) and the ids of the suites it catalogues
(`reasoning_gym/<generator>-v0`, `bfcl/<category>-v0`, `openenv/env-v0`, `textarena/<game>-v0`; no suite is
imported); `gymnasium.make("rollgym.envs:rollgym/SWE-v0")` imports and
makes in one go.
Imports nothing else of rollgym's (not tokenization, not rollouts) but `rollgym.errors`, the error tree's root.
"""

from rollgym.envs.core import (
    ChatMessageSpace,
    ChatMessagesSpace,
    Env,
    EnvCheckError,
    InvalidTaskError,
    ResetInfo,
    ScorerError,
    StepInfo,
    Tool,
    ToolCallRecord,
    ToolSet,
    UnknownEnvironmentError,
    check_env,
    make,
    register_env,
    task_id_of,
    tool,
)
from rollgym.envs.core.agent_sandbox import AgentWorkspace, SandboxedEnv, is_sandboxed, sandboxed_env_class
from rollgym.envs.core.run_records import register_run_recorder
from rollgym.envs.core.suites import Suite, SuiteNotInstalledError
from rollgym.envs.core.task_sources import register_task_reader, register_task_source
from rollgym.envs.suites.bfcl import register_categories
from rollgym.envs.suites.openenv import register_openenv
from rollgym.envs.suites.reasoning_gym import register_generators
from rollgym.envs.suites.tau2 import register_domains
from rollgym.envs.suites.textarena import register_games
from rollgym.envs.suites.verifiers import register_verifiers

register_env("rollgym/Calculator-v0", "rollgym.envs.builtin.calculator:CalculatorEnv")
register_env("rollgym/SWE-v0", "rollgym.envs.swe.env:SWEEnv")
register_env("rollgym/Harbor-v0", "rollgym.envs.harbor.env:HarborEnv")
register_env("rollgym/ToolDB-v0", "rollgym.envs.tooldb.env:ToolDBEnv")
# Other packages' suites, by entry point: each is imported when one of its environments is made (docs/catalogue.md).
register_generators()
register_categories()
register_verifiers()
register_openenv()
register_games()
register_domains()
# What the rollout core reads and records through hooks, by entry point (imported when a run uses it): the SWE tasks'
# own sources, and the record of the sandboxes a run starts.
register_task_source("bundled", "rollgym.envs.swe.task_sources:bundled_rows")
for _domain in ("airline", "retail", "telecom"):  # rg.load_tasks("tau2/airline"): every task of a τ² domain
    register_task_source(f"tau2/{_domain}", f"rollgym.envs.suites.tau2.tasks:{_domain}_rows")
register_task_reader("rollgym.envs.harbor.task_sources:read_harbor_tasks")  # a Harbor task folder, or a folder of them
register_task_reader("rollgym.envs.tooldb.task_sources:read_tooldb_tasks")  # tools.py + db.json + verify(db) folders
register_task_reader("rollgym.envs.swe.task_sources:read_swe_tasks")
register_run_recorder("rollgym.envs.sandbox.record:record_run")

__all__ = [
    "AgentWorkspace",
    "ChatMessageSpace",
    "ChatMessagesSpace",
    "Env",
    "EnvCheckError",
    "InvalidTaskError",
    "ResetInfo",
    "SandboxedEnv",
    "ScorerError",
    "StepInfo",
    "Suite",
    "SuiteNotInstalledError",
    "Tool",
    "ToolCallRecord",
    "ToolSet",
    "UnknownEnvironmentError",
    "check_env",
    "is_sandboxed",
    "make",
    "register_env",
    "register_run_recorder",
    "register_task_reader",
    "register_task_source",
    "sandboxed_env_class",
    "task_id_of",
    "tool",
]
