"""What every fuzzed input must satisfy (``check``): each sniffer answers a bool, and the format's
parser and ``parse_file`` (format detected and forced) return well-formed issues and runs that
satisfy the schema invariants, in time.  ``tests/fuzz/test_fuzz_parsers.py`` (hypothesis) and
``tests/fuzz/atheris_parsers.py`` (coverage-guided) both drive ``check``, on the seeds of
``tests/fuzz/seeds.py`` mutated by ``tests/fuzz/mutations.py``.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from replay.ingest.input_files import Unreadable, as_utf8, not_text
from replay.ingest.parse_file import ParsedFile, parse_file, parse_source
from replay.ingest.parsers import PARSERS
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.redaction import declared
from replay.ingest.schema import KINDS, OPS, ROLES
from replay.ingest.token_parts import SPLIT_CHARS
from tests.fuzz.mutations import split_lines

T = TypeVar("T")

JSONL_FORMATS = ("claude_code", "codex")
"""Formats that are always JSON Lines (chat is JSON Lines only in some of its shapes)."""
KNOWN_TABLE_FAILURES: tuple[str, ...] = ()
"""Reasons ``parse_file`` may still lose a parsed file for, by a known bug outside the parsers
(pinned in ``test_fuzz_pinned.py``: ``test_lone_surrogate_outside_the_text``).  Remove an
entry when its bug is fixed."""

EXAMPLES = max(1, int(os.environ.get("CTXREPLAY_FUZZ_EXAMPLES", "25")))
LIMIT = float(os.environ.get("CTXREPLAY_FUZZ_SECONDS", "5"))
"""Seconds one parse of a small input may take (huge inputs get 1.5 s more per MiB)."""


class Hang(Exception):
    """Raised by the alarm when one call overruns its hard limit.  (``parse_file`` turns it into
    an issue like any exception; ``timed`` then fails on the time taken.)"""


@contextmanager
def hard_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with ``Hang`` after ``seconds`` (main thread, POSIX only)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def timed(fn: Callable[[], T], limit: float, what: str) -> T:
    """``fn()``, failing when it takes longer than ``limit`` seconds (a hang or a blow-up)."""
    start = time.monotonic()
    with hard_limit(limit * 3):
        out = fn()
    took = time.monotonic() - start
    assert took <= limit, f"{what} took {took:.1f} s (limit {limit:.1f} s)"
    return out


def time_limit(data: bytes, base: float) -> float:
    """Seconds one parse may take: ``base`` plus 1.5 s per MiB (tokenising a multi-MB string
    of one repeated letter costs about 1 µs a character)."""
    return base + 1.5 * len(data) / 2**20


def n_lines(data: bytes) -> int:
    return len(split_lines(data))


def check_issues(issues: Any, path: str, data: bytes, *, per_line: bool) -> None:
    """Each issue names ``path``, a line ≥ 0 (within the file for JSON Lines) and a reason."""
    assert isinstance(issues, (list, tuple))
    last = n_lines(data)
    for i in issues:
        assert isinstance(i, Issue), i
        assert i.path == path, i
        assert isinstance(i.line, int) and not isinstance(i.line, bool) and i.line >= 0, i
        assert isinstance(i.reason, str) and i.reason.strip(), i
        if per_line:
            assert i.line <= last, f"{i} is past the last line ({last})"
        str(i)


def check_run(run: dict[str, Any], msgs: dict[str, list[Any]], reqs: dict[str, list[Any]],
              events: dict[str, list[Any]] | None = None) -> None:
    """The schema invariants of one run's rows (columns as lists, in stored order)."""
    n = len(msgs["msg"])
    assert all(len(col) == n for col in msgs.values()), "message columns differ in length"
    assert run["n_blocks"] == n
    kinds = msgs["kind"]
    assert run["n_tool_calls"] == kinds.count("tool_call")
    assert run["n_tool_results"] == kinds.count("tool_result")
    # a harness compaction is a summary row, or a compaction event with no summary (a trim)
    unsummarised = sum(k == "compaction" and m is None for k, m in
                       zip((events or {}).get("kind", []), (events or {}).get("summary_msg", [])))
    assert run["n_harness_compactions"] == sum(map(bool, msgs["is_harness_summary"])) + unsummarised
    # messages and blocks: dense and ordered, one role per message
    prev_msg, prev_block, roles = -1, -1, {}
    for m, b, role in zip(msgs["msg"], msgs["block"], msgs["role"]):
        if m == prev_msg:
            assert b == prev_block + 1, f"block {b} after {prev_block} in message {m}"
            assert roles[m] == role, f"message {m} has roles {roles[m]} and {role}"
        else:
            assert m == prev_msg + 1, f"message {m} follows {prev_msg}: not dense"
            assert b == 0, f"message {m} starts at block {b}"
            roles[m] = role
        prev_msg, prev_block = m, b
    assert run["n_messages"] == prev_msg + 1, \
        f"n_messages {run['n_messages']} but messages 0..{prev_msg} have blocks"
    assert set(msgs["role"]) <= set(ROLES), set(msgs["role"])
    assert set(kinds) <= set(KINDS), set(kinds)
    assert set(msgs["op"]) <= set(OPS), set(msgs["op"])
    for col in ("text", "call_id", "tool", "path", "ts", "agent", "role", "kind"):
        assert all(isinstance(v, str) for v in msgs[col]), col
    # every tool_result is paired with an earlier call of the run, or counted as an orphan
    seen: set[str] = set()
    orphans = 0
    for kind, call_id in zip(kinds, msgs["call_id"]):
        if kind == "tool_call":
            if call_id:
                seen.add(call_id)
        elif kind == "tool_result" and call_id not in seen:
            orphans += 1
    assert run["n_orphan_results"] == orphans, (run["n_orphan_results"], orphans)
    # requests: dense, counted, each producing an existing assistant message (at most once)
    r = len(reqs["request"])
    assert all(len(col) == r for col in reqs.values()), "request columns differ in length"
    assert run["n_requests"] == r
    assert list(reqs["request"]) == list(range(r))
    for out in reqs["output_msg"]:
        assert roles.get(out) == "assistant", f"request output_msg {out} is {roles.get(out)!r}"
    dup = [m for m, c in Counter(reqs["output_msg"]).items() if c > 1]
    assert not dup, f"several requests produce message(s) {dup}"
    for col in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens",
                "reasoning_tokens"):
        assert all(v is None or isinstance(v, int) for v in reqs[col]), col
    for full, read, write in zip(reqs["input_tokens"], reqs["cache_read_tokens"],
                                 reqs["cache_write_tokens"]):  # parts of the full prompt
        assert full is None or (read or 0) + (write or 0) <= full, (full, read, write)
    recorded = [v for v in reqs["input_tokens"] if v is not None]
    assert run["recorded_input_tokens"] == (sum(recorded) if recorded else None)


def check_drafts(drafts: Any, fmt: str) -> None:
    assert isinstance(drafts, list)
    ids = set()
    for d in drafts:
        assert isinstance(d, RunDraft)
        assert d.run["format"] == fmt
        ids.add(d.run["run_id"])
        check_run(d.run, d.messages, d.requests, d.events)
    assert len(ids) == len(drafts)


def check_tables(parsed: ParsedFile) -> None:
    t = parsed.tables
    if t is None:
        # no run is either a problem said (issues) or a file that holds no conversation, said
        # with its reason, every record counted and none of them modelled
        assert parsed.issues or parsed.no_conversation, \
            "no tables and no issue: a file silently dropped"
        if not parsed.issues:
            assert all(set(f) == {"skipped"} for f in parsed.coverage.values()), parsed.coverage
        return
    runs = t.runs.to_pylist()
    assert runs, "tables with no run"
    msgs, reqs, evs = t.messages.to_pydict(), t.requests.to_pydict(), t.events.to_pydict()
    for run in runs:
        rid = run["run_id"]
        assert run["format"] == parsed.format
        mine = [i for i, v in enumerate(msgs["run_id"]) if v == rid]
        assert mine == list(range(mine[0], mine[0] + len(mine))) if mine else True
        check_run(run, {k: [v[i] for i in mine] for k, v in msgs.items() if k != "run_id"},
                  {k: [v[i] for i, x in enumerate(reqs["run_id"]) if x == rid]
                   for k, v in reqs.items() if k != "run_id"},
                  {k: [v[i] for i, x in enumerate(evs["run_id"]) if x == rid]
                   for k, v in evs.items() if k != "run_id"})
    for text, nb, nc, est in zip(msgs["text"], msgs["n_bytes"], msgs["n_chars"],
                                 msgs["tokens_estimated"]):
        found = declared(text)  # a redacted block: its characters are the declared ones
        # estimated: a redacted block, or a text longer than a part cut inside a piece
        # (``token_parts``: a run with no exact place to cut); never a text counted whole
        assert est == (found is not None) or (est and found is None and len(text) > SPLIT_CHARS)
        assert nc == (len(text) if found is None else len(found[0]) + found[2])
        assert nb == (len(text.encode("utf-8", "replace")) if found is None
                      else len(found[0].encode("utf-8", "replace")) + found[2])


def parse_direct(fmt: str, filename: str, data: bytes,
                 limit: float = 5.0) -> tuple[list[RunDraft], list[Issue]]:
    """The format's parser on ``data`` (as ``parse_file`` calls it: ``parse_source``, which
    gives a parse that met ``RecursionError`` room): nothing may escape it; its output is
    checked."""
    src = Source(path=f"/fuzz/{filename}", rel=filename, data=data,
                 sha256=hashlib.sha256(data).hexdigest())
    issues: list[Issue] = []
    drafts = timed(lambda: parse_source(fmt, src, issues)[0], time_limit(data, limit),
                   f"{fmt}.parse")
    check_issues(issues, src.path, data, per_line=fmt in JSONL_FORMATS)
    check_drafts(drafts, fmt)
    return drafts, issues


def check(fmt: str, filename: str, data: bytes, workdir: Path,
          limit: float = 5.0) -> tuple[list[RunDraft], list[Issue]]:
    """Everything one mutated input must satisfy: every sniffer answers a bool, the format's
    parser and ``parse_file`` (detected and forced format) return checked output in time."""
    head = data[:65536]
    for name, module in PARSERS.items():
        answer = timed(lambda m=module: m.sniff(filename, head), limit, f"{name}.sniff")
        assert isinstance(answer, bool), (name, answer)
    drafts, issues = parse_direct(fmt, filename, data, limit)
    path = workdir / filename
    path.write_bytes(data)
    for forced in (None, fmt):
        parsed = timed(lambda f=forced: parse_file(path, fmt=f), time_limit(data, limit),
                       f"parse_file(fmt={forced})")
        assert isinstance(parsed, ParsedFile)
        per_line = parsed.format in JSONL_FORMATS
        check_issues(list(parsed.issues), str(path), data, per_line=per_line)
        check_tables(parsed)
        if forced and not _read_as_is(data):  # (decoded from UTF-16/32, or refused)
            assert parsed.format in ("", fmt)
        elif forced:
            # the same parse as the direct call, tokenised
            assert parsed.format == (fmt if data.strip() else "")
            if drafts and not any(known in i.reason for i in parsed.issues
                                  for known in KNOWN_TABLE_FAILURES):
                # the parser's runs fit the schema: no file lost after parsing
                assert parsed.tables is not None, [str(i) for i in parsed.issues]
                assert [r["n_blocks"] for r in parsed.tables.runs.to_pylist()] == \
                    [d.run["n_blocks"] for d in drafts]
    return drafts, issues


def _read_as_is(data: bytes) -> bool:
    """``parse_file`` gives these bytes to the parser as they are: not text in UTF-16 or
    UTF-32 decoded first, nor refused as compressed or UTF-16 without its mark."""
    try:
        return as_utf8(data)[1] == "" and not not_text(data)
    except Unreadable:
        return False


def same_parse(a: list[RunDraft], b: list[RunDraft]) -> bool:
    """Two parses hold the same runs (ids and file hashes aside)."""
    if len(a) != len(b):
        return False
    skip = ("run_id", "sha256")
    return all({k: v for k, v in x.run.items() if k not in skip}
               == {k: v for k, v in y.run.items() if k not in skip}
               and x.messages == y.messages and x.requests == y.requests for x, y in zip(a, b))


def explain_difference(a: list[RunDraft], b: list[RunDraft]) -> str:
    """A short description of where two parses differ (for assertion messages)."""
    if len(a) != len(b):
        return f"{len(a)} runs vs {len(b)}"
    for x, y in zip(a, b):
        for k in x.run:
            if k not in ("run_id", "sha256") and x.run[k] != y.run.get(k):
                return f"run field {k}: {x.run[k]!r} vs {y.run.get(k)!r}"
        for table, (p, q) in (("messages", (x.messages, y.messages)),
                              ("requests", (x.requests, y.requests))):
            for col in p:
                if p[col] != q[col]:
                    i = next((i for i, (u, v) in enumerate(zip(p[col], q[col])) if u != v),
                             min(len(p[col]), len(q[col])))
                    return (f"{table}.{col} differs at row {i}: "
                            f"{p[col][i:i + 1]!r} vs {q[col][i:i + 1]!r}")
    return "no difference"


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


def _run_of(fmt: str, name: str, data: bytes) -> tuple[RunDraft, list[Issue]]:
    drafts, issues = parse_direct(fmt, name, data, LIMIT)
    assert len(drafts) == 1, [str(i) for i in issues]
    return drafts[0], issues
