"""An option the command would not use is a usage error, never left unread without a word:
``check --update-baseline`` with ``--junit`` / ``--markdown`` wrote neither file, exit 0 (a CI
step then read the report of an earlier run)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "write-heavy.jsonl"


def test_update_baseline_with_a_report_to_write_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "b.json"
    for report in (["--junit", str(tmp_path / "j.xml")],
                   ["--markdown", str(tmp_path / "m.md")]):
        result = runner.invoke(app, ["check", str(LOG), "-p", "none", "--baseline", str(base),
                                     "--update-baseline", *report,
                                     "--cache-dir", str(tmp_path / "c")])
        assert result.exit_code == 2, result.output
        assert "--update-baseline judges nothing" in " ".join(result.output.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == []
