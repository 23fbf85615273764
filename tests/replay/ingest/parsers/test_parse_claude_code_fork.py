"""A forked Claude Code session (``--fork-session``) starts with copies of its parent's records,
each marked ``forkedFrom``: context of the fork, but the parent's model calls.  Across the two
files every API response counts once (checked against the distinct ``message.id`` written
here), and the fork is linked to its parent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay.ingest.batch import ingest
from replay.ingest.store import read_store

PARENT = "7f000000-0000-4000-8000-00000000000a"
FORK = "7f000000-0000-4000-8000-00000000000b"


def _rec(kind: str, uuid: str, parent: str | None, sid: str, text: str) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": sid,
                           "isSidechain": False, "version": "2.1.170",
                           "timestamp": "2026-10-01T10:00:00.000Z"}
    if kind == "user":
        rec["message"] = {"role": "user", "content": text}
    else:
        rec["message"] = {"id": f"msg_{uuid}", "role": "assistant", "model": "claude-opus-4-5",
                          "content": [{"type": "text", "text": text}],
                          "usage": {"input_tokens": 100, "output_tokens": 7}}
    return rec


def _write(path: Path, recs: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_a_fork_counts_its_own_requests_and_links_its_parent(tmp_path: Path) -> None:
    parent = [_rec("user", "u1", None, PARENT, "plan it"),
              _rec("assistant", "a1", "u1", PARENT, "plan"),
              _rec("user", "u2", "a1", PARENT, "go"), _rec("assistant", "a2", "u2", PARENT, "went")]
    fork = [dict(r, sessionId=FORK, forkedFrom={"sessionId": PARENT, "messageUuid": r["uuid"]})
            for r in parent]
    fork += [_rec("user", "u3", "a2", FORK, "try another way"),
             _rec("assistant", "a3", "u3", FORK, "tried")]
    proj = tmp_path / "proj"
    proj.mkdir()
    _write(proj / f"{PARENT}.jsonl", parent)
    _write(proj / f"{FORK}.jsonl", fork)
    report = ingest([proj], tmp_path / "ds")
    assert not report.failed and not report.issues
    runs = {r["source"]: r for r in read_store(tmp_path / "ds").runs.to_pylist()}
    mine, theirs = runs[f"{FORK}.jsonl"], runs[f"{PARENT}.jsonl"]
    distinct = {r["message"]["id"] for r in parent + fork if r["type"] == "assistant"}
    assert mine["n_requests"] + theirs["n_requests"] == len(distinct) == 3
    assert mine["n_requests"] == 1 and mine["n_messages"] == len(fork)  # all of it is context
    assert mine["parent_run_id"] == theirs["run_id"]
    assert mine["recorded_input_tokens"] == 100


def test_a_crafted_fork_parent_name_stays_in_the_folder_and_costs_nothing(tmp_path: Path) -> None:
    """``forkedFrom.sessionId`` comes from the file: a name with a separator, a leading dot or a
    NUL names no file (was a ValueError from ``stat`` on the NUL: the whole file lost)."""
    (tmp_path / "outside.jsonl").write_text("")
    proj = tmp_path / "proj"
    proj.mkdir()
    for n, bad in enumerate(("../outside", "a\x00b", ".hidden", "x/y")):
        rec = _rec("user", "u1", None, FORK, "go")
        reply = _rec("assistant", "a1", "u1", FORK, "ok")
        for r in (rec, reply):
            r["forkedFrom"] = {"sessionId": bad, "messageUuid": r["uuid"]}
        _write(proj / f"f{n}.jsonl", [rec, reply, _rec("user", "u2", "a1", FORK, "more"),
                                      _rec("assistant", "a2", "u2", FORK, "done")])
    report = ingest([proj], tmp_path / "ds")
    assert not report.failed and not report.issues, [str(i) for i in report.issues]
    runs = read_store(tmp_path / "ds").runs.to_pylist()
    assert len(runs) == 4 and all(r["parent_run_id"] == "" and r["n_requests"] == 1
                                  for r in runs)
