"""A BFCL multi-turn entry as a rollgym environment: the entry's first user turn, its backends' functions as tools
(BFCL's own docs, compiled as BFCL compiles them for OpenAI-style function calling), each call run by BFCL's own
backends; a reply without a call ends the user's turn and brings the next one, as BFCL's inference does; the reward is
BFCL's `multi_turn_checker` on the calls made."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import ValidationError

from rollgym.envs.core import Env, InvalidTaskError
from rollgym.envs.core.errors import UnknownEnvironmentError
from rollgym.envs.core.spaces import action_space
from rollgym.envs.core.suites import require_installed
from rollgym.envs.suites.bfcl.calls import BFCLTool, BFCLToolSet, Episode
from rollgym.envs.suites.bfcl.categories import BFCL_VERSION, CATEGORIES, REFUSED, SUITE, env_id, refuse
from rollgym.envs.suites.bfcl.entries import BFCLEntry, BFCLRow, default_rows, entry_of
from rollgym.envs.suites.bfcl.verdict import bfcl_verdict


@functools.cache
def _compiled_tools(entry_id: str, functions_json: str) -> list[dict[str, Any]]:
    """BFCL's OpenAI-style tool schemas of function docs (`convert_to_tool`, as its OpenAI completions handler)."""
    import json

    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.model_handler.utils import convert_to_tool

    return convert_to_tool(json.loads(functions_json), GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)


def tool_schemas(entry_id: str, functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool schemas of `functions` (BFCL function docs), compiled once per entry and set of functions."""
    import json

    return _compiled_tools(entry_id, json.dumps(functions, sort_keys=True))


def held_out_message(functions: list[dict[str, Any]]) -> dict[str, str]:
    """The user message of a turn that adds held-out functions (miss_func): BFCL's own text with the functions' docs,
    as its prompting handlers send it (the tools shown at the start do not change within an episode)."""
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING

    return {
        "role": "user",
        "content": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(functions=functions),
    }


class BFCLEnv(Env):
    """One BFCL multi-turn category (`category`, set on the per-category subclass); a task row is `{"task_id": ID}`
    with a BFCL entry id of that category (BFCL's own data lines, with `id`, are rows too)."""

    category: str = ""

    def __init__(self, max_turns: int | None = None, system_prompt: str | None = None) -> None:
        """`system_prompt`: a system message before the first user turn (BFCL's function-calling mode sends none)."""
        super().__init__(max_turns=max_turns)
        self.system_prompt = system_prompt
        self.entry: BFCLEntry | None = None
        self.episode: Episode | None = None
        self.user_turn = 0  # the index of the user's turn in progress
        self.verdict: dict[str, Any] = {}

    @classmethod
    def default_tasks(cls, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """`n` entries of the category in BFCL's order, from entry `seed` on."""
        return default_rows(cls.category, n, seed)

    async def setup(self, task: dict[str, Any] | None):
        try:
            row = BFCLRow.model_validate(task or {})
        except ValidationError:
            raise InvalidTaskError(
                f"a BFCL task row is {{'task_id': '{self.category}_0'}} (a BFCL entry id), got {task!r}"[:300]
            ) from None
        entry = self.entry = entry_of(row, self.category)
        self.episode = Episode(entry)
        self.user_turn = 0
        self.verdict = {}
        shown = [BFCLTool(schema, self) for schema in tool_schemas(entry.id, entry.function)]
        held_out = [f for functions in entry.missed_function.values() for f in functions]
        hidden = (
            [BFCLTool(schema, self, shown=False) for schema in tool_schemas(entry.id, held_out)] if held_out else []
        )
        self.toolset = BFCLToolSet(shown + hidden)
        self.action_space = action_space(list(self.toolset.tools))
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return system + self._turn_messages(0), {"task_id": entry.id, "category": entry.category}

    def _turn_messages(self, index: int) -> list[dict[str, Any]]:
        """The messages that open user turn `index` (a turn that adds held-out functions: their docs)."""
        assert self.entry is not None
        held_out = self.entry.missed_function.get(str(index))
        if held_out:
            return [held_out_message(held_out)]
        return [dict(message) for message in self.entry.question[index]]

    async def on_text_reply(self, message: dict):
        """A reply without a call ends the user's turn: the next turn's messages, or the end after the last."""
        assert self.entry is not None and self.episode is not None
        if self.user_turn + 1 >= len(self.entry.question):
            return [], True
        self.user_turn += 1
        self.episode.next_turn()
        return self._turn_messages(self.user_turn), False

    async def compute_reward(self):
        assert self.entry is not None and self.episode is not None, "setup() first"
        self.verdict = bfcl_verdict(self.entry, self.episode.turns)
        valid = 1.0 if self.verdict.get("valid") else 0.0
        turns = len(self.entry.question)
        return valid, {"valid": valid, "turns_reached": min(len(self.episode.turns), turns) / turns}

    async def teardown(self) -> None:
        if self.episode is not None:
            self.episode.close()


@functools.cache
def env_class(category: str) -> type[BFCLEnv]:
    """The environment class of one category, one per process."""
    name = "BFCL" + "".join(part.title() for part in category.split("_")) + "Env"
    made = type(name, (BFCLEnv,), {"category": category, "__module__": __name__, "__doc__": BFCLEnv.__doc__})
    assert issubclass(made, BFCLEnv)
    return made


def make_bfcl_env(category: str, **kwargs: Any) -> BFCLEnv:
    """gymnasium's entry point of every `bfcl/...` id: the category's environment, or `SuiteNotInstalledError`
    naming what to install when bfcl-eval is absent."""
    if category in REFUSED:
        refuse(category)
    if category not in CATEGORIES:
        raise UnknownEnvironmentError(f"bfcl-eval {BFCL_VERSION} has no multi-turn category {category!r}: {CATEGORIES}")
    require_installed(env_id(category), SUITE)
    return env_class(category)(**kwargs)
