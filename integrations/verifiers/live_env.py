# pyright: reportMissingImports=false
# (verifiers is installed where prime-rl's env server runs, not in rollgym's own venv)
"""`RollgymLiveEnv`: a verifiers 0.4 v1 `Env` whose episodes are rollgym's, for prime-rl's env server.

prime-rl's orchestrator asks a verifiers env server (`verifiers.v1.serve.EnvServer`) for one episode per task with
the model context it trains (a `vf.TrainClientConfig` naming its vLLM, the served model, its sampling); the server
runs `Env.run_slot` -> `Env.run_episode(task, ctx)` (verifiers/v1/env.py:234-353, serve/server.py:97-123). This
`Env` answers `run_episode` with `live_episode`: a rollgym episode sampled through that vLLM, token-in/token-out, its
trace minted through the server's `on_trace` (so its delta stream carries it) with rollgym's exact ids. A taskset
exports it beside its `Taskset` (verifiers picks a taskset package's `Env` subclass, utils/loaders.py:168-181); each
task's data holds the rollgym row (`row`) and its config the environment id (`env`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.episode import EnvInfo
from verifiers.v1.trace import TraceTask

from rollgym.engines.base import SamplingParams
from rollgym.integrations.verifiers.live_episode import live_episode


class RollgymLiveEnv(vf.Env[vf.SingleAgentEnvConfig]):
    """One rollgym episode per verifiers task, sampled through the run's own client (`ctx.client`)."""

    @contextlib.asynccontextmanager
    async def serving(self):
        """No interception server, tunnel or shared tool servers: rollgym's loop samples and runs the tools itself."""
        await self.start()
        try:
            yield
        finally:
            await self.stop()

    async def run(self, task: Any, agents: Any) -> None:
        raise NotImplementedError("RollgymLiveEnv runs its episodes itself (run_episode): rollgym's loop is the agent")

    async def run_episode(
        self,
        task: Any,
        ctx: Any,
        *,
        on_trace: Callable[[vf.Trace], None] | None = None,
        on_discard: Callable[[vf.Trace], None] | None = None,
    ) -> vf.Episode:
        env_id = getattr(task.config, "env", None) or getattr(task.data, "env", None)
        tokenizer = getattr(ctx.client, "renderer_model_name", None) or ctx.model
        wire = await live_episode(
            str(env_id), dict(task.data.row), ctx.client, ctx.model, tokenizer=tokenizer, sampling=sampling(ctx)
        )
        trace = wire.traces[0]
        if on_trace is not None:
            on_trace(trace)
        return vf.Episode(
            env=EnvInfo(id=self.config.env_id),
            task=TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
            ok=not trace.has_error,
            traces=[trace],
        )


def sampling(ctx: Any) -> SamplingParams:
    """The run's temperature and top_p (`ctx.sampling`, vLLM's defaults where unset)."""
    config = getattr(ctx, "sampling", None)
    temperature = getattr(config, "temperature", None)
    top_p = getattr(config, "top_p", None)
    return SamplingParams(
        temperature=1.0 if temperature is None else float(temperature), top_p=1.0 if top_p is None else float(top_p)
    )
