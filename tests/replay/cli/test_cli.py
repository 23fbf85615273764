"""The CLI end to end: exit codes, JSON output, files written."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]


def test_run_on_the_embedded_corpus_writes_traces_and_summary(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", "--policy", "two-tier-corrected", str(REPO / "logs"),
                                 "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    sources = sorted(p.relative_to(REPO / "logs").as_posix() for p in (REPO / "logs").rglob("*.jsonl"))
    assert sorted(r["source"] for r in rows) == sources
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"]["name"] == "two-tier-corrected"
    assert {r["source"] for r in summary["runs"]} == set(sources)
    for name in ("requests", "actions", "evictions"):
        assert (out / "traces" / f"{name}.parquet").stat().st_size > 0
    assert all(r["truth_source"] == "anchored" for r in rows)  # every generated run has usage
    import pyarrow.parquet as pq

    req = pq.read_table(out / "traces" / "requests.parquet").to_pydict()
    over: dict[str, int] = {}
    for rid, o in zip(req["run_id"], req["overshoot_tokens"]):
        over[rid] = over.get(rid, 0) + (o > 0)
    assert {r["source"]: r["overshoots_n"] for r in rows} == {
        s: over[rid] for rid, s in zip(
            [r["run_id"] for r in summary["runs"]], [r["source"] for r in summary["runs"]])}


def test_run_twice_gives_identical_traces(tmp_path: Path) -> None:
    args = ["run", "--policy", "two-tier-original", str(REPO / "logs" / "write-heavy.jsonl"), "-q"]
    a = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    b = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert a.exit_code == b.exit_code == 0
    for name in ("requests", "actions", "evictions"):
        assert (tmp_path / "a" / "traces" / f"{name}.parquet").read_bytes() == \
            (tmp_path / "b" / "traces" / f"{name}.parquet").read_bytes()


def test_bad_policy_exits_2_with_the_key_path(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("server: {window_tokens: 1000, reserv_tokens: 10}\n")
    result = runner.invoke(app, ["run", "--policy", str(policy), str(REPO / "logs"),
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "server.reserv_tokens" in result.output and "reserve_tokens" in result.output


def test_custom_python_tier_needs_allow_python(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("tiers:\n  - {type: custom, class: 'replay.engine.tiers.custom:DropStaleReads'}\n")
    log = str(REPO / "logs" / "explore-rereads.jsonl")
    refused = runner.invoke(app, ["run", "--policy", str(policy), log, "--out", str(tmp_path / "a")])
    assert refused.exit_code == 2 and "--allow-python" in refused.output
    allowed = runner.invoke(app, ["run", "--policy", str(policy), log, "--out", str(tmp_path / "b"),
                                  "--allow-python", "--json"])
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.stdout)[0]["n_trims"] > 0


def test_policies_lists_every_preset_as_json() -> None:
    from replay.policy import presets

    result = runner.invoke(app, ["policies", "--json"])
    assert result.exit_code == 0
    assert [r["name"] for r in json.loads(result.stdout)] == presets()


def test_calibrate_fits_the_generated_corpus_closely(tmp_path: Path) -> None:
    result = runner.invoke(app, ["calibrate", str(REPO / "logs"), "--cache-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == len(list((REPO / "logs").rglob("*.jsonl")))
    # the generator records o200k × 1.08 plus framing: the fit must find a scale near that
    assert all(1.0 < r["scale"] < 1.2 for r in rows)
