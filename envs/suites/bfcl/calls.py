"""A model's tool call in BFCL's form and run by BFCL's own code: the call becomes BFCL's call string through BFCL's
`convert_to_function_call` (what its function-calling handlers do), and `execute_multi_turn_func_call` evaluates it
against the episode's instances of BFCL's in-memory backends."""

from __future__ import annotations

import json
import keyword
import re
import sys
import uuid
from typing import Any

from rollgym.envs.core.tools import Tool, ToolFailure, ToolSet

#: the module whose globals hold BFCL's backend instances, keyed by model name and entry id
_UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"


def fresh_model_name() -> str:
    """A model name no other episode or scoring uses: BFCL keeps each backend instance in its module's globals under
    the model name and entry id, and reuses one it finds there."""
    return f"rollgym_{uuid.uuid4().hex}"


def forget_instances(model_name: str) -> int:
    """Drop BFCL's backend instances kept under `model_name` (and its `_eval` / `_ground_truth` variants); how many."""
    module = sys.modules.get(_UTILS)
    if module is None:
        return 0
    prefix = re.sub(r"[-./:]", "_", model_name) + "_"
    stale = [name for name in vars(module) if name.startswith(prefix)]
    for name in stale:
        del vars(module)[name]
    return len(stale)


def call_string(name: str, arguments: dict[str, Any]) -> str:
    """BFCL's call string of a function-calling model's call (`name(k=repr(v), ...)`), or a `ToolFailure` for an
    argument name that is no Python identifier: BFCL would paste it into the code it evaluates."""
    from bfcl_eval.model_handler.utils import convert_to_function_call

    bad = [key for key in arguments if not key.isidentifier() or keyword.iskeyword(key)]
    if bad:
        raise ToolFailure(
            f"argument names must be parameter names of '{name}', got {', '.join(repr(k) for k in bad)}",
            kind="bad_arguments",
        )
    (call,) = convert_to_function_call([{name: arguments}])
    return call


class Episode:
    """What one episode's tool calls act on: BFCL's instances of the entry's backends (under the episode's own model
    name) and the calls of each step, grouped as BFCL's checker reads them: turns of steps of call strings."""

    def __init__(self, entry: Any) -> None:
        self.entry = entry
        self.model_name = fresh_model_name()
        self.turns: list[list[list[str]]] = [[]]  # the calls of each step of each user turn so far
        self.step_key: int | None = None  # the environment step the current step's calls came in

    def record(self, step_key: int, call: str) -> None:
        """Add `call` to the step of environment step `step_key` (a new step when it is a new environment step)."""
        if step_key != self.step_key:
            self.turns[-1].append([])
            self.step_key = step_key
        self.turns[-1][-1].append(call)

    def next_turn(self) -> None:
        """The user's next turn starts."""
        self.turns.append([])
        self.step_key = None

    def steps_this_turn(self) -> int:
        return len(self.turns[-1])

    def execute(self, call: str) -> str:
        """Run one call string on the episode's backends, as BFCL's inference does; the result text BFCL shows."""
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

        results, _ = execute_multi_turn_func_call(
            [call],
            self.entry.initial_config,
            self.entry.involved_classes,
            self.model_name,
            self.entry.id,
            long_context="long_context" in self.entry.category or "composite" in self.entry.category,
            is_evaL_run=False,
        )
        return results[0]

    def close(self) -> None:
        forget_instances(self.model_name)


def max_steps_per_turn() -> int:
    """BFCL's limit of steps (replies with calls) in one user turn (`MAXIMUM_STEP_LIMIT`)."""
    from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT

    return MAXIMUM_STEP_LIMIT


class BFCLTool(Tool):
    """One function of an entry's backends, shown with BFCL's own doc (as BFCL compiles it for OpenAI-style function
    calling) and run by BFCL; arguments go to BFCL as the model sent them, so BFCL's own errors reach the model.
    `shown=False`: a held-out function (miss_func), callable all along as in BFCL, whose doc comes in a later turn."""

    def __init__(self, schema: dict[str, Any], env: Any, shown: bool = True) -> None:
        self.shown = shown
        function = schema["function"]
        self.name = function["name"]
        self.description = function.get("description") or self.name
        self.parallel = False  # BFCL runs a step's calls in order, each on the state the one before left
        self.is_async = True
        self.env = env
        self._schema_json = json.dumps(schema)

    def validate(self, arguments: dict) -> dict:
        return dict(arguments)

    async def invoke(self, kwargs: dict) -> Any:
        episode: Episode = self.env.episode
        call = call_string(self.name, kwargs)
        episode.record(self.env.turn, call)
        result = episode.execute(call)
        if episode.steps_this_turn() > max_steps_per_turn():
            self.env.finish("force_quit")  # BFCL's inference gives up on the entry after this many steps in a turn
        return result


class BFCLToolSet(ToolSet):
    """An entry's tools: the schemas shown at reset are those of the functions BFCL offers from the start."""

    def schemas(self) -> list[dict]:
        return [
            schema
            for schema, t in zip(super().schemas(), self.tools.values(), strict=True)
            if getattr(t, "shown", True)
        ]
