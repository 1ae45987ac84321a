"""TRL's environment protocol (`environment_factory` of `GRPOTrainer` and `AsyncGRPOTrainer`, TRL 1.16), both ways:
a rollgym environment as a TRL environment (`trl_environment`), a TRL environment in rollgym's loop
(`from_trl_environment`). Neither imports TRL: the protocol is plain Python (tool methods, `reset`, `get_reward`)."""

from rollgym.envs.trl.from_trl import from_trl_environment
from rollgym.envs.trl.to_trl import trl_environment

__all__ = ["from_trl_environment", "trl_environment"]
