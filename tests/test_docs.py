"""The README and docs/ follow the tree: every front-door name they cite (`rg.X`, `rg.trl.X`) exists and is no
deprecated alias, a name with a front door is cited by it rather than by its module path, every dotted
`rollgym.a.b` path they cite imports in a fresh interpreter, and every folder or file of the package they cite exists."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import rollgym

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*/README.md"))]
NAME = re.compile(r"\b(rg|rollgym)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
FROM_IMPORT = re.compile(r"^\s*from (rollgym(?:\.\w+)+) import ([\w, ]+)")
#: Docker labels rollgym sets on its containers: dotted like names, but not Python
LABELS = {"rollgym.host", "rollgym.docker_host", "rollgym.run", "rollgym.task", "rollgym.owner", "rollgym.lease"}
#: the package's top-level folders (and the repository's runnable ones): a path the docs cite under them must exist
TREE = re.compile(
    r"^(?:rollgym/)?((?:cli|integrations|agents|proxy|view|rollouts|engines|envs|tokenization|benchmarks|examples)"
    r"(?:/[\w.-]+)*/?)(?::[\d-]+)?$"
)


def code_lines(page: Path) -> list[tuple[int, str, bool]]:
    """Each line of a page with its number and whether it is inside a fenced code block (fences are blank)."""
    lines, fenced = [], False
    for n, line in enumerate(page.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append((n, "", False))
            continue
        lines.append((n, line, fenced))
    return lines


def code_spans(page: Path) -> list[tuple[int, str]]:
    """The code spans of a page's prose with the line each starts on; a span may wrap onto the next line."""
    prose = "\n".join("" if fenced else line for _, line, fenced in code_lines(page))
    return [
        (prose.count("\n", 0, m.start()) + 1, m.group(1).replace("\n", " "))
        for m in re.finditer(r"`([^`]+)`", prose)
        if "\n\n" not in m.group(1)
    ]


def is_readme_snippet(page: Path, fenced: bool) -> bool:
    """The README's code blocks are the files of examples/, which tests/examples checks (the front door only)."""
    return fenced and page == ROOT / "README.md"


def cited_names(*, snippets: bool = True) -> dict[str, list[str]]:
    """Each dotted name a page cites, as written (`rg.X`, `rg.trl.X` or `rollgym.a.b.C`), with where it is cited:
    in code spans, and in code blocks (`from rollgym.a import b` cites `rollgym.a.b`)."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        cited = [(n, span, False) for n, span in code_spans(page)]
        cited += [(n, line, True) for n, line, fenced in code_lines(page) if fenced]
        for n, text, fenced in cited:
            if is_readme_snippet(page, fenced) and not snippets:
                continue
            names = [root + rest for root, rest in NAME.findall(text)]
            if fenced and (m := FROM_IMPORT.match(text)):
                names += [f"{m.group(1)}.{attr.strip()}" for attr in m.group(2).split(",") if attr.strip()]
            for name in names:
                if name not in LABELS:
                    found.setdefault(name, []).append(f"{page.relative_to(ROOT)}:{n}")
    return found


def as_import_path(name: str) -> str:
    """`rg.X` is `rollgym.X`."""
    return "rollgym" + name[2:] if name.startswith("rg.") else name


#: trainers a room's hook module imports at its top, installed where the trainer runs, not in rollgym's venv
TRAINER_PACKAGES = {"verl", "skyrl", "openrlhf", "art", "areal", "verifiers"}


def resolve(name: str) -> object:
    """Import the longest module prefix, then look up the rest as attributes. A module that imports a trainer this
    venv lacks (a room's hook, loaded by the trainer only) is read instead: the names must be defined in it."""
    parts = as_import_path(name).split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] in TRAINER_PACKAGES and is_module(module):
                source = (ROOT / Path(*parts[1:cut])).with_suffix(".py").read_text()
                for attr in parts[cut:]:
                    if not re.search(rf"^(class|def|async def) {attr}\b|^{attr}\s*[:=]", source, re.M):
                        raise AttributeError(f"{module} defines no {attr}") from None
                return source
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def is_module(dotted: str) -> bool:
    """`rollgym.a.b` names a module or package of the tree (read from the files, not imported)."""
    rel = Path(*dotted.split(".")[1:])
    return dotted == "rollgym" or (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def front_door() -> dict[str, str]:
    """Every public front-door name -> how to cite it: `rg.X`, and `rg.trl.X` for TRL's."""
    trl = importlib.import_module("rollgym.integrations.trl")
    names = {name: f"rg.trl.{name}" for name in trl.__all__}
    names.update({name: f"rg.{name}" for name in rollgym.__all__ if name != "trl"})
    return names


def test_the_pages_cite_names():
    names = cited_names()
    assert {"rg.Policy", "rg.trl.env_reward", "rollgym.rollouts.jobs"} <= set(names) and len(names) > 40


def test_every_cited_name_resolves_in_a_fresh_interpreter():
    names = cited_names()
    code = (
        "import sys; sys.path[:0] = sys.argv[1:3]; from test_docs import resolve\n"
        "bad = []\n"
        "for name in sys.argv[3:]:\n"
        "    try:\n"
        "        resolve(name)\n"
        "    except Exception as exc:\n"
        "        bad.append(f'{name}: {type(exc).__name__}: {exc}')\n"
        "print('\\n'.join(bad))\n"
    )
    package_parent = str(Path(rollgym.__file__).resolve().parents[1])  # the rollgym under test, installed or not
    proc = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", code, str(Path(__file__).parent), package_parent]
        + sorted(names),
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


def test_no_page_cites_a_deprecated_front_door_name():
    """`rg.env_reward` and the other TRL names moved to `rg.trl`; the old names only warn."""
    moved = {f"rg.{old}": new.replace("rollgym.trl.", "rg.trl.") for old, new in rollgym._MOVED.items()}
    cited = cited_names(snippets=False)
    stale = {name: (moved[name], where) for name, where in cited.items() if name in moved}
    assert not stale, "deprecated names the docs cite (cite the new one):\n" + "\n".join(
        f"{name} -> {new}  (cited at {', '.join(where[:3])})" for name, (new, where) in sorted(stale.items())
    )


def test_a_name_with_a_front_door_is_cited_by_it():
    """`rg.WeightsVersion`, not `rollgym.engines.weights.WeightsVersion`: its module path is an internal."""
    door = front_door()
    deep = {}
    for name, where in cited_names().items():
        last = name.rpartition(".")[2]
        if name.startswith("rollgym.") and last in door and not is_module(name):
            deep[name] = (door[last], where)
    assert not deep, "names the docs cite by module path that have a front-door name:\n" + "\n".join(
        f"{name} -> {short}  (cited at {', '.join(where[:3])})" for name, (short, where) in sorted(deep.items())
    )


def test_the_front_door_checks_catch_what_they_should():
    """The checks above are not vacuous: a moved name, a deep path to a front-door name and a module all classify."""
    assert "agent_rollout_func" in rollgym._MOVED and front_door()["env_reward"] == "rg.trl.env_reward"
    assert front_door()["WeightsVersion"] == "rg.WeightsVersion"
    assert is_module("rollgym.rollouts.jobs") and is_module("rollgym.integrations.trl")
    assert not is_module("rollgym.engines.weights.WeightsVersion")
    assert resolve("rg.trl.env_reward") is resolve("rollgym.integrations.trl.rollout_func.env_reward")


def test_every_cited_path_of_the_tree_exists():
    """`integrations/ray/ledger.py`, `rollgym/rollouts/loop.py:158`: a folder or file of the package (or of
    benchmarks/, examples/) a page cites exists."""
    cited, missing = set(), {}
    for page in PAGES:
        for n, span in code_spans(page):
            for token in span.replace(",", " ").split():
                m = TREE.match(token)
                if m and "<" not in token:
                    cited.add(m.group(1))
                    if not (ROOT / m.group(1)).exists():
                        missing.setdefault(m.group(1), []).append(f"{page.relative_to(ROOT)}:{n}")
    assert "integrations/trl/rollout_func.py" in cited and len(cited) > 30
    assert not missing, "paths the docs cite that are not in the tree:\n" + "\n".join(
        f"{rel}  (cited at {', '.join(where[:3])})" for rel, where in sorted(missing.items())
    )


def test_the_readme_stays_short():
    """What, two commands, one snippet per use; depth goes to docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) < 220
