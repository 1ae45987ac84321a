"""A verifiers taskset module as `vf.load_taskset` imports one by id: it exports its `Taskset` via `__all__`."""

from vf_tasksets import GuessTaskset

__all__ = ["GuessTaskset"]
