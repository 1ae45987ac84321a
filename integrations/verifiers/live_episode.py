# pyright: reportMissingImports=false
# (verifiers is installed where prime-rl runs, not in rollgym's own venv)
"""`live_episode`: one rollgym episode sampled through prime-rl's inference server (`PrimeRLGenerateEngine`, the
request verifiers' `TrainClient` makes), returned as verifiers' own `vf.WireEpisode` holding one `vf.Trace` with
rollgym's exact ids, masks and sampling logprobs (`verifiers_episode`, the offline converter's code): what prime-rl's
orchestrator reads from an env server, built during training rather than from a stored run."""

from __future__ import annotations

from typing import Any

from rollgym.engines.base import SamplingParams
from rollgym.integrations.verifiers.episode import verifiers_episode
from rollgym.integrations.verifiers.generate_engine import PrimeRLGenerateEngine
from rollgym.limits import Limits
from rollgym.rollouts.loop import rollout as run_one
from rollgym.rollouts.policy import Policy, certified_tokenizer


async def live_episode(
    env_id: str,
    task: dict[str, Any],
    client_config: Any,
    model: str,
    *,
    tokenizer: Any,
    limits: Limits | None = None,
    sampling: SamplingParams | None = None,
    extra_sampling: dict[str, Any] | None = None,
) -> Any:
    """The episode as a `vf.WireEpisode`; a failed rollout is an errored trace (`ok` false, not scored), which
    prime-rl drops before training. `tokenizer`: the served model's tokenizer (a path, spec or Hugging Face one);
    `sampling`: temperature, top_p and top_k (the loop sets each turn's budget and stop ids); `extra_sampling`: other
    keys of vLLM's sampling dict, sent as they are."""
    engine = PrimeRLGenerateEngine(client_config, model, extra_sampling=extra_sampling)
    try:
        policy = Policy(engine=engine, tokenizer=certified_tokenizer(tokenizer))
        rollout = await run_one(env_id, policy, task, limits=limits, sampling=sampling)
    finally:
        await engine.aclose()
    return verifiers_episode(rollout)
