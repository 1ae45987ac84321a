"""The reasoning-gym generators rollgym catalogues, their environment ids, and their registration: by name, so
neither `import rollgym` nor listing the catalogue imports reasoning-gym."""

from __future__ import annotations

from rollgym.envs.core.suites import Suite, register_suite_env

SUITE = Suite(name="reasoning-gym", package="reasoning-gym", module="reasoning_gym", extra="reasoning-gym")
NAMESPACE = "reasoning_gym"
ENTRY_POINT = "rollgym.envs.suites.reasoning_gym.answer_env:make_answer_env"

#: reasoning-gym 0.1.25's registered generators (`reasoning_gym.factory.DATASETS`), all but `composite`, which mixes
#: other generators by a config of its own (a mixture in rollgym is a task list over several ids). A test checks this
#: list against the installed reasoning-gym.
GENERATORS = (
    'ab', 'acre', 'advanced_geometry', 'aiw', 'arc_1d', 'arc_agi', 'base_conversion', 'basic_arithmetic', 'bf',
    'binary_alternation', 'binary_matrix', 'bitwise_arithmetic', 'boxnet', 'caesar_cipher', 'calendar_arithmetic',
    'chain_sum', 'circuit_logic', 'codeio', 'coin_flip', 'color_cube_rotation', 'complex_arithmetic', 'count_bits',
    'count_primes', 'countdown', 'course_schedule', 'cryptarithm', 'decimal_arithmetic', 'decimal_chain_sum',
    'dice', 'emoji_mystery', 'family_relationships', 'figlet_font', 'fraction_simplification', 'futoshiki',
    'game_of_life', 'game_of_life_halting', 'gcd', 'graph_color', 'group_anagrams', 'gsm_symbolic',
    'intermediate_integration', 'isomorphic_strings', 'jugs', 'kakurasu', 'knight_swap', 'knights_knaves',
    'largest_island', 'lcm', 'leg_counting', 'letter_counting', 'letter_jumble', 'list_functions', 'mahjong_puzzle',
    'manipulate_matrix', 'maze', 'mini_sudoku', 'modulo_grid', 'n_queens', 'needle_haystack', 'number_filtering',
    'number_format', 'number_sequence', 'number_sorting', 'palindrome_generation', 'palindrome_partitioning',
    'path_star', 'polynomial_equations', 'polynomial_multiplication', 'pool_matrix', 'power_function',
    'prime_factorization', 'products', 'propositional_logic', 'puzzle24', 'quantum_lock', 'ransom_note', 'rearc',
    'rectangle_count', 'rotate_matrix', 'rotten_oranges', 'rubiks_cube', 'rush_hour', 'self_reference',
    'sentence_reordering', 'shortest_path', 'simple_equations', 'simple_geometry', 'simple_integration', 'sokoban',
    'spell_backward', 'spiral_matrix', 'string_insertion', 'string_manipulation', 'string_splitting',
    'string_synthesis', 'sudoku', 'survo', 'syllogism', 'time_intervals', 'tower_of_hanoi', 'tsumego',
    'word_ladder', 'word_sequence_reversal', 'word_sorting', 'zebra_puzzles',
)  # fmt: skip

#: The arithmetic generators whose answer is a number a calculator computes from the question's expression or
#: quantities: each also has a `-calculator-v0` variant with the `calculate` tool.
CALCULATOR_GENERATORS = (
    "basic_arithmetic",
    "bitwise_arithmetic",
    "chain_sum",
    "decimal_arithmetic",
    "decimal_chain_sum",
    "gsm_symbolic",
    "leg_counting",
    "power_function",
    "products",
)


def env_id(generator: str, *, calculator: bool = False) -> str:
    """The environment id of a generator: `reasoning_gym/<generator>-v0`, `...-calculator-v0` with the tool."""
    return f"{NAMESPACE}/{generator}{'-calculator' if calculator else ''}-v0"


def register_generators() -> None:
    """Register every generator's id (and the calculator variants') with gymnasium, by entry point string."""
    for generator in GENERATORS:
        register_suite_env(SUITE, env_id(generator), ENTRY_POINT, generator=generator, calculator=False)
    for generator in CALCULATOR_GENERATORS:
        register_suite_env(SUITE, env_id(generator, calculator=True), ENTRY_POINT, generator=generator, calculator=True)
