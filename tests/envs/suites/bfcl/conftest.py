"""BFCL's tests need bfcl-eval (installed `--no-deps` by `.ci/setup`)."""

import pytest

pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed: .ci/setup installs it (--no-deps)")
