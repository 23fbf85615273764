"""No command leaves a native thread pool running when it returns.

A process that exits while Arrow's CPU pool (or DuckDB's scheduler) still has worker threads can
abort in the library's shutdown after its work is done ("terminate called without an active
exception", exit -6: apache/arrow#34314) — a command that did its job then reports failure by its
exit code. Arrow starts its pool on the first multithreaded call (``to_pandas``, ``from_pandas``,
a threaded Parquet read); DuckDB's module-level functions open a default database whose workers
live until exit. The commands call them single-threaded or on a connection they close.

Counted in a fresh process: a test worker may have started the pools already.  A thread a
command joined may still be listed for a moment after the join (its OS exit follows; ms under
load): the count is taken again for up to 3 s until it falls back (a pool left running stays).  The count
starts once pyarrow is imported (the commands import it when they run): the threads its import
starts, jemalloc's background thread and numpy's OpenBLAS pool, live as long as the process
whatever a command does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

LOG = Path(__file__).resolve().parents[3] / "logs" / "write-heavy.jsonl"

# each command as the user types it, after `replay`; {d} is the test's folder
COMMANDS = (
    ("ingest", ["ingest", "{d}/write-heavy.jsonl", "--out", "{d}/ds"]),
    ("run", ["run", "-p", "two-tier-corrected", "{d}/ds", "--out", "{d}/run"]),
    ("diff", ["diff", "-p", "two-tier-original", "-p", "two-tier-corrected", "{d}/ds",
              "--out", "{d}/diff"]),
    ("check", ["check", "{d}/ds", "-p", "two-tier-corrected", "--baseline", "{d}/base.json",
               "--out", "{d}/check", "--update-baseline"]),
    ("sweep", ["sweep", "-p", "two-tier-corrected", "--axis", "tiers.0.protect.frac=0.05,0.33",
               "--jobs", "1", "--cache-dir", "{d}/cache", "{d}/ds", "--out", "{d}/sweep"]),
    ("sweep again (its cells from the cache)", ["sweep", "-p", "two-tier-corrected", "--axis",
               "tiers.0.protect.frac=0.05,0.33", "--jobs", "1", "--cache-dir", "{d}/cache",
               "{d}/ds", "--out", "{d}/sweep2"]),
    ("report --traces", ["report", "--traces", "{d}/run", "--data", "{d}/ds",
                         "--out", "{d}/report-traces"]),
    ("report", ["report", "-p", "two-tier-corrected", "{d}/ds", "--out", "{d}/report"]),
    ("sql", ["sql", "select count(*) from runs", "{d}/ds"]),
)

SCRIPT = """
import json, os, sys, time
from replay.memory import use_system_allocator
use_system_allocator()
from typer.testing import CliRunner
from replay.cli import app
import pyarrow  # the threads its import starts are counted in `before` (docstring)
d = sys.argv[1]
commands = json.loads(sys.argv[2])
threads = lambda: len(os.listdir("/proc/self/task"))

def settled(before):  # a thread joined is gone from /proc a moment later (its OS exit follows
    # the join under load); a pool left running stays: wait up to 3 s for the count to fall
    for _ in range(60):
        extra = threads() - before
        if extra <= 0:
            return extra
        time.sleep(0.05)
    return extra
runner = CliRunner()
before = threads()
out = {}
for name, args in commands:
    result = runner.invoke(app, [a.format(d=d) for a in args])
    out[name] = [result.exit_code, settled(before), result.output[-400:]]
print(json.dumps(out))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc to count threads")
def test_no_command_leaves_native_threads_running(tmp_path: Path) -> None:
    (tmp_path / LOG.name).write_bytes(LOG.read_bytes())
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), json.dumps(COMMANDS)],
                          capture_output=True, text=True, timeout=600, check=True)
    got = json.loads(done.stdout.splitlines()[-1])
    assert list(got) == [name for name, _ in COMMANDS]
    for name, (code, extra, tail) in got.items():
        assert code == 0, f"{name}: exit {code}: {tail}"
        assert extra == 0, f"replay {name} left {extra} native threads running"
