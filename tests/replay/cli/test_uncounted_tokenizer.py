"""A dataset ingested without o200k_base (``--tokenizers cl100k_base``) is replayed and fitted
on its cl100k_base counts wherever a policy or fit counts with o200k_base (the engine takes
the counts there are: ``replay.engine.prepared_run``), which no command said: ``run``'s
figures and ``calibrate``'s "scale × o200k count" rested on another tokenizer without a word.
Every command that opens such a dataset now says it (stderr, and --json's inputs.messages)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.batch import ingest

runner = CliRunner()
LOG = Path(__file__).resolve().parents[3] / "logs" / "write-heavy.jsonl"
SAID = "1 of 1 run(s) hold no o200k_base counts"


def test_a_dataset_without_o200k_says_its_counts_are_another_tokenizers(tmp_path: Path) -> None:
    ingest([LOG], tmp_path / "cl", tokenizers=("cl100k_base",), jobs=1)
    ingest([LOG], tmp_path / "o2", jobs=1)
    for args in (["run", "-p", "none", "--out", str(tmp_path / "o")], ["calibrate"]):
        got = runner.invoke(app, [args[0], str(tmp_path / "cl"), *args[1:]])
        assert got.exit_code == 0, got.output
        assert SAID in " ".join(got.stderr.split()), got.stderr
    doc = json.loads(runner.invoke(app, ["diff", str(tmp_path / "cl"), "-p", "none", "-p",
                                         "claude-code", "--json"]).stdout)
    assert any(SAID in m for m in doc["inputs"]["messages"])
    got = runner.invoke(app, ["run", str(tmp_path / "o2"), "-p", "none", "--out",
                              str(tmp_path / "o3")])
    assert got.exit_code == 0 and "o200k_base counts" not in got.stderr
