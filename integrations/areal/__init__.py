"""AReaL, in one room (areal 1.0.4): the live hook (`workflow.RollgymWorkflow`, a `RolloutWorkflow` sampling through
AReaL's `InferenceEngine.agenerate`) and rollgym samples as the trajectory dict AReaL's workflows return
(`rollgym export --format areal`)."""

from rollgym.integrations.areal.dataset import dataset_rows
from rollgym.integrations.areal.engine import AReaLEngine
from rollgym.integrations.areal.episode_tensors import EPISODE_KEYS, episode_rows, episode_tensors

__all__ = ["EPISODE_KEYS", "AReaLEngine", "dataset_rows", "episode_rows", "episode_tensors"]
