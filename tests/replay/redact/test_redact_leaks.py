"""``replay redact`` leaves nothing outside its keep-list (#23 items 13-16): run over every sample
format and every parser fixture, the archive is searched for every string of the originals
longer than 3 characters that the keep-list does not keep (values, keys, JSON inside strings,
folder and file names).

The originals are walked here as plain JSON, independently of the redactor; what survives is
decided by ``replay.redact.keep_list.keeps`` (the keep-list: the one definition) and the structure
rules the README states (keys outside data subtrees, tool and editor command names).  A string
of 4-7 characters leaks when it is one of the archive's strings (a value, a key, a name); a
longer one when it is inside any of them.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import ReplayError
from replay.ingest.discover import discover
from replay.redact import redact
from replay.redact.archive import archive_names
from replay.redact.keep_list import (
    DATA_KEYS,
    ID_KEYED,
    INPUT_ENUMS,
    PATH_KEYED,
    READ_IN_DATA,
    data_keys,
    enum_keys,
    keeps,
    keeps_in_data,
)
from replay.redact.secrets import scan
from tests.conftest import REPO, SAMPLES

_TOOL_INPUT = ("input", "arguments", "action", "args")
_KEPT_ANYWHERE = {"view", "create", "str_replace", "insert", "undo_edit", "edit", "write",
                  "append", "bash", "true", "false", "null"}
"""Editor sub-commands and shell words the stand-ins keep (README: "Kept")."""


_ID_OR_LAYOUT = re.compile(r"subagents|workflows|sessions|\d{1,4}|(agent-(acompact-)?|"
                           r"(rollout|session)-[0-9T-]+-)?[0-9a-f]{6,}(-[0-9a-f]+)*")
"""Folder and file names the archive keeps (README): ids and the layout a format needs."""


def _documents(path: Path) -> list[object]:
    if zipfile.is_zipfile(path):  # an Inspect .eval: each member is one document
        with zipfile.ZipFile(path) as z:
            return [json.loads(z.read(name)) for name in z.namelist()]
    data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    try:
        return [json.loads(data)]
    except ValueError:
        return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def _walk(value: object, key: str = "", scope: str = "", data: frozenset[str] = DATA_KEYS,
          enums: frozenset[str] = frozenset()) -> Iterator[tuple[str, bool]]:
    """(string, kept) for every string and key of a JSON value; ``scope``: "" (structure),
    "input" (a tool input) or "data" (a data subtree); ``data`` and ``enums``: the format's
    data keys and enum keys."""
    if key in data and isinstance(value, (dict, list)) and scope != "data":
        scope = "data"
    if isinstance(value, dict):
        for k, v in value.items():
            # keys of an object keyed by paths or ids (Codex's changes, Inspect's
            # attachments) are data; any other key is structure outside data subtrees
            yield k, (scope != "data" or k in READ_IN_DATA) and key not in PATH_KEYED | ID_KEYED
            inner = "input" if k in _TOOL_INPUT and isinstance(v, dict) and scope != "data" \
                else scope
            yield from _walk(v, k, inner, data, enums)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key, scope, data, enums)
    elif isinstance(value, str):
        inner_doc = None
        if value.lstrip().startswith(("{", "[")):
            try:
                inner_doc = json.loads(value)
            except ValueError:
                inner_doc = None
        if not isinstance(inner_doc, (dict, list)):  # a JSON text is searched in its parts
            yield value, scope == "" and keeps(key, value, enums) or value in _KEPT_ANYWHERE \
                or scope == "input" and value in INPUT_ENUMS.get(key, ()) \
                or scope == "data" and keeps_in_data(key, value)
            return
        # SWE-agent's replay_config is the run's configuration (structure); any other JSON
        # text is a tool's arguments or output (a tool input)
        yield from _walk(inner_doc, "", scope if key == "replay_config" else scope or "input",
                         data, enums)


_EVAL_LAYOUT = {"samples", "_journal", "summaries", "header.json", "start.json",
                "summaries.json", "reductions.json"}
"""The folder and file names of Inspect's .eval layout (README: kept)."""


def _members(path: Path) -> set[str]:
    """The member names of a zip and their parts, but Inspect's layout (none for a file that is
    no zip)."""
    if not zipfile.is_zipfile(path):
        return set()
    with zipfile.ZipFile(path) as z:
        return {x for n in z.namelist() for x in (n, *n.split("/"))} - _EVAL_LAYOUT


def _plain(path: Path) -> bytes:
    """A file's bytes, a zip's members uncompressed."""
    if not zipfile.is_zipfile(path):
        return path.read_bytes()
    with zipfile.ZipFile(path) as z:
        return b"\n".join(z.read(n) for n in z.namelist())


def _archive_strings(path: Path) -> set[str]:
    found: set[str] = set()
    for doc in _documents(path):
        found |= {s for s, _ in _walk(doc)}
    return found


@pytest.fixture(scope="module")
def redacted(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path, object]:
    inputs = sorted([*SAMPLES.iterdir(), *(REPO / "tests" / "fixtures").iterdir()])
    inputs = [p for p in inputs if p.is_dir()]
    out = tmp_path_factory.mktemp("leaks") / "archive"
    return inputs, out, redact(inputs, out, shift_days=-30)


def test_no_string_outside_the_keep_list_survives(
        redacted: tuple[list[Path], Path, object]) -> None:
    inputs, out, report = redacted
    files = {f.source: f for f in report.files}  # type: ignore[attr-defined]
    found = discover(inputs)
    paths = {rel: path for (path, _root), rel in zip(found, archive_names(inputs, found))}
    assert len(files) == len(found) >= 60
    written = [f for f in files.values() if f.written]
    assert {f.format for f in written} >= {"claude_code", "codex", "mini_swe_agent", "swe_agent",
                                           "openhands", "atif", "gemini_cli", "inspect_ai",
                                           "opencode"}
    checked = zips = 0
    for f in written:
        source = paths[f.source]
        secret: set[str] = set()
        kept: set[str] = set()
        for doc in _documents(source):
            for s, k in _walk(doc, data=data_keys(f.format), enums=enum_keys(f.format)):
                (kept if k else secret).add(s)
        # folder and file names of the original are strings of it too
        secret |= {n for part in Path(f.source).parts for n in (part, part.split(".")[0])
                   if not _ID_OR_LAYOUT.fullmatch(n.split(".")[0])}
        secret = {s for s in secret - kept if len(s) > 3}
        copy = out / f.archived_as
        theirs = _archive_strings(copy) | set(Path(f.archived_as).parts) | _members(copy)
        exact = sorted(s for s in secret if s in theirs)
        assert not exact, (f.source, exact[:10])
        by_prefix: dict[str, list[str]] = {}
        for s in secret:
            if len(s) >= 8:
                by_prefix.setdefault(s[:8], []).append(s)
        inside = sorted({s for a in theirs - kept for i in range(len(a) - 7)
                         for s in by_prefix.get(a[i:i + 8], ()) if a.startswith(s, i)})
        assert not inside, (f.source, inside[:10])
        assert scan(_plain(copy)) == [] and scan(f.archived_as.encode()) == []
        zips += zipfile.is_zipfile(copy)
        checked += 1
    assert checked >= 50 and zips == 3


def _session(path: Path, ts: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    recs = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s-1",
             "timestamp": ts, "message": {"role": "user", "content": "hello there"}},
            {"type": "assistant", "uuid": "u2", "parentUuid": "u1", "sessionId": "s-1",
             "timestamp": ts, "requestId": "r1", "message": {
                 "model": "claude-x", "id": "m1", "type": "message", "role": "assistant",
                 "usage": {"input_tokens": 10, "output_tokens": 5},
                 "content": [{"type": "text", "text": "hi"}]}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


_WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=4, max_size=12).filter(
    lambda w: w.strip(".") == w and not w.isdigit())
_SECRET_NAME = st.one_of(
    st.builds(lambda a, b: f"{a}@{b}.com", _WORD, _WORD),
    st.builds(lambda t: "ghp_" + (t * 40)[:40], st.text("ABCDEFabcdef0123456789", min_size=1,
                                                      max_size=8)),
    _WORD)


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(folder=_SECRET_NAME, name=_SECRET_NAME)
def test_folder_and_file_names_are_redacted(tmp_path_factory: pytest.TempPathFactory,
                                            folder: str, name: str) -> None:
    tmp = tmp_path_factory.mktemp("names")
    _session(tmp / "in" / folder / f"{name}.jsonl", "2026-01-15T10:40:00.000Z")
    report = redact([tmp / "in"], tmp / "out")
    [f] = report.files
    assert f.written, f.issues
    assert folder not in f.archived_as and name not in f.archived_as
    assert scan(f.archived_as.encode()) == []
    assert [p.relative_to(tmp / "out").as_posix() for p in (tmp / "out").rglob("*.jsonl")] \
        == [f.archived_as]


def test_each_archive_has_its_own_salt_unless_one_is_kept(tmp_path: Path) -> None:
    _session(tmp_path / "in" / "proj" / "s.jsonl", "2026-01-15T10:40:00.000Z")
    names = [redact([tmp_path / "in"], tmp_path / f"o{i}").files[0].archived_as
             for i in range(2)]
    assert names[0] != names[1]  # a random salt each: nothing links the two archives
    salt = tmp_path / "keep" / "salt.txt"
    salt.parent.mkdir()
    runner = CliRunner()
    kept = [runner.invoke(app, ["redact", str(tmp_path / "in"), "--out", str(tmp_path / f"k{i}"),
                                "--salt-file", str(salt), "--json", "-q"]) for i in range(2)]
    assert [k.exit_code for k in kept] == [0, 0], kept[0].output
    rows = [json.loads(k.stdout)["files"][0]["archived_as"] for k in kept]
    assert rows[0] == rows[1]  # the same kept salt: the same hashes
    assert salt.read_text().strip() not in (tmp_path / "k0" / rows[0]).read_text()
    inside = runner.invoke(app, ["redact", str(tmp_path / "in"), "--out", str(tmp_path / "k2"),
                                 "--salt-file", str(tmp_path / "k2" / "salt"), "-q"])
    assert inside.exit_code == 2 and "outside --out" in inside.stderr


@pytest.mark.parametrize("salt", ["", " ", "\t\n"])
def test_an_empty_salt_is_refused_before_anything_is_written(tmp_path: Path, salt: str) -> None:
    """A salt of nothing (or white space) hashes a path as sha256("\\0" + path), which anyone
    recomputes from a guessed path: it was taken and reported 'salted with the salt given'."""
    _session(tmp_path / "in" / "proj" / "s.jsonl", "2026-01-15T10:40:00.000Z")
    got = CliRunner().invoke(app, ["redact", str(tmp_path / "in"), "--out",
                                   str(tmp_path / "out"), "--salt", salt, "-q"])
    assert got.exit_code == 2, got.output
    assert "empty salt" in got.stderr
    assert not (tmp_path / "out").exists()
    with pytest.raises(ReplayError, match="empty salt"):
        redact([tmp_path / "in"], tmp_path / "lib", salt=salt)
    assert not (tmp_path / "lib").exists()


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(days=st.integers(-10**8, 10**8), year=st.integers(1, 9999))
@example(days=40_000, year=2026).via("a shift out of 2000-2099: said")
@example(days=1, year=1).via("outside 2000-2099 before and after: as the original")
def test_a_shift_that_leaves_the_calendar_is_an_error(tmp_path_factory: pytest.TempPathFactory,
                                                      days: int, year: int) -> None:
    tmp = tmp_path_factory.mktemp("shift")
    _session(tmp / "in" / "s.jsonl", f"{year:04d}-06-15T10:40:00.000Z")
    result = CliRunner().invoke(app, ["redact", str(tmp / "in"), "--out", str(tmp / "out"),
                                      "--shift-days", str(days), "-q"])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    moved = date(year, 6, 15).toordinal() + days
    if abs(days) > (date.max - date.min).days:
        assert result.exit_code == 2 and "--shift-days" in result.stderr
    elif not 1 <= moved <= date.max.toordinal():
        assert result.exit_code == 1 and "outside the years 1-9999" in result.output
        assert not list((tmp / "out").rglob("*.jsonl"))  # never written with the old dates
    elif 2000 <= year < 2100 and not 2000 <= date.fromordinal(moved).year < 2100:
        # moved out of the years a request may be in (replay.ingest.timestamps): the copy
        # would replay without the original's idle gaps, and its read-back says so
        assert result.exit_code == 1, result.output
        assert "the redacted copy: 1 of 1 request(s) timestamped outside 2000-2099" in \
            " ".join(result.output.split())
    else:
        assert result.exit_code == 0, result.output
        [copy] = list((tmp / "out").rglob("*.jsonl"))
        assert date.fromordinal(moved).isoformat() in copy.read_text()


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(stem=st.one_of(st.text("0123456789abcdef", min_size=200, max_size=240),
                      st.text(st.characters(codec="utf-8", exclude_characters="/\0"),
                              min_size=60, max_size=120)))
def test_a_file_name_of_up_to_255_bytes_is_written(tmp_path_factory: pytest.TempPathFactory,
                                                   stem: str) -> None:
    """Names filling a file system's 255 bytes: the archive's name is short (hashed), so the
    copy and its temporary name fit; before, the temporary name was too long and redact
    aborted the whole archive."""
    tmp = tmp_path_factory.mktemp("long")
    name = stem.encode()[:249].decode("utf-8", "ignore") + ".jsonl"
    try:
        _session(tmp / "in" / name, "2026-01-15T10:40:00.000Z")
    except OSError:  # a name the file system itself refuses: nothing to test
        return
    _session(tmp / "in" / "other.jsonl", "2026-01-15T10:40:00.000Z")
    report = redact([tmp / "in"], tmp / "out")
    assert [f.written for f in report.files] == [True, True], [str(i) for i in report.issues]
    assert all(len(f.archived_as.encode()) <= 120 for f in report.files)


def test_a_refused_files_stand_ins_are_not_counted(tmp_path: Path) -> None:
    """The summary's stand-ins and hashed paths are those of the copies written: a file refused
    after some of its ids were given stand-ins (a later date leaves the calendar) is in no
    copy, and neither are they."""
    _session(tmp_path / "in" / "a.jsonl", "2020-06-15T10:40:00.000Z")
    alone = redact([tmp_path / "in"], tmp_path / "alone", shift_days=5)
    _session(tmp_path / "in" / "b.jsonl", "2020-06-15T10:40:00.000Z")
    recs = [json.loads(line) for line in (tmp_path / "in" / "b.jsonl").read_text().splitlines()]
    recs[0]["sessionId"] = "a session id with spaces"  # not kept as written: a stand-in
    recs[1]["timestamp"] = "9999-12-30T10:40:00.000Z"  # shifted 5 days: past year 9999
    (tmp_path / "in" / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    both = redact([tmp_path / "in"], tmp_path / "out", shift_days=5)
    assert {f.source: f.written for f in both.files} == {"a.jsonl": True, "b.jsonl": False}
    assert (both.n_stand_ins, both.n_paths) == (alone.n_stand_ins, alone.n_paths)


@pytest.mark.parametrize("where", ["inside the input", "the input itself"])
def test_a_refused_out_leaves_no_new_salt_file(tmp_path: Path, where: str) -> None:
    """``--salt-file NEW`` was created (a new random salt written) before ``--out`` was checked,
    so a refused ``--out`` left a salt file behind that no archive used; the salt file is now
    read or made only once ``--out`` is known to be writable."""
    _session(tmp_path / "in" / "proj" / "s.jsonl", "2026-01-15T10:40:00.000Z")
    out = tmp_path / "in" / "copy" if where == "inside the input" else tmp_path / "in"
    salt = tmp_path / "keys" / "salt"
    salt.parent.mkdir()
    got = CliRunner().invoke(app, ["redact", str(tmp_path / "in"), "--out", str(out),
                                   "--salt-file", str(salt), "-q"])
    assert got.exit_code == 2, got.output
    assert not salt.exists()
    both = CliRunner().invoke(app, ["redact", str(tmp_path / "in"), "--out",
                                    str(tmp_path / "o"), "--salt", "k", "--salt-file", str(salt)])
    assert both.exit_code == 2 and "give one" in both.stderr
    assert not salt.exists() and not (tmp_path / "o").exists()


def test_a_salt_file_over_its_limit_names_no_variable_that_would_not_raise_it(
        tmp_path: Path) -> None:
    """A --salt-file over its fixed 4 KiB said "(raise it with CTXREPLAY_MAX_FILE_BYTES=BYTES)",
    which changes nothing for it."""
    _session(tmp_path / "in" / "proj" / "s.jsonl", "2026-01-15T10:40:00.000Z")
    (tmp_path / "salt").write_text("x" * 5000)
    got = CliRunner().invoke(app, ["redact", str(tmp_path / "in"), "--out",
                                   str(tmp_path / "out"), "--salt-file", str(tmp_path / "salt"),
                                   "-q"])
    assert got.exit_code == 2, got.output
    assert "over the 4,096-byte limit of a salt file; not read" in got.stderr, got.stderr
    assert "CTXREPLAY_MAX_FILE_BYTES" not in got.stderr


@pytest.mark.parametrize("where", ["in the input folder", "in the project cache's dataset"])
def test_a_new_salt_file_is_an_output_checked_as_every_other(tmp_path: Path, where: str,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """A missing ``--salt-file`` is created: a file this command writes, refused where any
    output is (inside an input folder, inside the project cache's dataset), before anything is
    written; it was created there."""
    _session(tmp_path / "in" / "proj" / "s.jsonl", "2026-01-15T10:40:00.000Z")
    monkeypatch.setenv("CTXREPLAY_CACHE_DIR", str(tmp_path / "cache"))
    salt = (tmp_path / "in" / "salt" if where == "in the input folder"
            else tmp_path / "cache" / "dataset" / "salt")
    salt.parent.mkdir(parents=True, exist_ok=True)
    got = CliRunner().invoke(app, ["redact", str(tmp_path / "in"), "--out",
                                   str(tmp_path / "out"), "--salt-file", str(salt), "-q"])
    assert got.exit_code == 2, got.output
    assert "--salt-file" in got.stderr and not salt.exists()
    assert not (tmp_path / "out").exists()
