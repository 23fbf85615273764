"""A request timestamped before 2000 or from 2100 on (a broken or crafted clock: 5026, 1970) is
said at ingest and is no instant the replay measures an idle gap from: before, a gap of
thousands of years was an ordinary idle gap (the prefix cache expired on it, the request after
it read as the clock set back).  Real logs (2024-2026) are unchanged."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.corpus import open_corpus
from replay.engine.prepared import PreparedRun
from replay.ingest.parse_file import parse_file
from replay.ingest.timestamps import implausible, timestamp_seconds
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "claude-code" / "tool_heavy.jsonl"
runner = CliRunner()


@pytest.mark.parametrize("ts", ["1970-01-01T00:00:00.000Z", "1999-12-31T23:59:59Z",
                                "2100-01-01T00:00:00Z", "5026-02-11T21:46:25.781Z",
                                "0001-01-01T00:00:00", "2099-12-31T23:30:00-01:00",
                                "2000-01-01T00:30:00+01:00"])
def test_a_timestamp_outside_2000_2099_is_read_as_no_instant(ts: str) -> None:
    """(The last two: 2100-01-01T00:30Z and 1999-12-31T23:30Z, the instants they name.)"""
    assert implausible(ts)
    assert timestamp_seconds(ts) is None


@pytest.mark.parametrize("ts", ["2000-01-01T00:00:00Z", "2026-02-11T21:46:25.781Z",
                                "2099-12-31T23:59:59.999+00:00", "2026-03-08T01:30:00"])
def test_a_timestamp_inside_is_read_as_the_instant_it_names(ts: str) -> None:
    assert not implausible(ts)
    moment = datetime.fromisoformat(ts)
    assert timestamp_seconds(ts) == (moment if moment.tzinfo else
                                     moment.replace(tzinfo=UTC)).timestamp()


@pytest.mark.parametrize("ts", ["", "not a date", "[trimmed for fixture]", "2026-13-99"])
def test_a_timestamp_that_names_no_instant_is_not_implausible(ts: str) -> None:
    assert not implausible(ts)  # (unreadable: the replay's note counts it, as before)
    assert timestamp_seconds(ts) is None


def _planted(tmp_path: Path, when: str) -> tuple[Path, int]:
    """The real sample with its second response's records timestamped ``when``; the file and
    the number of requests so planted (that response's one request)."""
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    ids = list(dict.fromkeys(r["message"]["id"] for r in records
                             if r.get("type") == "assistant" and "usage" in r["message"]))
    for r in records:
        if isinstance(r.get("message"), dict) and r["message"].get("id") == ids[1]:
            r["timestamp"] = when
    path = tmp_path / "logs" / SAMPLE.name
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path, 1


def test_ingest_says_the_run_s_implausible_timestamps(tmp_path: Path) -> None:
    path, planted = _planted(tmp_path, "5026-01-01T00:00:00.000Z")
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None
    n = parsed.tables.requests.num_rows
    said = [(i.line, i.reason) for i in parsed.issues if "outside 2000-2099" in i.reason]
    assert said == [(0, (f"{planted} of {n} request(s) timestamped outside 2000-2099 (first: "
                        "request 1): a broken or crafted clock, not when a model was called; no "
                        "idle gap is measured to or from them (no cache expiry, no idle_minutes "
                        "trigger)"))]
    assert parse_file(SAMPLE, SAMPLES).issues == ()  # (the real file: nothing said)


@pytest.mark.parametrize("when", ["5026-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000Z"])
def test_the_replay_measures_no_idle_gap_from_it(tmp_path: Path, when: str) -> None:
    """The planted request has no idle gap and the one after it is measured from the request
    before it, as in the real run: no cache expiry anywhere (before, 5026 expired the cache at
    the planted request, 1970 at the one after it); ``replay run`` says it, --strict exits 1."""
    path, _ = _planted(tmp_path, when)
    real = _prepared(SAMPLE, tmp_path / "r")
    planted = _prepared(path, tmp_path / "p")
    assert real.expired(300.0) == planted.expired(300.0) == [False] * real.n_requests
    gaps, real_gaps = planted.gaps_s(), real.gaps_s()
    assert gaps[1] is None and real_gaps[1] is not None
    assert gaps[2] == pytest.approx(real_gaps[1] + real_gaps[2])  # (from request 0)
    args = ["run", str(path), "-p", "none", "--out", str(tmp_path / "o"), "--cache-dir",
            str(tmp_path / "c"), "-q"]
    got = runner.invoke(app, [*args, "--json"])
    assert got.exit_code == 0, got.output
    n = real.n_requests
    assert f"1 of {n} request(s) timestamped outside 2000-2099" in " ".join(got.stderr.split())
    (row,) = json.loads(got.stdout)
    assert row["note"] == (f"1 of {n} requests have no timestamp (or one not ISO 8601, or "
                           "outside 2000-2099): no idle gap there (the cache never expires "
                           "there)")
    assert runner.invoke(app, [*args, "--strict"]).exit_code == 1


def _prepared(path: Path, cache: Path) -> PreparedRun:
    corpus = open_corpus([path], cache_dir=cache)
    (run_id,) = corpus.replayable()
    return corpus.prepared(run_id)
