"""Fuzzing the ATIF, Gemini CLI, OpenCode and Inspect AI parsers with their own fixtures as
seeds: truncated at any byte, any JSON node replaced by a wrong-typed value or deleted, bytes
flipped inside an ``.eval`` zip.  Every input must give, through ``tests.fuzz.harness.check``,
a bool from every sniffer, no exception, well-formed issues and runs that satisfy the schema
invariants, in time; a deterministic sweep also replaces every node of the smallest seeds by
a wrong-typed value, one at a time.  Example counts follow ``CTXREPLAY_FUZZ_EXAMPLES``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.ingest.parse_file import parse_file
from tests.fuzz.harness import EXAMPLES, LIMIT, check
from tests.fuzz.mutations import delete_at, nodes, replace_at
from tests.fuzz.seeds import NEW_FORMAT_SEEDS, dump_doc, dump_line

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SEEDS = NEW_FORMAT_SEEDS
WRONG: list[Any] = [0, -1, 1.5, 2**63, "", "x", [], [1], {}, {"a": 1}, None, True]
fuzz = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def _seed(name: str) -> tuple[str, str, bytes]:
    fmt, filename = SEEDS[name]
    return fmt, filename, (FIXTURES / fmt / filename).read_bytes()


def _records(data: bytes, filename: str) -> list[Any] | None:
    """The seed's JSON values (one per line for JSON Lines), None for a zip."""
    if filename.endswith(".eval"):
        return None
    if filename.endswith(".jsonl"):
        return [json.loads(line) for line in data.splitlines() if line.strip()]
    return [json.loads(data)]


def _serialise(values: list[Any], filename: str) -> bytes:
    if filename.endswith(".jsonl"):
        return b"".join(dump_line(v) + b"\n" for v in values)
    return dump_doc(values[0])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder inputs are written to; the token encoding is loaded here, once, so that its
    load time does not count against the first input's time bound."""
    folder = tmp_path_factory.mktemp("fuzz-new")
    parse_file(FIXTURES / "opencode" / "run-list.events.jsonl")
    return folder


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_parses_cleanly(name: str, workdir: Path) -> None:
    fmt, filename, data = _seed(name)
    drafts, issues = check(fmt, filename, data, workdir, LIMIT)
    assert drafts and not issues, [str(i) for i in issues]


@fuzz
@given(name=st.sampled_from(sorted(SEEDS)), data=st.data())
def test_truncated_anywhere(workdir: Path, name: str, data: st.DataObject) -> None:
    fmt, filename, raw = _seed(name)
    cut = data.draw(st.integers(0, len(raw) - 1), label="cut")
    check(fmt, filename, raw[:cut], workdir, LIMIT)


@fuzz
@given(name=st.sampled_from([n for n in sorted(SEEDS) if not SEEDS[n][1].endswith(".eval")]),
       data=st.data())
def test_wrong_type_or_deleted_key(workdir: Path, name: str, data: st.DataObject) -> None:
    fmt, filename, raw = _seed(name)
    values = _records(raw, filename)
    assert values is not None
    k = data.draw(st.integers(0, len(values) - 1), label="record")
    paths = [p for p, _ in nodes(values[k])]
    path = data.draw(st.sampled_from(paths), label="path")
    if path and data.draw(st.booleans(), label="delete"):
        values[k] = delete_at(values[k], path)
    else:
        values[k] = replace_at(values[k], path, data.draw(st.sampled_from(WRONG), label="new"))
    check(fmt, filename, _serialise(values, filename), workdir, LIMIT)


@fuzz
@given(data=st.data())
def test_flipped_bytes_in_an_eval_zip(workdir: Path, data: st.DataObject) -> None:
    fmt, filename, raw = _seed("inspect_eval")
    buf = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 8), label="flips")):
        at = data.draw(st.integers(0, len(buf) - 1), label="at")
        buf[at] ^= data.draw(st.integers(1, 255), label="mask")
    check(fmt, filename, bytes(buf), workdir, LIMIT)


@pytest.mark.parametrize("name", [n for n in sorted(SEEDS) if not SEEDS[n][1].endswith(".eval")])
def test_every_node_replaced_once(name: str, workdir: Path) -> None:
    """Deterministic sweep over every JSON seed: each node (every fourth one below 1,000
    examples) replaced by a value of another type; from 1,000 examples on, by every value of
    another type.  (A session document whose ``messages`` was ``-1`` raised out of the Gemini
    CLI parser: only three seeds were swept, one value a node.)"""
    every = EXAMPLES >= 1000
    stride = 1 if every else 4
    fmt, filename, raw = _seed(name)
    values = _records(raw, filename)
    assert values is not None
    for k, value in enumerate(values):
        for n, (path, old) in enumerate(nodes(value)):
            if n % stride:
                continue
            others = [w for w in WRONG[(n % len(WRONG)):] + WRONG[:(n % len(WRONG))]
                      if type(w) is not type(old)]
            for new in others if every else others[:1]:
                mutated = [replace_at(v, path, new) if i == k else v
                           for i, v in enumerate(values)]
                check(fmt, filename, _serialise(mutated, filename), workdir, LIMIT)


def test_an_entry_flagged_encrypted_is_an_issue(workdir: Path) -> None:
    """A flipped bit can mark an entry encrypted (found by the byte-flip fuzz: ``zipfile``
    raised RuntimeError out of the parser).  Every entry so flagged is skipped with an issue
    naming it; the rest of the log is read."""
    import struct

    fmt, filename, raw = _seed("inspect_eval")
    buf, name = bytearray(raw), b"_journal/start.json"
    at = 0
    while (at := buf.find(b"PK\x01\x02", at)) >= 0:  # central directory entries
        n = struct.unpack_from("<H", buf, at + 28)[0]
        if bytes(buf[at + 46:at + 46 + n]) == name:
            buf[at + 8] |= 0x1  # general purpose flag bit 0: encrypted
            break
        at += 4
    assert at >= 0, "the seed has no _journal/start.json entry"
    _, issues = check(fmt, filename, bytes(buf), workdir, LIMIT)
    assert [i.reason for i in issues if "encrypted" in i.reason] == [
        "zip entry '_journal/start.json' is encrypted (skipped)"]
