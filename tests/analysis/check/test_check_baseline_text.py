"""A baseline is a file people commit and review: what ``--update-baseline`` writes keeps the
names logs gave it readable and harmless on screen.  A file name holding a bidirectional
override (U+202E: ``evil\u202elmth.jsonl`` shows as ``evil...html``) or a zero-width space
went into the baseline raw (``ensure_ascii=False``); each is now its JSON escape, other
non-ASCII text stays as it is, and the next check reads the same keys back (PASS), a name
with an undecodable byte among them.
"""

from __future__ import annotations

import os
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app

REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "scenarios" / "reserve-long-turn.jsonl"
NAMES = ("evil\u202elmth.jsonl", "caf\u00e9\u200b.jsonl", os.fsdecode(b"raw\xff.jsonl"))
runner = CliRunner()


def test_update_baseline_escapes_invisible_characters_and_reads_back(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in NAMES:
        (logs / name).write_bytes(LOG.read_bytes())
    base = tmp_path / "baseline.json"
    args = ["check", str(logs), "-p", "none", "--baseline", str(base),
            "--cache-dir", str(tmp_path / "cache")]
    wrote = runner.invoke(app, [*args, "--update-baseline"])
    assert wrote.exit_code == 0, wrote.output
    raw = base.read_bytes()
    text = raw.decode("utf-8")  # (strict: no lone surrogate in the file)
    for bad in ("\u202e", "\u200b"):
        assert bad not in text
    assert "\\u202e" in text and "\\u200b" in text
    assert "caf\u00e9" in text  # readable non-ASCII text stays as it is
    checked = runner.invoke(app, args)
    assert checked.exit_code == 0, checked.output
    assert "PASS" in checked.output and "3 runs" in checked.output, checked.output
