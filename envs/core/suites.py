"""Environment suites from other packages: which ids each provides, the extra that installs it, and whether it is
installed (asked of the import system, never by importing the suite), so `make` can say what to install."""

from __future__ import annotations

import importlib.util
from typing import Any

from pydantic import BaseModel, ConfigDict

from rollgym.envs.core.errors import UnknownEnvironmentError
from rollgym.envs.core.registration import register_env


class Suite(BaseModel):
    """A suite of environments provided by another package, installed by one of rollgym's extras."""

    model_config = ConfigDict(frozen=True)

    name: str  # what users call it: "reasoning-gym"
    package: str  # its distribution on PyPI: "reasoning-gym"
    module: str  # the module it imports as: "reasoning_gym"
    extra: str  # rollgym's extra that installs it: `pip install 'rollgym[reasoning-gym]'`

    def installed(self) -> bool:
        """Whether the suite's module can be imported here (found, not imported)."""
        try:
            return importlib.util.find_spec(self.module) is not None
        except (ImportError, ValueError):  # a parent package that is absent, or a module without a spec
            return False

    def install_hint(self) -> str:
        """The command that installs the suite."""
        return f"pip install 'rollgym[{self.extra}]'"


class SuiteNotInstalledError(UnknownEnvironmentError):
    """A catalogued environment whose suite's package is not installed; the message says which extra installs it."""


#: suite name -> suite; environment id -> the name of the suite that provides it
_SUITES: dict[str, Suite] = {}
_IDS: dict[str, str] = {}


def register_suite_env(suite: Suite, env_id: str, entry_point: str, **kwargs: Any) -> None:
    """Register `env_id` with gymnasium as one of `suite`'s environments; `entry_point` is a "module:name" string,
    so registering imports neither the module nor the suite."""
    _SUITES[suite.name] = suite
    _IDS[env_id] = suite.name
    register_env(env_id, entry_point, **kwargs)


def suite_of(env_id: str) -> Suite | None:
    """The suite that provides `env_id`, or None for rollgym's own environments and users' ones."""
    name = _IDS.get(env_id)
    return _SUITES[name] if name is not None else None


def suite_envs() -> dict[str, Suite]:
    """Every registered suite environment id with its suite, in registration order."""
    return {env_id: _SUITES[name] for env_id, name in _IDS.items()}


def require_installed(env_id: str, suite: Suite | None = None) -> None:
    """Raise `SuiteNotInstalledError` naming the extra to install when the suite of `env_id` (`suite`, else the one
    that registered it) is absent."""
    suite = suite or suite_of(env_id)
    if suite is not None and not suite.installed():
        raise SuiteNotInstalledError(
            f"{env_id!r} is a {suite.name} environment, and {suite.package} is not installed: {suite.install_hint()}"
        )
