"""An option the command would not use is a usage error, never left unread without a word:
``check --update-baseline`` with ``--junit`` / ``--markdown`` wrote neither file, exit 0 (a CI
step then read the report of an earlier run); ``report`` / ``diff`` without ``--traces`` left
``--data`` unread, and with ``--traces`` left ``--pricing own`` unread (each exit 0)."""

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


def test_data_without_traces_is_refused(tmp_path: Path) -> None:
    cache = ["--cache-dir", str(tmp_path / "c")]
    for command in (["report", "--out", str(tmp_path / "r")], ["diff", "-p", "claude-code"]):
        result = runner.invoke(app, [command[0], str(LOG), "-p", "none", *command[1:],
                                     "--data", str(LOG), *cache])
        assert result.exit_code == 2, result.output
        assert "--data names what --traces were replayed from" in " ".join(
            result.output.split())
    assert not (tmp_path / "r").exists()


def test_pricing_own_with_traces_is_refused(tmp_path: Path) -> None:
    cache = ["--cache-dir", str(tmp_path / "c")]
    for name in ("none", "claude-code"):
        done = runner.invoke(app, ["run", str(LOG), "-p", name, "--out", str(tmp_path / name),
                                   *cache])
        assert done.exit_code == 0, done.output
    for pricing in (["--pricing", "own"], ["--own-providers"]):
        result = runner.invoke(app, ["diff", str(tmp_path / "none"), str(tmp_path / "claude-code"),
                                     "--traces", *pricing, *cache])
        assert result.exit_code == 2, result.output
        assert "--pricing own and --traces exclude each other" in " ".join(result.output.split())
