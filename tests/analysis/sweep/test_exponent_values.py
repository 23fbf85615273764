"""Numbers in exponent form (``1e6``, ``1.5e5``, ``-2E3``) in an axis, a grid file and a policy
file are numbers, as YAML 1.2 and a user read them: PyYAML (YAML 1.1) read them as text, and
``--axis 'server.window_tokens=1e6'`` was refused as "expected a whole number, got '1e6'"."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from analysis.sweep.grid import load_grid, load_spec, settings
from replay.errors import PolicyError
from replay.policy import load_policy
from replay.safe_yaml import parse_yaml
from tests.analysis.sweep.small_grid import BASE


@pytest.mark.parametrize(("text", "value"), [
    ("1e6", 1e6), ("1.5e5", 1.5e5), ("-2E3", -2e3), ("+1e-3", 1e-3), (".5e1", 5.0),
    ("1.e2", 100.0), ("1.0e+6", 1e6)])
def test_an_exponent_form_is_a_float(text: str, value: float) -> None:
    got = parse_yaml(text)
    assert type(got) is float and got == value
    assert parse_yaml(f"[{text}]") == [value] and parse_yaml(f"a: {text}") == {"a": value}


@pytest.mark.parametrize("text", [
    "1e", "e6", "1e6x", "1e6,2", "'1e6'", "1_000", "0x1F", "1:30", ".inf", "yes", "1.5", "12",
    "1e 6", "0o17", "~", "1e6.5", "abc"])
def test_every_other_scalar_is_read_as_before(text: str) -> None:
    before = yaml.safe_load(text)
    assert parse_yaml(text) == before and type(parse_yaml(text)) is type(before)
    assert type(yaml.safe_load("1e6")) is str  # PyYAML's own loader is left as it is


def test_an_inline_axis_and_a_grid_file_read_exponents_as_numbers(tmp_path: Path) -> None:
    spec = load_spec(None, ["tiers.0.trigger.at_frac=5e-1,7.5E-1", "server.window_tokens=1e5"])
    assert [a.values for a in spec.axes] == [(0.5, 0.75), (1e5,)]
    ranged = load_spec(None, ["tiers.0.trigger.at_frac=1e-1:5e-1:3"]).axes[0]
    assert ranged.points() == (0.1, 0.3, 0.5)
    whole = load_spec(None, ["tiers.1.trigger.at_tokens=40000,80000"])  # (as before)
    assert [s.policy.tiers[1].trigger.at_tokens for s in settings(load_policy(BASE), whole)] \
        == [40000, 80000]
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  tiers.0.trigger.at_frac: [2.5e-1, 5e-1]\n")
    assert load_grid(grid).axes[0].values == (0.25, 0.5)
    chosen = settings(load_policy("corecoder"), load_spec(grid))
    assert [s.policy.tiers[0].trigger.at_frac for s in chosen] == [0.25, 0.5]


def test_a_whole_number_in_exponent_form_is_refused_where_a_whole_number_is_as_40000_0_is(
        tmp_path: Path) -> None:
    """A field of whole numbers refuses a decimal, 40000.0 as before and 1e6 alike, saying how
    to write it; the message names a float, never the text '1e6'."""
    for written in ("40000.0", "4e4"):
        with pytest.raises(PolicyError, match=r"expected a whole number, got 40000\.0: .*"
                                              r"write 40000"):
            settings(load_policy(BASE), load_spec(None, [f"tiers.1.trigger.at_tokens={written}"]))
        policy = tmp_path / "p.yaml"
        policy.write_text(f"server: {{window_tokens: {written}}}\n")
        with pytest.raises(PolicyError, match=r"got 40000\.0: .*write 40000"):
            load_policy(str(policy))
    with pytest.raises(PolicyError, match=r"expected a whole number, got 0\.5$"):
        settings(load_policy("corecoder"), load_spec(None, ["server.window_tokens=0.5"]))
