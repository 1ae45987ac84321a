"""The trainer versions each room is tested with; a trainer outside its range is refused, naming the range, rather
than producing batches its own code may read differently."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from rollgym.errors import UsageError

#: package -> the versions rollgym's room for it is tested with (tests/integrations/<trainer>/)
TESTED: dict[str, str] = {
    "verl": ">=0.9.1,<0.10",
    "skyrl": ">=0.4.0,<0.5",
    "verifiers": ">=0.4.0,<0.5",
    "openrlhf": ">=0.11.2,<0.12",
    "openpipe-art": ">=0.5.18,<0.5.19",  # ART (imported as `art`); 0.5.19 needs Python 3.12
    "areal": ">=1.0.4,<1.1",
}


def require_trainer(package: str, installed: str | None = None) -> str:
    """The installed version of `package`, if rollgym is tested with it; else a `UsageError` naming the range."""
    tested = SpecifierSet(TESTED[package])
    if installed is None:
        try:
            installed = version(package)
        except PackageNotFoundError:
            raise UsageError(
                f"{package} is not installed: rollgym's {package} room is tested with {package}{tested}"
            ) from None
    if Version(installed) not in tested:
        raise UsageError(
            f"{package} {installed} is outside the versions rollgym's {package} room is tested with ({tested}): "
            f"install {package}{tested}, or an older rollgym made for {package} {installed}"
        )
    return installed
