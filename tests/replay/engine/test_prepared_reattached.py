"""A compaction's re-attached messages (``ContextEvent.preserved_msgs`` before it) are part of
what the replay sends after the recorded summary (``replay.engine.prepared``): the recorded
summary's counts and text take them, the stream keeps them where they were.  Before, the engine
read no ``preserved_msgs``: a replay that applied a recorded compaction sent the summary alone.

On the Gemini CLI fixture whose checkpoint keeps a call and its result (the hand-made
2026-08-21 session, see tests/fixtures/gemini_cli/SOURCES.md); the texts and counts expected
are read from the store's message rows, apart from the engine."""

from __future__ import annotations

from pathlib import Path

from replay.corpus import open_corpus
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "gemini_cli" / "session-2026-08-21T13-02-0a9b8c7d.jsonl"


def test_the_kept_messages_join_the_recorded_summary(tmp_path: Path) -> None:
    corpus = open_corpus([FIXTURE], cache_dir=tmp_path / "ds")
    rid = corpus.run_ids[0]  # the session (the rewound branch is the second run)
    [event] = [e for e in corpus.events(rid).to_pylist() if e["kind"] == "compaction"]
    kept = [p for p in event["preserved_msgs"] if p < event["msg"]]
    assert kept  # the checkpoint kept a call and its result, before the compaction
    msgs, _ = corpus.run_tables(rid)
    rows = msgs.to_pylist()
    summary = [r for r in rows if r["msg"] == event["summary_msg"]]
    kept_rows = [r for r in rows if r["msg"] in kept]
    run = corpus.prepared(rid)
    assert run.harness_summary_tokens[0]["o200k_base"] == sum(
        r["tokens_o200k"] for r in summary + kept_rows)
    assert run.harness_summary_text[0] == "\n".join(
        [r["text"] for r in summary] + [r["text"] for r in kept_rows if r["text"]])
    # the kept messages stay in the stream, where the requests before the compaction saw them
    assert {run.msg[b] for b in range(run.n_blocks)} >= set(kept)
