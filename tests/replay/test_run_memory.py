"""What keeps ``replay run`` on an archive inside the largest run's memory: the summary kept as
columns and written as encoded (same JSON as before), and the allocator the command picks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.per_run.rollup import ROLLUP_SCHEMA
from replay.apply_policy import LazyRows
from replay.memory import release_freed_memory

_VALUE = {pa.string(): st.text(max_size=12), pa.int64(): st.integers(-(2**40), 2**40),
          pa.float64(): st.floats(allow_nan=False, allow_infinity=False)}


@given(st.lists(st.fixed_dictionaries({f.name: _VALUE[f.type] for f in ROLLUP_SCHEMA}),
                max_size=2100))
def test_lazy_rows_encode_exactly_like_the_dicts(rows: list[dict[str, object]]) -> None:
    """Across batch boundaries (1,024 rows) and for no rows at all."""
    rows = [{c: r[c] for c in ROLLUP_SCHEMA.names} for r in rows]  # the run rows' key order
    table = pa.Table.from_pylist(rows, schema=ROLLUP_SCHEMA)
    doc = {"policy": {"name": "p"}, "runs": LazyRows(table)}
    streamed = "".join(json.JSONEncoder(indent=1, default=str).iterencode(doc))
    assert streamed == json.dumps({"policy": {"name": "p"}, "runs": rows}, indent=1, default=str)
    assert len(LazyRows(table)) == len(rows) and bool(LazyRows(table)) == bool(rows)


def _pool(env: dict[str, str], entry: bool = True) -> str:
    """Arrow's default pool in a process that ran the ``replay`` entry point (``replay
    policies``), or (``entry=False``) only imported ``replay.cli`` as a library."""
    run = ("import sys; sys.argv = ['replay', 'policies', '--json']\n"
           "import replay.__main__ as m\ntry:\n    m.main()\nexcept SystemExit:\n    pass\n")
    code = (run if entry else "import replay.cli\n") + \
        "import pyarrow as pa, sys; print(pa.default_memory_pool().backend_name, file=sys.stderr)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=env).stderr.strip().splitlines()[-1]


def test_the_command_uses_the_system_allocator_unless_told_otherwise() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    assert _pool(env) == "system"
    chosen = "jemalloc" if "jemalloc" in pa.supported_memory_backends() else "mimalloc"
    assert _pool({**env, "ARROW_DEFAULT_MEMORY_POOL": chosen}) == chosen


def test_importing_the_cli_as_a_library_changes_nothing_in_the_process() -> None:
    """#14: process-wide effects only in the command's entry point, not on import."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    default = subprocess.run([sys.executable, "-c", ("import pyarrow as pa; "
                              "print(pa.default_memory_pool().backend_name)")], env=env,
                             capture_output=True, text=True, check=True).stdout.strip()
    assert _pool(env, entry=False) == default != "system"
    code = "import os, replay.cli; print(os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True).stdout.strip() == "None"


def test_freed_memory_is_returned_where_glibc_allows() -> None:
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):  # not a glibc system
        libc = None
    assert release_freed_memory() == bool(libc and libc.startswith("glibc"))


def _blas(env: dict[str, str]) -> tuple[str, int, int]:
    """In a process that ran the ``replay`` entry point (``replay policies``): the OpenBLAS
    thread setting, and its threads before and after numpy loads."""
    code = ("import os, sys, contextlib, io; sys.argv = ['replay', 'policies', '--json']\n"
            "import replay.__main__ as m\ntry:\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n        m.main()\n"
            "except SystemExit:\n    pass\n"
            "count = lambda: len(os.listdir('/proc/self/task'))\nbefore = count()\n"
            "import numpy\nprint(os.environ.get('OPENBLAS_NUM_THREADS'), before, count())")
    said, before, after = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                         capture_output=True, text=True).stdout.split()
    return said, int(before), int(after)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc to count threads")
def test_the_command_starts_no_blas_thread_pool_unless_told_otherwise() -> None:
    """numpy's OpenBLAS would start a spinning thread per core that nothing uses."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    said, before, after = _blas(env)
    assert said == "1" and after == before
    assert _blas({**env, "OPENBLAS_NUM_THREADS": "2"})[0] == "2"
