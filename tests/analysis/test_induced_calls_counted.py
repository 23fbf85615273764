"""Where a replay's induced re-reads are counted: the model calls that re-read are priced in
``cost_usd`` (the requests' ``induced_cost_usd``), while ``n_requests`` and ``tokens_sent`` sum
the recorded requests only (their contexts grown by what was re-read), as the note says.
On a real Claude Code log under a very aggressive setting (summarise from 10,000 tokens)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml
from typer.testing import CliRunner

from replay.cli import app
from replay.policy import load_policy, policy_to_dict


def test_an_aggressive_replay_counts_its_rereads_in_cost_not_in_requests(
        samples: Path, tmp_path: Path) -> None:
    log = samples / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    records = [json.loads(line) for line in log.open(encoding="utf-8") if line.strip()]
    recorded = len({r["message"]["id"] for r in records if r.get("type") == "assistant"})
    doc = policy_to_dict(load_policy("two-tier-corrected"))
    doc["name"] = "aggressive"
    doc["tiers"][1]["trigger"] = {"at_tokens": 10000}
    policy = tmp_path / "aggressive.yaml"
    policy.write_text(yaml.safe_dump(doc))
    res = CliRunner().invoke(app, ["run", str(log), "-p", str(policy), "--out",
                                   str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c"),
                                   "--json"])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)
    trace = pd.read_parquet(tmp_path / "out" / "traces" / "requests.parquet")
    assert row["induced_rereads_n"] == int(trace["induced_rereads"].sum()) > 0
    assert row["n_requests"] == recorded == 152 == len(trace)
    assert row["tokens_sent"] == int(trace["truth_tokens"].sum())
    assert trace["induced_cost_usd"].sum() > 0
    assert abs(row["cost_usd"] - trace["cost_usd"].sum()) < 1e-9
    note = " ".join(res.stderr.split())
    assert ("the model calls that re-read are priced in cost_usd but are not in n_requests or "
            "tokens_sent") in note
