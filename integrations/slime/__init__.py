"""slime, in one room (THUDM/slime 0.3.1, not on PyPI): rollgym samples as slime's `Sample` fields
(`rollgym export --format slime`), following slime's field contract, as its trainer needs sglang and Megatron."""

from rollgym.integrations.slime.sample_fields import SAMPLE_FIELDS, slime_sample, slime_samples

__all__ = ["SAMPLE_FIELDS", "slime_sample", "slime_samples"]
