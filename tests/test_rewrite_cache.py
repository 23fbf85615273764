"""The controller's warm-up of the test modules' rewritten code (``tests/rewrite_cache.py``):
the pyc it writes is the one pytest reads, with the asserts rewritten; if pytest's private
functions change, this fails instead of the warm-up silently doing nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.rewrite_cache import warm


def test_warm_writes_the_rewritten_code_pytest_reads_once(
        request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.config.getoption("assertmode") != "rewrite":
        pytest.skip("asserts are not rewritten in this run (--assert=plain)")
    from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc

    module = tmp_path / "test_one.py"
    module.write_text("def test_a():\n    x = 1\n    assert x == 2\n")
    (tmp_path / "helper.py").write_text("X = 1\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(request.config, "args", [str(tmp_path)])
    assert warm(request.config) == 1  # the test module; a helper is not rewritten by pytest
    co = _read_pyc(module, tmp_path / "__pycache__" / f"test_one{PYC_TAIL}")
    assert co is not None
    namespace: dict[str, object] = {}
    exec(co, namespace)  # noqa: S102 - the module written just above, as pytest would run it
    with pytest.raises(AssertionError, match=r"assert 1 == 2"):  # pytest's explanation
        namespace["test_a"]()  # type: ignore[operator]
    assert warm(request.config) == 0  # up to date: not written again
    module.write_text("def test_a():\n    assert True\n")
    assert warm(request.config) == 1  # changed: written again
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    module.write_text("def test_a():\n    assert 1\n")
    assert warm(request.config) == 0  # no bytecode written in this run: nothing
