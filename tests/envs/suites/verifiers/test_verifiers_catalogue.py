"""`verifiers/env-v0` in the catalogue: listed with its package and extra, and neither `import rollgym` nor listing
the catalogue imports verifiers."""

from __future__ import annotations

import subprocess
import sys

from rollgym.envs.catalogue import catalogue
from rollgym.envs.suites.verifiers import ENV_ID, SUITE


def test_the_catalogue_lists_the_verifiers_id_with_its_extra():
    (entry,) = [e for e in catalogue() if e.suite == "verifiers"]
    assert (entry.id, entry.package, entry.extra) == (ENV_ID, "verifiers", "verifiers")
    assert entry.installed == SUITE.installed()
    assert SUITE.install_hint() == "pip install 'rollgym[verifiers]'"


def test_import_rollgym_and_the_catalogue_import_no_verifiers():
    code = (
        "import sys, rollgym as rg; from rollgym.envs.catalogue import catalogue; catalogue(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'verifiers'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
