"""An output the user named that cannot be written (#13 item 9): one line, exit 2, no traceback.

``--out`` naming an existing file used to end every writing command but ``ingest`` in a
``FileExistsError`` / ``NotADirectoryError`` traceback with exit 1 (an input failure's code).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from tests.conftest import SAMPLES

runner = CliRunner()
LOG = SAMPLES / "claude-code" / "tool_heavy.jsonl"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("ds") / "ds"
    made = runner.invoke(app, ["ingest", str(LOG), "--out", str(ds), "-q"])
    assert made.exit_code == 0, made.output
    return ds


@pytest.mark.parametrize("command", [
    ["run", "-p", "none", "{ds}", "--out", "{file}"],
    ["report", "{ds}", "-p", "none", "--out", "{file}"],
    ["sweep", "{ds}", "-p", "two-tier-corrected", "--axis",
     "tiers.1.trigger.at_tokens=60000,80000", "--out", "{file}", "--no-plots"],
    ["check", "{ds}", "-p", "none", "--baseline", "{file}/baseline.json", "--update-baseline"],
], ids=["run", "report", "sweep", "check"])
def test_out_naming_a_file_is_one_line_and_exit_2(command: list[str], dataset: Path,
                                                   tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("a file the user already has\n")
    args = [a.format(ds=dataset, file=blocker) for a in command]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert not isinstance(result.exception, OSError)  # handled, not a traceback
    assert "error" in result.output and str(blocker) in result.output
    assert blocker.read_text() == "a file the user already has\n"  # left as it was
