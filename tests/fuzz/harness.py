"""What the fuzz tests share: small real seeds, byte and JSON mutations, and the checks.

Seeds are built in memory from the real samples (``tests/conftest.SAMPLES``): the first lines
or steps of one sample per layout, every string over ``_MAX_STR`` characters cut, written back
in the format's own layout (compact JSON Lines, or an indented document).  Nothing is copied
into the repository.  ``tests/fuzz/test_fuzz_parsers.py`` (hypothesis) and
``tests/fuzz/atheris_parsers.py`` (coverage-guided) both drive ``check``.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.parsers import PARSERS
from replay.ingest.parsers.builder import Issue, RunDraft, Source
from replay.ingest.redaction import declared
from replay.ingest.schema import KINDS, OPS, ROLES

T = TypeVar("T")

JSONL_FORMATS = ("claude_code", "codex")
"""Formats that are always JSON Lines (chat is JSON Lines only in some of its shapes)."""
_MAX_STR = 300
KNOWN_TABLE_FAILURES: tuple[str, ...] = ()
"""Reasons ``parse_file`` may still lose a parsed file for, by a known bug outside the parsers
(pinned in ``test_fuzz_parsers.py``: ``test_lone_surrogate_outside_the_text``).  Remove an
entry when its bug is fixed."""
SENTINEL = "\x00ctxreplay-fuzz\x00"
"""Stands in for a replaced JSON value while its container is serialised."""


# --------------------------------------------------------------------------- seeds

@dataclass(frozen=True, slots=True, repr=False)
class Seed:
    """One small real input: its format, the file name it is written under, its bytes."""

    name: str
    fmt: str
    filename: str
    data: bytes
    jsonl: bool
    """One JSON object per line (every line is a record) rather than one JSON document."""

    def __repr__(self) -> str:
        return f"<seed {self.name}: {self.fmt}, {len(self.data):,} bytes>"


class Seeds(dict[str, Seed]):
    """The seeds by name (a short repr: hypothesis prints the test's arguments)."""

    def __repr__(self) -> str:
        return f"<{len(self)} seeds: {', '.join(self)}>"


def _trim(value: Any, keep: tuple[str, ...] = ()) -> Any:
    if isinstance(value, str):
        return value if len(value) <= _MAX_STR else value[:_MAX_STR]
    if isinstance(value, list):
        return [_trim(v, keep) for v in value]
    if isinstance(value, dict):
        return {k: v if k in keep else _trim(v, keep) for k, v in value.items()}
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(text: str) -> bytes:
    """JSON text as UTF-8, lone surrogates (from parsed ``\\ud800`` escapes) escaped again."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def dump_line(obj: Any) -> bytes:
    """One JSON Lines record as the seeds write it."""
    return _utf8(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def dump_doc(obj: Any) -> bytes:
    """One JSON document as the seeds write it."""
    return _utf8(json.dumps(obj, ensure_ascii=False, indent=2)) + b"\n"


def _jsonl(records: list[Any]) -> bytes:
    return b"".join(dump_line(r) + b"\n" for r in records)


def _lines(path: Path, n: int) -> list[Any]:
    out = []
    with path.open("rb") as f:
        for raw in f:
            if len(out) == n:
                break
            out.append(_trim(json.loads(raw)))
    return out


def _openai_chat(mini: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A mini-swe-agent chat as an OpenAI tool-calling transcript (bash blocks → tool calls)."""
    block = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
    out: list[dict[str, Any]] = []
    pending = None
    for i, m in enumerate(mini):
        content = m.get("content") if isinstance(m.get("content"), str) else ""
        if m["role"] == "assistant":
            found = block.findall(content)
            msg: dict[str, Any] = {"role": "assistant", "content": block.sub("", content).strip()}
            resp = (m.get("extra") or {}).get("response") or {}
            if isinstance(resp.get("usage"), dict):
                msg["usage"] = resp["usage"]
            if isinstance(resp.get("model"), str):
                msg["model"] = resp["model"]
            pending = f"call_{i}" if len(found) == 1 else None
            if pending:
                msg["tool_calls"] = [{"id": pending, "type": "function", "function": {
                    "name": "bash", "arguments": json.dumps({"command": found[0]})}}]
            out.append(msg)
        elif m["role"] == "user" and pending:
            out.append({"role": "tool", "tool_call_id": pending, "content": content})
            pending = None
        else:
            out.append({"role": m["role"], "content": content})
    return out


def _request_log(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    plain = [{k: v for k, v in m.items() if k not in ("usage", "model")} for m in chat]
    return [{"messages": plain[:k], "response": {
        "id": f"resp-{k}", "model": m.get("model", ""), "created": 1763510154 + k,
        "choices": [{"index": 0, "message": plain[k]}], "usage": m.get("usage")}}
        for k, m in enumerate(chat) if m["role"] == "assistant"]


def build_seeds(samples: Path) -> Seeds:
    """Every seed, by name, built from the sample logs folder."""
    seeds: list[Seed] = []

    def add(name: str, fmt: str, filename: str, data: bytes, jsonl: bool) -> None:
        seeds.append(Seed(name, fmt, filename, data, jsonl))

    cc = samples / "claude-code"
    add("claude_short", "claude_code", "short.jsonl", _jsonl(_lines(cc / "short.jsonl", 15)), True)
    add("claude_tools", "claude_code", "tool_heavy.jsonl",
        _jsonl(_lines(cc / "tool_heavy.jsonl", 24)), True)
    cx = samples / "codex"
    small = next(cx.glob("rollout-2026-02-23T13-19-38-*.jsonl"))
    add("codex_small", "codex", small.name, _jsonl(_lines(small, 19)), True)
    modern = next(cx.glob("rollout-2025-11-17T15-30-28-*.jsonl"))
    add("codex_2025", "codex", modern.name, _jsonl(_lines(modern, 40)), True)
    add("codex_legacy", "codex", "rollout-legacy.jsonl",
        _jsonl(_lines(cx / "example-legacy-2025-09-10.jsonl", 30)), True)

    swe = json.loads((samples / "swe-agent" / "v1fc_gpt4__sweagenttestrepo-1c2844.traj")
                     .read_text(encoding="utf-8"))
    swe["trajectory"] = swe["trajectory"][:3]
    swe["history"] = swe["history"][:7]
    add("swe_fc", "swe_agent", "sweagenttestrepo.traj", dump_doc(_trim(swe, ("replay_config",))),
        False)
    v0 = json.loads((samples / "swe-agent" / "v0_gpt4__pydicom__pydicom-1458.traj")
                    .read_text(encoding="utf-8"))
    v0["trajectory"] = v0["trajectory"][:3]
    v0["history"] = v0["history"][:8]
    add("swe_v0", "swe_agent", "pydicom.traj", dump_doc(_trim(v0, ("replay_config",))), False)

    mini_path = samples / "mini-swe-agent" / "minirepo_test_github_issue.traj.json"
    mini = json.loads(mini_path.read_text(encoding="utf-8"))
    add("mini", "mini_swe_agent", mini_path.name, dump_doc(_trim(mini)), False)
    mini_v1 = json.loads((samples / "mini-swe-agent" / "django__django-11163.traj.json")
                         .read_text(encoding="utf-8"))
    mini_v1["messages"] = mini_v1["messages"][:7]
    add("mini_v1", "mini_swe_agent", "django__django-11163.traj.json", dump_doc(_trim(mini_v1)),
        False)

    oh = samples / "openhands"
    add("openhands_interactions", "openhands", "basic_interactions.json",
        dump_doc(_trim(json.loads((oh / "basic_interactions.json").read_text(encoding="utf-8")))),
        False)
    add("openhands_basic", "openhands", "basic.json",
        dump_doc(_trim(json.loads((oh / "basic.json").read_text(encoding="utf-8")))), False)

    chat = _trim(_openai_chat(mini))
    add("chat_object", "chat", "chat.json", dump_doc({"model": "gpt-x", "messages": chat}), False)
    add("chat_list", "chat", "chat-list.json", dump_doc(chat), False)
    add("chat_jsonl", "chat", "chat.jsonl", _jsonl(chat), True)
    add("chat_requests", "chat", "requests.jsonl", _jsonl(_request_log(chat[:9])), True)
    return Seeds((s.name, s) for s in seeds)


# --------------------------------------------------------------------------- mutations

class Mutated(bytes):
    """Mutated input bytes whose repr shows only where they differ from the seed."""

    seed: bytes = b""

    def __repr__(self) -> str:
        a, b = self.seed, bytes(self)
        i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        j = 0
        while j < min(len(a), len(b)) - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
            j += 1
        changed = b[i:len(b) - j]
        shown = changed if len(changed) <= 300 else changed[:150] + b"..." + changed[-150:]
        return (f"<{len(b):,} bytes; seed bytes {i:,}..{len(a) - j:,} (of {len(a):,}) "
                f"replaced by {len(changed):,} bytes {shown!r}; before: {b[max(0, i - 60):i]!r}>")


def mutated(seed: bytes, data: bytes) -> Mutated:
    out = Mutated(data)
    out.seed = seed
    return out


def split_lines(data: bytes) -> list[bytes]:
    """The lines of ``data`` without their newlines (a final newline ends the last line)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def join_lines(lines: list[bytes], data: bytes) -> bytes:
    """``lines`` joined, ending with a newline when ``data`` did."""
    return b"\n".join(lines) + (b"\n" if data.endswith(b"\n") else b"")


def json_object(raw: bytes) -> dict[str, Any] | None:
    """The line as a JSON object the way ``iter_records`` reads it, else None."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (path, value) inside a JSON value, the value itself first."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from nodes(v, (*path, i))


def replace_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``value`` with the node at ``path`` replaced (``path`` empty: ``new``)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: replace_at(v, rest, new) if k == head else v for k, v in value.items()}
    return [replace_at(v, rest, new) if i == head else v for i, v in enumerate(value)]


def delete_at(value: Any, path: tuple[Any, ...]) -> Any:
    """A copy of ``value`` without the dict key (or list item) at ``path`` (non-empty)."""
    head, rest = path[0], path[1:]
    if rest:
        if isinstance(value, dict):
            return {k: delete_at(v, rest) if k == head else v for k, v in value.items()}
        return [delete_at(v, rest) if i == head else v for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != head}
    return [v for i, v in enumerate(value) if i != head]


def serialise_with(doc: Any, path: tuple[Any, ...], replacement: bytes, jsonl: bool) -> bytes:
    """``doc`` serialised in the seed layout with the node at ``path`` written as raw bytes
    (for values too deep or too big to build as Python objects)."""
    dump = dump_line if jsonl else dump_doc
    text = dump(replace_at(doc, path, SENTINEL))
    token = dump_line(SENTINEL)
    assert text.count(token) == 1
    return text.replace(token, replacement)


def deep_list(inner: bytes, depth: int) -> bytes:
    """``inner`` wrapped in ``depth`` JSON lists."""
    return b"[" * depth + inner + b"]" * depth


# --------------------------------------------------------------------------- checks

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
        assert est == (found is not None)
        assert nc == (len(text) if found is None else len(found[0]) + found[2])
        assert nb == (len(text.encode("utf-8", "replace")) if found is None
                      else len(found[0].encode("utf-8", "replace")) + found[2])


def parse_direct(fmt: str, filename: str, data: bytes,
                 limit: float = 5.0) -> tuple[list[RunDraft], list[Issue]]:
    """The format's parser on ``data``: nothing may escape it; its output is checked."""
    src = Source(path=f"/fuzz/{filename}", rel=filename, data=data,
                 sha256=hashlib.sha256(data).hexdigest())
    issues: list[Issue] = []
    drafts = timed(lambda: PARSERS[fmt].parse(src, issues), time_limit(data, limit),
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
        if forced:
            # the same parse as the direct call, tokenised
            assert parsed.format == (fmt if data.strip() else "")
            if drafts and not any(known in i.reason for i in parsed.issues
                                  for known in KNOWN_TABLE_FAILURES):
                # the parser's runs fit the schema: no file lost after parsing
                assert parsed.tables is not None, [str(i) for i in parsed.issues]
                assert [r["n_blocks"] for r in parsed.tables.runs.to_pylist()] == \
                    [d.run["n_blocks"] for d in drafts]
    return drafts, issues


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
