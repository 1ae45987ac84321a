"""OpenRLHF, in one room (OpenRLHF 0.11): the live hook and the offline converter.

- `agent_executor.RollgymAgentExecutor` (alias `AgentExecutor`): OpenRLHF's agent executor running a rollgym
  environment, sampling through OpenRLHF's own `llm_engine`; give OpenRLHF its file in `--train.agent_func_path`
  (it imports openrlhf, so only OpenRLHF loads it);
- `OpenRLHFEngine`: OpenRLHF's `llm_engine` as a rollgym engine;
- `executor_output`, `openrlhf_rows`: rollgym samples as executor outputs (`rollgym export --format openrlhf`);
- `dataset_rows`, `label_task`: rollgym tasks as OpenRLHF prompt rows whose label names the environment and task.
"""

from rollgym.integrations.openrlhf.dataset import dataset_rows, label_task
from rollgym.integrations.openrlhf.engine import OpenRLHFEngine
from rollgym.integrations.openrlhf.executor_output import action_ranges, executor_output, openrlhf_rows

__all__ = ["OpenRLHFEngine", "action_ranges", "dataset_rows", "executor_output", "label_task", "openrlhf_rows"]
