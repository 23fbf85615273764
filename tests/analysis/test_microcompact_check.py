"""The replay's time-based microcompact against recorded ``microcompact_boundary`` records
(#26 item 4): requests and cleared calls read from the hand-built run and the raw fixture, not
from the check's own code path."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from analysis.fidelity import fidelity, fidelity_totals
from analysis.fidelity_lines import totals_lines
from analysis.microcompact_check import check_microcompactions
from replay.corpus import open_corpus
from replay.engine.prepared import prepare
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source
from replay.ingest.run_tables import tokenize
from tests.conftest import REPO
from tests.replay.engine.tier_runs import lines

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
FIXTURE = REPO / "tests" / "fixtures" / "claude_code" / "handmade_2_1_attachments_microcompact.jsonl"


def _run_with_record(minutes: list[float], tools: list[str], idle_at: int, cleared: list[int]):  # type: ignore[no-untyped-def]
    b = RunBuilder(source=Source(path="<t>", rel="t", data=b"", sha256="0" * 64), index=0,
                   format="test", issues=[])
    b.message("user")
    b.text(lines("task", 3))
    for i, m in enumerate(minutes):
        if i == idle_at:  # the harness recorded its microcompaction before this request
            b.event("microcompaction", trigger="auto", call_ids=[f"c{k}" for k in cleared])
        b.message("assistant")
        b.tool_call(f"c{i}", tools[i], {"file_path": f"f{i}.py"})
        b.request(ts=(T0 + timedelta(minutes=m)).isoformat(), input_tokens=1000 + i)
        b.message("tool")
        b.tool_result(f"c{i}", lines(f"out {i}", 40))
    tables = tokenize([b.build()], ("o200k_base",))
    run = prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py(),
                  events=tables.events)
    return run, tables.events.to_pylist()


def test_a_recorded_idle_microcompaction_is_replayed_at_its_request() -> None:
    tools = ["Read", "Bash", "Task", "Grep", "Read", "Read", "Read", "Glob", "Read"]
    # results 0..7 are in context at request 8; compactable: all but 2 (Task); kept: the 5
    # newest compactable (3..7): cleared 0 and 1
    run, events = _run_with_record([0, 1, 2, 3, 4, 5, 6, 7, 70], tools, 8, [0, 1])
    check = check_microcompactions(run, events, None)
    assert check is not None
    assert check.recorded_at == (8,) and check.replayed_at == (8,) and check.matched == 1
    assert (check.ids_recorded, check.ids_cleared) == (2, 2)


def test_a_record_without_an_idle_gap_is_not_matched() -> None:
    tools = ["Read"] * 9
    run, events = _run_with_record([0, 1, 2, 3, 4, 5, 6, 7, 8], tools, 8, [0, 1, 2])
    check = check_microcompactions(run, events, None)
    assert check is not None and check.replayed_at == () and check.matched == 0
    assert (check.ids_recorded, check.ids_cleared) == (3, 0)


def test_fidelity_reports_the_fixture_s_microcompact_boundary(tmp_path: Path) -> None:
    # the raw file: one microcompact_boundary naming its compactedToolIds
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    bounds = [r for r in records if r.get("subtype") == "microcompact_boundary"]
    ids = {i for r in bounds for i in r["microcompactMetadata"]["compactedToolIds"]}
    corpus = open_corpus([FIXTURE], cache_dir=tmp_path / "c")
    rows = fidelity(corpus)
    checks = [r.microcompact for r in rows if r.microcompact is not None]
    assert len(checks) == 1 and len(checks[0].recorded_at) == len(bounds)
    assert checks[0].ids_recorded == len(ids)
    # the hand-made session has no idle hour: the replay clears nothing, and says so
    assert checks[0].replayed_at == () and checks[0].ids_cleared == 0
    totals = fidelity_totals(rows)
    assert (totals["microcompact_recorded"], totals["microcompact_ids_recorded"]) == (
        len(bounds), len(ids))
    assert any(line.startswith(f"microcompactions recorded (system/microcompact_boundary): "
                               f"{len(bounds)} in 1 run") for line in totals_lines(totals))
