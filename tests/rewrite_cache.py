"""The test modules' assertion-rewritten code, written once before the xdist workers start.

pytest compiles each test module with its asserts rewritten (~5 s of CPU for this suite's
~280 modules) and caches the result as a pyc beside the module, unless bytecode writing is off.
In a fresh clone (CI) no such pyc exists yet, and the two xdist workers start and collect at
the same moment: each rewrites every module itself.  ``warm`` does it once, in the controller,
before the workers start; they then read the pycs.  The pycs are pytest's own (its functions,
its file names and format): a worker that finds one out of date rewrites the module as before.

This uses pytest's private ``_pytest.assertion.rewrite`` functions; if they change, ``warm``
does nothing and the workers rewrite as before (the same tests, at the former cost).
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
        from _pytest.pathlib import fnmatch_ex
        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return 0
    patterns = config.getini("python_files")
    written = 0
    for fn in _modules(config):
        if fn.name != "conftest.py" and not any(fnmatch_ex(p, fn) for p in patterns):
            continue
        cache_dir = get_cache_dir(fn)
        pyc = cache_dir / (fn.name[:-3] + PYC_TAIL)
        if not try_makedirs(cache_dir) or _read_pyc(fn, pyc) is not None:
            continue
        source_stat, co = _rewrite_test(fn, config)
        written += _write_pyc(state, co, source_stat, pyc)
    return written


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
