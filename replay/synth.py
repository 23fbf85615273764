"""Synthetic Claude Code transcripts: deterministic long coding-agent runs for ``logs/``.

The project cannot ship real recorded sessions, so it generates its corpus.
``synth_run(scenario)`` returns one session as Claude Code JSONL (what
``replay.parsers.claude_code`` reads): the human prompt, then per request an
assistant response streamed as one record per content block sharing
``message.id`` (thinking / text / tool_use; only the last record carries the
final ``output_tokens``), one ``user`` record per tool result with
``toolUseResult`` and ``sourceToolAssistantUUID``, some ``progress``,
``file-history-snapshot`` and ``system`` records, human follow-ups, and, when
asked, a recorded auto-compaction (``compact_boundary`` + ``isCompactSummary``).
Tools act on a seeded fake repository (``replay.synth_repo``) through
``replay.synth_tools``; the assistant's and the human's text come from
``replay.synth_prose``.  The scenario's knobs place the cases of DESIGN.md
section 6: a re-read burst, one huge test output, large Write/Edit arguments,
long failing test outputs, a harness compaction.

Usage is what Claude Code records: the prompt is ``system_overhead_tokens``
plus every block in context, each counted once (o200k_base times
``claude_token_scale``, plus 3 framing tokens); it is split into a cache read
(the previous prompt, if sent at most 5 minutes earlier; otherwise the cached
system prefix), a cache write (the rest) and a 1-3 token uncached tail.

Determinism: one ``random.Random(seed)`` drives ids, uuids, texts and the clock
(``start_ts`` plus drawn seconds); the same scenario gives byte-identical text.

Not here: subagent (sidechain) files, images, the compaction request's own
file, the harness truncating long outputs, and any claim that the token counts
match a real Claude tokenizer beyond the scale factor.
"""

from __future__ import annotations

import base64
import json
import os
import random
import uuid
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from replay import synth_prose as prose
from replay.synth_repo import ADJS, NOUNS, VERBS, gerund
from replay.synth_tools import TODO_DONE, Call, Workspace, lean
from replay.tokens import count_one

REGENERATE_COMMAND = "replay synth --out logs/"
"""The command that regenerates the shipped corpus (quoted in ``logs/README.md``)."""
KINDS = ("read", "edit", "write", "test", "grep", "glob", "bash")
"""The action kinds; ``Scenario.p_<kind>`` are their weights."""
_CACHE_TTL_MS = 5 * 60 * 1000
_FRAMING_TOKENS = 3
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """One synthetic session: its size, its action mix and the failure cases it contains.

    ``p_read`` … ``p_bash`` are relative weights of the action kinds (each in [0, 1]);
    the other ``p_`` fields are probabilities.  Request indices count from 0.
    """

    name: str
    seed: int
    n_requests: int
    task_text: str
    model: str = "claude-sonnet-4-5-20250929"
    start_ts: str = "2026-01-12T09:00:00.000Z"
    n_files: int = 40
    file_lines_min: int = 60
    file_lines_max: int = 300
    p_read: float = 0.35
    p_edit: float = 0.2
    p_write: float = 0.04
    p_test: float = 0.12
    p_grep: float = 0.12
    p_glob: float = 0.03
    p_bash: float = 0.08
    p_reread: float = 0.25
    """A read targets a file already read or written (else a new one, while any is left)."""
    p_partial_read: float = 0.2
    """A read of a file over 120 lines uses ``offset``/``limit``."""
    reread_burst_at_request: int | None = None
    """From here, ``reread_burst_reads`` requests in a row read one module (see below)."""
    reread_burst_reads: int = 0
    reread_burst_target: Literal["smallest", "largest"] = "smallest"
    """Which module the burst reads: the smallest (a cheap loop) or the largest (each copy is
    long enough for a trim tier to replace it)."""
    test_output_lines_min: int = 30
    test_output_lines_max: int = 150
    p_test_fail: float = 0.6
    """A test run fails (decreasing to 40 % of this by the end of the run)."""
    big_output_at_request: int | None = None
    """This request's only call is a verbose test run of about ``big_output_tokens``."""
    big_output_tokens: int = 14_000
    write_lines_min: int = 20
    """Write content lines; an Edit inserts a quarter to a third of this range."""
    write_lines_max: int = 120
    p_parallel: float = 0.12
    """A response makes 2-4 parallel calls."""
    p_thinking: float = 0.25
    p_intent: float = 0.55
    """A response with calls starts with a short text ("Let me read `x.py`.")."""
    p_error: float = 0.04
    """A read or an edit fails (missing file, string not found)."""
    todo_every_requests: int = 30
    """A TodoWrite at request 1 and every this many requests after (0: never)."""
    turn_every_requests: int = 80
    """Mean requests per human turn: a turn ends with a text-only answer (0: one turn)."""
    system_overhead_tokens: int = 17_800
    """System prompt and tool schemas: in every prompt, never in the log."""
    compact_at_tokens: int | None = None
    """The recorded harness compacts before a request when the previous prompt exceeded this."""
    claude_token_scale: float = 1.08
    lean_tool_results: bool = False
    """Record ``toolUseResult`` without its copies of file contents and outputs (the parsers read
    the message content, so only the file gets smaller; no random draw depends on it)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.startswith("p_") and not 0.0 <= v <= 1.0:
                raise ValueError(f"Scenario.{f.name}: {v} is not in [0, 1]")
        if self.n_requests < 1:
            raise ValueError(f"Scenario.n_requests: {self.n_requests} < 1")
        for lo, hi in (("file_lines_min", "file_lines_max"), ("write_lines_min", "write_lines_max"),
                       ("test_output_lines_min", "test_output_lines_max")):
            if not 1 <= getattr(self, lo) <= getattr(self, hi):
                raise ValueError(f"Scenario.{lo}/{hi}: need 1 <= min <= max")
        if sum(getattr(self, f"p_{k}") for k in KINDS) <= 0:
            raise ValueError("Scenario.p_read..p_bash: the action mix is all zero")
        if self.compact_at_tokens is not None \
                and self.compact_at_tokens <= self.system_overhead_tokens:
            raise ValueError("Scenario.compact_at_tokens: must exceed system_overhead_tokens")


class _Session:
    """One generation: records, clock, tokens in context, the workspace."""

    def __init__(self, s: Scenario) -> None:
        self.s, self.rng = s, random.Random(s.seed)
        self.lines: list[str] = []
        start = datetime.fromisoformat(s.start_ts)
        self.t_ms = int(start.timestamp() * 1000)
        self.ws = Workspace(self.rng, s, self._tok)
        rng = self.rng
        self.env = {"isSidechain": False, "userType": "external", "cwd": self.ws.repo.root,
                    "sessionId": self._uuid(), "version": "2.1.39", "gitBranch": self.ws.branch,
                    "slug": f"{rng.choice(ADJS)}-{gerund(rng.choice(VERBS))}-{rng.choice(NOUNS)}"}
        self.todo = prose.todo_items(rng)
        self.last: str | None = None
        self.ctx = 0
        """Tokens of every block in context (without the system overhead)."""
        self.prev_prompt: int | None = None
        self.prev_start = 0

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _id(self, prefix: str, n: int) -> str:
        return prefix + "".join(self.rng.choice(_B62) for _ in range(n))

    def _ts(self) -> str:
        t = datetime(1970, 1, 1) + timedelta(milliseconds=self.t_ms)
        return f"{t:%Y-%m-%dT%H:%M:%S}.{self.t_ms % 1000:03d}Z"

    def _wait(self, lo: float, hi: float) -> None:
        self.t_ms += int(self.rng.uniform(lo, hi) * 1000)

    def _tok(self, text: str) -> int:
        scaled = count_one(text, "o200k_base") * self.s.claude_token_scale
        return int(scaled + 0.5) + _FRAMING_TOKENS

    def _line(self, rec: dict[str, Any]) -> None:
        self.lines.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))

    def _emit(self, type_: str, body: dict[str, Any], *, parent: str | None = None,
              root: bool = False, chain: bool = True, tail: dict[str, Any] | None = None) -> str:
        u = self._uuid()
        head = {"parentUuid": None, "logicalParentUuid": self.last} if root \
            else {"parentUuid": parent or self.last}
        self._line({**head, **self.env, "type": type_, **body, "uuid": u, "timestamp": self._ts(),
                    **(tail or {})})
        if chain:
            self.last = u
        return u

    def _progress(self, data: dict[str, Any], tool_id: str) -> None:
        self._emit("progress", {"data": data, "parentToolUseID": tool_id, "toolUseID": tool_id},
                   chain=False)

    def run(self) -> str:
        """Generate the whole session; returns the JSONL text."""
        s, rng = self.s, self.rng
        self._progress({"type": "hook_progress", "hookEvent": "SessionStart",
                        "hookName": "SessionStart:startup",
                        "command": "~/.claude/hooks/start.sh"}, self._uuid())
        self._human(s.task_text)
        for r in range(s.n_requests):
            if s.compact_at_tokens and self.prev_prompt and self.prev_prompt > s.compact_at_tokens:
                self._compact()
            last = r == s.n_requests - 1
            end = last or (s.turn_every_requests > 0 and r > 2 and not self._special(r)
                           and rng.random() < 1 / s.turn_every_requests)
            self._respond([] if end else self._plan(r))
            if end:
                self._emit("system", {"subtype": "turn_duration", "isMeta": False,
                                      "durationMs": rng.randint(60_000, 3_600_000)})
                if not last:
                    self._wait(20, 900)
                    self._human(prose.follow_up(rng))
        return "\n".join(self.lines) + "\n"

    def _in_burst(self, r: int) -> bool:
        at = self.s.reread_burst_at_request
        return at is not None and at <= r < at + self.s.reread_burst_reads

    def _special(self, r: int) -> bool:
        return self._in_burst(r) or r == self.s.big_output_at_request

    def _plan(self, r: int) -> list[Call]:
        s, rng, ws = self.s, self.rng, self.ws
        if self._in_burst(r):
            return [ws.burst_read()]
        if r == s.big_output_at_request:
            return [ws.test(r, big=True)]
        if s.todo_every_requests and r % s.todo_every_requests == 1:
            new = prose.todos(self.todo, r / s.n_requests)
            old = (prose.todos(self.todo, (r - s.todo_every_requests) / s.n_requests)
                   if r > 1 else [])
            return [Call("TodoWrite", {"todos": new}, TODO_DONE,
                         {"oldTodos": old, "newTodos": new}, what="update the todo list")]
        k = rng.randint(2, 4) if rng.random() < s.p_parallel else 1
        kinds = rng.choices(KINDS, [getattr(s, f"p_{kind}") for kind in KINDS], k=k)
        return [ws.call(kind, r) for kind in kinds]

    def _human(self, text: str) -> None:
        u = self._uuid()
        self._line({"type": "file-history-snapshot", "messageId": u, "snapshot": {
            "messageId": u, "trackedFileBackups": {}, "timestamp": self._ts()},
            "isSnapshotUpdate": False})
        self._line({"parentUuid": self.last, **self.env, "type": "user",
                    "message": {"role": "user", "content": text}, "uuid": u,
                    "timestamp": self._ts(), "thinkingMetadata": {"maxThinkingTokens": 31999},
                    "todos": [], "permissionMode": "acceptEdits"})
        self.last = u
        self.ctx += self._tok(text)

    def _compact(self) -> None:
        pre = self.s.system_overhead_tokens + self.ctx
        self._wait(40, 120)
        text = prose.compact_summary(self.s.task_text, self.ws, prose.todos(self.todo, 0.5))
        self._emit("system", {"subtype": "compact_boundary", "content": "Conversation compacted",
                              "isMeta": False, "level": "info",
                              "compactMetadata": {"trigger": "auto", "preTokens": pre}}, root=True)
        self._emit("user", {"message": {"role": "user", "content": text},
                            "isVisibleInTranscriptOnly": True, "isCompactSummary": True})
        self.ctx, self.prev_prompt = self._tok(text), None

    def _usage(self, prompt: int, output: int) -> dict[str, Any]:
        warm = self.prev_prompt is not None and self.t_ms - self.prev_start <= _CACHE_TTL_MS
        read = self.prev_prompt if warm and self.prev_prompt else self.s.system_overhead_tokens
        tail = min(self.rng.randint(1, 3), prompt - read)
        write = prompt - read - tail
        return {"input_tokens": tail, "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read,
                "cache_creation": {"ephemeral_5m_input_tokens": write,
                                   "ephemeral_1h_input_tokens": 0},
                "output_tokens": output, "service_tier": "standard"}

    def _respond(self, calls: list[Call]) -> None:
        rng, s = self.rng, self.s
        self._wait(1.5, 6.0)
        blocks: list[dict[str, Any]] = []
        subject = calls[0].what if calls else "the remaining work"
        if rng.random() < s.p_thinking:
            sig = base64.b64encode(rng.getrandbits(512).to_bytes(64, "big")).decode()
            blocks.append({"type": "thinking", "thinking": prose.thinking(rng, subject),
                           "signature": sig})
        if not calls:
            text = prose.final_text(rng, self.ws.repo, self.ws.passed or rng.randint(120, 900))
            blocks.append({"type": "text", "text": text})
        elif rng.random() < s.p_intent:
            blocks.append({"type": "text", "text": prose.intent(rng, subject)})
        ids = [self._id("toolu_01", 22) for _ in calls]
        blocks += [{"type": "tool_use", "id": i, "name": c.name, "input": c.input}
                   for i, c in zip(ids, calls)]
        toks = [self._tok(b.get("text") or b.get("thinking")
                          or json.dumps(b.get("input"), ensure_ascii=False)) for b in blocks]
        prompt = s.system_overhead_tokens + self.ctx
        final = sum(toks) - _FRAMING_TOKENS * len(toks) + rng.randint(2, 20)
        partial = rng.randint(1, min(12, final - 1))
        usage = self._usage(prompt, final)
        self.prev_prompt, self.prev_start = prompt, self.t_ms
        msg_id, req_id = self._id("msg_01", 22), self._id("req_011C", 20)
        owner: dict[str, str] = {}
        speed = rng.uniform(40, 90)
        for k, b in enumerate(blocks):
            self.t_ms += int(1000 * (toks[k] - _FRAMING_TOKENS) / speed)
            msg = {"model": s.model, "id": msg_id, "type": "message", "role": "assistant",
                   "content": [b], "stop_reason": None, "stop_sequence": None,
                   "usage": dict(usage, output_tokens=final if k == len(blocks) - 1 else partial)}
            uid = self._emit("assistant", {"message": msg, "requestId": req_id})
            if b["type"] == "tool_use":
                owner[b["id"]] = uid
        self.ctx += sum(toks)
        for i, c in zip(ids, calls):
            self._result(i, c, owner[i])

    def _result(self, tool_id: str, c: Call, owner: str) -> None:
        if c.name == "Bash" and c.input["command"].startswith("python -m pytest"):
            for k in range(self.rng.randint(1, 2)):
                self._wait(2, 15)
                self._progress({"type": "bash_progress", "output": "collecting ...",
                                "fullOutput": "collecting ...", "elapsedTimeSeconds": 3 + 5 * k,
                                "totalLines": 1, "timeoutMs": 120000}, tool_id)
        self._wait(0.05, 1.5)
        block: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result",
                                 "content": c.content}
        if c.is_error or c.name == "Bash":
            block["is_error"] = c.is_error
        self._emit("user", {"message": {"role": "user", "content": [block]}}, parent=owner,
                   tail={"toolUseResult": lean(c.result) if self.s.lean_tool_results
                         else c.result, "sourceToolAssistantUUID": owner})
        self.ctx += self._tok(c.content)


CORPUS: tuple[Scenario, ...] = (
    Scenario(name="refactor-long", seed=101, n_requests=280, n_files=60, file_lines_min=20,
             file_lines_max=70, p_partial_read=0.6, task_text="Refactor the batch pipeline so "
             "every stage takes an explicit window and no stage copies the entry list; keep the "
             "public API and make the tests pass.", p_read=0.25, p_edit=0.24, p_write=0.02,
             p_test=0.07, p_grep=0.22, p_glob=0.05, p_bash=0.15, p_parallel=0.06,
             write_lines_min=10, write_lines_max=80, test_output_lines_min=15,
             test_output_lines_max=45),
    Scenario(name="test-fix-loop", seed=202, n_requests=240, n_files=40, file_lines_min=20,
             file_lines_max=90, p_partial_read=0.6, task_text="The test suite fails after the "
             "cache rewrite. Find out why and fix the code (not the tests).", p_read=0.2,
             p_edit=0.2, p_write=0.02, p_test=0.22, p_grep=0.16, p_glob=0.06, p_bash=0.14,
             p_parallel=0.05, write_lines_min=10, write_lines_max=60, test_output_lines_min=30,
             test_output_lines_max=75, p_test_fail=0.85, big_output_at_request=170,
             big_output_tokens=14_000, start_ts="2026-01-13T14:20:00.000Z"),
    Scenario(name="write-heavy", seed=303, n_requests=200, n_files=30, file_lines_min=20,
             file_lines_max=90, p_partial_read=0.6, task_text="Add a report module with one "
             "renderer per metric, plus tests for each renderer.", p_read=0.14, p_edit=0.3,
             p_write=0.1, p_test=0.1, p_grep=0.1, p_glob=0.06, p_bash=0.18, p_parallel=0.05,
             write_lines_min=50, write_lines_max=160, test_output_lines_min=20,
             test_output_lines_max=50, start_ts="2026-01-14T08:05:00.000Z"),
    Scenario(name="explore-rereads", seed=404, n_requests=190, n_files=70, file_lines_min=20,
             file_lines_max=100, task_text="Explain how a request flows from the session queue to "
             "the worker pool, then fix the off-by-one in the window accounting.", p_read=0.46,
             p_edit=0.06, p_write=0.0, p_test=0.04, p_grep=0.24, p_glob=0.08, p_bash=0.12,
             p_reread=0.6, p_partial_read=0.6, reread_burst_at_request=120, reread_burst_reads=55,
             write_lines_min=10, write_lines_max=40, test_output_lines_min=20,
             test_output_lines_max=50,
             start_ts="2026-01-15T10:45:00.000Z"),
    Scenario(name="compacting-session", seed=505, n_requests=180, n_files=55, file_lines_min=20,
             file_lines_max=120, p_partial_read=0.5, task_text="Port the ledger storage from JSON "
             "files to SQLite, with a migration for existing data and tests for the migration.",
             p_read=0.32, p_edit=0.24, p_write=0.05, p_test=0.12, p_grep=0.12, p_glob=0.04,
             p_bash=0.11, write_lines_min=20, write_lines_max=120, test_output_lines_min=30,
             test_output_lines_max=100, compact_at_tokens=100_000, model="claude-opus-4-6",
             start_ts="2026-01-16T16:30:00.000Z"),
)
"""The embedded default corpus for ``logs/`` (``write_corpus``): a long refactor, a test-fix
loop with one ~14k-token output, a Write/Edit-heavy session, an exploration with a 55-read
burst of one file, and a session whose recorded harness compacts."""


def synth_run(s: Scenario) -> str:
    """The whole Claude Code JSONL transcript of scenario ``s``, deterministic in ``s``.

    Args:
        s: the scenario; ``s.seed`` seeds the only random generator used.

    Returns:
        The JSONL text, one record per line, ending with a newline.
    """
    return _Session(s).run()


def write_corpus(out_dir: Path, scenarios: tuple[Scenario, ...] = CORPUS) -> list[Path]:
    """Write ``<out_dir>/<name>.jsonl`` per scenario and a README on how to regenerate them.

    Each file goes to a temporary name first and is then moved into place.

    Args:
        out_dir: the folder (created if missing).
        scenarios: what to write (default: the embedded ``CORPUS``).

    Returns:
        The JSONL paths written, in scenario order.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [_atomic_write(out_dir / f"{s.name}.jsonl", synth_run(s)) for s in scenarios]
    readme = ["# Recorded runs (synthetic)", "",
              ("These Claude Code transcripts are **generated**, not recorded: `replay.synth` "
               "writes them from seeded scenarios, deterministically (same code, byte-identical "
               "files). Do not edit them by hand; regenerate them with:"), "",
              f"    {REGENERATE_COMMAND}",
              "", "| file | requests | task |", "|---|---|---|",
              *(f"| `{s.name}.jsonl` | {s.n_requests} | {s.task_text} |" for s in scenarios)]
    _atomic_write(out_dir / "README.md", "\n".join(readme) + "\n")
    return written


def _atomic_write(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
