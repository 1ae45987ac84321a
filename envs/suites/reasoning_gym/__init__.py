"""reasoning-gym's procedural generators as rollgym environments: `reasoning_gym/<generator>-v0` (the model answers in
`<answer>` tags) and `reasoning_gym/<generator>-calculator-v0` for the arithmetic families (an `ast`-only calculator
tool), scored by reasoning-gym's own `score_answer`. Importing this room imports no reasoning-gym."""

from rollgym.envs.suites.reasoning_gym.generators import (
    CALCULATOR_GENERATORS,
    GENERATORS,
    SUITE,
    env_id,
    register_generators,
)

__all__ = ["CALCULATOR_GENERATORS", "GENERATORS", "SUITE", "env_id", "register_generators"]
