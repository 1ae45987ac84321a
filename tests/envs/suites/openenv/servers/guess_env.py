"""A number-guessing game written as OpenEnv's docs write an environment (`openenv init`'s template): pydantic
`Action`/`Observation` models, an `Environment` with reset/step/state, served by `create_app`. Reward 1.0 for the
right number, -0.1 for each wrong guess; the episode ends at the right guess or after `MAX_GUESSES`."""

import random
from typing import Any
from uuid import uuid4

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

MAX_GUESSES = 6


class GuessAction(Action):
    """Guess the secret number."""

    guess: int = Field(..., ge=1, le=100, description="your guess, 1 to 100")


class GuessObservation(Observation):
    """What the game says about the last guess."""

    feedback: str = Field(default="", description="higher, lower, correct, or the rules at reset")


class GuessEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS: bool = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self._secret = 50

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> GuessObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        self._secret = random.Random(seed).randint(1, 100)
        return GuessObservation(feedback=f"I picked a number from 1 to 100. You have {MAX_GUESSES} guesses.")

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> GuessObservation:  # type: ignore[override] - OpenEnv's base takes the generic Action
        self._state.step_count += 1
        if action.guess == self._secret:
            return GuessObservation(feedback="correct", done=True, reward=1.0)
        feedback = "higher" if action.guess < self._secret else "lower"
        done = self._state.step_count >= MAX_GUESSES
        return GuessObservation(feedback=feedback, done=done, reward=-0.1)

    @property
    def state(self) -> State:
        return self._state


app = create_app(GuessEnvironment, GuessAction, GuessObservation, env_name="guess", max_concurrent_envs=8)
