"""What a sweep's setting may be chosen by: a metric, never another column of the table."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from analysis.sweep.pareto import OBJECTIVES, best, check_choice
from replay.cli import app
from replay.errors import ReplayInputError
from tests.analysis.sweep.test_pareto import _table

REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "compacting-session.jsonl"


@pytest.mark.parametrize("name", ["setting", "run_id", "frac", "n_runs",
                                  "overshoots_first_request"])
def test_a_column_that_is_no_metric_is_no_objective(name: str) -> None:
    """``--minimise setting`` ranked the settings by their hash (``frac``, a swept path, by
    its value, every other setting of one value tied, the tie broken by the hash)."""
    with pytest.raises(ReplayInputError, match=f"objective '{name}': .*one of n_requests, "
                                               "tokens_sent"):
        best(_table(), [], name, params=["frac"], by=None if name == "run_id" else "setting")
    with pytest.raises(ReplayInputError, match=f"objective '{name}'"):
        check_choice([], name, ["frac"])


def test_every_metric_and_alias_is_an_objective() -> None:
    assert "tokens_sent" in OBJECTIVES and "cached_share" in OBJECTIVES
    assert not any(o.endswith("_request") for o in OBJECTIVES)
    for name in ("tokens_sent", "cached_share", "cost_usd"):
        check_choice([], name, ["frac"])
    assert best(_table(), [], "overshoots", params=["frac"])["setting"].tolist()[0] == "b"


@pytest.mark.parametrize("option", ["--minimise", "--maximise"])
def test_the_sweep_command_refuses_a_setting_objective(tmp_path: Path, option: str) -> None:
    result = CliRunner().invoke(app, ["sweep", str(LOG), "-p", "none", "--axis",
                                      "server.window_tokens=100000", option, "setting",
                                      "--out", str(tmp_path / "o"), "--cache-dir",
                                      str(tmp_path / "c"), "--jobs", "1"])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "objective 'setting': a setting's id" in text and "tokens_sent" in text
    assert not (tmp_path / "o").exists()
