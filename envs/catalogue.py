"""The catalogue: every environment id `make` knows in this installation, rollgym's own and each suite's, with the
package that provides it, the extra that installs it and whether it is installed (`rollgym envs` prints it)."""

from __future__ import annotations

import gymnasium
from pydantic import BaseModel

from rollgym.envs.core.registration import NAMESPACE
from rollgym.envs.core.suites import suite_envs


class CatalogueEntry(BaseModel):
    """One environment id of the catalogue."""

    id: str
    suite: str  # "rollgym" for rollgym's own
    package: str  # the distribution that provides it
    extra: str | None  # `pip install 'rollgym[<extra>]'` installs it; None: it comes with rollgym
    installed: bool


def catalogue() -> list[CatalogueEntry]:
    """rollgym's own environments, then every suite's, sorted by id within each; no suite is imported."""
    own = [
        CatalogueEntry(id=env_id, suite=NAMESPACE, package="rollgym", extra=None, installed=True)
        for env_id in sorted(gymnasium.registry)
        if env_id.startswith(NAMESPACE + "/")
    ]
    installed: dict[str, bool] = {}
    suites = []
    for env_id, suite in sorted(suite_envs().items(), key=lambda item: (item[1].name, item[0])):
        if suite.name not in installed:
            installed[suite.name] = suite.installed()
        suites.append(
            CatalogueEntry(
                id=env_id,
                suite=suite.name,
                package=suite.package,
                extra=suite.extra,
                installed=installed[suite.name],
            )
        )
    return own + suites
