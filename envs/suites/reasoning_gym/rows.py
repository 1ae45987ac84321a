"""A reasoning-gym task row: which generator, seed, size and index, and the difficulty (a config or a curriculum
level); the dataset it names is built by reasoning-gym itself and kept, so a batch builds each one once."""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rollgym.envs.core.errors import InvalidTaskError


class GeneratorRow(BaseModel):
    """One question of a generator: row `index` of `create_dataset(generator, seed=seed, size=size, **config)`;
    `level` sets every attribute of the generator's curriculum to that level (capped at each one's last) first."""

    model_config = ConfigDict(extra="ignore")

    task_id: str = ""
    generator: str
    seed: int = 0
    size: int = Field(default=1, ge=1)
    index: int = Field(default=0, ge=0)
    config: dict[str, Any] = Field(default_factory=dict)
    level: int | None = Field(default=None, ge=0)

    def stable_id(self) -> str:
        """The row's `task_id`, else one made of what names its question."""
        if self.task_id:
            return self.task_id
        level = f"-level{self.level}" if self.level is not None else ""
        config = f"-{json.dumps(self.config, sort_keys=True)}" if self.config else ""
        return f"{self.generator}-{self.seed}-{self.index}{level}{config}"


def parse_row(task: dict[str, Any], generator: str, defaults: dict[str, Any]) -> GeneratorRow:
    """The row of `task` for the environment of `generator`: `defaults` (the make kwargs `config`, `level`) fill what
    the task does not say; a task naming another generator, or a bad field, is an `InvalidTaskError`."""
    named = task.get("generator", generator)
    if named != generator:
        raise InvalidTaskError(f"the task names generator {named!r}, but this is the {generator!r} environment")
    given = {key: value for key, value in defaults.items() if value is not None}
    try:
        row = GeneratorRow.model_validate({**given, **task, "generator": generator})
    except ValidationError as exc:
        raise InvalidTaskError(f"a reasoning-gym task row ({generator}): {exc}") from None
    if row.index >= row.size:
        raise InvalidTaskError(f"index {row.index} is outside a dataset of size {row.size}")
    return row


@functools.lru_cache(maxsize=256)
def _dataset(generator: str, seed: int, size: int, config_json: str, level: int | None) -> Any:
    import reasoning_gym
    from reasoning_gym.factory import DATASETS, create_curriculum, has_curriculum

    if generator not in DATASETS:
        raise InvalidTaskError(f"reasoning-gym {reasoning_gym.__version__} has no generator {generator!r}")
    config = json.loads(config_json)
    dataset_class, config_class = DATASETS[generator]
    try:
        if level is None:
            return reasoning_gym.create_dataset(generator, seed=seed, size=size, **config)
        if not has_curriculum(generator):
            raise InvalidTaskError(f"reasoning-gym's {generator!r} has no curriculum, so no level: pass a config")
        curriculum = create_curriculum(generator)
        for name, attribute in curriculum.attributes.items():
            curriculum.set_attr_level(name, min(level, len(attribute.levels) - 1))
        leveled = curriculum.generate_configuration(defaults={"seed": seed, "size": size})
        chosen = dataclasses.replace(leveled, **config) if config else leveled
        return dataset_class(config=chosen)
    except (TypeError, ValueError, AssertionError, KeyError) as exc:  # reasoning-gym's own refusal of a config
        if isinstance(exc, InvalidTaskError):
            raise
        raise InvalidTaskError(f"reasoning-gym refused the {generator!r} config {config}: {exc}") from None


def dataset_of(row: GeneratorRow) -> Any:
    """The reasoning-gym dataset (a `ProceduralDataset`) the row names, built once per process."""
    return _dataset(row.generator, row.seed, row.size, json.dumps(row.config, sort_keys=True), row.level)


def entry_of(row: GeneratorRow) -> dict[str, Any]:
    """The row's question as reasoning-gym generates it: `{question, answer, metadata}`."""
    dataset = dataset_of(row)
    try:
        return dataset[row.index]
    except (ValueError, AssertionError, RuntimeError) as exc:  # e.g. jugs at level 9: no puzzle that hard found
        raise InvalidTaskError(f"reasoning-gym could not generate {row.stable_id()}: {exc}") from None
