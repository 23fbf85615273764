"""A sweep chosen by its objective alone (tokens_sent by default) takes the most aggressive
setting; when another setting meeting the constraints beats it on both cost and induced
re-reads, the table, --json and chosen.yaml say which (``analysis.sweep.choice.beaten_on_loss``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from analysis.sweep.choice import beaten_on_loss
from replay.cli import app


def _ranked(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["setting", "cost_usd", "induced_rereads_n"])


def test_only_a_setting_better_on_both_beats_the_chosen_one() -> None:
    assert beaten_on_loss(_ranked([("a", 2.0, 5), ("b", 1.0, 6), ("c", 3.0, 1)])) is None
    assert beaten_on_loss(_ranked([("a", 2.0, 5), ("b", 1.5, 5), ("c", 1.0, 4)])) == \
        ("c", 1.0, 4.0, 2.0, 5.0)  # the cheapest of those that beat it
    assert beaten_on_loss(_ranked([("a", 2.0, 0), ("b", 1.0, 0)])) is None  # no re-read
    assert beaten_on_loss(_ranked([("a", float("nan"), 3), ("b", 1.0, 0)])) is None
    assert beaten_on_loss(_ranked([("a", 2.0, 3)])) is None


def test_the_most_aggressive_setting_chosen_by_tokens_is_said_to_cost_more(
        samples: Path, tmp_path: Path) -> None:
    log = str(samples / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    args = ["sweep", "--policy", "two-tier-corrected", log, "--out", str(tmp_path),
            "--cache-dir", str(tmp_path / "cache"), "--jobs", "1", "--no-plots",
            "--axis", "tiers.tier2_summary.trigger.at_tokens=10000,20000,40000,80000"]
    done = CliRunner().invoke(app, [*args, "--json"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.stdout)
    best = doc["best"]
    chosen = best[0]
    assert chosen["tiers.tier2_summary.trigger.at_tokens"] == 10000  # the least tokens sent
    assert chosen["induced_rereads_n"] > 0
    beaten = doc["chosen_beaten_on_cost_and_rereads"]
    other = next(b for b in best if b["setting"] == beaten["setting"])
    assert other["cost_usd"] < chosen["cost_usd"]
    assert other["induced_rereads_n"] <= chosen["induced_rereads_n"]
    assert (beaten["cost_usd"], beaten["induced_rereads_n"], beaten["chosen_cost_usd"],
            beaten["chosen_induced_rereads_n"]) == (other["cost_usd"], other["induced_rereads_n"],
                                                    chosen["cost_usd"],
                                                    chosen["induced_rereads_n"])
    said = f"setting {beaten['setting']} also meets the constraints and beats the chosen one"
    assert said in (tmp_path / "sweep" / "chosen.yaml").read_text()
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    assert said in table.stderr
    # chosen by cost, the setting that beat it is chosen and nothing is said
    by_cost = CliRunner().invoke(app, [*args, "--minimise", "cost_usd", "--json"])
    doc = json.loads(by_cost.stdout)
    assert doc["best"][0]["setting"] == beaten["setting"]
    assert doc["chosen_beaten_on_cost_and_rereads"] is None
