"""Each test starts with the process-wide settings the session started with, whatever the
tests before it on the same worker imported (``tests/conftest.py``'s teardown hook)."""

from __future__ import annotations

import sys

import pytest

from replay.ingest.parsers.json_depth import MAX_DEPTH, check_each
from tests import conftest


def test_a_raised_recursion_limit_is_the_sessions_again_after_the_test(
        request: pytest.FixtureRequest) -> None:
    assert conftest.RECURSION_LIMIT <= MAX_DEPTH  # the parsers' plain path on this Python
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(3000)  # as `import jedi` does (nbclient -> IPython -> jedi)
        conftest.pytest_runtest_teardown(request.node)
        assert sys.getrecursionlimit() == conftest.RECURSION_LIMIT
        assert sys.version_info >= (3, 12) or not check_each()  # texts decoded unmeasured
    finally:
        sys.setrecursionlimit(before)
