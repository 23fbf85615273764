"""Induced re-reads sized as estimates are said by every command that shows their figures:
``replay run`` said how many; ``sweep``, ``diff`` and ``check`` showed the figures without
it.  The count is checked against the traces ``replay run`` writes, read with Arrow (re-read
actions applied with ``size_estimate`` set), not against the metric's own code."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from replay.cli import app

POLICY = "two-tier-corrected"


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def _said(out: str) -> int:
    found = re.findall(r"note: (\d+) induced re-read\(s\) sized as estimates", out)
    assert len(found) == 1, out
    return int(found[0])


@pytest.fixture(scope="module")
def estimated(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The project cache the samples were replayed into, and how many of the replay's induced
    re-reads are estimates, counted in its traces."""
    cache = tmp_path_factory.mktemp("cache")
    out = cache / "run"
    _cli("run", "-q", str(samples), "-p", POLICY, "--cache-dir", str(cache), "--out", str(out))
    actions = pq.read_table(out / "traces" / "actions.parquet")
    rereads = actions.filter(pc.and_(pc.equal(actions["kind"], "induced_reread"),
                                     pc.invert(actions["undone"])))
    kind = rereads["size_estimate"]  # (why a size is an estimate: null or "" when it is not)
    n = pc.sum(pc.and_(pc.is_valid(kind), pc.not_equal(kind, ""))).as_py() or 0
    assert n > 0  # (the samples have edits the replay cannot apply: patches)
    return cache, n


def test_sweep_diff_and_check_say_the_estimates(samples, estimated, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cache, n = estimated
    sweep = _cli("sweep", "-q", str(samples), "-p", POLICY, "--axis",
                 "tiers.1.trigger.at_tokens=80000", "--no-plots", "--jobs", "1",
                 "--cache-dir", str(cache), "--out", str(tmp_path / "o"))
    assert _said(sweep) == n
    twin = tmp_path / "twin.yaml"  # the same policy under another name: both sides' estimates
    twin.write_text(f"extends: {POLICY}\nname: twin\n")
    diff = _cli("diff", "-q", str(samples), "-p", POLICY, "-p", str(twin),
                "--cache-dir", str(cache))
    assert _said(diff) == 2 * n  # the sum, said with each side's count, never read as one's
    assert f"({n:,} under a: {POLICY}, {n:,} under b: twin)" in diff
    args = ["check", "-q", str(samples), "-p", POLICY, "--baseline", str(tmp_path / "b.json"),
            "--cache-dir", str(cache)]
    _cli(*args, "--update-baseline")
    assert _said(_cli(*args)) == n


def test_the_report_says_the_estimates(samples, estimated, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The report's overview said the induced work but not how much of it is estimated, which
    replay run, sweep, diff and check say; with two policies, each one's count."""
    cache, n = estimated
    twin = tmp_path / "twin.yaml"
    twin.write_text(f"extends: {POLICY}\nname: twin\n")
    out = tmp_path / "rep"
    _cli("report", "-q", str(samples), "-p", POLICY, "--cache-dir", str(cache), "--out",
         str(out), "--max-timelines", "0")
    md = " ".join((out / "report.md").read_text(encoding="utf-8").split())
    assert _said("note: " + md.split("Note: ", 2)[2]) == n
    _cli("report", "-q", str(samples), "-p", POLICY, "-p", str(twin), "--cache-dir", str(cache),
         "--out", str(out), "--max-timelines", "0")
    md = " ".join((out / "report.md").read_text(encoding="utf-8").split())
    assert _said("note: " + md.split("Note: ", 2)[2]) == 2 * n
    assert f"({n:,} under {POLICY}, {n:,} under twin)" in md
