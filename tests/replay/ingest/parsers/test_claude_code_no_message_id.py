"""Claude Code: assistant records without ``message.id`` are grouped into their responses as the
ids would group them: every real sample and fixture with its ids taken out parses to the same
runs, messages, requests and events, said in one issue counted from the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.ingest.parse_file import parse_file

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = Path("/work/shared/logs-sample/claude-code")
FILES = sorted(
    [p for p in SAMPLES.glob("*.jsonl")] if SAMPLES.is_dir() else []) + sorted(
    (ROOT / "fixtures" / "claude_code").glob("*.jsonl"))
_ID_FREE = ("run_id", "sha256", "source", "parent_run_id")


def _without_ids(path: Path, out: Path) -> tuple[int, int]:
    """``path`` with ``message.id`` taken out of every assistant record, written to ``out``;
    (assistant records, distinct ids they had)."""
    lines, records, ids = [], 0, set()
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(raw)
        except ValueError:
            lines.append(raw)
            continue
        if isinstance(rec, dict) and rec.get("type") == "assistant" and \
                isinstance(rec.get("message"), dict):
            records += 1
            ids.add(rec["message"].pop("id", None))
        lines.append(json.dumps(rec))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return records, len(ids)


def _tables(parsed: object) -> dict[str, list[dict[str, object]]]:
    tables = parsed.tables  # type: ignore[attr-defined]
    assert tables is not None
    return {t: [{k: v for k, v in row.items() if k not in _ID_FREE}
                for row in getattr(tables, t).to_pylist()]
            for t in ("runs", "messages", "requests", "events")}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_records_without_ids_read_as_their_responses(path: Path, tmp_path: Path) -> None:
    stripped = tmp_path / path.name
    records, responses = _without_ids(path, stripped)
    whole, bare = parse_file(path), parse_file(stripped)
    assert _tables(bare) == _tables(whole)
    assert bare.coverage == whole.coverage
    said = [i for i in bare.issues if "no message.id" in i.reason]
    assert len(said) == 1 and said[0].reason.startswith(
        f"{records} assistant record(s) have no message.id (first at this line): read as "
        f"{responses} response(s), {records - responses} record(s) joined")
    assert [(i.line, i.reason) for i in bare.issues if i not in said] == \
        [(i.line, i.reason) for i in whole.issues]


def test_the_audit_file(tmp_path: Path) -> None:
    if not (SAMPLES / "tool_heavy.jsonl").is_file():
        pytest.skip("the shared samples are not here")
    stripped = tmp_path / "cc-no-msg-id.jsonl"
    _without_ids(SAMPLES / "tool_heavy.jsonl", stripped)
    parsed = parse_file(stripped)
    runs = _tables(parsed)["runs"]
    assert [(r["agent"], r["n_requests"]) for r in runs] == [("", 4)]  # not 2 runs, 8 requests


def test_a_new_call_after_a_tool_result_is_its_own_response(tmp_path: Path) -> None:
    """Two calls, each a tool_use then its result: the second sends a longer prompt."""
    def rec(uuid: str, parent: str | None, kind: str, content: object,
            usage: dict[str, int] | None = None) -> str:
        msg: dict[str, object] = {"role": kind, "content": content}
        if usage is not None:
            msg.update(model="claude-x", usage=usage)
        return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
                           "timestamp": "2026-01-01T00:00:00Z", "message": msg})
    use = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
           "output_tokens": 5}
    lines = [rec("u1", None, "user", "go"),
             rec("a1", "u1", "assistant", [{"type": "text", "text": "let me look"}], use),
             rec("a2", "a1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Read",
                                             "input": {}}], use),
             rec("r1", "a2", "user", [{"type": "tool_result", "tool_use_id": "t1",
                                       "content": "x"}]),
             rec("a3", "r1", "assistant", [{"type": "tool_use", "id": "t2", "name": "Read",
                                             "input": {}}], {**use, "input_tokens": 30}),
             rec("r2", "a3", "user", [{"type": "tool_result", "tool_use_id": "t2",
                                       "content": "y"}]),
             rec("a4", "r2", "assistant", [{"type": "text", "text": "done"}],
                 {**use, "input_tokens": 50})]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    parsed = parse_file(path)
    requests = _tables(parsed)["requests"]
    assert [r["input_tokens"] for r in requests] == [10, 30, 50]
    assert [i.reason for i in parsed.issues] == [
        ("4 assistant record(s) have no message.id (first at this line): read as 3 response(s), "
        "1 record(s) joined to the response before them (the same chain step: its child, with "
        "the same prompt usage)")]
