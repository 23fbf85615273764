"""A problem met by several runs of one file is said once, with how many times it was met
(``replay.ingest.parsers.source.said_once``): a Claude Code session's abandoned branches each
repeat the prefix they share, and an orphaned tool result there was an issue a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay.ingest.batch import ingest
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers.source import Issue, said_once


def _rec(kind: str, uuid: str, parent: str | None, content: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": f"m-{uuid}", "model": "claude-sonnet-4",
                    "usage": {"input_tokens": 10, "output_tokens": 5}}
    return {"parentUuid": parent, "sessionId": "s", "type": kind, "uuid": uuid,
            "timestamp": "2026-02-10T21:11:52.438Z", "message": message}


def _branched(path: Path, n_branches: int) -> int:
    """A session whose shared prefix holds a tool result with no call (its line returned),
    then ``n_branches`` prompts rewound to the same point, each answered: the last branch is
    the session's path, the others abandoned branches (a run each)."""
    recs = [_rec("user", "u1", None, "hello"),
            _rec("assistant", "a1", "u1", [{"type": "tool_use", "id": "t1", "name": "Read",
                                            "input": {"file_path": "/src/a.py"}}]),
            _rec("user", "r1", "a1", [{"type": "tool_result", "tool_use_id": "t1",
                                       "content": "print(1)"}]),
            _rec("user", "o1", "r1", [{"type": "tool_result", "tool_use_id": "gone",
                                       "content": "stray output"}])]
    for k in range(n_branches):
        recs += [_rec("user", f"p{k}", "o1", f"try {k}"),
                 _rec("assistant", f"b{k}", f"p{k}", [{"type": "text", "text": f"answer {k}"}])]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return 4


def test_said_once_keeps_the_first_place_and_counts() -> None:
    a, b, c = Issue("f", 3, "x"), Issue("f", 0, "y"), Issue("f", 5, "x")
    assert said_once((a, b, c)) == (a, b, c)
    assert said_once((a, b, a, c, a, b)) == (Issue("f", 3, "x (met 3 times in this file)"),
                                             Issue("f", 0, "y (met 2 times in this file)"), c)


def test_an_orphan_the_branches_share_is_one_issue(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "session.jsonl"
    line = _branched(log, 4)
    parsed = parse_file(log, tokenizers=("o200k_base",))
    assert parsed.tables is not None and parsed.tables.runs.num_rows == 4  # path + 3 abandoned
    orphans = [i for i in parsed.issues if "'gone'" in i.reason]
    assert len(orphans) == 1
    assert orphans[0].line == line
    assert orphans[0].reason.endswith("(met 4 times in this file)")
    report = ingest([tmp_path / "logs"], tmp_path / "store", jobs=1)
    assert [i.reason for i in report.issues] == [i.reason for i in parsed.issues]
