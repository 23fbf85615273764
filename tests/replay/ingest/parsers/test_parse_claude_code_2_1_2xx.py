"""Claude Code 2.1.2xx additions on a real session: the client bookkeeping records of 2.1.218+
and rows re-appended with their uuid (a second ``/compact`` in one process). Built from the
real sample ae4a77f8 (the one with a manual /compact), so a file changed this way must read as
the real file did; counts are also checked against a plain walk of the JSON here."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from replay.ingest.parse_file import parse_file

SAMPLE = Path("/work/shared/logs-sample/claude-code") if Path(
    "/work/shared/logs-sample/claude-code").is_dir() else \
    Path(__file__).resolve().parents[5] / "shared" / "logs-sample" / "claude-code"
REAL = SAMPLE / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
NEW_TYPES = ("command_lifecycle", "tool_result_meta", "historical", "dev_intent",
             "turn_preempted", "usage_report", "pasted_content")


@pytest.mark.skipif(not REAL.is_file(), reason="needs ../shared/logs-sample")
@pytest.mark.parametrize("seed", range(4))
def test_new_record_types_and_reappended_rows_read_as_the_real_file(tmp_path: Path,
                                                                     seed: int) -> None:
    rng = random.Random(seed)
    lines = REAL.read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    # independent count: distinct message ids of assistant records
    n_requests = len({r["message"]["id"] for r in recs if r.get("type") == "assistant"
                      and r["message"].get("model") != "<synthetic>"})
    out: list[str] = []
    repeats = 0
    for k, line in enumerate(lines):
        out.append(line)
        if rng.random() < 0.2:
            t = rng.choice(NEW_TYPES)
            out.append(json.dumps({"type": t, "uuid": f"x-{k}", "sessionId": recs[0].get(
                "sessionId", ""), "timestamp": recs[k].get("timestamp", ""),
                "command_uuid": "c", "state": "started", "content": "pasted text"}))
    # the client re-appends a run of older rows after the end (claude-code#92089)
    start = rng.randrange(len(lines) // 2)
    for line in lines[start:start + 30]:
        if json.loads(line).get("uuid"):
            out.append(line)
            repeats += 1
    f = tmp_path / REAL.name
    f.write_text("\n".join(out) + "\n")
    before, after = parse_file(REAL, REAL.parent), parse_file(f, tmp_path)
    assert before.tables is not None and after.tables is not None
    for table in ("runs", "messages", "requests"):
        b = getattr(before.tables, table).drop_columns(
            [c for c in ("source", "sha256") if c in getattr(before.tables, table).column_names])
        a = getattr(after.tables, table).drop_columns(
            [c for c in ("source", "sha256") if c in getattr(after.tables, table).column_names])
        if table == "runs":  # the run id is the file's hash: compare every other field
            b, a = b.drop_columns(["run_id"]), a.drop_columns(["run_id"])
        else:
            b, a = b.drop_columns(["run_id"]), a.drop_columns(["run_id"])
        assert a.to_pylist() == b.to_pylist(), table
    assert after.tables.runs.to_pylist()[0]["n_requests"] == n_requests
    cov = after.coverage
    for t in NEW_TYPES:
        if t in cov:
            assert set(cov[t]) == {"skipped"}, (t, cov[t])
    dup = sum(v.get("skipped", 0) for k, v in cov.items() if k.endswith("(duplicate uuid)"))
    assert dup == repeats
    said = [i for i in after.issues if "repeat the uuid" in i.reason]
    assert len(said) == 1 and said[0].reason.startswith(f"{repeats} record(s)")
    assert len(after.issues) == len(before.issues) + 1
