"""Sweep paths name tiers as policy files do (issue #25 item 7): by name or index, a typo under
a named tier said by name, and --best / --minimise checked before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from analysis.sweep.grid import apply, load_spec, settings
from replay.cli import app
from replay.errors import PolicyError
from replay.policy import load_policy, set_path

REPO = Path(__file__).resolve().parents[3]
BASE = load_policy("two-tier-corrected")  # tiers: tier1_trim, tier2_summary, emergency


def test_a_tier_by_name_is_the_tier_by_index() -> None:
    by_name = apply(BASE, {"tiers.tier2_summary.trigger.at_tokens": 60_000})
    by_index = apply(BASE, {"tiers.1.trigger.at_tokens": 60_000})
    assert by_name.id == by_index.id != BASE.digest()
    assert by_name.policy.tiers[1].name == "tier2_summary"
    assert by_name.params == (("tiers.tier2_summary.trigger.at_tokens", 60_000),)
    doc: dict[str, object] = {"tiers": [{"name": "a"}, {"type": "trim"}]}
    set_path(doc, "tiers.trim.min_chars", 5)  # an unnamed tier by its type, as in files
    assert doc["tiers"] == [{"name": "a"}, {"type": "trim", "min_chars": 5}]


@pytest.mark.parametrize(("axis", "said"), [
    ("tiers.tier2_summary.trigger.at_tokns=1", ("tiers.tier2_summary.trigger.at_tokns: no such "
                                               "field; did you mean 'at_tokens'?")),
    ("tiers.tier2_sumary.keep_messages=8", ("tiers.tier2_sumary: no item 'tier2_sumary'; did you "
                                           "mean 'tier2_summary'?")),
    ("tiers.tier2_summary.trigger.at_tokens=150000", ("tiers.tier2_summary.trigger.at_tokens: "
                                                     "150,000 tokens is above the window")),
])
def test_a_mistake_under_a_named_tier_is_said_by_its_name(axis: str, said: str) -> None:
    with pytest.raises(PolicyError) as err:
        settings(BASE, load_spec(None, [axis]))
    assert said in str(err.value)


@pytest.mark.parametrize("option", [["--best", "overshots_n==0"], ["--best", "overshoots_n="],
                                    ["--minimise", "tokens_snt"]])
def test_a_bad_choice_rule_stops_the_sweep_before_it_runs(option: list[str],
                                                          tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [
        "sweep", str(REPO / "logs" / "compacting-session.jsonl"), "-p", "two-tier-corrected",
        "--axis", "tiers.tier2_summary.keep_messages=8,16", "--out", str(tmp_path / "o"),
        "--cache-dir", str(tmp_path / "c"), "-q", *option])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "o").exists() and not (tmp_path / "c").exists()  # nothing ran


@pytest.mark.parametrize("grid", ['{"tiers.0": "", "tiers.0.min_chars": 0}',
                                  '{"server": 1.5, "server.window_tokens": [1000]}'])
def test_a_path_under_a_value_set_before_it_is_a_usage_error(grid: str, tmp_path: Path) -> None:
    """Found by a fuzz of grid files: an axis that sets a tier (or the server) to a plain value,
    then one under it, crashed with a traceback (``set_path`` walked into the str or float)."""
    spec = tmp_path / "grid.yaml"
    spec.write_text(f"grid: {grid}\n")
    result = CliRunner().invoke(app, [
        "sweep", str(REPO / "logs" / "compacting-session.jsonl"), "-p", "two-tier-corrected",
        "--grid", str(spec), "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"),
        "-q", "--jobs", "1", "--no-plots"])
    assert result.exit_code == 2, result.output
    assert "nothing under it to set" in result.output and "Traceback" not in result.output
