"""slime, in one room (THUDM/slime 0.3.1, not on PyPI): the live hook (`rollgym_generate`, a custom generate function sampling
through slime's sglang router) and rollgym samples as slime's `Sample` fields (`rollgym export --format slime`),
following slime's field contract, as its trainer needs sglang and Megatron."""

from rollgym.integrations.slime.dataset import dataset_rows
from rollgym.integrations.slime.engine import SlimeRouterEngine
from rollgym.integrations.slime.sample_fields import SAMPLE_FIELDS, slime_sample, slime_samples

__all__ = ["SAMPLE_FIELDS", "SlimeRouterEngine", "dataset_rows", "slime_sample", "slime_samples"]
