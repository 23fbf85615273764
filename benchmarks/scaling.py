"""How ingest and the need rules grow with the shapes that made them quadratic once.

    python benchmarks/scaling.py [--size 1.0] [--repeat 1] [--only NAME,...]

Each shape is a crafted log whose size is set by a count ``N`` (inline subagent records,
sessions, rollbacks, turns reusing one id, rewinds, clearing moments, unclosed fences, requests
re-reading the same files).  For each, it prints the CPU time of a ``jobs=1`` ingest of
the log at ``N`` and at ``2N`` (best of ``--repeat``, this process; the tokenizer loaded before), and
their ratio: about 2 for work that grows as the log does, about 4 for work that grows with its
square.  The two ``needs:`` shapes time ``replay.engine.needs.run_needs`` of the ingested run
(the need rules' pass over a long run) instead of the ingest.

Every shape was quadratic before the change that names it in the listing below (3ce642f, the
start of the session that wrote this: ratios 3.1-5.4; docs/performance.md).  ``--size`` scales
every ``N``.  Not a test: nothing is asserted but that each ingest stored a run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from replay.corpus import open_corpus
from replay.engine.needs import run_needs
from replay.ingest.batch import ingest
from replay.ingest.tokens import warm

Files = dict[str, str]
"""File name -> its text: a log of one shape."""
TS = "2026-02-10T21:11:52.438Z"


def _lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _cc(kind: str, uuid: str, parent: str | None, content: Any, *, sid: str = "s1",
        **more: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": f"m-{uuid}", "model": "claude-sonnet-4",
                    "usage": {"input_tokens": 3000 + len(uuid), "output_tokens": 5}}
    return {"parentUuid": parent, "sessionId": sid, "type": kind, "uuid": uuid, "timestamp": TS,
            "version": "2.1.38", "message": message, **more}


def _cc_read(i: int, parent: str | None, tool: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    """A response calling ``tool`` and its result (records ``a{i}``, ``r{i}``)."""
    call = {"type": "tool_use", "id": f"t{i}", "name": tool, "input": args}
    result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": "line of the file\n" * 3}
    return [_cc("assistant", f"a{i}", parent, [{"type": "text", "text": f"Now {tool}"}, call]),
            _cc("user", f"r{i}", f"a{i}", [result])]


def cc_sidechain(n: int) -> Files:
    """A transcript of before the subagents/ folder with one inline subagent of ``n`` records."""
    recs = [_cc("user", "m1", None, "main", isSidechain=False),
            _cc("assistant", "m2", "m1", [{"type": "text", "text": "ok"}], isSidechain=False)]
    for i in range(n):
        recs.append(_cc("user" if i % 2 == 0 else "assistant", f"s{i}", f"s{i - 1}" if i else None,
                        f"side {i}" if i % 2 == 0 else [{"type": "text", "text": f"reply {i}"}],
                        isSidechain=True, agentId="ag1"))
    return {"sidechain.jsonl": _lines(recs)}


def cc_sessions(n: int) -> Files:
    """``n`` one-prompt sessions in one file, 4 MB or more from 8,500 on (then written a run at
    a time: entry_file.EntryWriter; a run costs ~0.9 ms so, against ~0.15 ms in a smaller file
    whose runs are tokenised together)."""
    return {"sessions.jsonl": _lines([r for k in range(n) for r in (
        _cc("user", f"a{k}", None, f"q{k}", sid=f"sess-{k:06d}"),
        _cc("assistant", f"b{k}", f"a{k}", [{"type": "text", "text": "ok"}], sid=f"sess-{k:06d}"))])}


def _codex(turns: int, *, rollback: bool = False, encrypted: str = "") -> Files:
    sid = "019c8a4c-ed82-79a1-aa28-7738fc5ab61a"
    recs: list[dict[str, Any]] = []

    def add(kind: str, payload: dict[str, Any]) -> None:
        recs.append({"timestamp": TS, "type": kind, "payload": payload})

    def msg(role: str, text: str) -> dict[str, Any]:
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}

    usage = {"input_tokens": 1000, "cached_input_tokens": 0, "output_tokens": 5}
    add("session_meta", {"id": sid, "cli_version": "0.104.0", "base_instructions": {"text": "You are Codex."}})
    for k in range(turns):
        add("response_item", msg("user", f"task {k}"))
        add("response_item", {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": f"thinking {k}"}],
                              "encrypted_content": encrypted or f"gAAAA{k}" + "x" * 100})
        add("response_item", {"type": "function_call", "name": "shell", "call_id": f"c{k}",
                              "arguments": json.dumps({"command": ["ls", str(k)]})})
        add("response_item", {"type": "function_call_output", "call_id": f"c{k}", "output": "ok"})
        add("response_item", msg("assistant", f"done {k}"))
        add("event_msg", {"type": "token_count", "info": {"last_token_usage": usage,
                                                          "total_token_usage": usage}})
        if rollback and k % 2:
            add("event_msg", {"type": "thread_rolled_back", "num_turns": 1})
    return {f"rollout-2026-02-23T12-40-23-{sid}.jsonl": _lines(recs)}


def codex_rollbacks(n: int) -> Files:
    """A Codex rollout whose every second turn is rolled back (codex_rollback)."""
    return _codex(2 * n, rollback=True)


def codex_same_id(n: int) -> Files:
    """A Codex rollout whose reasoning items all carry one encrypted_content (codex_file.unique)."""
    return _codex(n, encrypted="gAAAA" + "y" * 100)


def chat_same_id(n: int) -> Files:
    """A chat log whose every turn calls ``call_0`` (chat's repeats)."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    for k in range(n):
        call = {"id": "call_0", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"cmd": f"ls {k}"})}}
        msgs += [{"role": "assistant", "content": f"step {k}", "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": "call_0", "content": f"out {k}"}]
    return {"chat.json": json.dumps({"model": "gpt-4o", "messages": msgs})}


def gemini_rewinds(n: int) -> Files:
    """A Gemini CLI session whose every second turn is rewound (gemini_cli)."""
    recs: list[dict[str, Any]] = [{"sessionId": "3f2b9c1e", "projectHash": "9b1f" * 16}]
    for k in range(2 * n):
        recs += [{"id": f"u-{k}", "timestamp": TS, "type": "user", "content": [{"text": f"q {k}"}]},
                 {"id": f"g-{k}", "timestamp": TS, "type": "gemini", "content": f"a {k}",
                  "model": "gemini-2.5-pro", "tokens": {"input": 4000 + k, "output": 8}}]
        if k % 2:
            recs.append({"$rewindTo": f"u-{k}"})
    return {"session-2026-08-20T09-14-3f2b9c1e.jsonl": _lines(recs)}


def opencode_cleared(n: int) -> Files:
    """An OpenCode export whose every turn's tool output was cleared at its own moment."""
    t0, msgs = 1755000000000, []
    for k in range(n):
        tool = {"id": f"p{k}", "type": "tool", "callID": f"toolu_{k}", "tool": "grep",
                "state": {"status": "completed", "input": {"pattern": f"p{k}"}, "output": "x",
                          "time": {"start": 1, "end": 2, "compacted": t0 + (k + 1) * 1000 + 500}}}
        msgs += [{"info": {"id": f"msg_u{k:08d}", "role": "user", "time": {"created": t0 + k * 1000}},
                  "parts": [{"id": f"q{k}", "type": "text", "text": f"do {k}"}]},
                 {"info": {"id": f"msg_a{k:08d}", "role": "assistant", "modelID": "claude-sonnet-4-5",
                           "time": {"created": t0 + k * 1000 + 1},
                           "tokens": {"input": 8, "output": 5, "cache": {"read": 100, "write": 0}}},
                  "parts": [tool]}]
    return {"s.export.json": json.dumps({"info": {"id": "ses_1", "version": "1.2.27"},
                                         "messages": msgs})}


def mini_unclosed(n: int) -> Files:
    """A mini-swe-agent reply of ``n`` inline action fences never closed."""
    msgs = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "fix"},
            {"role": "assistant", "content": "THOUGHT: " + "try ```bash\nls " * n},
            {"role": "user", "content": "Please always provide EXACTLY ONE action"}]
    return {"x__y-1.traj.json": json.dumps({"info": {"mini_version": "1.15.0"}, "messages": msgs,
                                            "trajectory_format": "mini-swe-agent-1"})}


def needs_rereads(n: int) -> Files:
    """A Claude Code run of ``n`` requests reading 50 files in turn (needs' refetches)."""
    recs, prev = [_cc("user", "r-1", None, "go")], "r-1"
    for i in range(n):
        recs += _cc_read(i, prev, "Read", {"file_path": f"/src/f{i % 50}.py"})
        prev = f"r{i}"
    return {"rereads.jsonl": _lines(recs)}


def needs_edits(n: int) -> Files:
    """The same, each read followed by an edit of the file (needs' needs)."""
    recs, prev = [_cc("user", "r-1", None, "go")], "r-1"
    for i in range(0, n, 2):
        path = f"/src/f{(i // 2) % 50}.py"
        recs += _cc_read(i, prev, "Read", {"file_path": path})
        recs += _cc_read(i + 1, f"r{i}", "Edit", {"file_path": path, "old_string": "a",
                                                  "new_string": "b"})
        prev = f"r{i + 1}"
    return {"edits.jsonl": _lines(recs)}


SHAPES: dict[str, tuple[Callable[[int], Files], int, str]] = {
    "claude_code: inline subagent": (cc_sidechain, 5_000, "f1fdbf9"),
    "claude_code: sessions": (cc_sessions, 10_000, "19845bd"),
    "codex: rollbacks": (codex_rollbacks, 1_000, "10e445e"),
    "codex: one encrypted_content": (codex_same_id, 4_000, "38f49ff"),
    "chat: one call id": (chat_same_id, 4_000, "38f49ff"),
    "gemini_cli: rewinds": (gemini_rewinds, 1_000, "db33808"),
    "opencode: clearing moments": (opencode_cleared, 4_000, "afb8487"),
    "mini_swe_agent: unclosed fences": (mini_unclosed, 20_000, "80f8e8e"),
    "needs: re-reads": (needs_rereads, 4_000, "1369a8f"),
    "needs: reads and edits": (needs_edits, 4_000, "19924cc"),
}
"""Shape -> (its log of a count, the count at ``--size 1``, the commit that made it linear)."""


def _cpu(shape: Callable[[int], Files], n: int, work: Path, needs: bool, repeat: int) -> float:
    """CPU seconds of ingesting the shape's log of ``n`` (or of ``run_needs`` of its run),
    best of ``repeat``."""
    logs = work / f"logs-{n}"
    logs.mkdir()
    for name, text in shape(n).items():
        (logs / name).write_text(text)
    best = float("inf")
    for k in range(repeat):
        store = work / f"store-{n}-{k}"
        t = time.process_time()
        report = ingest([logs], store, jobs=1)
        spent = time.process_time() - t
        assert report.n_runs, f"{logs}: no run stored"
        if needs:
            corpus = open_corpus([store])
            run = corpus.prepared(corpus.replayable()[0])
            t = time.process_time()
            run_needs(run)
            spent = time.process_time() - t
        best = min(best, spent)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=1.0, help="scale every count")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of each (best is kept)")
    parser.add_argument("--only", default="", help="shapes to run, comma-separated names")
    args = parser.parse_args()
    chosen = {s for s in args.only.split(",") if s}
    if unknown := chosen - set(SHAPES):
        parser.error(f"no shape {sorted(unknown)}; one of {sorted(SHAPES)}")
    warm("o200k_base")
    print(f"{'shape':<34}{'N':>8}{'CPU at N':>11}{'at 2N':>9}{'ratio':>7}  made linear by")
    with tempfile.TemporaryDirectory(prefix="scaling-") as tmp:
        for name, (shape, count, commit) in SHAPES.items():
            if chosen and name not in chosen:
                continue
            n = max(2, round(count * args.size))
            work = Path(tmp) / name.replace(" ", "_").replace(":", "")
            work.mkdir()
            needs = name.startswith("needs:")
            repeat = max(1, args.repeat)
            one = _cpu(shape, n, work, needs, repeat)
            two = _cpu(shape, 2 * n, work, needs, repeat)
            print(f"{name:<34}{n:>8,}{one:>10.2f}s{two:>8.2f}s{two / one:>7.2f}  {commit}")
    print("ratio ~2: grows as the log does; ~4: with its square")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
