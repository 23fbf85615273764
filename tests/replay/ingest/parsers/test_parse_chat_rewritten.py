"""Chat request logs (shape (d)) whose harness rewrote its history between requests: a window of
the latest messages, a summary in place of old turns, a trimmed tool output.  Every request is
read into one stream of every message, each rewrite a compaction event
(``replay.ingest.parsers.chat_rewrites``).  The inputs are built here; what the tests expect is
counted from how they were built, not from the parser."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.tokens import count_one
from tests.replay.ingest.parsers.parsed_rows import one_run_rows, table_rows

OVERHEAD = 200
"""What a recorded input holds beyond its messages' text (instructions, tool schemas)."""
SYSTEM = {"role": "system", "content": "You are a helper."}


def _usage(prompt: list[dict[str, Any]], answer: dict[str, Any]) -> dict[str, int]:
    """Usage consistent with the text: o200k tokens of each message's content plus a fixed
    overhead."""
    return {"prompt_tokens": OVERHEAD + sum(count_one(_text(m)) for m in prompt),
            "completion_tokens": count_one(_text(answer))}


def _text(m: dict[str, Any]) -> str:
    return str(m.get("content") or "")


def _line(prompt: list[dict[str, Any]], answer: dict[str, Any]) -> dict[str, Any]:
    return {"messages": prompt, "response": {"model": "gpt-4o", "choices": [
        {"message": answer}], "usage": _usage(prompt, answer)}}


def _write(tmp_path: Path, name: str, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _windowed(n: int = 30, window: int = 6) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """The brief's repro: each request sends the system message and the latest ``window``
    messages.  Also each prompt as indices into the full history (0: system)."""
    history: list[dict[str, Any]] = [SYSTEM]
    lines, held = [], []
    for i in range(n):
        history.append({"role": "user", "content": f"question {i} " + "word " * 50})
        ids = [0, *range(1, len(history))[-window:]]
        answer = {"role": "assistant", "content": f"answer {i} " + "x " * 30}
        lines.append(_line([history[k] for k in ids], answer))
        held.append(ids)
        history.append(answer)
    return lines, held


def _rewrites(held: list[list[int]]) -> list[int]:
    """The requests whose prompt no longer holds a message of the previous context (the
    previous prompt plus its response, history index ``max + 1``)."""
    out = []
    for k in range(1, len(held)):
        before = {*held[k - 1], max(held[k - 1]) + 1}
        if not before <= set(held[k]):
            out.append(k)
    return out


def _events(parsed: ParsedFile) -> list[dict[str, Any]]:
    return table_rows(parsed, "events")


def _by_text(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Message index by its first block's text (every text here is unique)."""
    out: dict[str, int] = {}
    for r in rows:
        if r["block"] == 0:
            assert r["text"] not in out
            out[r["text"]] = r["msg"]
    return out


def test_a_windowed_log_reads_every_request_and_each_rewrite(tmp_path: Path) -> None:
    """Acceptance 1: all 30 requests read, 61 messages each once, a compaction per rewrite.
    The window drops a message from request 3 on (the 7th message held: u0 a0 u1 a1 u2 a2
    plus u3), so 27 rewrites, not 24 (the brief's count took 6 questions, not 6 messages)."""
    lines, held = _windowed()
    parsed = parse_file(_write(tmp_path, "win.jsonl", lines), tmp_path)
    run, rows, reqs = one_run_rows(parsed)
    assert not [i for i in parsed.issues if "dropped" in i.reason], parsed.issues
    assert parsed.coverage["request"] == {"modelled": 30}
    assert run["n_messages"] == 61 == 1 + 2 * 30
    history = [SYSTEM] + [m for x in lines for m in (x["messages"][-1],
                                                    x["response"]["choices"][0]["message"])]
    at = _by_text(rows)
    assert sorted(at) == sorted(_text(m) for m in history)
    assert [r["output_msg"] for r in reqs] == [at[f"answer {i} " + "x " * 30] for i in range(30)]
    assert [r["input_tokens"] for r in reqs] == [x["response"]["usage"]["prompt_tokens"]
                                                 for x in lines]
    rewrites = _rewrites(held)
    assert rewrites == list(range(3, 30))
    events = _events(parsed)
    assert run["n_harness_compactions"] == len(events) == len(rewrites)
    for e, k in zip(events, rewrites):
        new = held[k][-1]  # the request's own question: the first message after the rewrite
        assert (e["kind"], e["request"], e["trigger"], e["summary_msg"]) == (
            "compaction", k, "", None)
        assert e["msg"] == at[_text(history[new])]
        assert e["preserved_msgs"] == sorted(at[_text(history[h])] for h in held[k][:-1])


def test_inspect_counts_the_recorded_context_of_each_rewrite(tmp_path: Path) -> None:
    """What ingest models of the windowed log is what the harness sent: the counted context of
    every request is its recorded input less the fixed overhead (``replay inspect``'s gap)."""
    lines, _ = _windowed()
    path = _write(tmp_path, "win.jsonl", lines)
    res = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert res.exit_code == 0, res.output
    (run,) = json.loads(res.stdout)["runs"]
    assert [r["gap_tokens"] for r in run["requests"]] == [OVERHEAD] * 30


def _summarised(n: int = 30, at: int = 10) -> tuple[list[dict[str, Any]], dict[str, Any],
                                                     list[dict[str, Any]]]:
    """A summarising harness: at request ``at`` the prompt is [system, a summary, the last 2
    messages, the new question]; the history goes on from there.  Also the summary and the
    messages it replaced."""
    msgs: list[dict[str, Any]] = [SYSTEM]
    summary = {"role": "user", "content": "Summary of the conversation so far: " + "gist " * 40}
    lines: list[dict[str, Any]] = []
    replaced: list[dict[str, Any]] = []
    for i in range(n):
        msgs.append({"role": "user", "content": f"question {i} " + "word " * 50})
        if i == at:
            replaced = msgs[1:-3]
            msgs[:] = [SYSTEM, summary, *msgs[-3:]]
        answer = {"role": "assistant", "content": f"answer {i} " + "x " * 30}
        lines.append(_line(list(msgs), answer))
        msgs.append(answer)
    return lines, summary, replaced


def test_a_summarising_harness_is_one_compaction_with_its_summary(tmp_path: Path) -> None:
    """Acceptance 3: one compaction at request 10, whose summary is the summary message (a
    harness summary row), whose preserved messages are the system message and the last 2."""
    lines, summary, _ = _summarised()
    parsed = parse_file(_write(tmp_path, "sum.jsonl", lines), tmp_path)
    run, rows, reqs = one_run_rows(parsed)
    assert len(reqs) == 30 and run["n_messages"] == 62  # system, 30 + 30, the summary
    (e,) = _events(parsed)
    at = _by_text(rows)
    assert (e["kind"], e["request"], e["summary_msg"], e["msg"]) == (
        "compaction", 10, at[_text(summary)], at[_text(summary)])
    assert e["preserved_msgs"] == [0, at["question 9 " + "word " * 50],
                                   at["answer 9 " + "x " * 30]]
    (srow,) = [r for r in rows if r["msg"] == e["summary_msg"]]
    assert (srow["kind"], srow["role"], srow["is_harness_summary"]) == ("summary", "user", True)
    assert run["n_harness_compactions"] == 1
    assert parsed.coverage["message/user (summary)"] == {"modelled": 1}


def _replay_none(path: Path, tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``replay run -p none --json``'s row of the log's run and its per-request trace."""
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", "-q", str(path), "-p", "none", "--cache-dir",
                                   str(tmp_path / "cache"), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)
    trace = sorted(pq.read_table(out / "traces" / "requests.parquet").to_pylist(),
                   key=lambda r: r["request"])
    return row, trace


def test_the_truth_anchoring_sees_a_summarising_rewrite(tmp_path: Path) -> None:
    """Acceptance 2, for a harness that wrote a summary: the usage is anchored (not set aside
    as at odds with the text), each request before the compaction is replayed at its recorded
    input, and after it ``none`` (no context management) sends what the harness dropped less
    its summary more, the same at every request: the anchor measured the recorded context as
    the summary, the messages kept and what followed.  (``none`` does not apply a recorded
    compaction the log does not call manual, so its tokens_sent is not the recorded total.)"""
    lines, summary, replaced = _summarised()
    row, trace = _replay_none(_write(tmp_path, "sum.jsonl", lines), tmp_path)
    assert row["truth_source"] == "anchored"
    recorded = [x["response"]["usage"]["prompt_tokens"] for x in lines]
    assert [r["recorded_input_tokens"] for r in trace] == recorded
    dropped = sum(count_one(_text(m)) for m in replaced) - count_one(_text(summary))
    assert [r["truth_tokens"] - rec for r, rec in zip(trace, recorded)] == \
        [0] * 10 + [dropped] * 20
    assert row["tokens_sent"] == sum(recorded) + 20 * dropped


def test_the_truth_anchoring_sees_a_windowed_rewrite(tmp_path: Path) -> None:
    """Acceptance 2, for a window of the latest messages (no summary: a bare compaction, whose
    boundary the engine takes at its first message): the usage is anchored, not set aside as
    at odds with the text (it was, while the engine saw a compaction only by its summary row),
    and ``none``, which keeps every message, sends at each request its recorded input plus
    the messages the window had dropped by then, counted here from how the file was built."""
    lines, held = _windowed()
    history = [SYSTEM]
    for x in lines:
        history += [x["messages"][-1], x["response"]["choices"][0]["message"]]
    row, trace = _replay_none(_write(tmp_path, "win.jsonl", lines), tmp_path)
    assert row["truth_source"].startswith("anchored")
    recorded = [x["response"]["usage"]["prompt_tokens"] for x in lines]
    assert [r["recorded_input_tokens"] for r in trace] == recorded
    dropped = [sum(count_one(_text(history[j])) for j in range(max(ids)) if j not in ids)
               for ids in held]
    assert [r["truth_tokens"] - rec for r, rec in zip(trace, recorded)] == dropped
    assert dropped[:3] == [0, 0, 0] and dropped[-1] > 0


def test_a_trimmed_tool_output_is_a_rewrite_that_replaced_it(tmp_path: Path) -> None:
    """An old tool output sent shorter (the same tool_call_id): the new text is a new message
    (a result of the same call), the old one stays where it was before the compaction, which
    has no summary and preserves every other message."""
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})}}]}
    full = {"role": "tool", "tool_call_id": "c1", "content": "file\n" * 200}
    trimmed = {"role": "tool", "tool_call_id": "c1", "content": "[trimmed]"}
    ask = {"role": "user", "content": "list the files"}
    seen = {"role": "assistant", "content": "many files"}
    more = {"role": "user", "content": "and now?"}
    lines = [_line([SYSTEM, ask], call), _line([SYSTEM, ask, call, full], seen),
             _line([SYSTEM, ask, call, trimmed, seen, more], {"role": "assistant",
                                                             "content": "done"})]
    parsed = parse_file(_write(tmp_path, "trim.jsonl", lines), tmp_path)
    run, rows, reqs = one_run_rows(parsed)
    assert not parsed.issues, parsed.issues
    results = [(r["msg"], r["call_id"], r["text"], r["tool"]) for r in rows
               if r["kind"] == "tool_result"]
    assert results == [(3, "c1", "file\n" * 200, "bash"), (5, "c1", "[trimmed]", "bash")]
    assert [r["output_msg"] for r in reqs] == [2, 4, 7]
    (e,) = _events(parsed)
    assert (e["msg"], e["request"], e["summary_msg"], e["preserved_msgs"]) == (
        5, 2, None, [0, 1, 2, 4])
    assert run["n_harness_compactions"] == 1 and run["n_orphan_results"] == 0


def test_messages_repeated_verbatim_pair_with_the_ones_kept(tmp_path: Path) -> None:
    """A window over a history whose every question and every answer is the same text: each
    request's question is new (61 messages), and a rewrite preserves the latest messages
    (those the window kept), not the first ones with the same text."""
    history: list[dict[str, Any]] = [SYSTEM]
    lines, held = [], []
    for _ in range(30):
        history.append({"role": "user", "content": "continue"})
        ids = [0, *range(1, len(history))[-6:]]
        answer = {"role": "assistant", "content": "ok"}
        lines.append(_line([history[k] for k in ids], answer))
        held.append(ids)
        history.append(answer)
    parsed = parse_file(_write(tmp_path, "same.jsonl", lines), tmp_path)
    run, _, reqs = one_run_rows(parsed)
    assert run["n_messages"] == 61
    assert [r["output_msg"] for r in reqs] == list(range(2, 61, 2))  # stream = history
    rewrites = _rewrites(held)
    events = _events(parsed)
    assert [e["request"] for e in events] == rewrites
    assert [e["preserved_msgs"] for e in events] == [held[k][:-1] for k in rewrites]


def test_a_log_whose_history_never_changes_takes_the_transcript_path(tmp_path: Path) -> None:
    """Lines of one growing history, in any order: read as before, from the longest prompt, no
    compaction."""
    msgs: list[dict[str, Any]] = [SYSTEM]
    lines = []
    for i in range(5):
        msgs.append({"role": "user", "content": f"q{i}"})
        answer = {"role": "assistant", "content": f"a{i}"}
        lines.append(_line(list(msgs), answer))
        msgs.append(answer)
    shuffled = [lines[k] for k in (3, 0, 4, 1, 2)]
    parsed = parse_file(_write(tmp_path, "grow.jsonl", shuffled), tmp_path)
    run, _, reqs = one_run_rows(parsed)
    assert run["n_messages"] == 11 and run["n_harness_compactions"] == 0
    assert [r["output_msg"] for r in reqs] == [8, 2, 10, 4, 6]
    assert not _events(parsed) and not parsed.issues


def _pathological(kind: str, n: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    pool = [{"role": rng.choice(["user", "assistant"]), "content": f"p{j} " + "w " * 20}
            for j in range(300)]
    lines = []
    for i in range(n):
        if kind == "disjoint":  # each prompt shares nothing with the previous
            prompt = [{"role": "user", "content": f"m{i}-{j} " + "w " * 20} for j in range(21)]
        else:  # random messages of one pool in random order
            prompt = rng.sample(pool, 40)
        lines.append({"messages": prompt, "response": {"choices": [{"message": {
            "role": "assistant", "content": f"r{i}"}}], "usage": {"prompt_tokens": 10}}})
    return lines


@pytest.mark.parametrize("kind", ["disjoint", "random"])
def test_a_pathological_log_is_read_in_linear_time(tmp_path: Path, kind: str) -> None:
    """Acceptance 5: 5,000 requests whose prompts share nothing with the previous, or hold one
    pool's messages in random order, parse in a few seconds (1.5-5 s measured on the
    development machine, token counting left out) without a crash; the stream of the random
    log holds each pool message once at most, with the responses."""
    path = _write(tmp_path, f"{kind}.jsonl", _pathological(kind, 5000))
    t = time.perf_counter()
    parsed = parse_file(path, tmp_path, tokenizers=())
    took = time.perf_counter() - t
    run, _, reqs = one_run_rows(parsed)
    assert len(reqs) == 5000 and run["n_harness_compactions"] == 4999
    assert run["n_messages"] == (5000 * 22 if kind == "disjoint" else 300 + 5000)
    assert took < 30, took  # (a generous bound for a loaded machine: quadratic took minutes)
