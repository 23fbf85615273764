"""Synthetic Claude Code transcripts: deterministic long coding-agent runs for ``logs/``.

The project cannot ship real recorded sessions, so it generates its corpus.
``synth_run(scenario)`` returns one session as Claude Code JSONL (what
``replay.ingest.parsers.claude_code`` reads): the human prompt, then per request an
assistant response streamed as one record per content block sharing
``message.id`` (thinking / text / tool_use; only the last record carries the
final ``output_tokens``), one ``user`` record per tool result with
``toolUseResult`` and ``sourceToolAssistantUUID``, some ``progress``,
``file-history-snapshot`` and ``system`` records, human follow-ups, and, when
asked, a recorded auto-compaction (``compact_boundary`` + ``isCompactSummary``).
Tools act on a seeded fake repository (``replay.synth.repo``) through
``replay.synth.tools``; the assistant's and the human's text come from
``replay.synth.prose``.  The scenario's knobs place the cases of DESIGN.md
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
import random
import uuid
from datetime import datetime, timedelta
from typing import Any

from replay.ingest.tokens import count_one
from replay.synth import prose
from replay.synth.repo import ADJS, NOUNS, VERBS, gerund
from replay.synth.scenario import KINDS, Scenario
from replay.synth.tools import TODO_DONE, Call, Workspace, lean

_CACHE_TTL_MS = 5 * 60 * 1000
_FRAMING_TOKENS = 3
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


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


def synth_run(s: Scenario) -> str:
    """The whole Claude Code JSONL transcript of scenario ``s``, deterministic in ``s``.

    Args:
        s: the scenario; ``s.seed`` seeds the only random generator used.

    Returns:
        The JSONL text, one record per line, ending with a newline.
    """
    return _Session(s).run()
