"""``replay inspect FILE`` and the coverage column of ``replay runs``: figures checked against
counts made here from the raw JSON, and every string from the file printed as plain text."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest.tokens import count_tokens

runner = CliRunner()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude_code"
HANDMADE = FIXTURES / "handmade_2_1_attachments_microcompact.jsonl"


def _types(path: Path) -> Counter[str]:
    out: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        r = json.loads(line)
        out[f"system/{r['subtype']}" if r["type"] == "system" else
            f"attachment/{r['attachment']['type']}" if r["type"] == "attachment" else r["type"]] += 1
    return out


def test_inspect_json_reports_types_runs_and_gaps() -> None:
    result = runner.invoke(app, ["inspect", str(HANDMADE), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["format"] == "claude_code" and doc["detection"].startswith("claude_code: ")
    assert {t: sum(f.values()) for t, f in doc["coverage"].items()} == dict(_types(HANDMADE))
    [run] = doc["runs"]
    recs = [json.loads(line) for line in HANDMADE.read_text().splitlines()]
    usages = [r["message"]["usage"] for r in recs if r["type"] == "assistant"]
    recorded = [u["input_tokens"] + u["cache_read_input_tokens"]
                + u["cache_creation_input_tokens"] for u in usages]
    assert [q["recorded_input_tokens"] for q in run["requests"]] == recorded
    for q in run["requests"]:
        assert q["gap_tokens"] == q["recorded_input_tokens"] - q["counted_tokens"]
    # after the boundary (no summary recorded) the model saw only what follows it
    after = next(r["message"]["content"] for r in reversed(recs) if r["type"] == "user")
    assert run["requests"][-1]["counted_tokens"] == count_tokens([after], "o200k_base")[0]
    # the microcompacted result counts as its placeholder from the microcompaction on
    assert run["requests"][2]["counted_tokens"] < run["requests"][1]["counted_tokens"]


def test_inspect_table_lists_every_type_and_escapes_markup(tmp_path: Path) -> None:
    lines = HANDMADE.read_text().splitlines()
    lines.append(json.dumps({"type": "[bold]boom[/bold]", "sessionId": "x"}))
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    assert "[bold]boom[/bold]" in result.stdout
    for rtype in _types(HANDMADE):
        assert rtype in result.stdout
    assert "counted context (o200k) vs" in result.stdout


def test_a_run_without_requests_is_listed_with_the_reason(tmp_path: Path) -> None:
    recs = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
             "message": {"role": "user", "content": "hello"}}]
    path = tmp_path / "only-user.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    doc = json.loads(runner.invoke(app, ["inspect", str(path), "--json"]).stdout)
    [run] = doc["runs"]
    assert run["n_requests"] == 0 and "no model call" in run["no_requests_reason"]


def test_inspect_an_unknown_file_names_the_closest_format(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    mode = {"type": "mode", "mode": "normal", "sessionId": "s"}
    path.write_text(json.dumps(mode) + "\n" + json.dumps({"type": "other"}) + "\n")
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 1
    assert "closest: claude_code" in result.output


def test_inspect_a_file_of_metadata_only_says_it_holds_no_conversation(tmp_path: Path) -> None:
    """A Claude Code file of nothing but non-message records (common in ~/.claude/projects) is
    read, its records counted, and said to hold no conversation: no failure."""
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"type": "mode", "mode": "normal", "sessionId": "s"}) + "\n")
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    assert "no conversation: only mode x1 records" in result.output
    doc = json.loads(runner.invoke(app, ["inspect", str(path), "--json"]).stdout)
    assert doc["format"] == "claude_code" and doc["coverage"] == {"mode": {"skipped": 1}}
    assert doc["runs"] == [] and doc["no_conversation"] == "only mode x1 records"


def test_runs_shows_each_files_coverage(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    assert runner.invoke(app, ["ingest", str(FIXTURES), "--out", str(out), "-q"]).exit_code == 0
    rows = json.loads(runner.invoke(app, ["runs", str(out), "--json"]).stdout)
    by_source = {r["source"]: r["coverage"] for r in rows}
    for path in FIXTURES.glob("*.jsonl"):
        n = sum(_types(path).values())
        assert by_source[path.name].startswith(f"{n:,} records: "), path.name
    assert by_source[HANDMADE.name].endswith(", 1 unknown")


def test_replay_run_says_which_runs_it_did_not_replay(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "full.jsonl").write_text(HANDMADE.read_text())
    (logs / "only-user.jsonl").write_text(json.dumps(
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": "hello"}}) + "\n")
    result = runner.invoke(app, ["run", "--policy", "none", str(logs), "--out",
                                 str(tmp_path / "out"), "-q"])
    assert result.exit_code == 0, result.output
    assert "1 run(s) with no recorded request not replayed" in result.output
    assert "not replayed: only-user.jsonl — hello" in result.output  # by its label


def test_inspect_lists_the_context_events_with_their_recorded_facts() -> None:
    doc = json.loads(runner.invoke(app, ["inspect", str(HANDMADE), "--json"]).stdout)
    recs = [json.loads(line) for line in HANDMADE.read_text().splitlines()]
    kinds = [e["kind"] for e in doc["runs"][0]["events"]]
    assert kinds.count("compaction") == sum(r.get("subtype") == "compact_boundary" for r in recs)
    assert kinds.count("microcompaction") == \
        sum(r.get("subtype") == "microcompact_boundary" for r in recs)
    boundary = next(r for r in recs if r.get("subtype") == "compact_boundary")
    comp = next(e for e in doc["runs"][0]["events"] if e["kind"] == "compaction")
    assert f"{boundary['compactMetadata']['preTokens']:,} tokens before" in comp["detail"]
    assert "no summary recorded" in comp["detail"]


def test_the_corpus_gives_a_runs_events(tmp_path: Path) -> None:
    from replay.corpus import open_corpus

    path = FIXTURES / "dag_compact_after_rewind_preserved.jsonl"
    corpus = open_corpus([path], cache_dir=tmp_path / "ds")
    rid, branch = corpus.run_ids  # the session, then the branch its rewind abandoned
    assert corpus.events(branch).num_rows == 0
    [event] = corpus.events(rid).to_pylist()
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    meta = next(r for r in recs if r.get("subtype") == "compact_boundary")["compactMetadata"]
    assert (event["trigger"], event["pre_tokens"]) == (meta["trigger"], meta["preTokens"])
    msgs, _ = corpus.run_tables(rid)
    texts = msgs["text"].to_pylist()
    assert [texts[i] for i in event["preserved_msgs"]] == [
        next(r["message"]["content"][0]["text"] for r in recs if r.get("uuid") == u)
        for u in meta["preservedMessages"]["uuids"]]


def test_the_gap_is_explained_per_request_not_called_steady(samples: Path) -> None:
    """Issue #25 item 11: on a Codex rollout the gap grows 8.9 k → 35.5 k; inspect gives per
    request the hidden reasoning the earlier requests recorded, and one line saying where the
    gap starts and what its growth goes with (checked against the raw file's token_count
    events, read here with plain JSON)."""
    log = samples / "codex" / "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
    infos = [json.loads(line)["payload"]["info"] for line in log.read_text().splitlines()
             if '"token_count"' in line and json.loads(line)["payload"].get("info")]
    usage = [i["last_token_usage"] for n, i in enumerate(infos)  # each event comes twice
             if n == 0 or i["total_token_usage"] != infos[n - 1]["total_token_usage"]]
    doc = json.loads(CliRunner().invoke(app, ["inspect", str(log), "--json"]).stdout)
    [run] = doc["runs"]
    recorded = [r["recorded_input_tokens"] for r in run["requests"]]
    assert recorded == [u["input_tokens"] for u in usage][:len(recorded)]
    hidden = [u["reasoning_output_tokens"] for u in usage]
    assert [r["reasoning_before_tokens"] for r in run["requests"]] == [
        sum(hidden[:k]) for k in range(len(recorded))]
    first, last = run["requests"][0], run["requests"][-1]
    story = run["gap_story"]
    assert f"gap {first['gap_tokens']:,} at request 0" in story
    assert f"→ {last['gap_tokens']:,} at request {last['request']}" in story
    assert f"{sum(hidden[:-1]):,} hidden reasoning tokens" in story
    text = CliRunner().invoke(app, ["inspect", str(log)], env={"COLUMNS": "120"}).stdout
    assert "steady" not in text and story[:40] in " ".join(text.split())
    assert "rollout-2026-02-23T12-40-23" in text and "-0 " not in text  # a label, not a hash
