"""Each peer in its own virtual environment under ~/.cache/rollgym/peers/NAME, created and filled from PyPI by the
benchmark itself, idempotently: a venv whose recorded requirements equal the wanted ones is used as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

CACHE = Path(os.environ.get("ROLLGYM_CACHE", Path.home() / ".cache" / "rollgym")) / "peers"


@dataclass(frozen=True)
class Peer:
    """A framework compared with rollgym: its pinned requirements, its runner script, or why it cannot run here."""

    name: str
    requirements: tuple[str, ...] = ()
    runner: str = ""
    unavailable: str = ""  # set when it cannot run on this machine: the exact reason
    episodes: dict[int, int] = field(default_factory=dict)  # episodes per concurrency level, where fewer are run
    rounds: dict[int, int] = field(default_factory=dict)  # rounds per level, where fewer are run
    skip: dict[int, str] = field(default_factory=dict)  # levels not run, with why


def python_of(peer: Peer, log=print) -> str:
    """The venv's python, creating or repairing the venv first (rollgym runs in this interpreter)."""
    if not peer.requirements:
        return sys.executable
    venv = CACHE / peer.name
    python = venv / "bin" / "python"
    marker = venv / "rollgym-peer.json"
    wanted = {"requirements": list(peer.requirements)}
    if python.exists() and marker.exists() and json.loads(marker.read_text()) == wanted:
        return str(python)
    log(f"[peers] creating {venv} ({', '.join(peer.requirements)}); a few minutes, once")
    CACHE.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        subprocess.run([str(python), "-m", "ensurepip", "--upgrade"], check=True, capture_output=True)
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *peer.requirements],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip could not install {peer.requirements}: {done.stderr[-1500:]}")
    marker.write_text(json.dumps(wanted))
    return str(python)
