"""``replay redact`` on Inspect logs: ``.eval`` zips are redacted member by member into a new zip
that re-ingests as the original (a zip breaking a rule is refused, nothing written), and a
summary compaction keeps the summarisation call's answer findable inside the summary.

Expected counts are walked here from the originals' JSON, not taken from the parser.
"""

from __future__ import annotations

import json
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.input_files import ENV_MAX_DOCUMENT_BYTES
from replay.ingest.parse_file import parse_file
from replay.redact import redact
from tests.conftest import REPO

INSPECT = REPO / "tests" / "fixtures" / "inspect_ai"
_FIGURES = ("role", "kind", "n_chars", "n_bytes", "n_lines", "tokens_o200k", "tokens_cl100k",
            "call_id", "tool", "ts")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def test_eval_zips_redact_member_by_member(tmp_path: Path) -> None:
    """Before: "a zip archive (Inspect .eval) is not supported by redact yet", none written."""
    zips = sorted(INSPECT.glob("*.eval"))
    assert len(zips) == 3
    report = redact(zips, tmp_path / "out")
    assert [f.source for f in report.files if f.written and not f.issues] == \
        [z.name for z in zips]
    for f, original in zip(report.files, zips):
        copy = tmp_path / "out" / f.archived_as
        assert copy.suffix == ".eval" and zipfile.is_zipfile(copy)
        with zipfile.ZipFile(original) as z:
            members = {n: json.loads(z.read(n)) for n in z.namelist()}
        with zipfile.ZipFile(copy) as z:
            names = z.namelist()
            copied = {n: json.loads(z.read(n)) for n in names}
            infos = z.infolist()
        # the same members (sample ids are numbers: kept), each still one JSON document
        assert names == list(members)
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in infos)
        samples = [n for n in members if n.startswith("samples/")]
        a, b = parse_file(original).tables, parse_file(copy).tables
        assert a is not None and b is not None
        assert b.runs.num_rows == a.runs.num_rows == len(samples)
        for col in _FIGURES:
            assert b.messages[col].to_pylist() == a.messages[col].to_pylist(), (f.source, col)
        for col in ("input_tokens", "output_tokens", "cache_read_tokens"):
            assert b.requests[col].to_pylist() == a.requests[col].to_pylist(), (f.source, col)
        # every sample's input text is gone from every member
        inputs = {s for n in samples for s in _strings(members[n].get("input")) if len(s) > 12}
        assert inputs
        left = {s for doc in copied.values() for t in _strings(doc) for s in inputs if s in t}
        assert not left, (f.source, sorted(left)[:3])


def test_a_summary_compaction_keeps_its_summarisation_call(tmp_path: Path) -> None:
    """The parser finds the call that wrote a summary by its answer inside the summary text;
    redacted as one marker each, the answer was no longer inside it and the call became a
    request (before: "the redacted copy reads as 20 blocks, the original as 18")."""
    source = INSPECT / "hand-made-compaction.json"
    report = redact([source], tmp_path / "out")
    [f] = report.files
    assert f.written and not f.issues, [i.reason for i in f.issues]
    copy = tmp_path / "out" / f.archived_as
    doc = json.loads(source.read_text())
    events = doc["samples"][0]["events"]
    scorer = {e["id"] for e in events if e.get("event") == "span_begin"
              and e.get("type") == "scorer"}
    models = [i for i, e in enumerate(events) if e.get("event") == "model"
              and e.get("span_id") not in scorer]
    summaries = [i for i, e in enumerate(events) if e.get("event") == "compaction"
                 and e.get("type") == "summary"]
    writer = max(i for i in models if i < summaries[0])  # the call just before the summary
    a, b = parse_file(source).tables, parse_file(copy).tables
    assert a is not None and b is not None
    assert b.requests.num_rows == a.requests.num_rows == len(models) - 1
    assert b.messages.num_rows == a.messages.num_rows
    for col in _FIGURES:
        assert b.messages[col].to_pylist() == a.messages[col].to_pylist(), col
    assert b.events.drop(["run_id"]).equals(a.events.drop(["run_id"]))
    answer = events[writer]["output"]["choices"][0]["message"]["content"]
    assert answer not in copy.read_text() and "LooseVersion" not in copy.read_text()


def _eval(path: Path, extra: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    """A small valid .eval (a header and one sample), plus ``extra`` members."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sample = {"id": 1, "epoch": 1, "messages": [
        {"role": "user", "content": "what is in the box"},
        {"role": "assistant", "content": "a secret plan"}]}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"},
                                              "status": "success"}))
        z.writestr("samples/1_epoch_1.json", json.dumps(sample))
        for name, data in extra:
            z.writestr(name, data)
    return path


def _link(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize(("extra", "why"), [
    ([("samples/../../escape.json", b"{}")], "not a relative path inside the zip"),
    ([("/etc/passwd.json", b"{}")], "not a relative path inside the zip"),
    ([("summaries.json", b"[]"), ("summaries.json", b"[]")], "appears twice"),
    ([(_link("samples/2_epoch_1.json"), b"samples/1_epoch_1.json")], "is a symlink"),
    ([("reductions.json", b"not json")], "not a JSON document redact can read"),
    ([("summaries.json", b"[" + b'"padding", ' * 600 + b"1]")], "bytes uncompressed, over"),
])
def test_a_zip_breaking_a_rule_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          extra: list[tuple[Any, bytes]], why: str) -> None:
    monkeypatch.setenv(ENV_MAX_DOCUMENT_BYTES, "6000")
    source = _eval(tmp_path / "in" / "log.eval", extra)
    assert parse_file(source).tables is not None  # the ingest reads it (skipping the member)
    report = redact([source.parent], tmp_path / "out")
    [f] = report.files
    assert not f.written and any(why in i.reason for i in f.issues), f.issues
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file()]


def _one_sample_eval(folder: Path, ident: str) -> Path:
    """``folder`` holding an Inspect ``.eval`` zip of one sample of id ``ident`` (its member
    named after it, ``samples/<id>_epoch_1.json``)."""
    folder.mkdir()
    sample = {"id": ident, "epoch": 1, "messages": [
        {"role": "user", "content": "what is in the box"},
        {"role": "assistant", "content": "a secret plan"}]}
    with zipfile.ZipFile(folder / "log.eval", "w") as z:
        z.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"},
                                              "status": "success"}))
        z.writestr(f"samples/{ident}_epoch_1.json", json.dumps(sample))
    return folder


def test_a_sample_id_that_is_not_one_token_gets_one_stand_in(tmp_path: Path) -> None:
    """The id names the sample's member and its run (``sample <id> epoch <n>``): both read the
    same stand-in (before: the runs' agent read other than the original's, 2 issues)."""
    report = redact([_one_sample_eval(tmp_path / "in", "case of the missing key")],
                    tmp_path / "out")
    [f] = report.files
    assert f.written and not f.issues, [i.reason for i in f.issues]
    assert report.n_stand_ins == 1
    copy = tmp_path / "out" / f.archived_as
    with zipfile.ZipFile(copy) as z:
        [name] = [n for n in z.namelist() if n.startswith("samples/")]
        member = json.loads(z.read(name))
    assert name == f"samples/{member['id']}_epoch_1.json" and " " not in member["id"]
    b = parse_file(copy).tables
    assert b is not None
    assert b.runs["agent"].to_pylist() == [f"sample {member['id']} epoch 1"]
    assert "missing key" not in name and "missing key" not in json.dumps(member)


@pytest.mark.parametrize("ident", ["alice@devbox", "-home-alice-x", "-Users-alice"])
def test_a_sample_id_that_is_the_users_gets_its_stand_in_in_the_member_name_too(
        tmp_path: Path, ident: str) -> None:
    """A one-token sample id of a user's shape (``keep_list.USERS_VALUE``: a user at a host, a
    home folder) got its stand-in inside the sample but was kept in the member's name
    (``samples/<id>_epoch_1.json``): the name follows the one rule, ``keep_list.keeps``."""
    report = redact([_one_sample_eval(tmp_path / "in", ident)], tmp_path / "out")
    [f] = report.files
    assert f.written and not f.issues, [i.reason for i in f.issues]
    with zipfile.ZipFile(tmp_path / "out" / f.archived_as) as z:
        [name] = [n for n in z.namelist() if n.startswith("samples/")]
        member = json.loads(z.read(name))
        assert not any("alice" in n for n in z.namelist()), z.namelist()
    assert name == f"samples/{member['id']}_epoch_1.json" and "alice" not in member["id"]
