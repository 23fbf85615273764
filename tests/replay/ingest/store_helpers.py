"""What the hostile-store tests share: a generated log, a store with one entry ingested from it,
editing its manifest, a victim folder that must stay untouched, and a folder's bytes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from replay.ingest.batch import ingest

REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "explore-rereads.jsonl"
runner = CliRunner()


def _store(tmp_path: Path) -> tuple[Path, Path]:
    """A store with one entry, and the folder of the log it was ingested from."""
    logs, ds = tmp_path / "logs", tmp_path / "ds"
    logs.mkdir()
    shutil.copy(LOG, logs / "a.jsonl")
    report = ingest([logs], ds, jobs=1)
    assert report.parsed == ["a.jsonl"]
    return ds, logs


def _edit_manifest(ds: Path, **fields: object) -> None:
    doc = json.loads((ds / "manifest.json").read_text())
    for entry in doc["entries"].values():
        entry.update(fields)
    (ds / "manifest.json").write_text(json.dumps(doc))


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    return victim


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}
