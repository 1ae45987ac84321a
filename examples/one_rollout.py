"""(a) One rollout: the embedded model on the Calculator environment, token-exact."""

import asyncio

import rollgym as rg


async def main() -> None:
    limits = rg.Limits(max_turns=3, max_tokens_per_turn=64)
    async with rg.Policy("smollm2-135m") as policy:
        rollout = await rg.rollout("rollgym/Calculator-v0", policy, limits=limits)
    view = rollout.token_view()  # TRL's prompt_ids, completion_ids, logprobs, env_mask
    print(rollout.stop_reason, rollout.reward, f"{sum(view['env_mask'])}/{len(view['env_mask'])} tokens sampled")


asyncio.run(main())
