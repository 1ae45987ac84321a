"""Every name the README and docs/ cite resolves in a fresh interpreter: `rg.X` (the front door) and dotted
`rollgym.a.b.C` paths, as a reader would type them."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*/README.md"))]
NAME = re.compile(r"\b(rg|rollgym)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
#: Docker labels rollgym sets on its containers: dotted like names, but not Python
LABELS = {"rollgym.host", "rollgym.docker_host", "rollgym.run", "rollgym.task", "rollgym.owner", "rollgym.lease"}


def cited_names() -> dict[str, list[str]]:
    """Each dotted name in a code span of a page (`rg.` written as `rollgym.`), with where it is cited."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            for span in re.findall(r"`([^`]+)`", line):
                for _root, rest in NAME.findall(span):
                    name = "rollgym" + rest
                    if name not in LABELS:
                        found.setdefault(name, []).append(f"{page.relative_to(ROOT)}:{n}")
    return found


def resolve(name: str) -> object:
    """Import the longest module prefix, then look up the rest as attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def test_the_pages_cite_names():
    names = cited_names()
    assert "rollgym.Policy" in names and "rollgym.rollouts.jobs" in names and len(names) > 40


def test_every_cited_name_resolves_in_a_fresh_interpreter():
    names = cited_names()
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from test_docs import resolve\n"
        "bad = []\n"
        "for name in sys.argv[2:]:\n"
        "    try:\n"
        "        resolve(name)\n"
        "    except Exception as exc:\n"
        "        bad.append(f'{name}: {type(exc).__name__}: {exc}')\n"
        "print('\\n'.join(bad))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), *sorted(names)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    bad = [line for line in proc.stdout.splitlines() if line]
    assert not bad, "names the docs cite that do not resolve:\n" + "\n".join(
        f"{line}  (cited at {', '.join(names[line.split(':')[0]][:3])})" for line in bad
    )


def test_the_readme_stays_short():
    """What, two commands, one snippet per use; depth goes to docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) < 220
