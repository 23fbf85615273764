"""Fuzzing every parser with mutated real logs: parsed, or reported per file / per line.

Seeds are small trimmed copies of the real samples (``tests/fuzz/seeds.py`` builds them in
memory, one per layout: Claude Code, Codex modern and legacy, SWE-agent function-calling and
v0, mini-swe-agent list and v1, OpenHands, and chat in its four shapes).  Mutations: truncation
at any byte, bit flips, inserted bytes (NUL, 0xFF, invalid and overlong UTF-8, encoded
surrogates, random bytes), shuffled / duplicated / deleted lines, a deleted key of any JSON
object, any value replaced by a wrong type (int, float, out-of-range int, str, list, dict,
null, bool), a value wrapped in up to 5,000 lists, a lone-surrogate escape, and 1-5 MB strings.

Every input must give, from each sniffer a bool, and from the format's parser and from
``parse_file`` (format detected and forced) no exception, well-formed issues (path, line >= 0,
within the file for JSON Lines, a reason), runs that satisfy the schema invariants (dense
ordered messages and blocks, results paired or counted as orphans, requests counted and
producing existing assistant messages), all within a time bound (5 s + 1.5 s per MiB).
JSON Lines formats also get exact "no silently wrong count" properties: a line made unreadable
is reported at its line and the rest parses exactly as if that line were blank; a truncated
file parses as its complete lines plus one issue at the partial line; a duplicated record is
reported at the copy's line or changes nothing.  A deterministic sweep also replaces every
node of every seed by a wrong-typed value and deletes every key, one at a time.

Every input that once failed is pinned by a plain test at the end of this module, including
the bugs found outside the parsers (tokenizer panic on a million spaces, quadratic shell
classification, lone surrogates outside the text column).

Example counts scale with ``CTXREPLAY_FUZZ_EXAMPLES`` (default 25: the whole folder runs in
about 15 s, as CI does; 1000 or more also makes the sweep try every value at every node).
The long run::

    CTXREPLAY_FUZZ_EXAMPLES=5000 python -m pytest tests/fuzz -q

and ``HYPOTHESIS_PROFILE=dev`` (not derandomised) explores new inputs each time.  Coverage-guided
fuzzing with atheris (``pip install atheris``)::

    python tests/fuzz/atheris_parsers.py -atheris_runs=200000
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import PARSERS
from replay.ingest.parsers.builder import Issue, RunDraft
from tests.fuzz.harness import (
    JSONL_FORMATS,
    check,
    explain_difference,
    hard_limit,
    parse_direct,
    same_parse,
)
from tests.fuzz.mutations import (
    deep_list,
    delete_at,
    join_lines,
    json_object,
    mutated,
    nodes,
    replace_at,
    serialise_with,
    split_lines,
)
from tests.fuzz.seeds import Seed, build_seeds, dump_doc, dump_line

EXAMPLES = max(1, int(os.environ.get("CTXREPLAY_FUZZ_EXAMPLES", "25")))
LIMIT = float(os.environ.get("CTXREPLAY_FUZZ_SECONDS", "5"))
"""Seconds one parse of a small input may take (huge inputs get 1.5 s more per MiB)."""

SEEDS_AT_IMPORT = ("claude_short", "claude_tools", "codex_small", "codex_2025", "codex_legacy",
                   "swe_fc", "swe_v0", "mini", "mini_v1", "openhands_interactions",
                   "openhands_basic", "chat_object", "chat_list", "chat_jsonl", "chat_requests")
JSONL_SEEDS = ("claude_short", "claude_tools", "codex_small", "codex_2025", "codex_legacy",
               "chat_jsonl", "chat_requests")
DOC_SEEDS = tuple(s for s in SEEDS_AT_IMPORT if s not in JSONL_SEEDS)

JUNK = [b"\x00", b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xa0\xa1", b"\xe2\x28\xa1", b"\xe2\x82",
        b"\xed\xa0\x80", b"\xf0\x90\x28\xbc", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf", b"\x00" * 3,
        b"\r", b"\n", b"\\", b'"', b"{", b"]", b"\x1b[0m", b"\xef\xbb\xbf"]
WRONG = [0, -1, 7, 1.5, float("1e308"), 2**63, -(2**63) - 1, 10**30, "", "x", "\u00e9\u4e2d",
         [], [1, "a"], {}, {"a": 1}, {"type": "text"}, None, True, False]
STRUCTURAL = ("delete_key", "wrong_type", "deep_nest", "surrogate")
BYTEWISE = ("truncate", "flip", "insert", "shuffle", "duplicate", "delete_line")

fuzz = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


@pytest.fixture(scope="session")
def seeds(samples: Path) -> dict[str, Seed]:
    built = build_seeds(samples)
    assert tuple(built) == SEEDS_AT_IMPORT
    return built


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# --------------------------------------------------------------------------- mutations

def _structural(draw: st.DrawFn, seed: Seed, data: bytes, op: str) -> bytes:
    """One JSON-aware mutation of a record (JSON Lines) or of the document; bytes that no
    longer hold the seed's JSON (or hold it too deeply nested to walk) are returned unchanged."""
    try:
        return _json_mutation(draw, seed, data, op)
    except RecursionError:
        return data


def _json_mutation(draw: st.DrawFn, seed: Seed, data: bytes, op: str) -> bytes:
    if seed.jsonl:
        lines = split_lines(data)
        records = [i for i, raw in enumerate(lines) if json_object(raw) is not None]
        if not records:
            return data
        at = draw(st.sampled_from(records))
        doc = json_object(lines[at])
    else:
        try:
            doc = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError):
            return data
    dump = dump_line if seed.jsonl else dump_doc
    paths = [p for p, _ in nodes(doc)]
    if op == "delete_key":
        keys = [p for p in paths if p and isinstance(p[-1], str)]
        if not keys:
            return data
        new = dump(delete_at(doc, draw(st.sampled_from(keys))))
    elif op == "wrong_type":
        path = draw(st.sampled_from(paths))
        old = dict(nodes(doc))[path] if path else doc
        value = draw(st.sampled_from([w for w in WRONG if type(w) is not type(old)]))
        new = dump(replace_at(doc, path, value))
    elif op == "deep_nest":
        path = draw(st.sampled_from(paths))
        depth = draw(st.one_of(st.just(5000), st.integers(1, 1200)))
        old = dict(nodes(doc))[path] if path else doc
        new = serialise_with(doc, path, deep_list(dump_line(old), depth), seed.jsonl)
    else:  # surrogate: a string value holding lone-surrogate escapes
        strings = [p for p, v in nodes(doc) if isinstance(v, str)]
        if not strings:
            return data
        new = serialise_with(doc, draw(st.sampled_from(strings)),
                             draw(st.sampled_from([b'"\\ud800"', b'"a\\udfff b"',
                                                   b'"\\ud83d\\ude00 \\ud83d"'])), seed.jsonl)
    if not seed.jsonl:
        return new
    lines[at] = new
    return join_lines(lines, data)


def _bytewise(draw: st.DrawFn, data: bytes, op: str) -> bytes:
    if not data:
        return data
    if op == "truncate":
        return data[:draw(st.integers(0, len(data) - 1))]
    if op == "flip":
        i = draw(st.integers(0, len(data) - 1))
        return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]
    if op == "insert":
        i = draw(st.integers(0, len(data)))
        junk = draw(st.one_of(st.sampled_from(JUNK), st.binary(min_size=1, max_size=8)))
        return data[:i] + junk + data[i:]
    lines = split_lines(data)
    if not lines:
        return data
    if op == "shuffle":
        return join_lines(draw(st.permutations(lines)), data)
    i = draw(st.integers(0, len(lines) - 1))
    if op == "duplicate":
        j = draw(st.integers(0, len(lines)))
        return join_lines([*lines[:j], lines[i], *lines[j:]], data)
    return join_lines([*lines[:i], *lines[i + 1:]], data)  # delete_line


def mutate(draw: st.DrawFn, seed: Seed) -> bytes:
    data = seed.data
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(BYTEWISE + STRUCTURAL))
        data = _structural(draw, seed, data, op) if op in STRUCTURAL else _bytewise(draw, data, op)
    return mutated(seed.data, data)


def _unreadable_lines(seed: Seed, data: bytes) -> list[int]:
    """Lines every JSON Lines reader must report: non-blank and not a JSON object.  Chat files
    are JSON Lines only with several lines and a readable first one (else a document)."""
    lines = split_lines(data)
    bad = [no for no, raw in enumerate(lines, 1) if raw.strip() and json_object(raw) is None]
    if seed.fmt in JSONL_FORMATS:
        return bad
    filled = [raw for raw in lines if raw.strip()]
    if seed.fmt == "chat" and len(filled) > 1 and json_object(filled[0]) is not None:
        return bad
    return []


def _identity(fmt: str, rec: dict[str, Any] | None) -> bool:
    """Whether a JSON Lines record can be told apart from a legitimate repeat."""
    if rec is None:
        return False
    if fmt == "claude_code":
        return isinstance(rec.get("uuid"), str) and bool(rec["uuid"])
    if fmt == "codex":  # a context item with a call id, an id or encrypted reasoning
        item = rec.get("payload") if rec.get("type") == "response_item" else rec
        keys = ("call_id", "id", "encrypted_content")
        return isinstance(item, dict) and "payload" not in item and "type" in item and any(
            isinstance(item.get(k), str) and item[k] for k in keys)
    if "messages" in rec:  # a request-log line: its response can be matched once
        return True
    calls = rec.get("tool_calls") if isinstance(rec.get("tool_calls"), list) else []
    return isinstance(rec.get("tool_call_id"), str) or any(
        isinstance(c, dict) and isinstance(c.get("id"), str) for c in calls)


# --------------------------------------------------------------------------- tests

def test_seeds_parse_cleanly(seeds: dict[str, Seed], workdir: Path) -> None:
    """The unmutated seeds are detected as their format and parse without any issue."""
    for seed in seeds.values():
        drafts, issues = check(seed.fmt, seed.filename, seed.data, workdir, LIMIT)
        assert len(drafts) == 1 and not issues, (seed.name, [str(i) for i in issues])
        assert drafts[0].run["n_requests"] > 0 and drafts[0].run["n_tool_calls"] > 0, seed.name
        parsed = parse_file(workdir / seed.filename)
        assert parsed.format == seed.fmt and not parsed.issues, seed.name


@fuzz
@given(name=st.sampled_from(SEEDS_AT_IMPORT), data=st.data())
def test_mutated_inputs_parse_or_report(seeds: dict[str, Seed], workdir: Path, name: str,
                                        data: st.DataObject) -> None:
    """1-3 stacked mutations of any seed: checked output, no exception, no hang; every
    unreadable line of a JSON Lines file is reported at its line number."""
    seed = seeds[name]
    mutated = data.draw(st.composite(lambda draw: mutate(draw, seed))(), label="mutated")
    _, issues = check(seed.fmt, seed.filename, mutated, workdir, LIMIT)
    reported = {i.line for i in issues}
    missing = [no for no in _unreadable_lines(seed, mutated) if no not in reported]
    assert not missing, f"unreadable lines {missing} not reported: {[str(i) for i in issues]}"


@fuzz
@given(name=st.sampled_from(JSONL_SEEDS), data=st.data())
def test_one_unreadable_line_is_reported_and_only_it_is_lost(
        seeds: dict[str, Seed], name: str, data: st.DataObject) -> None:
    """Corrupting line L so it is no longer a JSON object gives an issue at L and otherwise
    exactly the parse of the file with line L blank (same runs, same other issues)."""
    seed = seeds[name]
    lines = split_lines(seed.data)
    at = data.draw(st.integers(0, len(lines) - 1), label="line")
    raw = lines[at]
    how = data.draw(st.sampled_from(["truncate", "insert", "flip", "replace"]), label="how")
    if how == "truncate":
        new = raw[:data.draw(st.integers(0, len(raw) - 1))]
    elif how == "insert":
        i = data.draw(st.integers(0, len(raw)))
        new = raw[:i] + data.draw(st.sampled_from([j for j in JUNK if j != b"\n"])) + raw[i:]
    elif how == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        new = raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1:]
    else:
        new = data.draw(st.sampled_from([b"garbage", b"[]", b"null", b'"text"', b"{", b"42",
                                         b'{"a": 1} {"b": 2}', b"\x00" * 16]))
    assume(new.strip() and b"\n" not in new and json_object(new) is None)
    corrupted = join_lines([*lines[:at], new, *lines[at + 1:]], seed.data)
    blanked = join_lines([*lines[:at], b"", *lines[at + 1:]], seed.data)
    got, got_issues = parse_direct(seed.fmt, seed.filename, corrupted, LIMIT)
    want, want_issues = parse_direct(seed.fmt, seed.filename, blanked, LIMIT)
    line = at + 1
    assert any(i.line == line for i in got_issues), [str(i) for i in got_issues]
    assert same_parse(got, want), explain_difference(got, want)
    assert [(i.line, i.reason) for i in got_issues if i.line != line] == \
        [(i.line, i.reason) for i in want_issues]


@fuzz
@given(name=st.sampled_from(JSONL_SEEDS), data=st.data())
def test_truncated_file_keeps_every_complete_line(seeds: dict[str, Seed], name: str,
                                                  data: st.DataObject) -> None:
    """A file cut at any byte parses as its complete lines, plus one issue at the partial line
    (unless the cut left a complete record)."""
    seed = seeds[name]
    cut = seed.data[:data.draw(st.integers(1, len(seed.data) - 1), label="cut")]
    head = cut[:cut.rfind(b"\n") + 1]
    tail = cut[len(head):]
    got, got_issues = parse_direct(seed.fmt, seed.filename, cut, LIMIT)
    want, want_issues = parse_direct(seed.fmt, seed.filename, head, LIMIT)
    if not tail.strip() or json_object(tail) is not None:
        return
    line = head.count(b"\n") + 1
    assert [i for i in got_issues if i.line == line], [str(i) for i in got_issues]
    if not head.strip():  # nothing readable: no run (an empty file is reported differently)
        assert not got
        return
    assert same_parse(got, want), explain_difference(got, want)
    assert [(i.line, i.reason) for i in got_issues if i.line != line] == \
        [(i.line, i.reason) for i in want_issues]


@fuzz
@given(name=st.sampled_from(JSONL_SEEDS), data=st.data())
def test_duplicated_record_is_reported_or_harmless(seeds: dict[str, Seed], name: str,
                                                   data: st.DataObject) -> None:
    """A record with an identity copied to a later line is reported at the copy's line, or the
    parse is unchanged: duplication never silently changes counts.  Records with no identity
    (legacy Codex messages, plain chat messages) may legitimately repeat and are not checked."""
    seed = seeds[name]
    lines = split_lines(seed.data)
    with_identity = [i for i, raw in enumerate(lines) if _identity(seed.fmt, json_object(raw))]
    at = data.draw(st.sampled_from(with_identity), label="line")
    to = data.draw(st.integers(at + 1, len(lines)), label="copy at")
    doubled = join_lines([*lines[:to], lines[at], *lines[to:]], seed.data)
    got, got_issues = parse_direct(seed.fmt, seed.filename, doubled, LIMIT)
    want, _ = parse_direct(seed.fmt, seed.filename, seed.data, LIMIT)
    copy_line = to + 1
    assert any(i.line == copy_line for i in got_issues) or same_parse(got, want), \
        f"line {at + 1} copied to line {copy_line}: {explain_difference(got, want)}"


@fuzz
@given(name=st.sampled_from(DOC_SEEDS), data=st.data())
def test_damaged_document_is_reported(seeds: dict[str, Seed], workdir: Path, name: str,
                                      data: st.DataObject) -> None:
    """A JSON document that no longer parses is never read silently: at least one issue, and
    the steps / messages kept from it are never more than the intact file had."""
    seed = seeds[name]
    op = data.draw(st.sampled_from(("truncate", "flip", "insert", "shuffle")), label="op")
    damaged = _bytewise(data.draw, seed.data, op)
    try:
        json.loads(damaged.decode("utf-8"))
        assume(False)
    except (ValueError, RecursionError):
        pass
    got, issues = check(seed.fmt, seed.filename, damaged, workdir, LIMIT)
    want, _ = parse_direct(seed.fmt, seed.filename, seed.data, LIMIT)
    assert issues, "damaged document parsed without any issue"
    if got:
        assert got[0].run["n_requests"] <= want[0].run["n_requests"]


@settings(fuzz, max_examples=max(2, EXAMPLES // 10))
@given(name=st.sampled_from(SEEDS_AT_IMPORT), data=st.data())
def test_huge_strings(seeds: dict[str, Seed], workdir: Path, name: str,
                      data: st.DataObject) -> None:
    """A 1-5 MB string in place of any value is parsed (or reported) within the time bound.

    The repeated chunk ends with a space and a non-space character and holds no backslash
    (which could escape the space) and no ``=``: known bugs outside the parsers are pinned by
    their own tests instead (a run of a million spaces crashes tiktoken,
    ``test_million_spaces_in_a_message``; classifying a shell command is quadratic in the
    length of one word and in the number of leading ``VAR=value`` words,
    ``test_huge_shell_word_is_classified_in_time``,
    ``test_many_assignments_are_classified_in_time``)."""
    seed = seeds[name]
    chunk = data.draw(st.text(st.characters(exclude_characters="\\="), max_size=40),
                      label="chunk") + " ~"
    size = data.draw(st.integers(1, 5), label="MB") * 1_000_000
    huge = json.dumps((chunk * (size // len(chunk) + 1))[:size], ensure_ascii=False).encode()
    if seed.jsonl:
        lines = split_lines(seed.data)
        records = [i for i, raw in enumerate(lines) if json_object(raw) is not None]
        at = data.draw(st.sampled_from(records), label="line")
        doc = json_object(lines[at])
        path = data.draw(st.sampled_from([p for p, _ in nodes(doc)]), label="path")
        lines[at] = serialise_with(doc, path, huge, True)
        mutated = join_lines(lines, seed.data)
    else:
        doc = json.loads(seed.data)
        path = data.draw(st.sampled_from([p for p, _ in nodes(doc)]), label="path")
        mutated = serialise_with(doc, path, huge, False)
    check(seed.fmt, seed.filename, mutated, workdir, LIMIT)


# --------------------------------------------------------------------------- pinned inputs

@pytest.mark.parametrize("fmt", sorted(PARSERS))
@pytest.mark.parametrize("payload", [b"", b"\n\n", b"\x00" * 64, b"\xff\xfe", b"[]", b"{}",
                                     b"null", b"[" * 5000 + b"]" * 5000,
                                     b'{"a":' * 5000 + b"1" + b"}" * 5000,
                                     b'[{"a":' * 3000 + b"1" + b"}]" * 3000])
def test_degenerate_inputs_with_every_parser(fmt: str, payload: bytes, workdir: Path) -> None:
    """Empty, binary and deeply nested inputs, forced through every parser."""
    check(fmt, "degenerate.json", payload, workdir, LIMIT)


# --------------------------------------------------------------------------- known bugs elsewhere

def _claude_file(path: Path, text: str) -> Path:
    """A two-record Claude Code transcript whose prompt is ``text``."""
    records = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": text}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s",
         "message": {"id": "m1", "role": "assistant", "model": "m",
                     "content": [{"type": "text", "text": "ok"}]}},
    ]
    path.write_bytes(b"".join(dump_line(r) + b"\n" for r in records))
    return path


def test_million_spaces_in_a_message(tmp_path: Path) -> None:
    path = _claude_file(tmp_path / "spaces.jsonl", "x" + " " * 1_000_000 + "y")
    try:
        parsed = parse_file(path)
    except BaseException as exc:  # noqa: BLE001 - the panic is not an Exception
        raise AssertionError(f"parse_file raised {type(exc).__name__}") from None
    assert parsed.tables is not None


def test_huge_shell_word_is_classified_in_time() -> None:
    from replay.ingest.ops import classify

    command = "echo '" + "QUJD" * 75_000 + "' | base64 -d > blob.bin"
    with hard_limit(0.5):  # fails (Hang) instead of waiting the seconds out
        assert classify("bash", command) == ("write", "blob.bin")


def test_many_assignments_are_classified_in_time() -> None:
    from replay.ingest.ops import classify

    with hard_limit(0.5):
        classify("bash", "A=1 " * 30_000 + "ls")


def test_env_pipe_is_classified() -> None:
    from replay.ingest.ops import classify

    assert classify("bash", "env | grep PATH").op in ("exec", "search")


# --------------------------------------------------------------------------- regressions (fixed)

def _run_of(fmt: str, name: str, data: bytes) -> tuple[RunDraft, list[Issue]]:
    drafts, issues = parse_direct(fmt, name, data, LIMIT)
    assert len(drafts) == 1, [str(i) for i in issues]
    return drafts[0], issues


@pytest.mark.parametrize("fmt", ["codex", "chat"])
def test_sniffers_answer_false_on_deep_nesting(fmt: str) -> None:
    """codex.sniff and chat.sniff raised RecursionError on a deeply nested head (``[[[…]]]``),
    which aborted detection for every later parser."""
    for head in (b"[" * 5000 + b"]" * 5000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
                 b"[" * 5000 + b"]" * 5000 + b"\n" + b"[" * 5000 + b"]" * 5000):
        assert PARSERS[fmt].sniff("x.jsonl", head) is False


def test_deep_value_in_a_mini_trajectory_keeps_the_readable_messages(
        seeds: dict[str, Seed], workdir: Path) -> None:
    """A value nested 5,000 deep in a ``.traj.json`` used to stop detection at the Codex sniffer
    (the whole file lost); now the mini-swe-agent parser keeps the messages before it."""
    seed = seeds["mini"]
    doc = json.loads(seed.data)
    data = serialise_with(doc, (6,), deep_list(b"1", 5000), False)  # a line of its own
    drafts, issues = check(seed.fmt, seed.filename, data, workdir, LIMIT)
    parsed = parse_file(workdir / seed.filename)
    assert parsed.format == "mini_swe_agent" and parsed.tables is not None
    assert drafts[0].run["n_messages"] == 6
    assert any("damaged file: kept the 6 readable messages" in i.reason for i in issues)


def test_chat_jsonl_with_a_damaged_first_line(seeds: dict[str, Seed]) -> None:
    """A chat JSON Lines file whose first line was damaged was read as one JSON document: the
    whole file was lost with one 'malformed JSON' issue.  Now line 1 is reported and skipped."""
    seed = seeds["chat_jsonl"]
    lines = split_lines(seed.data)
    damaged = join_lines([lines[0][:25], *lines[1:]], seed.data)
    run, issues = _run_of("chat", seed.filename, damaged)
    assert [i.line for i in issues] == [1]
    want, _ = _run_of("chat", seed.filename, join_lines([b"", *lines[1:]], seed.data))
    assert same_parse([run], [want])
    # a damaged pretty-printed document stays one file-level issue, not one per line
    doc_issues: list[Issue] = []
    assert parse_direct("chat", "c.json", seeds["chat_object"].data[:-40], LIMIT)[0] == []
    doc_issues = parse_direct("chat", "c.json", seeds["chat_object"].data[:-40], LIMIT)[1]
    assert len(doc_issues) == 1 and "malformed JSON" in doc_issues[0].reason


@pytest.mark.parametrize("fmt,data", [
    # mini-swe-agent: an assistant message without content (a model call that returned nothing)
    ("mini_swe_agent", dump_doc([{"role": "user", "content": "task"}, {"role": "assistant"},
                                 {"role": "user", "content": "go on"}])),
    # SWE-agent: a step with neither thought, response nor action
    ("swe_agent", dump_doc({"trajectory": [{"observation": "o"}, {"action": "ls", "thought": "t",
                                                                  "observation": "a b"}]})),
    # Claude Code: a streamed response whose only record has an empty content list
    ("claude_code", b"".join(dump_line(r) + b"\n" for r in [
        {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": "s",
         "message": {"id": "m", "role": "assistant", "model": "x", "content": []}},
        {"type": "user", "uuid": "v", "parentUuid": "a", "sessionId": "s",
         "message": {"role": "user", "content": "again"}}])),
])
def test_message_without_content_keeps_indices_dense(fmt: str, data: bytes) -> None:
    """A message with no block left a hole in the message indices (``n_messages`` counted it,
    no row had it) and its request pointed at a message that did not exist.  The builder now
    gives such a message one empty text block."""
    run, issues = _run_of(fmt, "x.traj.json" if fmt == "mini_swe_agent" else "x.json", data)
    assert not issues
    out = run.requests["output_msg"][0]
    rows = [k for k, m in enumerate(run.messages["msg"]) if m == out]
    assert [run.messages["role"][k] for k in rows] == ["assistant"]
    assert [run.messages["text"][k] for k in rows] == [""] or fmt == "swe_agent"


def test_codex_duplicated_items_are_reported(seeds: dict[str, Seed]) -> None:
    """A Codex call, output or reasoning item written twice was counted twice, silently (one
    more tool call, one more result, one more request).  Now the copy is reported and skipped;
    messages, which carry no identity, may still repeat."""
    for name in ("codex_small", "codex_2025", "codex_legacy"):
        seed = seeds[name]
        lines = split_lines(seed.data)
        want, _ = _run_of("codex", seed.filename, seed.data)
        for at, raw in enumerate(lines):
            if not _identity("codex", json_object(raw)):
                continue
            doubled = join_lines([*lines, raw], seed.data)
            got, issues = _run_of("codex", seed.filename, doubled)
            assert [i.line for i in issues] == [len(lines) + 1], (name, at)
            assert "duplicate" in issues[0].reason and f"line {at + 1}" in issues[0].reason
            assert same_parse([got], [want]), (name, at, explain_difference([got], [want]))


def test_chat_duplicated_tool_messages_are_reported(seeds: dict[str, Seed]) -> None:
    """A chat message with a tool call id (a call, or a result) written twice was counted twice;
    now the copy is reported at its line and skipped."""
    seed = seeds["chat_jsonl"]
    lines = split_lines(seed.data)
    want, _ = _run_of("chat", seed.filename, seed.data)
    checked = 0
    for at, raw in enumerate(lines):
        if _identity("chat", json_object(raw)):
            got, issues = _run_of("chat", seed.filename, join_lines([*lines, raw], seed.data))
            assert [i.line for i in issues] == [len(lines) + 1] and "repeats" in issues[0].reason
            assert same_parse([got], [want])
            checked += 1
    assert checked >= 4


def test_chat_timestamp_out_of_range(workdir: Path) -> None:
    """A chat message whose unix ``created`` is past year 9999 (or nan) raised OverflowError out
    of the chat parser: the whole file was lost.  Now the message just has no timestamp."""
    data = b"".join(dump_line(m) + b"\n" for m in [
        {"role": "user", "content": "hi", "created": 10**30},
        {"role": "assistant", "content": "x", "created": float("1e308")}])
    run, issues = _run_of("chat", "c.jsonl", data)
    assert not issues and run.messages["ts"] == ["", ""]
    check("chat", "c.jsonl", data, workdir, LIMIT)


@pytest.mark.parametrize("fmt,data", [
    ("chat", b"".join(dump_line(m) + b"\n" for m in [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "x", "usage": {"prompt_tokens": 2**63,
                                                         "completion_tokens": 5}}])),
    ("claude_code", b"".join(dump_line(r) + b"\n" for r in [
        {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": "s",
         "message": {"id": "m", "role": "assistant", "model": "x",
                     "content": [{"type": "text", "text": "ok"}],
                     "usage": {"input_tokens": 10**30, "output_tokens": -(2**63) - 1}}}])),
])
def test_token_count_out_of_int64(fmt: str, data: bytes, workdir: Path) -> None:
    """A usage number outside int64 made ``tokenize`` fail after parsing: the whole file was
    lost ("values the schema cannot hold").  Now that number is unknown and reported."""
    run, issues = _run_of(fmt, "x.jsonl", data)
    assert run.requests["input_tokens"] == [None]
    assert issues and all("out of range" in i.reason for i in issues)
    check(fmt, "x.jsonl", data, workdir, LIMIT)
    assert parse_file(workdir / "x.jsonl", fmt=fmt).tables is not None


def test_lone_surrogate_outside_the_text(workdir: Path) -> None:
    data = b"".join(dump_line(m) + b"\n" for m in [
        {"role": "user", "content": "hi", "timestamp": "2026-01-01T00:00:00\ud800"},
        {"role": "assistant", "content": "x", "model": "m\udfff"}])
    path = workdir / "surrogate.jsonl"
    path.write_bytes(data)
    parsed = parse_file(path)
    assert parsed.tables is not None, [str(i) for i in parsed.issues]


# --------------------------------------------------------------------------- exhaustive sweep

SWEEP_VALUES = [b'"xyz"', b'""', b"[]", b'["a"]', b"{}", b'{"a":1}', b"[{}]", b"1", b"-1", b"1.5",
                b"1e400", b"9223372036854775808", b"null", b"true", b'"\\ud800"']


@pytest.mark.parametrize("name", SEEDS_AT_IMPORT)
def test_every_field_missing_or_wrong_typed(seeds: dict[str, Seed], name: str) -> None:
    """Every node of the seed replaced by a wrong-typed value, and every key deleted, one at a
    time, through the format's parser (the checks of ``parse_direct``).  CI tries one value per
    node (rotating); with ``CTXREPLAY_FUZZ_EXAMPLES`` >= 1000, every value at every node."""
    seed = seeds[name]
    every = EXAMPLES >= 1000
    if seed.jsonl:
        lines = split_lines(seed.data)
        docs = [(at, json_object(raw)) for at, raw in enumerate(lines)]
    else:
        docs = [(None, json.loads(seed.data))]
    k = 0
    for at, doc in docs:
        for path, _ in nodes(doc):
            k += 1
            variants = [serialise_with(doc, path, v, seed.jsonl)
                        for v in (SWEEP_VALUES if every else [SWEEP_VALUES[k % len(SWEEP_VALUES)]])]
            if path and isinstance(path[-1], str):
                variants.append((dump_line if seed.jsonl else dump_doc)(delete_at(doc, path)))
            for new in variants:
                data = new if at is None else join_lines([*lines[:at], new, *lines[at + 1:]],
                                                         seed.data)
                try:
                    parse_direct(seed.fmt, seed.filename, data, LIMIT)
                except Exception as exc:
                    raise AssertionError(f"{name}: {path} -> {new[:200]!r}") from exc


@pytest.mark.parametrize("doc", [
    {"trajectory": [{"action": "ls", "observation": "a"}], "history": 1},
    {"trajectory": [{"action": "ls", "observation": "a"}],
     "history": [{"role": "assistant", "tool_calls": 1}]},
    {"trajectory": [{"action": "ls", "observation": "a", "query": 1}]},
    {"trajectory": [{"action": "ls", "observation": "a"}], "replay_config": {"agent": "x"}},
    {"trajectory": [{"action": "ls", "observation": "a"}], "replay_config": "[" * 5000},
])
def test_swe_agent_wrong_typed_run_fields(doc: dict[str, Any]) -> None:
    """``history`` / ``tool_calls`` / ``query`` that are not lists, an ``agent`` config that is
    not an object, or a deeply nested ``replay_config`` string raised out of the SWE-agent
    parser (TypeError, AttributeError, RecursionError): the whole file was lost."""
    run, _ = _run_of("swe_agent", "x.traj", dump_doc(doc))
    assert run.run["n_tool_calls"] == 1 and run.run["n_requests"] == 1


def test_chat_request_line_with_messages_as_a_string() -> None:
    """A request-log line whose ``messages`` was a string became one message per character
    (one issue each: a million for a 1 MB string, and seconds per MB).  Now the line is
    reported once and skipped."""
    good = {"messages": [{"role": "user", "content": "hi"}],
            "response": {"choices": [{"message": {"role": "assistant", "content": "yo"}}]}}
    bad = dict(good, messages="x" * 10_000)
    run, issues = _run_of("chat", "r.jsonl", b"".join(dump_line(r) + b"\n" for r in [good, bad]))
    assert [(i.line, "not a list" in i.reason) for i in issues] == [(2, True)]
    assert run.run["n_requests"] == 1


def test_builder_keeps_a_call_the_classifier_fails_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in ``replay.ingest.ops.classify`` (e.g. IndexError on ``env | grep PATH``) escaped every
    parser and lost the file.  The builder now keeps the call as op 'other' with an issue."""
    from replay.ingest.parsers import builder

    def broken(tool: str, args: Any) -> Any:
        raise IndexError("list index out of range")

    monkeypatch.setattr(builder, "classify", broken)
    issues: list[Issue] = []
    b = builder.RunBuilder(builder.Source(path="p", rel="p", data=b"", sha256="0" * 64), 0, "t",
                           issues)
    b.message("assistant")
    b.tool_call("c1", "Bash", {"command": "env | grep PATH"})
    msgs = b.build().messages
    assert (msgs["kind"], msgs["op"], msgs["tool"]) == (["tool_call"], ["other"], ["Bash"])
    assert len(issues) == 1 and "not classified" in issues[0].reason


def test_env_pipe_command_keeps_the_file(workdir: Path) -> None:
    """End to end: a transcript running ``env | grep PATH`` is parsed, not lost."""
    records = [
        {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": "check PATH"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": "s",
         "message": {"id": "m", "role": "assistant", "model": "x", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash",
              "input": {"command": "env | grep PATH"}}]}},
        {"type": "user", "uuid": "v", "parentUuid": "a", "sessionId": "s",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t1", "content": "PATH=/bin"}]}}]
    path = workdir / "env.jsonl"
    path.write_bytes(b"".join(dump_line(r) + b"\n" for r in records))
    parsed = parse_file(path)
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    assert parsed.tables.runs["n_tool_results"][0].as_py() == 1
