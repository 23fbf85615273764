"""OpenHands V1 parser: two real conversation folders of the software-agent-sdk against a plain
walk of their event files, detection and discovery, usage, inspect.

Not here: hostile folders (a missing, a cut, a symlinked event, unknown kinds:
``test_parse_openhands_v1_hostile.py``), condensations (hand-made to the SDK's schema: no public
one found; ``test_parse_openhands_v1_condensations.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import PARSERS, detect_format
from replay.ingest.parsers.source import SNIFF_BYTES
from tests.replay.ingest.parsers.openhands_v1_fixtures import (
    FIXTURES,
    REAL,
    copy_fixture,
    event_file,
)

NAMES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def _events(folder: Path) -> list[dict[str, Any]]:
    """The folder's events in index order, read with the json module."""
    files = sorted((folder / "events").glob("event-*.json"), key=lambda p: int(p.name[6:11]))
    return [json.loads(p.read_text(encoding="utf-8")) for p in files]


def _independent(folder: Path) -> dict[str, Any]:
    """Calls, results, model calls and their usage from the raw events and base_state.json."""
    events = _events(folder)
    usages = {u["response_id"]: u for m in json.loads(
        (folder / "base_state.json").read_text())["stats"]["usage_to_metrics"].values()
        for u in m["token_usages"]}
    responses: list[str] = []
    for e in events:
        rid = e.get("llm_response_id")
        if e["kind"] in ("ActionEvent", "MessageEvent") and e["source"] == "agent" and rid \
                and rid not in responses:
            responses.append(rid)
    calls = [e["tool_call"]["id"] for e in events if e["kind"] == "ActionEvent"]
    results = [e for e in events if e["kind"] == "ObservationEvent" and e["tool_call_id"] in calls]
    known = [usages[r] for r in responses if r in usages]
    return {"n_requests": len(responses), "n_tool_calls": len(calls),
            "n_tool_results": len(results),
            "recorded_input_tokens": sum(u["prompt_tokens"] for u in known),
            "recorded_output_tokens": sum(u["completion_tokens"] for u in known),
            "per_request": [(usages[r]["prompt_tokens"], usages[r]["cache_read_tokens"],
                             usages[r]["completion_tokens"]) if r in usages else (None,) * 3
                            for r in responses]}


def test_fixtures_present() -> None:
    assert len(NAMES) == 2
    assert (FIXTURES / "SOURCES.md").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_counts_match_a_plain_walk(name: str) -> None:
    folder = FIXTURES / name
    parsed = parse_file(folder, folder.parent)
    assert parsed.format == "openhands_v1" and parsed.source == name
    assert parsed.tables is not None
    run = parsed.tables.runs.to_pylist()[0]
    expected = _independent(folder)
    per_request = expected.pop("per_request")
    assert {k: run[k] for k in expected} == expected
    reqs = parsed.tables.requests.to_pylist()
    assert [(r["input_tokens"], r["cache_read_tokens"], r["output_tokens"]) for r in reqs] \
        == per_request
    assert run["n_orphan_results"] == 0


def test_the_real_run_reads_whole() -> None:
    folder = FIXTURES / REAL
    parsed = parse_file(folder, folder.parent)
    assert not parsed.issues, [str(i) for i in parsed.issues]
    assert parsed.tables is not None
    rows = parsed.tables.messages.to_pylist()
    events = _events(folder)
    assert [r["role"] for r in rows] == ["system", "user", "assistant", "tool", "assistant",
                                         "tool", "user", "assistant"]
    assert rows[0]["text"] == events[0]["system_prompt"]["text"]
    call = next(r for r in rows if r["kind"] == "tool_call")
    assert json.loads(call["text"]) == json.loads(events[2]["tool_call"]["arguments"])
    assert call["tool"] == "terminal" and call["call_id"] == events[2]["tool_call_id"]


@pytest.mark.parametrize("name", NAMES)
def test_every_file_is_counted(name: str) -> None:
    folder = FIXTURES / name
    parsed = parse_file(folder, folder.parent)
    n_files = len(list((folder / "events").glob("event-*.json"))) + 1  # + base_state.json
    assert sum(n for fates in parsed.coverage.values() for n in fates.values()) == n_files


def test_an_unknown_kind_is_counted_and_said() -> None:
    folder = FIXTURES / "dd0e577997844195930e498016a6350b"  # a PR branch's SystemPromptUpdateEvent
    parsed = parse_file(folder, folder.parent)
    assert parsed.coverage["event/SystemPromptUpdateEvent"] == {"unknown": 1}
    assert any("'SystemPromptUpdateEvent' not known" in i.reason for i in parsed.issues)
    assert any("2 of 3 request(s) have no usage record" in i.reason for i in parsed.issues)


# --- detection and discovery ---

def test_no_other_format_claims_a_conversation_and_it_claims_no_file() -> None:
    from replay.ingest.input_files import read_input

    head = read_input(FIXTURES / REAL)[:SNIFF_BYTES]
    for name, module in PARSERS.items():
        assert module.sniff(REAL, head) == (name == "openhands_v1"), name
    others = [p for p in (FIXTURES.parent).rglob("*") if p.is_file()
              and p.name.endswith((".json", ".jsonl", ".traj")) and FIXTURES not in p.parents]
    samples = Path(__file__).resolve().parents[4].parent / "shared" / "logs-sample"
    others += [p for p in samples.rglob("*") if p.is_file()] if samples.is_dir() else []
    assert len(others) > 20
    for p in others:
        with p.open("rb") as f:
            assert detect_format(p.name, f.read(SNIFF_BYTES)) != "openhands_v1", p


def test_an_event_file_named_alone_is_no_failure() -> None:
    f = event_file(FIXTURES / REAL, 2)
    parsed = parse_file(f, f.parent)
    assert parsed.tables is None and not parsed.issues
    assert "name the folder" in parsed.no_conversation


def test_discovery_takes_a_conversation_folder_as_one_input(tmp_path: Path) -> None:
    from replay.ingest.discover import discover, sources

    folder = copy_fixture(tmp_path / "convs")
    (tmp_path / "convs" / "other.jsonl").write_text("{}\n")
    found = discover([tmp_path / "convs"])
    assert sources(found) == [REAL, "other.jsonl"]
    assert sources(discover([folder])) == [REAL]
    assert sources(discover([folder / "events"])) == [f"{REAL}/events"]
    alone = parse_file(folder / "events", folder.parent)  # with the base_state.json beside it
    assert alone.tables is not None and not alone.issues
    assert alone.tables.runs.to_pylist()[0]["recorded_input_tokens"] == \
        _independent(FIXTURES / REAL)["recorded_input_tokens"]


def test_a_conversation_named_twice_over_is_one_input(tmp_path: Path) -> None:
    """The conversation folder, its events folder and a folder holding it, named together (a
    shell glob such as 'conv conv/*' does): each was one input, the same conversation ingested
    twice and every figure of a replay counted twice."""
    from typer.testing import CliRunner

    from replay.cli import app
    from replay.ingest.discover import discover

    folder = copy_fixture(tmp_path / "convs")
    for paths in ([folder, folder / "events"], [folder / "events", folder],
                  [tmp_path / "convs", folder / "events"], [folder / "events", tmp_path / "convs"]):
        assert len(discover(paths)) == 1, paths
    out = tmp_path / "ds"
    res = CliRunner().invoke(app, ["ingest", str(folder), str(folder / "events"), "--out",
                                   str(out), "--json", "-q"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["runs", str(out), "--json"])
    rows = json.loads(res.stdout)
    assert [r["requests"] for r in rows] == [_independent(FIXTURES / REAL)["n_requests"]]


def test_replay_run_with_the_openhands_condenser(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from replay.cli import app

    result = CliRunner().invoke(app, ["run", "--policy", "openhands-condenser",
                                      str(FIXTURES / REAL), "--cache-dir", str(tmp_path / "c"),
                                      "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert row["source"] == REAL and row["n_requests"] == 3
    assert row["tokens_sent"] == _independent(FIXTURES / REAL)["recorded_input_tokens"]


def test_usage_counting_cache_reads_apart_is_summed_and_said() -> None:
    from replay.ingest.parsers.openhands_v1_usage import usage_by_response

    base = {"stats": {"usage_to_metrics": {"agent": {"token_usages": [
        {"response_id": "a", "prompt_tokens": 100, "cache_read_tokens": 80},
        {"response_id": "b", "prompt_tokens": 20, "cache_read_tokens": 500},  # an ACP record
        {"response_id": "a", "prompt_tokens": 7},
        {"response_id": "", "prompt_tokens": 9}]}}}}
    found, problems = usage_by_response(base)
    assert sorted(found) == ["a", "b"]
    assert (found["a"].prompt, found["b"].prompt, found["b"].cache_read) == (100, 520, 500)
    assert len(problems) == 3 and "1 token usage record(s) count cache reads apart" in problems[1]
    assert "repeat a response id" in problems[0]
    assert problems[2].startswith("1 token usage record(s) not read")


def test_usage_records_not_read_are_counted_and_said(tmp_path: Path) -> None:
    """A base_state.json whose usage is not shaped as the SDK writes it: each record (or list
    of records) left out is counted in one issue, not dropped without a word; the requests it
    would have matched are unknown, never 0."""
    from replay.ingest.parsers.openhands_v1_usage import usage_by_response

    bad: list[Any] = [None, 3, "x", {"prompt_tokens": 5}, {"response_id": 7},
                      {"response_id": "", "prompt_tokens": 9}]
    base = {"stats": {"usage_to_metrics": {"agent": {"token_usages": [
        *bad, {"response_id": "r", "prompt_tokens": 10}]}, "condenser": 5,
        "x": {"token_usages": "no"}, "y": {"token_usages": None}, "z": {}}}}
    found, problems = usage_by_response(base)
    assert list(found) == ["r"]
    # independent: 6 records that are no object or name no response, 2 usage ids that are no
    # object or whose token_usages is not a list ("z" has none: nothing recorded, not wrong)
    records = ("6 token usage record(s) not read (not an object, or no response_id): not "
               "matched to any request")
    ids = "2 usage id(s) of stats.usage_to_metrics not read (not an object, or token_usages not a list)"
    assert problems == [records, ids]
    folder = copy_fixture(tmp_path)
    state = json.loads((folder / "base_state.json").read_text())
    usages = state["stats"]["usage_to_metrics"]["agent"]["token_usages"]
    usages[0] = {k: v for k, v in usages[0].items() if k != "response_id"}
    (folder / "base_state.json").write_text(json.dumps(state))
    parsed = parse_file(folder, folder.parent)
    assert parsed.tables is not None
    assert any("1 token usage record(s) not read" in i.reason for i in parsed.issues)
    inputs = [r["input_tokens"] for r in parsed.tables.requests.to_pylist()]
    assert inputs.count(None) == 1 and 0 not in inputs


def test_inspect_reads_a_conversation_folder() -> None:
    from typer.testing import CliRunner

    from replay.cli import app

    result = CliRunner().invoke(app, ["inspect", str(FIXTURES / REAL), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["format"] == "openhands_v1" and len(doc["runs"]) == 1
    plain = CliRunner().invoke(app, ["inspect", str(FIXTURES)])  # a folder of conversations
    assert plain.exit_code == 2


def test_results_read_as_the_sdk_renders_them(tmp_path: Path) -> None:
    """A terminal observation is its output between the metadata's prefix and suffix, then its
    working directory, interpreter and exit code lines; an error has the SDK's header first."""
    folder = copy_fixture(tmp_path)
    obs = event_file(folder, 3)
    raw = json.loads(obs.read_text())["observation"]
    meta = raw["metadata"]
    terminal = (f"{meta['prefix']}{raw['content'][0]['text']}{meta['suffix']}"
                f"\n[Current working directory: {meta['working_dir']}]"
                f"\n[Python interpreter: {meta['py_interpreter_path']}]"
                f"\n[Command finished with exit code {meta['exit_code']}]")
    doc = json.loads(event_file(folder, 5).read_text())
    doc["observation"]["is_error"] = True
    event_file(folder, 5).write_text(json.dumps(doc))
    parsed = parse_file(folder, folder.parent)
    assert parsed.tables is not None
    results = [r for r in parsed.tables.messages.to_pylist() if r["kind"] == "tool_result"]
    assert [r["text"] for r in results] == [
        terminal, "[An error occurred during execution.]\n" + doc["observation"]["content"][0]["text"]]
    assert [r["is_error"] for r in results] == [False, True]


def test_a_base_state_and_events_folder_of_another_tool_are_no_conversation(tmp_path: Path) -> None:
    from replay.ingest.discover import discover, sources

    (tmp_path / "app" / "events").mkdir(parents=True)
    (tmp_path / "app" / "base_state.json").write_text('{"subjects": {}}')
    (tmp_path / "app" / "events" / "log.jsonl").write_text("{}\n")
    assert sources(discover([tmp_path])) == ["app/base_state.json", "app/events/log.jsonl"]
    assert sources(discover([tmp_path / "app"])) == ["base_state.json", "events/log.jsonl"]
