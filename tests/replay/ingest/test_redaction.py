"""Redaction-aware sizing: marker shapes, what is not a marker, the ingest columns (block flag,
run counts), calibration's count of estimated points, and ``replay runs``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.engine.calibrate import calibrate
from replay.engine.prepared import prepare
from replay.ingest import store
from replay.ingest.batch import ingest
from replay.ingest.parse_file import parse_file
from replay.ingest.redaction import (
    _MARKER,
    CHARS_PER_TOKEN,
    MAX_DECLARED,
    ExactSizes,
    declared,
    declared_in,
    exact,
    format_exact,
    says_redacted,
    tokens_for,
)
from replay.ingest.tokens import encoding


@pytest.mark.parametrize(("text", "chars"), [
    ("[REDACTED_OUTPUT len=4045 sha=9f2c01ab]", 4045),
    ("[REDACTED_TEXT len=13131 sha=036b7e47]", 13131),
    ("[REDACTED len=12]", 12),
    ("[redacted_output length: 300]", 300),
    ("[REDACTED: 77 chars]", 77),
    ("[26 chars redacted]", 26),
    ("abcd…[26 chars redacted]", 26),
    ("[+2500 chars redacted]", 2500),
    ("[base64 4000 chars redacted]", 4000),
    ("[fixture: 812 chars redacted]", 812),
])
def test_marker_shapes(text: str, chars: int) -> None:
    found = declared(text)
    assert found is not None
    assert found[1:] == (1, chars)


@pytest.mark.parametrize("text", [
    "[... omitted 200 of 500 lines ...]",            # a harness truncation: the model saw it
    "Output too large (40 KB). Full output saved",    # a persisted-output preview
    "[REDACTED]",                                     # no declared length: nothing to size by
    "the secret was redacted from 12 files",
    "len=4045",
])
def test_not_markers(text: str) -> None:
    assert declared(text) is None


@given(st.lists(st.tuples(st.text(alphabet="abc xyz\n{}\":", max_size=30),
                          st.integers(0, 10**6)), min_size=1, max_size=5),
       st.text(alphabet="abc xyz\n", max_size=30))
def test_declared_sums_every_marker_and_keeps_the_rest(parts: list[tuple[str, int]],
                                                       tail: str) -> None:
    text = "".join(f"{head}[REDACTED_TEXT len={n} sha=00ff]" for head, n in parts) + tail
    found = declared(text)
    assert found is not None
    rest, n_markers, chars = found
    assert n_markers == len(parts)
    assert chars == sum(n for _, n in parts)
    assert rest == "".join(head for head, _ in parts) + tail


def test_says_redacted_picks_every_marker_kind() -> None:
    """``run_tables.tokenize`` reads markers only in the texts ``says_redacted`` picks: it must
    pick ctxreplay's own exact markers and every declared shape, in each case markers write."""
    sizes = ExactSizes(10, 12, 1, (("o200k_base", 3),))
    for text in (format_exact(1, None), "x " + format_exact(2, sizes)):
        assert says_redacted(text)
    assert exact("x " + format_exact(2, sizes)) == sizes
    for text in ("[REDACTED_OUTPUT len=4045 sha=9f2c01ab]", "[Redacted len=3]",
                 "[redacted: 3 chars]", "[26 chars redacted]"):
        assert says_redacted(text) and declared(text) is not None
    assert not says_redacted("[26 chars removed]")


_PIECES = st.sampled_from(["[", "]", "REDACTED", "redacted", "Redacted", "_OUTPUT", " len=",
                           "length: ", ": ", "12", " chars", " +", "base64 ", "x", " ", "\n",
                           "REDACTED_CTXREPLAY", " chars=3", " id=1", "é"])


_MARKERS = st.sampled_from(["[REDACTED len=12]", "[redacted_output length: 300]",
                            "[REDACTED: 77 chars]", "[+26 chars redacted]",
                            "[base64 9 chars redacted]", "[REDACTED_CTXREPLAY id=1 chars=3]", ""])


def _declared_by_matches(text: str) -> tuple[str, int, int] | None:
    """``declared`` as it was written first: a match object a marker (``finditer``)."""
    chars, n, parts, pos = 0, 0, [], 0
    for m in _MARKER.finditer(text):
        digits = m.group(1) or m.group(2) or m.group(3)
        if len(digits) > 9 or int(digits) > MAX_DECLARED:  # no marker: left in the text
            continue
        chars += int(digits)
        n += 1
        parts.append(text[pos:m.start()])
        pos = m.end()
    if not n:
        return None
    parts.append(text[pos:])
    return "".join(parts), n, chars


@given(st.lists(_PIECES | _MARKERS, max_size=12).map("".join))
def test_declared_in_is_a_marker_by_marker_reading(text: str) -> None:
    """``declared_in`` reads the markers by one ``split`` of the text: the same rest, count
    and characters as reading them a match at a time (adjacent markers, digits beside them,
    none at all)."""
    assert declared_in(text) == _declared_by_matches(text)
    assert declared(text) == (_declared_by_matches(text) if says_redacted(text) else None)


@given(st.lists(_PIECES, max_size=8).map("".join), _MARKERS,
       st.lists(_PIECES, max_size=8).map("".join))
def test_says_redacted_is_never_false_for_a_marker(head: str, marker: str, tail: str) -> None:
    """What ``says_redacted`` skips (no "[", or no "redacted" as markers write it) holds no
    marker of either kind: ``tokenize`` and ``declared`` rely on it."""
    text = head + marker + tail
    if declared(text) is not None or exact(text) is not None:
        assert says_redacted(text)


@pytest.mark.parametrize("marker", ["[REDACTED len=" + "9" * 32 + "]", "[REDACTED len=" + "9" * 5000 + "]",
                                    "[REDACTED len=134217729]", "[+134217729 chars redacted]"],
                         ids=["10^32", "5000-digits", "2^27+1", "2^27+1-chars"])
def test_a_marker_declaring_more_than_a_document_holds_is_text(marker: str) -> None:
    """A marker declaring 10^32 characters (or 5,000 digits of them) failed its whole file at
    ingest ("values the schema cannot hold", "Exceeds the limit (4300 digits)"); it is no
    marker: its text is counted as text, the believable markers beside it still are."""
    text = f"a {marker} b [REDACTED len=12] c"
    assert declared(text) == (f"a {marker} b  c", 1, 12)
    assert declared(marker) is None
    assert declared(f"[REDACTED len={MAX_DECLARED}]") == ("", 1, MAX_DECLARED)
    fields = "chars=99999999999999999999 bytes=3 lines=1 o200k_base=99999999999999999999"
    assert exact(f"[REDACTED_CTXREPLAY id=1 {fields}]") is None
    assert exact(f"[REDACTED_CTXREPLAY id=1 {fields}] [REDACTED_CTXREPLAY id=2 chars=3]") == \
        ExactSizes(3, 0, 0, (), 1)


def test_a_log_with_an_unbelievable_marker_is_read(tmp_path: Path) -> None:
    """The file is read (exit 0), the marker counted as the text it is."""
    log = tmp_path / "logs" / "s.jsonl"
    log.parent.mkdir()
    _claude_redacted(log)
    log.write_text(log.read_text().replace("len=30400", "len=" + "9" * 40))
    parsed = parse_file(log, log.parent)
    assert parsed.tables is not None and not parsed.issues, parsed.issues
    assert not any(m["tokens_estimated"] for m in parsed.tables.messages.to_pylist())


def test_tokens_for_uses_the_documented_ratio() -> None:
    assert tokens_for(3800, "o200k_base") == math.ceil(3800 / CHARS_PER_TOKEN["o200k_base"])
    assert tokens_for(0, "o200k_base") == 0


def _claude_redacted(path: Path) -> None:
    """A Claude Code transcript: a prompt, 3 × (Bash call, result), where result 1 is redacted."""
    lines, parent = [], None
    usage = [1000, 1200, 9000, 9300]

    def rec(i: int, typ: str, message: dict[str, object]) -> None:
        nonlocal parent
        lines.append(json.dumps({"parentUuid": parent, "isSidechain": False, "sessionId": "s",
                                 "version": "2.1.38", "type": typ, "uuid": f"u{i}",
                                 "timestamp": f"2026-01-01T00:00:{i:02d}Z", "message": message}))
        parent = f"u{i}"

    rec(0, "user", {"role": "user", "content": "run it"})
    for k in range(3):
        rec(2 * k + 1, "assistant", {"id": f"m{k}", "role": "assistant", "model": "claude-x",
                                     "content": [{"type": "tool_use", "id": f"t{k}", "name": "Bash",
                                                  "input": {"command": f"echo {k}"}}],
                                     "usage": {"input_tokens": usage[k], "output_tokens": 5}})
        out = "[REDACTED_OUTPUT len=30400 sha=abcdef01]" if k == 1 else f"out {k}"
        rec(2 * k + 2, "user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{k}", "content": out}]})
    rec(7, "assistant", {"id": "m3", "role": "assistant", "model": "claude-x",
                         "content": [{"type": "text", "text": "done"}],
                         "usage": {"input_tokens": usage[3], "output_tokens": 5}})
    path.write_text("\n".join(lines) + "\n")


def test_ingest_flags_and_counts_estimated_blocks(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "s.jsonl"
    log.parent.mkdir()
    _claude_redacted(log)
    parsed = parse_file(log, log.parent)
    assert parsed.tables is not None, parsed.issues
    msgs = parsed.tables.messages.to_pylist()
    flagged = [m for m in msgs if m["tokens_estimated"]]
    assert [m["text"] for m in flagged] == ["[REDACTED_OUTPUT len=30400 sha=abcdef01]"]
    assert flagged[0]["tokens_o200k"] == math.ceil(30400 / 3.8) == 8000
    assert flagged[0]["n_chars"] == 30400
    assert flagged[0]["n_bytes"] == 30400  # the declared characters, taken as bytes
    enc = encoding("o200k_base")
    for m in msgs:
        if not m["tokens_estimated"]:
            assert m["tokens_o200k"] == len(enc.encode_ordinary(m["text"]))
    run = parsed.tables.runs.to_pylist()[0]
    assert run["n_estimated_blocks"] == 1
    assert run["estimated_tokens_o200k"] == 8000
    # calibration: the last two requests' contexts hold the estimated block
    requests = parsed.tables.requests
    prepared = prepare(parsed.tables.messages, requests, run["run_id"])
    fit = calibrate(prepared)
    assert fit is not None
    assert fit.n_points == 4 and fit.n_points_estimated == 2


def test_runs_command_shows_estimated_counts(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "s.jsonl"
    log.parent.mkdir()
    _claude_redacted(log)
    out = tmp_path / "store"
    ingest([log.parent], out, jobs=1)
    result = CliRunner().invoke(app, ["runs", str(out), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["estimated_blocks"], r["estimated_tokens"]) for r in rows] == [(1, 8000)]
    assert store.read_store(out).runs["n_estimated_blocks"].to_pylist() == [1]
    cal = CliRunner().invoke(app, ["calibrate", str(log.parent), "--out", str(tmp_path / "c"),
                                   "--json", "--quiet"], catch_exceptions=False)
    assert cal.exit_code == 0, cal.output
    assert [(r["points"], r["points_estimated"]) for r in json.loads(cal.stdout)] == [(4, 2)]
