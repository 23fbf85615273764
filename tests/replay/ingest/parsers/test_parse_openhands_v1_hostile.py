"""OpenHands V1 parser on hostile conversation folders: a missing, a cut, a symlinked (or
swapped for a symlink) event file, a huge event number, unknown kinds and stray files, names
that are not UTF-8, an event changed after ingest.

Not here: the real folders against a plain walk, detection, usage (``test_parse_openhands_v1.py``),
condensations (``test_parse_openhands_v1_condensations.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.ingest.parse_file import parse_file
from tests.replay.ingest.parsers.openhands_v1_fixtures import REAL, copy_fixture, event_file


def test_a_missing_event_file_is_said_and_the_rest_read(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    event_file(folder, 3).unlink()  # the terminal call's observation
    parsed = parse_file(folder, folder.parent)
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    assert (run["n_tool_calls"], run["n_tool_results"], run["n_requests"]) == (2, 1, 3)
    assert parsed.coverage["event (missing from the sequence)"] == {"unknown": 1}
    assert any("1 event file(s) missing from the numbering (3)" in i.reason
               for i in parsed.issues)


def test_a_huge_event_number_is_a_gap_counted_not_a_set_built(tmp_path: Path) -> None:
    """An event file numbered 10**12 (one crafted name): the numbers missing below it were
    built as a set of 10**12 integers, the parser ended in a MemoryError (or took the
    machine's memory) and the conversation was lost; now they are counted, not listed."""
    folder = copy_fixture(tmp_path)
    last = event_file(folder, 7)
    last.rename(last.with_name(last.name.replace("-00007-", f"-{10**12}-")))
    parsed = parse_file(folder, folder.parent)
    assert parsed.tables is not None
    missing = 10**12 + 1 - 8  # 0..10**12, of which 0-6 and 10**12 are there
    assert parsed.coverage["event (missing from the sequence)"] == {"unknown": missing}
    assert any(f"{missing} event file(s) missing from the numbering (7, 8, 9, 10, 11, 12, 13, "
               "14, 15, 16, ...)" in i.reason for i in parsed.issues), parsed.issues


def test_a_cut_event_file_is_counted_not_fatal(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    cut = event_file(folder, 5)
    cut.write_bytes(cut.read_bytes()[:100])
    parsed = parse_file(folder, folder.parent)
    assert parsed.tables is not None
    assert parsed.coverage["file (not JSON: cut short?)"] == {"unknown": 1}
    assert any(cut.name in i.reason and "not JSON" in i.reason for i in parsed.issues)
    assert parsed.tables.runs.to_pylist()[0]["n_tool_results"] == 1


def _event_linked_outside(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the real conversation whose seventh event file is a symlink to a file outside
    the folder holding that event with a secret text; the folder and the symlink."""
    folder = copy_fixture(tmp_path)
    target = event_file(folder, 6)
    outside = tmp_path / "outside.json"
    doc = json.loads(target.read_text())
    doc["llm_message"]["content"][0]["text"] = "SECRET FROM OUTSIDE THE FOLDER"
    outside.write_text(json.dumps(doc))
    target.unlink()
    target.symlink_to(outside)
    return folder, target


def test_a_symlinked_event_file_is_not_followed(tmp_path: Path) -> None:
    folder, target = _event_linked_outside(tmp_path)
    parsed = parse_file(folder, folder.parent)
    assert parsed.tables is not None
    texts = parsed.tables.messages.column("text").to_pylist()
    assert not any("SECRET" in (t or "") for t in texts)
    assert parsed.coverage["file (a symlink (not followed: it may lead out of the folder))"] \
        == {"unknown": 1}
    assert any(target.name in i.reason and "symlink" in i.reason for i in parsed.issues)


def test_a_file_swapped_for_a_symlink_after_the_look_is_not_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder's entries are looked at (lstat), then opened: an event file replaced by a
    symlink between the two (another process writing in the folder) was opened through it, and
    the file it leads to read into the run.  The look is skipped here (as if the swap came
    right after it): the open itself must not follow the link."""
    from replay.ingest import openhands_v1_folder

    folder, target = _event_linked_outside(tmp_path)
    monkeypatch.setattr(openhands_v1_folder, "_not_read", lambda f, name, *, is_base: "")
    parsed = parse_file(folder, folder.parent)
    assert parsed.tables is not None
    texts = parsed.tables.messages.column("text").to_pylist()
    assert not any("SECRET" in (t or "") for t in texts)
    assert any(target.name in i.reason and "symlink" in i.reason for i in parsed.issues)


def test_unknown_kinds_and_stray_files_are_counted(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    f = event_file(folder, 7)
    doc = json.loads(f.read_text())
    doc["kind"] = "FutureEvent"
    f.write_text(json.dumps(doc))
    (folder / "events" / "notes.json").write_text("{}")
    (folder / "events" / "event-00008-zz.json").write_text("[]")  # no event file name
    parsed = parse_file(folder, folder.parent)
    assert parsed.coverage["event/FutureEvent"] == {"unknown": 1}
    assert parsed.coverage[
        "file (not named as an event file (event-NNNNN-<id>.json))"] == {"unknown": 2}
    assert parsed.tables is not None
    assert parsed.tables.runs.to_pylist()[0]["n_requests"] == 2  # the final message's call gone


def test_names_that_are_not_utf8_are_said_not_fatal(tmp_path: Path) -> None:
    """A file in ``events/`` whose name is not UTF-8 (and a conversation folder so named) made
    the folder's document unencodable: the whole conversation was refused as 'not a regular
    file (a folder)'.  The stray file is now one refused entry, named as terminal() shows it,
    and the conversation reads as without it."""
    import os

    folder = copy_fixture(tmp_path)
    odd = tmp_path / os.fsdecode(b"conv\xfe")
    folder.rename(odd)
    (odd / "events" / os.fsdecode(b"\xff.json")).write_text("{}")
    parsed = parse_file(odd, odd.parent)
    assert parsed.tables is not None, [i.reason for i in parsed.issues]
    assert parsed.tables.runs.to_pylist()[0]["n_requests"] == 3
    assert parsed.coverage[
        "file (not named as an event file (event-NNNNN-<id>.json))"] == {"unknown": 1}
    assert any("\\xff.json" in i.reason for i in parsed.issues)


def test_a_changed_event_is_a_changed_input(tmp_path: Path) -> None:
    from replay.ingest.input_files import read_input, sha256_of

    folder = copy_fixture(tmp_path)
    before = sha256_of(folder)
    assert before and before == parse_file(folder, folder.parent).sha256
    f = event_file(folder, 7)
    f.write_text(f.read_text().replace("saved", "SAVED"))
    assert sha256_of(folder) != before
    assert read_input(folder).startswith(b'{"openhands_v1_conversation": "' + REAL.encode())
