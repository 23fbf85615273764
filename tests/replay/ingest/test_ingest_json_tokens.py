"""``replay ingest --json`` never gives an uncounted figure as 0: ``tokens`` of the runs is
known only when every file was parsed now (a file reused from the cache is not counted), else
null; ``tokens_parsed`` is what this ingest counted.  Before: a second ingest of the same logs
said ``"runs": 1, "tokens": 0``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import store


def test_tokens_of_files_reused_from_the_cache_are_unknown_not_0(samples: Path,
                                                                  tmp_path: Path) -> None:
    log, out = samples / "claude-code" / "short.jsonl", tmp_path / "ds"
    runner = CliRunner()
    first = json.loads(runner.invoke(app, ["ingest", str(log), "--out", str(out), "--json",
                                           "-q"]).stdout)
    counted = sum(t or 0 for e in store.read_manifest(out).values()
                  for t in store.read_entry(out, e.key).messages["tokens_o200k"].to_pylist())
    assert counted > 0 and first["tokens"] == first["tokens_parsed"] == counted
    again = json.loads(runner.invoke(app, ["ingest", str(log), "--out", str(out), "--json",
                                           "-q"]).stdout)
    assert (again["cached"], again["runs"]) == (1, first["runs"])
    assert again["tokens"] is None and again["tokens_parsed"] == 0
