"""The catalogued reasoning-gym ids (`check_env` on each: tests/envs/test_catalogue_check_env.py); the list of generators is the installed reasoning-gym's;
task rows carry seed, size, index and the difficulty (a config or a curriculum level), and bad rows are named."""

from __future__ import annotations

import pytest

import rollgym as rg
from rollgym.envs import InvalidTaskError
from rollgym.envs.suites.reasoning_gym import CALCULATOR_GENERATORS, GENERATORS
from rollgym.envs.suites.reasoning_gym.rows import GeneratorRow, dataset_of, entry_of


def test_the_catalogued_generators_are_the_installed_reasoning_gyms():
    from reasoning_gym.factory import DATASETS

    assert set(GENERATORS) == set(DATASETS) - {"composite"} and len(GENERATORS) == len(set(GENERATORS))
    assert set(CALCULATOR_GENERATORS) <= set(GENERATORS)


def test_default_tasks_are_rows_of_one_seeded_dataset_and_reproducible():
    env = rg.make("reasoning_gym/chain_sum-v0")
    tasks = env.unwrapped.default_tasks(3, seed=7)
    assert tasks == [
        {"task_id": f"chain_sum-7-{i}", "generator": "chain_sum", "seed": 7, "size": 3, "index": i} for i in range(3)
    ]
    messages, info = env.reset(options={"task": tasks[2]})
    import reasoning_gym

    expected = reasoning_gym.create_dataset("chain_sum", seed=7, size=3)[2]
    assert messages[-1] == {"role": "user", "content": expected["question"]} and info["task_id"] == "chain_sum-7-2"
    assert "<answer>" in messages[0]["content"]  # reasoning-gym's own system prompt asks for the tags
    assert env.reset(seed=5)[0] == env.reset(seed=5)[0] != env.reset(seed=6)[0]
    env.close()


def test_a_level_sets_the_curriculum_and_a_config_overrides_it():
    low = dataset_of(GeneratorRow(generator="basic_arithmetic", level=0, size=4))
    high = dataset_of(GeneratorRow(generator="basic_arithmetic", level=9, size=4))  # capped at each attribute's last
    assert (low.config.min_terms, low.config.max_terms, low.config.max_digits) == (2, 2, 1)
    assert (high.config.max_terms, high.config.max_digits) == (6, 4)
    mixed = dataset_of(GeneratorRow(generator="basic_arithmetic", level=9, size=4, config={"max_digits": 2}))
    assert (mixed.config.max_terms, mixed.config.max_digits) == (6, 2)
    env = rg.make("reasoning_gym/basic_arithmetic-v0", level=0)  # make kwargs fill the rows that do not say theirs
    env.reset(options={"task": {"seed": 1, "size": 2, "index": 1}})
    assert env.unwrapped.row.level == 0 and env.unwrapped.row.stable_id() == "basic_arithmetic-1-1-level0"
    assert env.unwrapped.entry == entry_of(GeneratorRow(generator="basic_arithmetic", seed=1, size=2, index=1, level=0))
    env.reset(options={"task": {"seed": 1, "size": 2, "index": 1, "level": 3}})
    assert env.unwrapped.row.level == 3
    env.close()


@pytest.mark.parametrize(
    ("task", "kwargs", "needle"),
    [
        ({"generator": "products"}, {}, "names generator 'products', but this is the 'chain_sum' environment"),
        ({"index": 3, "size": 2}, {}, "index 3 is outside a dataset of size 2"),
        ({"size": 0}, {}, "size"),
        ({"config": {"no_such_field": 1}}, {}, "reasoning-gym refused the 'chain_sum' config"),
        ({"config": {"min_terms": 5, "max_terms": 2}}, {}, "refused"),
        ({}, {"level": -1}, "level"),
    ],
)
def test_a_bad_row_is_an_invalid_task_naming_the_problem(task, kwargs, needle):
    env = rg.make("reasoning_gym/chain_sum-v0", **kwargs)
    with pytest.raises(InvalidTaskError, match=needle):
        env.reset(options={"task": task})
    env.close()


def test_a_level_without_a_curriculum_or_that_reasoning_gym_refuses_is_an_invalid_task():
    env = rg.make("reasoning_gym/acre-v0")
    with pytest.raises(InvalidTaskError, match="'acre' has no curriculum, so no level"):
        env.reset(options={"task": {"level": 1}})
    env.close()
    env = rg.make("reasoning_gym/knight_swap-v0")  # reasoning-gym 0.1.25's curriculum gives a config it refuses
    with pytest.raises(InvalidTaskError, match="refused the 'knight_swap' config {}: min_nodes must be >= 6"):
        env.reset(options={"task": {"level": 0}})
    env.close()
