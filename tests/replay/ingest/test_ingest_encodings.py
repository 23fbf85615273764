"""Real sample logs written in another encoding or compressed: a UTF-16 or UTF-32 file with its
byte order mark (what Windows PowerShell's ``>`` writes) is read as its text, to the same runs;
UTF-16 without a mark and compressed files are one issue saying what they are, not "binary
file; try --format" (no --format reads them) nor, for a Codex rollout, one issue a line."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file

SAMPLES = ("claude-code/tool_heavy.jsonl", "codex/rollout-2026-02-23T13-19-38-*.jsonl",
           "mini-swe-agent/django__django-11095.traj.json", "openhands/basic.json",
           "swe-agent/v1fc_gpt4__sweagenttestrepo-1c2844.traj")
_PER_FILE = ("run_id", "source", "sha256")


def _sample(samples: Path, pattern: str) -> Path:
    return next((samples / pattern).parent.glob(Path(pattern).name))


def _runs(parsed: ParsedFile) -> list[dict[str, Any]]:
    """Each run's fields but those naming the file (its bytes differ), and its message texts
    and token counts."""
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    runs = [{k: v for k, v in r.items() if k not in _PER_FILE}
            for r in parsed.tables.runs.to_pylist()]
    m = parsed.tables.messages
    return [runs, m["text"].to_pylist(), m["tokens_o200k"].to_pylist()]


@pytest.mark.parametrize("pattern", SAMPLES)
@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32"])
def test_a_wide_unicode_file_with_its_mark_reads_as_its_text(tmp_path: Path, samples: Path,
                                                             pattern: str, codec: str) -> None:
    path = _sample(samples, pattern)
    text = path.read_bytes().decode("utf-8")
    wide = tmp_path / codec / path.name
    wide.parent.mkdir()
    mark = "\ufeff" if codec.endswith("-be") else ""  # (utf-16/utf-32 write their own)
    wide.write_bytes((mark + text).encode(codec))
    got = parse_file(wide, wide.parent)
    assert got.issues == ()
    assert _runs(got) == _runs(parse_file(path, path.parent))


def _one_issue(parsed: ParsedFile) -> str:
    assert parsed.tables is None and len(parsed.issues) == 1, [str(i) for i in parsed.issues]
    return parsed.issues[0].reason


@pytest.mark.parametrize("pattern", SAMPLES)
def test_utf16_without_a_mark_and_compressed_files_say_what_they_are(
        tmp_path: Path, samples: Path, pattern: str) -> None:
    path = _sample(samples, pattern)
    data = path.read_bytes()
    for name, made, words in (
            ("le", data.decode("utf-8").encode("utf-16-le"), "UTF-16 (little-endian) text without"),
            ("be", data.decode("utf-8").encode("utf-16-be"), "UTF-16 (big-endian) text without"),
            ("gz", gzip.compress(data), "gzip-compressed; not read"),
            ("xz", lzma.compress(data), "xz-compressed; not read")):
        bad = tmp_path / name / path.name
        bad.parent.mkdir()
        bad.write_bytes(made)
        assert words in _one_issue(parse_file(bad, bad.parent))
        assert words in _one_issue(parse_file(bad, bad.parent, fmt="chat"))  # (forced: the same)


@pytest.mark.parametrize(("codec", "lost"), [("utf-16", 1), ("utf-32", 3)])
def test_a_wide_file_cut_inside_its_last_character_is_read_to_there(
        tmp_path: Path, samples: Path, codec: str, lost: int) -> None:
    """A UTF-16 or UTF-32 file cut inside its last character (one still being written) was
    refused whole, where a UTF-8 file cut inside its last line keeps every line before it: its
    text up to the cut is read, with one issue saying what was left out.  The sample ends in a
    newline, so the cut takes only that: the same runs as the whole file."""
    path = _sample(samples, SAMPLES[1])
    data = path.read_bytes().decode("utf-8").encode(codec)
    cut = tmp_path / path.name
    cut.write_bytes(data[:-1])
    got = parse_file(cut, tmp_path)
    said = (f"the file ends inside a {codec.upper()} character (its last {lost} byte(s) left "
            "out: a file still being written?)")
    assert [i.reason for i in got.issues] == [said]
    assert _runs(got) == _runs(parse_file(path, path.parent))


def test_a_wide_file_that_does_not_decode_is_one_issue(tmp_path: Path, samples: Path) -> None:
    """A UTF-16 file with a lone surrogate inside it is not its text: one issue naming where,
    not a file read as garbage."""
    path = _sample(samples, SAMPLES[1])
    data = path.read_bytes().decode("utf-8").encode("utf-16")
    bad = tmp_path / path.name
    at = len(data) // 2 & ~1  # (a code unit's start)
    bad.write_bytes(data[:at] + b"\x00\xdc" + data[at:])  # a low surrogate alone
    assert _one_issue(parse_file(bad, tmp_path)) == (
        f"UTF-16 text (its byte order mark) that does not decode at byte {at:,}; not read")
