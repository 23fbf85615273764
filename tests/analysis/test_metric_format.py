"""One formatting rule per metric unit (issue #25 item 5): counts and tokens whole, fractions
as %, money with two decimals — in every table that shows a metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from analysis.metric_spec import PRICE_UNIT, UNKNOWN_TEXT, count, format_value
from analysis.per_run import SPECS
from replay.cli import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.mark.parametrize(("unit", "value", "text"), [
    ("tokens", 133_847_218.0, "133,847,218"),  # a sum the sweep made a float
    ("count", 0.0, "0"),
    ("requests", 12.6, "13"),
    ("fraction", 0.1234, "12.3%"),
    ("fraction", 0.0, "0.0%"),
    ("fraction", 0.00012, "0.012%"),  # small, not rounded to nothing
    ("USD", 16.1, "16.10"),
    ("USD", 8.7136, "8.71"),
    ("USD", 3, "3.00"),
    ("USD", 0.0026341, "0.0026"),  # under half a cent: not "0.00", which reads as no cost
    ("USD", 0.0051, "0.01"),
    ("USD", 0.0, "0.00"),
    (PRICE_UNIT, 0.125, "0.125"),  # a price a million tokens: not rounded to 0.12
    (PRICE_UNIT, 3, "3.00"),
    (PRICE_UNIT, 0.3, "0.30"),
    ("tokens", None, UNKNOWN_TEXT),
    ("fraction", float("nan"), UNKNOWN_TEXT),
])
def test_each_unit_has_one_rule(unit: str, value: float | None, text: str) -> None:
    assert format_value(unit, value) == text


@given(st.sampled_from(sorted(SPECS)), st.floats(0, 1e12, allow_nan=False))
def test_every_metric_formats_by_its_unit(name: str, value: float) -> None:
    text = SPECS[name].format(value)
    unit = SPECS[name].unit
    if unit in ("count", "tokens", "requests", "request index", "bytes"):
        assert text.replace(",", "").isdigit()
    elif unit == "fraction":
        assert text.endswith("%")
    elif unit == "USD":
        assert float(text.replace(",", "")) == pytest.approx(value, rel=0.05, abs=0.005)
        assert len(text.split(".")[-1]) == 2 or 0 < value < 0.005
        assert text != "0.00" or value == 0  # a cost is never shown as none


def test_count_says_one_change_and_two_changes() -> None:
    assert count(1, "change") == "1 change"
    assert count(2, "change") == "2 changes"
    assert count(1_204, "policy", "policies") == "1,204 policies"


def test_the_sweep_and_run_tables_format_by_unit(tmp_path: Path) -> None:
    log = str(REPO / "logs" / "compacting-session.jsonl")
    cache = ["--cache-dir", str(tmp_path / "c"), "-q"]
    args = ["sweep", log, "-p", "claude-code", "--axis",
            "tiers.0.trigger.at_tokens=120000,150000", "--no-plots", "--out",
            str(tmp_path / "o"), *cache]
    columns = "setting,tokens_sent,overshoots_n,cache_invalidation_cached_share,cost_usd"
    table = runner.invoke(app, [*args, "--columns", columns], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    best = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["best"]
    for row in best:
        line = next(ln for ln in table.stdout.splitlines() if row["setting"] in ln)
        assert f"{round(row['tokens_sent']):,}" in line
        assert f"{row['cache_invalidation_cached_share'] * 100:.1f}%" in line
        assert f"{row['cost_usd']:,.2f}" in line
        assert ".0 " not in line and "0.0000" not in line
    run = runner.invoke(app, ["run", log, "-p", "claude-code", "--out", str(tmp_path / "r"),
                              "--columns", "run,cost_usd", *cache], env={"COLUMNS": "120"})
    rows = json.loads(runner.invoke(app, ["run", log, "-p", "claude-code", "--out",
                                          str(tmp_path / "r"), "--json", *cache]).stdout)
    assert f"{rows[0]['cost_usd']:,.2f} " in run.stdout
