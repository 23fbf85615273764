"""A Codex rollout whose session was written into its file a second time (``cat a a``, a copy
tool appending, a crash-resume that wrote the session again): the copy's lines are repeats,
skipped, counted in coverage and said once; a session resumed after a copy of its session_meta
keeps its new lines.  Expected values come from the real samples parsed alone and from the
lines the test wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file
from tests.conftest import SAMPLES

CODEX = sorted((SAMPLES / "codex").glob("*.jsonl"))
REAL = SAMPLES / "codex" / "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
_RUN = ("n_messages", "n_blocks", "n_requests", "n_tool_calls", "n_tool_results",
        "n_harness_compactions", "recorded_input_tokens", "recorded_output_tokens", "model")
COPY = "(repeated copy)"


def _facts(parsed: ParsedFile) -> list[dict[str, Any]]:
    """Per run: its counts, its requests' usage and its messages' texts."""
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    t = parsed.tables
    rq, msgs = t.requests.to_pylist(), t.messages.select(["run_id", "kind", "text"]).to_pylist()
    return [{**{k: run[k] for k in _RUN},
             "usage": [(q["input_tokens"], q["cache_read_tokens"], q["output_tokens"])
                       for q in rq if q["run_id"] == run["run_id"]],
             "texts": [(m["kind"], m["text"]) for m in msgs if m["run_id"] == run["run_id"]]}
            for run in t.runs.to_pylist()]


def _parse(tmp: Path, name: str, data: bytes) -> ParsedFile:
    path = tmp / name
    path.write_bytes(data)
    return parse_file(path, tmp)


def _lines(data: bytes) -> list[bytes]:
    return [ln + b"\n" for ln in data.splitlines() if ln.strip()]


def _copies(parsed: ParsedFile) -> int:
    return sum(f.get("skipped", 0) for t, f in parsed.coverage.items() if t.endswith(COPY))


@pytest.mark.parametrize("sample", CODEX, ids=lambda p: p.name[:40])
def test_a_rollout_appended_to_itself_is_the_rollout(tmp_path: Path, sample: Path) -> None:
    """Before: the 0.104 rollout doubled had 124 requests, not 81 (its messages and
    token_counts carry no id), and its usage counted twice."""
    lines = _lines(sample.read_bytes())
    alone = _parse(tmp_path, "alone-" + sample.name, b"".join(lines))
    doubled = _parse(tmp_path, sample.name, b"".join(lines) * 2)
    assert _facts(doubled) == _facts(alone)
    said = [i for i in doubled.issues if "record for record" in i.reason]
    assert [(i.line, i.reason.split(": ")[-1]) for i in said] == [
        (len(lines) + 1, f"{len(lines)} line(s) skipped as repeats")]
    assert f"lines {len(lines) + 1}-{2 * len(lines)} repeat lines 1-{len(lines)}" in said[0].reason
    assert _copies(doubled) == len(lines)  # every line of the copy once, as a repeat
    total = sum(n for f in doubled.coverage.values() for n in f.values())
    assert total == sum(n for f in alone.coverage.values() for n in f.values()) + len(lines)
    assert [str(i) for i in alone.issues] == []


def test_a_session_written_again_after_a_crash_keeps_what_followed(tmp_path: Path) -> None:
    """The session's first lines, then the whole session again (its meta first): the first
    lines' copy is skipped, the lines after it are the run's."""
    lines = _lines(REAL.read_bytes())
    cut = len(lines) // 3
    alone = _parse(tmp_path, "alone.jsonl", b"".join(lines))
    resumed = _parse(tmp_path, REAL.name, b"".join(lines[:cut] + lines))
    assert _facts(resumed) == _facts(alone)
    said = [i.reason for i in resumed.issues if "record for record" in i.reason]
    assert said == [(f"lines {cut + 1}-{2 * cut} repeat lines 1-{cut} record for record "
                     f"(session '{REAL.name[-42:-6]}' written again after its session_meta: a "
                     f"copy appended to the file?): {cut} line(s) skipped as repeats")]
    assert _copies(resumed) == cut


def test_a_session_resumed_after_a_copy_of_its_meta_keeps_its_new_lines(tmp_path: Path) -> None:
    """The session_meta written again, then lines not met before: nothing is a repeat (the
    meta alone is the session's own meta again, skipped as before)."""
    lines = _lines(REAL.read_bytes())
    cut = len(lines) // 2
    alone = _parse(tmp_path, "alone.jsonl", b"".join(lines))
    resumed = _parse(tmp_path, REAL.name, b"".join(lines[:cut] + lines[:1] + lines[cut:]))
    assert _facts(resumed) == _facts(alone)
    assert not [i for i in resumed.issues if "record for record" in i.reason]
    assert _copies(resumed) == 0
    assert resumed.coverage["session_meta"] == {"modelled": 1, "skipped": 1}
