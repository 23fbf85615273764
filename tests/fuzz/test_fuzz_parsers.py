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
reported at the copy's line or changes nothing.  A deterministic sweep
(``test_fuzz_sweep.py``) also replaces every node of every seed by a wrong-typed value and
deletes every key, one at a time.

Every input that once failed is pinned by a plain test in ``test_fuzz_pinned.py``, including
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
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replay.ingest.parse_file import parse_file
from tests.fuzz.harness import (
    EXAMPLES,
    JSONL_FORMATS,
    LIMIT,
    _identity,
    check,
    explain_difference,
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
from tests.fuzz.seeds import SEEDS_AT_IMPORT, Seed, dump_doc, dump_line

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
    # a lone surrogate in the chunk stays one: invalid UTF-8 bytes, hostile input too
    huge = json.dumps((chunk * (size // len(chunk) + 1))[:size],
                      ensure_ascii=False).encode("utf-8", "surrogatepass")
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
