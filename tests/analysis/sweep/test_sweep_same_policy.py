"""``replay sweep`` says how many of the settings a grid asked for made a policy already in the
sweep (dropped: ``analysis.sweep.grid.settings``), a value given twice on an axis among them,
in its text and ``--json``; before, a one-at-a-time grid with the base's own value on an axis
said "2 settings" for 3 asked and nothing else, and ``--axis P=0.05,0.05`` "1 settings"."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from analysis.sweep.grid import make_spec, settings
from replay.cli import app
from replay.policy import load_policy

BASE = "two-tier-corrected"


def _sweep(samples: Path, tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    log = str(next(samples.glob("claude-code/short.jsonl")))
    done = CliRunner().invoke(app, ["sweep", "--policy", BASE, log, "--out", str(tmp_path),
                                    "--cache-dir", str(tmp_path), "--jobs", "1", "--no-plots",
                                    "-q", *extra])
    return done.exit_code, done.stdout, done.stderr


def test_the_settings_that_made_a_policy_already_in_the_sweep_are_said(
        samples: Path, tmp_path: Path) -> None:
    base_value = load_policy(BASE).tiers[0].protect.frac  # type: ignore[union-attr]
    axis = f"tiers.0.protect.frac=0.05,{base_value}"
    spec = make_spec({"tiers.0.protect.frac": [0.05, base_value]}, design="one_at_a_time")
    made = settings(load_policy(BASE), spec)
    asked = spec.size
    assert (asked, len(made)) == (3, 2)  # the base, 0.05, the base's own value again
    code, out, err = _sweep(samples, tmp_path, "--axis", axis, "--design", "one_at_a_time",
                            "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["settings"], doc["same_policy"]) == (len(made), asked - len(made))
    code, _out, err = _sweep(samples, tmp_path, "--axis", axis, "--design", "one_at_a_time")
    assert code == 0
    assert "2 settings (1 more the grid asked for made a policy already in it: not swept " \
           "twice) × 1 run:" in " ".join(err.split())
    code, out, err = _sweep(samples, tmp_path, "--axis", axis, "--json")  # a grid: no repeat
    assert json.loads(out)["same_policy"] == 0


def test_a_value_given_twice_is_said(samples: Path, tmp_path: Path) -> None:
    """A value given twice on an axis is one setting, and the output says the other."""
    spec = make_spec({"tiers.0.protect.frac": [0.05, 0.05, 0.15]})
    assert (spec.size, len(settings(load_policy(BASE), spec))) == (3, 2)
    code, out, err = _sweep(samples, tmp_path, "--axis", "tiers.0.protect.frac=0.05,0.05,0.15",
                            "--json")
    assert code == 0, err
    assert (json.loads(out)["settings"], json.loads(out)["same_policy"]) == (2, 1)
