"""Each file's coverage is stored with its entry and survives the ingest cache."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from replay.errors import StoreError
from replay.ingest import store
from replay.ingest.batch import ingest
from replay.ingest.parsers.coverage import Coverage, summary_line


def _types(path: Path) -> Counter[str]:
    """Record types of a Claude Code transcript, counted independently of the parser."""
    out: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            sub = rec.get("subtype")
            out[f"system/{sub}" if rec["type"] == "system" and sub else rec["type"]] += 1
    return out


def test_coverage_is_stored_and_survives_the_cache(samples: Path, tmp_path: Path) -> None:
    src = samples / "claude-code" / "short.jsonl"
    report = ingest([src], tmp_path / "ds", jobs=1)
    assert report.parsed == ["short.jsonl"]
    first = store.read_manifest(tmp_path / "ds")["short.jsonl"].coverage
    counted = {t: sum(f.values()) for t, f in first.items()}
    assert counted == dict(_types(src))
    assert first["progress"] == {"skipped": _types(src)["progress"]}
    again = ingest([src], tmp_path / "ds", jobs=1)
    assert again.cached == ["short.jsonl"] and not again.parsed
    assert store.read_manifest(tmp_path / "ds")["short.jsonl"].coverage == first


def test_a_crafted_coverage_in_the_manifest_is_refused(samples: Path, tmp_path: Path) -> None:
    ingest([samples / "claude-code" / "short.jsonl"], tmp_path, jobs=1)
    doc = json.loads((tmp_path / "manifest.json").read_text())
    doc["entries"]["short.jsonl"]["coverage"] = {"[red]x": {"modelled": "many"}}
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(StoreError, match="corrupt manifest"):
        store.read_manifest(tmp_path)


@pytest.mark.parametrize("fates", [
    {"skipped": -5},  # was shown as "25 records: 28 modelled, -3 skipped"
    {"skipped": 1 << 63},
    {"skipped": True},
    {"dropped": 1},  # a fate of no name: counted in the records read, under no fate
    {"\x1b[31m": 1},
])
def test_a_coverage_count_no_parser_writes_is_refused(
        samples: Path, tmp_path: Path, fates: dict[str, object]) -> None:
    ingest([samples / "claude-code" / "short.jsonl"], tmp_path, jobs=1)
    doc = json.loads((tmp_path / "manifest.json").read_text())
    doc["entries"]["short.jsonl"]["coverage"]["progress"] = fates
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(StoreError, match="corrupt manifest"):
        store.read_manifest(tmp_path)


def test_summary_line_counts_each_type_once() -> None:
    cov = Coverage()
    cov.modelled("user", 3)
    cov.skipped("progress", 10)
    cov.skipped("mode")
    cov.unknown("weird", 2)
    assert Coverage.from_by_type(cov.by_type()).counts == cov.counts
    assert summary_line(cov.by_type()) == ("16 records: 3 modelled, 11 skipped (progress x10, "
                                          "mode x1), 2 unknown (weird x2)")
    assert summary_line({}) == ""
