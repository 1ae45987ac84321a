"""verl, in one room (verl 0.9): the live hook and the offline converter.

- `agent_loop.RollgymAgentLoop`: verl's agent loop (`AgentLoopBase`) running a rollgym environment, sampling through
  verl's own server client; give verl its path in `agent_loop_config_path` (it imports verl, so only verl loads it);
- `VerlServerEngine`: verl's `server_manager` as a rollgym engine;
- `agent_loop_fields`, `verl_rows`: rollgym samples as `AgentLoopOutput` fields (`rollgym export --format verl`);
- `dataset_rows`: rollgym tasks as rows of the Parquet file verl's `RLHFDataset` reads.
"""

from rollgym.integrations.verl.agent_loop_output import agent_loop_fields, verl_rows
from rollgym.integrations.verl.dataset import dataset_rows
from rollgym.integrations.verl.engine import VerlServerEngine

__all__ = ["VerlServerEngine", "agent_loop_fields", "dataset_rows", "verl_rows"]
