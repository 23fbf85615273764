"""The test modules' assertion-rewritten code, written once before the xdist workers start.

pytest compiles each test module with its asserts rewritten (~5 s of CPU for this suite's
~280 modules) and caches the result as a pyc beside the module, unless bytecode writing is off.
In a fresh clone (CI) no such pyc exists yet, and the two xdist workers start and collect at
the same moment: each rewrites every module itself.  ``warm`` does it once, in the controller,
before the workers start; they then read the pycs.  The pycs are pytest's own (its functions,
its file names and format): a worker that finds one out of date rewrites the module as before.

With bytecode writing off (``PYTHONDONTWRITEBYTECODE``, as on this project's VM), pytest
writes no pyc and reads none beside the modules, so ``warm`` does nothing and each worker
rewrote every module: ~7 s of CPU a worker, half its collection.  ``share`` then divides the
rewriting among the workers instead: each writes the rewritten code of its share of the
modules (every n-th) into the session's temporary folder (pytest's, which every worker of the
session shares; never beside the modules), before it collects, and reads the others' from
there.  A module whose code is not there yet (or out of date) is rewritten by the worker
that imports it, as before.

This uses pytest's private ``_pytest.assertion.rewrite`` functions; if they change, ``warm``
and ``share`` do nothing and the workers rewrite as before (the same tests, at the former
cost).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def warm(config: pytest.Config) -> int:
    """Write the rewritten pyc of every test module under the run's paths that has none or an
    outdated one; returns how many it wrote (0 if pytest does not rewrite or cannot cache)."""
    if sys.dont_write_bytecode or config.getoption("assertmode") != "rewrite":
        return 0
    return _write(config, _rewritten(config))


def share(config: pytest.Config, folder: Path) -> int:
    """On an xdist worker with bytecode writing off: pytest's rewritten code is read from
    (and written to) ``folder``, which every worker of the session shares, and this worker
    writes the code of its share of the modules there (the k-th of every n, k its number,
    n the workers').  Returns how many it wrote (0 when this does not apply)."""
    worker = getattr(config, "workerinput", None)
    if (not sys.dont_write_bytecode or worker is None
            or config.getoption("assertmode") != "rewrite"):
        return 0
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return 0
    if not callable(getattr(rewrite, "get_cache_dir", None)):
        return 0
    rewrite.get_cache_dir = lambda file_path: folder.joinpath(*file_path.parts[1:-1])
    k, n = int(str(worker["workerid"]).removeprefix("gw")), int(worker["workercount"])
    return _write(config, _rewritten(config)[k::n])


def _write(config: pytest.Config, modules: list[Path]) -> int:
    """Write the rewritten pyc of each of ``modules`` that has none or an outdated one where
    pytest looks for it (``get_cache_dir``); returns how many it wrote."""
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
            try_makedirs,
        )
        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return 0
    written = 0
    for fn in modules:
        cache_dir = get_cache_dir(fn)
        pyc = cache_dir / (fn.name[:-3] + PYC_TAIL)
        if not try_makedirs(cache_dir) or _read_pyc(fn, pyc) is not None:
            continue
        source_stat, co = _rewrite_test(fn, config)
        written += _write_pyc(state, co, source_stat, pyc)
    return written


def _rewritten(config: pytest.Config) -> list[Path]:
    """The modules under the run's paths that pytest rewrites: its test files and conftests."""
    try:
        from _pytest.pathlib import fnmatch_ex
    except ImportError:
        return []
    patterns = config.getini("python_files")
    return [fn for fn in _modules(config)
            if fn.name == "conftest.py" or any(fnmatch_ex(p, fn) for p in patterns)]


def _modules(config: pytest.Config) -> list[Path]:
    """The Python files under the paths the run collects (its arguments: pytest puts
    ``testpaths`` there when none are given)."""
    out: set[Path] = set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0]).resolve()
        if path.is_dir():
            out.update(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
        elif path.suffix == ".py":
            out.add(path)
    return sorted(out)
