"""`replay run`'s note says the level a harness-following policy took for a run when it is not
today's default, and how many requests an idle-time trigger cannot judge (#26 items 4-6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.per_run.rollup import RUN_ROLLUP
from replay.apply_policy import run
from replay.corpus import open_corpus
from replay.policy import load_policy
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "claude_code"


def _notes(path: Path, policy: str, tmp_path: Path) -> dict[str, str | None]:
    corpus = open_corpus([path], cache_dir=tmp_path / "c")
    return {r["source"]: r["note"] for r in run(corpus, load_policy(policy),
                                                 rollup=RUN_ROLLUP).rollup}


def test_an_old_version_s_level_is_in_the_note(tmp_path: Path) -> None:
    path = FIXTURES / "ccl-sidechain-integrated-2.0.46.jsonl"
    versions = {json.loads(line).get("version") for line in path.read_text().splitlines()
                if line.strip()} - {None}
    assert versions == {"2.0.46"}  # read from the raw file
    notes = _notes(path, "claude-code", tmp_path)
    assert notes and all(n is not None and n.startswith("autocompact at 155,000: claude-code "
                                                        "2.0.46") for n in notes.values())


def test_today_s_default_adds_no_note(tmp_path: Path) -> None:
    notes = _notes(FIXTURES / "spotter-8463c716-after-compaction-2.1.39.jsonl", "claude-code",
                   tmp_path)
    assert notes and all(n is None for n in notes.values())


@pytest.mark.parametrize("stamp", [None, "Tue, 10 Feb 2026 21:11:56 GMT", "yesterday",
                                   "-0001-01-01T00:00:00Z", "10000-01-01T00:00:00Z"])
def test_requests_without_a_timestamp_are_counted_for_an_idle_trigger(
        tmp_path: Path, stamp: str | None) -> None:
    """Before: a timestamp that is not ISO 8601 (an RFC 2822 date, a year out of range) was
    never an idle gap, like a missing one, but the note counted only missing ones: none."""
    src = FIXTURES / "spotter-8463c716-after-compaction-2.1.39.jsonl"
    records = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    for r in records:
        r.pop("timestamp", None)
        if stamp is not None:
            r["timestamp"] = stamp
    path = tmp_path / "untimed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    calls = {r["message"]["id"] for r in records
             if r.get("type") == "assistant" and not r.get("isSidechain")}
    notes = _notes(path, "claude-code-clearing", tmp_path)
    (note,) = notes.values()
    assert note == (f"{len(calls)} of {len(calls)} requests have no timestamp (or one not "
                    "ISO 8601, or outside 2000-2099): no idle gap there (the cache never "
                    "expires and the idle_minutes trigger never fires there)")
    assert _notes(src, "claude-code-clearing", tmp_path / "timed") == {src.name: None}
    (plain,) = _notes(path, "claude-code", tmp_path / "plain").values()  # no idle trigger:
    assert plain == (f"{len(calls)} of {len(calls)} requests have no timestamp (or one not "
                     "ISO 8601, or outside 2000-2099): no idle gap there (the cache never "
                     "expires there)")


def test_a_clock_set_back_is_said(tmp_path: Path) -> None:
    """One assistant timestamp of a real session set to 2020 moved its cost under
    two-tier-corrected (2.12206 -> 2.12187: the next request's gap measured from 2020 expired
    the cache) with nothing said.  Counted here from the raw records, independently."""
    src = FIXTURES / "spotter-8463c716-after-compaction-2.1.39.jsonl"
    records = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    ids = [r["message"]["id"] for r in records
           if r.get("type") == "assistant" and not r.get("isSidechain")]
    target = list(dict.fromkeys(ids))[len(set(ids)) // 2]  # a response in the middle
    for r in records:
        if r.get("type") == "assistant" and r["message"]["id"] == target:
            r["timestamp"] = "2020-01-01T00:00:00.000Z"
    path = tmp_path / "clock.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (note,) = _notes(path, "claude-code", tmp_path).values()
    assert note == ("1 request(s) timestamped before the request before (the clock went "
                    "back): no idle gap there, the next measured from it")
