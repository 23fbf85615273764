"""Re-reads after recorded compactions (analysis.reread_fidelity, analysis.fidelity): the files
predicted and fetched again on the real Claude Code samples, against a plain walk of the raw
JSONL written here, and the pooled figures against the counts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.fidelity import fidelity, fidelity_totals
from analysis.fidelity_lines import totals_lines
from analysis.reread_fidelity import compaction_rereads, pooled
from replay.engine.needs import NAIVE_RULES
from tests.analysis.raw_compactions import raw_rereads, raw_tokens

SESSIONS = ("258c7280-ae70-4798-800f-63464d01a85d.jsonl",
            "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")
def _run_id(corpus: Any, name: str) -> str:
    return next(r for r, s in zip(corpus.run_ids, corpus.runs["source"].to_pylist())
                if s.endswith("claude-code/" + name))


@pytest.mark.parametrize("name", SESSIONS)
def test_rereads_after_a_real_compaction_match_the_raw_file(samples, sample_corpus, name):  # type: ignore[no-untyped-def]
    raw = raw_rereads(samples / "claude-code" / name)
    assert raw["recorded"] and raw["rules"]  # the session exercises both
    run = sample_corpus.prepared(_run_id(sample_corpus, name))
    (got,) = compaction_rereads(run)
    (naive,) = compaction_rereads(run, rules=NAIVE_RULES)
    assert set(got.removed) == raw["removed"]
    assert set(got.recorded) == raw["recorded"] == set(naive.recorded)
    assert got.rereads_failed == len(raw["failed"]) == naive.rereads_failed
    assert set(got.predicted) == raw["rules"]
    assert set(naive.predicted) == raw["naive"]
    recorded, predicted = raw_tokens(run, samples / "claude-code" / name, raw)
    assert got.recorded_tokens == recorded
    assert got.predicted_tokens == predicted


def test_fidelity_rows_and_totals_pool_the_compactions(sample_corpus):  # type: ignore[no-untyped-def]
    ids = [_run_id(sample_corpus, n) for n in SESSIONS]
    rows = fidelity(sample_corpus, ids)
    per = [pooled(compaction_rereads(sample_corpus.prepared(r))) for r in ids]
    for row, p in zip(rows, per):
        assert row.rereads == p
        assert row.reread_recall == (p.hits / p.recorded if p.recorded else None)
        assert row.reread_precision == (p.hits / p.predicted if p.predicted else None)
        assert row.reread_tokens_error_frac == pytest.approx(
            (p.predicted_tokens - p.recorded_tokens) / p.recorded_tokens)
    t = fidelity_totals(rows)
    hits, rec, pred = (sum(p.hits for p in per), sum(p.recorded for p in per),
                       sum(p.predicted for p in per))
    assert (t["reread_hits"], t["reread_recorded"], t["reread_predicted"]) == (hits, rec, pred)
    assert t["reread_recall"] == hits / rec and t["reread_precision"] == hits / pred
    assert t["reread_compactions"] == 2 and t["reread_runs"] == 2
    assert any(line.startswith("re-reads after 2 recorded compactions in 2 runs")
               for line in totals_lines(t))


def test_the_fidelity_command_shows_the_reread_figures(samples, sample_corpus, tmp_path):  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from replay.cli import app

    log = samples / "claude-code" / SESSIONS[1]
    runner = CliRunner()
    got = runner.invoke(app, ["fidelity", str(log), "--json", "--cache-dir", str(tmp_path)])
    assert got.exit_code == 0, got.output
    (run,) = json.loads(got.stdout)["runs"]
    raw = raw_rereads(log)
    hits = len(raw["recorded"] & raw["rules"])
    assert run["reread_recall"] == hits / len(raw["recorded"])
    assert run["reread_precision"] == hits / len(raw["rules"])
    assert run["rereads"]["recorded"] == len(raw["recorded"])
    assert run["rereads_naive"]["predicted"] == len(raw["naive"])
    table = runner.invoke(app, ["fidelity", str(log), "--cache-dir", str(tmp_path)])
    assert table.exit_code == 0
    assert "re-reads after 1 recorded compaction in 1 run:" in table.output


def test_a_run_without_compaction_has_unknown_reread_figures(sample_corpus):  # type: ignore[no-untyped-def]
    rid = next(r for r, s in zip(sample_corpus.run_ids, sample_corpus.runs["source"].to_pylist())
               if s.endswith("tool_heavy.jsonl"))
    (row,) = fidelity(sample_corpus, [rid])
    assert row.rereads is None and row.reread_recall is None
    assert row.reread_precision is None and row.reread_tokens_error_frac is None
    t = fidelity_totals([row])
    assert t["reread_recall"] is None and t["reread_runs"] == 0
    assert any("recall unknown" in line for line in totals_lines(t) if "re-read" in line)


def _compacted_run(steps: list[tuple[str, int]], compact_at: int, hide_rereads: bool) -> Any:
    """A run of ``steps`` (tool, file number), compacted by the harness before step
    ``compact_at``; with ``hide_rereads`` every read after the compaction reads an unrelated
    file instead (the same shape, no re-read)."""
    from replay.engine.prepared import prepare
    from replay.ingest.parsers.builder import RunBuilder
    from replay.ingest.parsers.source import Source
    from replay.ingest.run_tables import tokenize

    b = RunBuilder(source=Source(path="<hyp>", rel="hyp", data=b"", sha256="0" * 64), index=0,
                   format="hyp", issues=[])
    b.message("user")
    b.text("task")
    for i, (tool, n) in enumerate(steps):
        if i == compact_at:
            b.message("user")
            b.summary("summary of the work so far")
        path = f"src/f{n}.py"
        if tool == "Read" and hide_rereads and i >= compact_at:
            path = "elsewhere/unrelated.txt"
        b.message("assistant")
        if tool == "say":
            b.text(f"now {path}")
        else:
            args = {"command": f"{'git add' if n % 2 else 'pytest'} {path}"} if tool == "Bash" \
                else {"file_path": path}
            b.tool_call(f"c{i}", tool, args)
        b.request()
        if tool != "say":
            b.message("tool")
            b.tool_result(f"c{i}", f"content of {path} " * 5)
    b.message("assistant")
    b.text("done")
    b.request()
    tables = tokenize([b.build()], ("o200k_base",))
    return prepare(tables.messages, tables.requests, tables.runs["run_id"][0].as_py())


_STEPS = st.lists(st.tuples(st.sampled_from(["Read", "Edit", "Write", "Bash", "Grep", "say"]),
                            st.integers(0, 3)), min_size=2, max_size=25)


@settings(max_examples=40, deadline=None)
@given(_STEPS, st.data())
def test_predictions_never_look_at_the_rereads(steps, data):  # type: ignore[no-untyped-def]
    """Predicted files are removed files, hits are bounded by both sides, and the prediction is
    the same when the run's re-reads after the compaction read something else instead."""
    at = data.draw(st.integers(1, len(steps) - 1))
    run, hidden = _compacted_run(steps, at, False), _compacted_run(steps, at, True)
    for rules in (NAIVE_RULES, None):
        got = compaction_rereads(run) if rules is None else compaction_rereads(run, rules=rules)
        alt = compaction_rereads(hidden) if rules is None else compaction_rereads(hidden,
                                                                                rules=rules)
        assert [c.predicted for c in got] == [c.predicted for c in alt]
        assert all(not c.recorded for c in alt)
        for c in got:
            assert set(c.predicted) <= set(c.removed) and set(c.recorded) <= set(c.removed)
            assert c.hits <= min(len(c.recorded), len(c.predicted))
            p = pooled([c])
            assert p.recall is None or 0 <= p.recall <= 1
            assert p.precision is None or 0 <= p.precision <= 1


def test_edits_not_applied_to_predicted_sizes_are_counted_and_said() -> None:
    from analysis.fidelity import fidelity_totals
    from analysis.reread_fidelity import CompactionRereads

    rows = [CompactionRereads(0, 1, 5, ("a",), ("a",), ("a",), 10, 12, edits_unapplied=2),
            CompactionRereads(1, 5, 9, ("b",), (), ("b",), 0, 7, edits_unapplied=1)]
    assert pooled(rows).edits_unapplied == 3
    totals = fidelity_totals([])
    assert totals["reread_edits_unapplied"] == 0
    assert not any("not applied" in line for line in totals_lines(totals))
    totals["reread_edits_unapplied"] = 3
    (line,) = [x for x in totals_lines(totals) if x.startswith("re-reads")]
    assert "3 edits of predicted files not applied to their sizes" in line


def test_a_branch_does_not_judge_the_compactions_it_inherits(tmp_path):  # type: ignore[no-untyped-def]
    """A rewound branch after a real compaction (a second prompt under the same parent, written
    earlier: the first was abandoned) carries the compaction in its history; its one request is
    not the agent's answer to the compaction, so the branch judges nothing, and the main run's
    figures are those of the file without the branch."""
    import gzip
    from pathlib import Path

    from replay.corpus import open_corpus

    gz = (Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "compactions"
          / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl.gz")
    text = gzip.decompress(gz.read_bytes()).decode()
    recs = [json.loads(line) for line in text.splitlines() if line]
    boundary = next(i for i, r in enumerate(recs) if r.get("subtype") == "compact_boundary")
    prompt = next(r for r in reversed(recs[boundary:]) if r.get("type") == "user"
                  and isinstance(r["message"]["content"], str))
    last = next(r for r in reversed(recs) if r.get("type") == "assistant")
    user = {**prompt, "uuid": "b1", "timestamp": "2026-02-11T22:54:24.000Z",  # before prompt
            "message": {"role": "user", "content": "do the other thing"}}
    answer = {**last, "uuid": "b2", "parentUuid": "b1", "requestId": "req_branch",
              "timestamp": "2026-02-11T22:54:25.000Z",
              "message": {**last["message"], "id": "msg_branch",
                          "content": [{"type": "text", "text": "ok"}]}}
    plain, branched = tmp_path / "plain", tmp_path / "branched"
    for folder, extra in ((plain, []), (branched, [user, answer])):
        folder.mkdir()
        (folder / gz.name.removesuffix(".gz")).write_text(
            text + "".join(json.dumps(r) + "\n" for r in extra))
    got, branch = {}, ""
    for folder in (plain, branched):
        corpus = open_corpus([folder], cache_dir=tmp_path / f"{folder.name}-ds")
        got[folder.name] = {rid: compaction_rereads(corpus.prepared(rid))
                            for rid in corpus.run_ids if corpus.prepared(rid).n_requests}
        branch = branch or next((rid for rid, parent in zip(
            corpus.run_ids, corpus.runs["parent_run_id"].to_pylist()) if parent), "")
    (main,) = got["plain"].values()
    assert len(got["branched"]) == 2 and branch in got["branched"]  # the main run, the branch
    assert corpus.prepared(branch).n_requests == 1
    assert corpus.prepared(branch).harness_boundary  # it does carry the compaction
    assert got["branched"][branch] == []
    (same,) = [v for rid, v in got["branched"].items() if rid != branch]
    assert same == main and main  # the main run still judges its compaction


def test_predicted_sizes_that_are_estimates_are_counted_and_said() -> None:
    """A file known only by a part is sized as that part (a lower bound), and a file the agent
    read in part after losing it as that part (``replay.engine.refetch``): both counted per
    compaction, pooled, and said on the totals' re-read line."""
    from analysis.fidelity import fidelity_totals
    from tests.built_runs import COMPACT, built_run

    numbered = "".join(f"{i:6d}→line {i}\n" for i in range(1, 41))
    edit = {"old_string": "line 3", "new_string": "line three"}
    steps = [
        ("ra", "Read", {"file_path": "a.py"}, numbered),
        ("rb", "Read", {"file_path": "b.py", "offset": 1, "limit": 5}, numbered[:80]),
        COMPACT,  # the harness compacts: a.py and b.py removed
        ("eb", "Edit", {"file_path": "b.py", **edit}, "ok"),  # b.py needed: known by a part
        ("ra2", "Read", {"file_path": "a.py", "offset": 3, "limit": 4}, numbered[40:100]),
        COMPACT,  # compacts again: a.py, last read in part without a copy in context, removed
        ("ea", "Edit", {"file_path": "a.py", **edit}, "ok"),  # a.py needed
    ]
    run = built_run(steps)
    first, second = compaction_rereads(run)
    assert (first.predicted, first.sized_parts_only, first.sized_as_lost_before) == (
        ("b.py",), 1, 0)
    assert (second.predicted, second.sized_parts_only, second.sized_as_lost_before) == (
        ("a.py",), 0, 1)
    result = {run.call_id[run.call_of[k]]: k for k in range(run.n_blocks)
              if run.kind[k] == "tool_result"}
    assert second.predicted_tokens == run.tokens["o200k_base"][result["ra2"]]  # the part
    total = pooled([first, second])
    assert (total.sized_parts_only, total.sized_as_lost_before) == (1, 1)
    t = fidelity_totals([])
    assert not any("estimated" in line for line in totals_lines(t) if line.startswith("re-reads"))
    t["reread_sized_parts_only"], t["reread_sized_as_lost_before"] = 1, 1
    (line,) = [x for x in totals_lines(t) if x.startswith("re-reads")]
    assert "2 predicted sizes estimated (1 the largest part read" in line
    assert "1 the part the agent read when it lost the file before" in line


def test_a_reread_that_failed_is_counted_apart_and_said() -> None:
    """A read after the compaction whose result is an error brought nothing of the file back:
    the file is not recorded as re-read (before, it was, at the size of the error message),
    it is counted apart, pooled, and said on the totals' re-read line."""
    from analysis.fidelity import fidelity_totals
    from tests.built_runs import COMPACT, built_run

    numbered = "".join(f"{i:6d}→line {i}\n" for i in range(1, 41))
    steps = [
        ("ra", "Read", {"file_path": "a.py"}, numbered),
        COMPACT,
        ("ra2", "Read", {"file_path": "a.py"},
         "<tool_use_error>File does not exist.</tool_use_error>"),
        ("ea", "Edit", {"file_path": "a.py", "old_string": "line 3", "new_string": "x"}, "ok"),
    ]
    (ok,) = compaction_rereads(built_run(steps))
    (failed,) = compaction_rereads(built_run(steps, failing=frozenset({"ra2"})))
    assert (ok.recorded, ok.predicted, ok.rereads_failed) == (("a.py",), ("a.py",), 0)
    assert (failed.recorded, failed.predicted, failed.rereads_failed) == ((), ("a.py",), 1)
    assert failed.recorded_tokens == 0 and pooled([ok, failed]).rereads_failed == 1
    t = fidelity_totals([])
    assert not any("failed" in line for line in totals_lines(t) if line.startswith("re-reads"))
    t["reread_rereads_failed"] = 1
    (line,) = [x for x in totals_lines(t) if x.startswith("re-reads")]
    assert "1 removed file the agent tried to read again but every read of it failed" in line
