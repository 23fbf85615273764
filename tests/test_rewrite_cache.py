"""The controller's warm-up of the test modules' rewritten code (``tests/rewrite_cache.py``),
and the workers' share of it with bytecode writing off: the pyc written is the one pytest
reads, with the asserts rewritten; if pytest's private functions change, this fails instead of
the warm-up silently doing nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.rewrite_cache import share, warm


def test_warm_writes_the_rewritten_code_pytest_reads_once(
        request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.config.getoption("assertmode") != "rewrite":
        pytest.skip("asserts are not rewritten in this run (--assert=plain)")
    from _pytest.assertion import rewrite
    from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc

    # pytest's own place, beside the module (on an xdist worker, share() points it elsewhere)
    monkeypatch.setattr(rewrite, "get_cache_dir", lambda path: path.parent / "__pycache__")
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


def test_a_worker_shares_its_part_of_the_rewritten_code_where_pytest_reads_it(
        request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.config.getoption("assertmode") != "rewrite":
        pytest.skip("asserts are not rewritten in this run (--assert=plain)")
    from _pytest.assertion import rewrite
    from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc

    monkeypatch.setattr(rewrite, "get_cache_dir", rewrite.get_cache_dir)  # restored after
    src, folder = tmp_path / "src", tmp_path / "shared"
    src.mkdir()
    for i in range(3):
        (src / f"test_m{i}.py").write_text(f"def test_a():\n    x = {i}\n    assert x == 9\n")
    (src / "helper.py").write_text("X = 1\n")
    monkeypatch.setattr(request.config, "args", [str(src)])
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delattr(request.config, "workerinput", raising=False)
    assert share(request.config, folder) == 0  # not a worker: nothing
    monkeypatch.setattr(request.config, "workerinput", {"workerid": "gw1", "workercount": 2},
                        raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert share(request.config, folder) == 0  # bytecode written beside the modules: nothing
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert share(request.config, folder) == 1  # the second of every two modules: test_m1

    def pyc(name: str) -> Path:  # where pytest's import hook looks for the module's code now
        return rewrite.get_cache_dir(src / f"{name}.py") / f"{name}{PYC_TAIL}"

    assert folder in pyc("test_m1").parents and not (src / "__pycache__").exists()
    co = _read_pyc(src / "test_m1.py", pyc("test_m1"))
    assert co is not None
    namespace: dict[str, object] = {}
    exec(co, namespace)  # noqa: S102 - the module written just above, as pytest would run it
    with pytest.raises(AssertionError, match=r"assert 1 == 9"):  # pytest's explanation
        namespace["test_a"]()  # type: ignore[operator]
    assert _read_pyc(src / "test_m0.py", pyc("test_m0")) is None  # the other worker's
    assert share(request.config, folder) == 0  # up to date: not written again
