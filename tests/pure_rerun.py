"""A test that looks inside the pure-Python modules (replaces a function where a compiled caller
calls it straight, reads a function's frame) run where they are pure.

Under a compiled build (``setup.py``'s mypyc groups) such a test would pass without testing
anything, or not run at all: ``ran_pure`` runs it instead in a pytest process of its own with
``CTXREPLAY_PURE=1`` and says whether it did (the test then returns, its result that process's).
Without a compiled build it returns False and the test runs here, as before."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from replay.compiled_engine import PURE_ENV
from tests.conftest import REPO

_NOT_PASSED_ON = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "PYTEST_XDIST_WORKER_COUNT",
                  "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")


def ran_pure(request: pytest.FixtureRequest, compiled: bool) -> bool:
    """When ``compiled`` (the build whose insides the test looks at), run the test in a pytest
    process of its own under ``CTXREPLAY_PURE=1``, fail if it did not pass there, and return
    True; else False (the test goes on here)."""
    if not compiled or os.environ.get(PURE_ENV) == "1":
        return False
    function = request.node.nodeid.split("[")[0]  # (every parameter's test in one process)
    if function not in _SAID:
        env = {k: v for k, v in os.environ.items() if k not in _NOT_PASSED_ON}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:randomly",
                               "-p", "no:xdist", "-p", "no:cacheprovider", function],
                              capture_output=True, text=True, env={**env, PURE_ENV: "1"},
                              cwd=REPO, check=False)
        _SAID[function] = done.stdout + done.stderr
    said = _SAID[function]
    assert f"PASSED {request.node.nodeid}\n" in said, said[-6000:]
    return True


_SAID: dict[str, str] = {}
"""A test function's pure run: what its process said (the tests of each parameter passed are
named there ``PASSED <node id>``)."""
