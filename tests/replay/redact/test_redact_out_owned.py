"""``replay redact --out DIR`` replaces only the copies a redact wrote (``replay.redact.own_copies``).

A log named by a session id (Claude Code's ``<uuid>.jsonl``, Codex's ``rollout-…-<uuid>``)
keeps its name in the archive; a file of the user's at that name in ``--out`` — their own
unredacted copy of the session, notes — was replaced by the redacted copy, exit 0, nothing
said.  Now that copy is not written (one issue naming the file, exit 1, as a symlink planted at
its name), the file is left as it was, and the other copies are written.  Re-running redact
into its own archive still replaces its copies (a log's and an Inspect ``.eval`` zip's)."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from tests.conftest import REPO, SAMPLES

runner = CliRunner()
SESSION = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
"""A Claude Code sample whose name (a session id) redact keeps."""
EVAL = REPO / "tests" / "fixtures" / "inspect_ai" / "log_message_deduplication.eval"


def _redact(*args: str) -> tuple[int, str]:
    done = runner.invoke(app, ["redact", *args, "-q"])
    return done.exit_code, " ".join(done.output.split())


def _logs(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLES / "claude-code" / SESSION, logs / SESSION)
    shutil.copy(SAMPLES / "claude-code" / "short.jsonl", logs / "short.jsonl")
    return logs


def test_a_users_file_at_a_kept_name_is_not_written_over(tmp_path: Path) -> None:
    logs, out = _logs(tmp_path), tmp_path / "share"
    out.mkdir()
    mine = out / SESSION
    mine.write_text("my own notes on this session\n")
    code, said = _redact(str(logs), "--out", str(out))
    assert code == 1, said
    assert f"not written: {mine}: a file redact did not write is there" in said, said
    assert mine.read_text() == "my own notes on this session\n"  # as it was
    assert "1 of 2 files written" in said, said  # the other copy is written
    assert len([p for p in out.iterdir() if p.suffix == ".jsonl"]) == 2


def test_its_own_copies_are_replaced(tmp_path: Path) -> None:
    logs, out = _logs(tmp_path), tmp_path / "share"
    shutil.copy(EVAL, logs / EVAL.name)
    for _ in range(2):  # the same salt: the same names, each copy replaced
        code, said = _redact(str(logs), "--out", str(out), "--salt", "s")
        assert code == 0, said
        assert "3 of 3 files written" in said, said
    from replay.redact.own_copies import not_a_copy

    copies = sorted(p for p in out.rglob("*") if p.is_file())
    assert len(copies) == 3 and not any(not_a_copy(p) for p in copies)
    assert any(p.suffix == ".eval" for p in copies)  # a zip is known by its members' markers


def test_what_is_not_a_copy_is_said(tmp_path: Path) -> None:
    from replay.redact.own_copies import not_a_copy

    (tmp_path / "folder").mkdir()
    (tmp_path / "zip").write_bytes(b"PK\x03\x04 not a zip")
    (tmp_path / "link").symlink_to(tmp_path / "zip")
    assert not_a_copy(tmp_path / "none") == ""  # nothing there: written
    assert not_a_copy(tmp_path / "link") == ""  # refused by the write, never followed
    assert not_a_copy(tmp_path / "folder") == "something other than a file is there"
    assert not_a_copy(tmp_path / "zip").startswith("a file redact did not write")


def test_what_else_the_folder_holds_is_said(tmp_path: Path) -> None:
    """Redacting again into an archive with a random salt (the default) left the first
    archive's copies beside the new ones under other names, nothing said: the folder held each
    run twice (ingested: twice the runs, no same-bytes note, the bytes differ).  Now a note in
    the text and in --json (``others``) names what the folder holds that this redact did not
    write; a re-run with the same salt has nothing else to say."""
    import json

    logs, out = _logs(tmp_path), tmp_path / "share"
    assert _redact(str(logs), "--out", str(out))[0] == 0
    first = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert len(first) == 2 and SESSION in first  # the session's name kept, short's hashed
    (out / "notes.txt").write_text("mine\n")
    done = runner.invoke(app, ["redact", str(logs), "--out", str(out), "-q", "--json"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.stdout)
    want = sorted({*first, "notes.txt"} - {SESSION})  # the first short copy, and notes.txt
    assert doc["others"] == want
    assert doc["notes"][0].startswith(f"{out} also holds 2 files this redact did not write")
    code, said = _redact(str(logs), "--out", str(out))
    assert code == 0 and "also holds 3 files this redact did not write" in said, said
    for _ in range(2):
        code, said = _redact(str(logs), "--out", str(tmp_path / "salted"), "--salt", "s")
        assert code == 0 and "this redact did not write" not in said, said
