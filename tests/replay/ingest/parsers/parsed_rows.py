"""What the parser tests share: a parsed file's rows (its one run, or one table), a stand-in
source for a parser called directly, and detection checked over the real samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.ingest.parse_file import ParsedFile
from replay.ingest.parsers import detect_format
from replay.ingest.parsers.source import Source


def one_run_rows(parsed: ParsedFile
                 ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The file's one run, its message rows and its request rows."""
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    runs = parsed.tables.runs.to_pylist()
    assert len(runs) == 1
    return runs[0], parsed.tables.messages.to_pylist(), parsed.tables.requests.to_pylist()


def table_rows(parsed: ParsedFile, table: str) -> list[dict[str, Any]]:
    """The rows of one of the file's tables."""
    assert parsed.tables is not None
    rows: list[dict[str, Any]] = getattr(parsed.tables, table).to_pylist()
    return rows


def stand_in_source(path: str, data: bytes) -> Source:
    """``data`` as a source named ``path``, for a parser called directly."""
    return Source(path=path, rel=Path(path).name, data=data, sha256="0" * 64)


def assert_detected_only_in(samples: Path, folder: str, fmt: str) -> None:
    """Every sample log under ``samples/folder`` is detected as ``fmt``, and no other is."""
    for path in sorted(samples.rglob("*")):
        if not path.is_file() or not path.name.endswith((".jsonl", ".json", ".traj")):
            continue
        with path.open("rb") as f:
            head = f.read(65536)
        found = detect_format(path.name, head)
        if path.parent.name == folder:
            assert found == fmt, path
        else:
            assert found != fmt, path
