"""Children a test stops with SIGINT (Ctrl-C) start with SIGINT at its default disposition: a
suite started as a background job (`nohup bash .ci/run &` from a script) runs with SIGINT ignored, every child
inherits that, and a Python child then never raises KeyboardInterrupt (it exits 0 where the test expects 130).
A command-line program rightly keeps an ignored SIGINT (nohup's meaning), so the test, not rollgym, resets it."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from os import PathLike

#: resets SIGINT to its default, then becomes the command (same process id, same environment): a disposition set
#: to default survives exec, where an ignored one would too. Not `preexec_fn`, which makes Popen fork (not vfork)
#: and run Python in the child of a multi-threaded test process (Ray's, gRPC's threads).
SHIM = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])"


def interruptible(cmd: Sequence[str | PathLike[str]]) -> list[str]:
    """`cmd` (an argv for subprocess.Popen) run so that SIGINT interrupts it wherever the suite runs."""
    return [sys.executable, "-I", "-S", "-c", SHIM, *(str(part) for part in cmd)]
