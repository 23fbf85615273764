"""Sweep grids: the product in order, ranges, random and one-at-a-time designs, the size limit,
settings validated and named by their path, grid files and inline axes."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from analysis.sweep.grid import MAX_CELLS, apply, load_grid, load_spec, make_spec, settings
from replay.errors import PolicyError
from replay.policy import load_policy
from tests.analysis.sweep.small_grid import BASE


def test_grid_is_the_product_in_order_with_whole_number_ranges() -> None:
    spec = make_spec({"tiers.0.min_reclaim_frac": [0, 0.0625, 0.125],
                      "tiers.1.trigger.at_tokens": {"start": 40000, "stop": 120000, "num": 5}})
    chosen = settings(load_policy(BASE), spec)
    assert spec.size == len(chosen) == 15
    assert chosen[0].params == (("tiers.0.min_reclaim_frac", 0.0),
                                ("tiers.1.trigger.at_tokens", 40000))
    assert [dict(s.params)["tiers.1.trigger.at_tokens"] for s in chosen[:5]] == [
        40000, 60000, 80000, 100000, 120000]
    assert len({s.id for s in chosen}) == 15
    assert all(s.id == s.policy.digest() for s in chosen)


def test_settings_share_their_equal_parts_as_one_object() -> None:
    """A sweep pickles a shared part once (its settings blob): each field outside the tiers and
    each tier, by its place, is one object across the grid when equal, and the policies are the
    ones ``apply`` makes."""
    base = load_policy(BASE)
    spec = make_spec({"tiers.0.min_reclaim_frac": [0, 0.125],
                      "tiers.1.trigger.at_tokens": [40000, 80000, 120000]})
    chosen = settings(base, spec)
    assert [s.policy for s in chosen] == [apply(base, s.params).policy for s in chosen]
    assert all(s.id == s.policy.digest() for s in chosen)
    for k, distinct in ((0, 2), (1, 3), (2, 1)):  # tiers 0 and 1 swept, tier 2 not
        for a, b in itertools.combinations(chosen, 2):
            assert (a.policy.tiers[k] is b.policy.tiers[k]) == (a.policy.tiers[k]
                                                                == b.policy.tiers[k])
        assert len({id(s.policy.tiers[k]) for s in chosen}) == distinct
    for name in ("server", "estimator", "truth", "behaviour", "cache"):
        assert len({id(getattr(s.policy, name)) for s in chosen}) == 1


def test_step_ranges_include_the_stop_and_float_ranges_stay_floats() -> None:
    spec = make_spec({"tiers.2.margin_frac": {"start": 0.1, "stop": 0.3, "step": 0.05}})
    assert spec.axes[0].points() == (0.1, 0.15, 0.2, 0.25, 0.3)


def test_random_design_is_seeded_and_stays_within_bounds() -> None:
    axes = {"tiers.0.protect.frac": {"start": 0.1, "stop": 0.5, "num": 2},
            "tiers.1.keep_messages": [4, 8, 16]}
    a = settings(load_policy(BASE), make_spec(axes, design="random", samples=20, seed=7))
    b = settings(load_policy(BASE), make_spec(axes, design="random", samples=20, seed=7))
    c = settings(load_policy(BASE), make_spec(axes, design="random", samples=20, seed=8))
    assert [s.id for s in a] == [s.id for s in b] != [s.id for s in c]
    fracs = [dict(s.params)["tiers.0.protect.frac"] for s in a]
    assert all(0.1 <= f <= 0.5 for f in fracs) and len(set(fracs)) == len(a)
    assert {dict(s.params)["tiers.1.keep_messages"] for s in a} <= {4, 8, 16}


def test_one_at_a_time_varies_each_axis_alone_around_the_base() -> None:
    base = load_policy(BASE)
    spec = make_spec({"tiers.1.keep_messages": [8, 24, 40], "tiers.2.margin_frac": [0.1, 0.2]},
                     design="one_at_a_time")
    chosen = settings(base, spec)
    assert chosen[0].id == base.digest()
    assert spec.size == 6 and len(chosen) == 4  # keep_messages=24 and margin 0.2 are the base
    for s in chosen[1:]:
        changed = [p for p, v in s.params if v != dict(apply(base, {}, report=[p]).params)[p]]
        assert len(changed) == 1


def test_absurd_grids_are_refused_with_their_size() -> None:
    spec = make_spec({"tiers.1.keep_messages": list(range(1000)),
                      "tiers.1.summary_tokens": list(range(1, 1001))})
    with pytest.raises(PolicyError, match=r"1,000,000 settings \(1000 × 1000\)"):
        settings(load_policy(BASE), spec)
    assert MAX_CELLS == 100_000


@pytest.mark.parametrize(("design", "said"), [("grid", "use design: random or one_at_a_time"),
                                              ("random", "draw fewer"),
                                              ("one_at_a_time", "fewer values")])
def test_too_many_settings_say_what_helps_under_each_design(design: str, said: str) -> None:
    """A random design of 10^8 samples was told 'use design: random or one_at_a_time': the
    design it had."""
    spec = make_spec({"tiers.1.summary_tokens": list(range(1, MAX_CELLS + 2))}, design=design,
                     samples=MAX_CELLS + 1)
    with pytest.raises(PolicyError, match=said) as err:
        settings(load_policy(BASE), spec)
    assert design == "grid" or "use design" not in str(err.value)


@pytest.mark.parametrize(("axes", "path"), [
    ({"tiers.7.keep_messages": [1]}, "tiers.7"),
    ({"tiers.0.min_reclaim_frac": [1.5]}, "tiers.0.min_reclaim_frac"),
    ({"tiers.1.trigger.at_tokns": [1]}, "tiers.1.trigger.at_tokns"),
    ({"tiers.1.trigger.at_frac": [0.5]}, "tiers.1.trigger"),
])
def test_invalid_settings_name_the_path(axes: dict[str, list[float]], path: str) -> None:
    with pytest.raises(PolicyError) as err:
        settings(load_policy(BASE), make_spec(axes))
    assert err.value.key == path


def test_fields_that_change_together_are_validated_together() -> None:
    spec = make_spec({"tiers.1.trigger.at_tokens": [None], "tiers.1.trigger.at_frac": [0.5, 0.7]})
    chosen = settings(load_policy(BASE), spec)
    assert [s.policy.tiers[1].trigger.at_frac for s in chosen] == [0.5, 0.7]


def test_grid_yaml_and_inline_axes(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("grid:\n  tiers.0.min_reclaim_frac: [0, 0.125]\n"
                    "  tiers.1.trigger.at_tokens: {start: 40000, stop: 80000, num: 3}\n"
                    "design: grid\n")
    assert load_grid(path).size == 6
    spec = load_spec(path, ["tiers.2.margin_frac=0.1,0.2", "tiers.1.keep_messages=8:24:3"])
    assert spec.size == 6 * 2 * 3
    assert spec.axes[-1].points() == (8, 16, 24)
    bad = tmp_path / "bad.yaml"
    bad.write_text("grid: {tiers.0.min_reclaim_frac: [0]}\ndesing: random\n")
    with pytest.raises(PolicyError, match="desing"):
        load_grid(bad)


def test_a_grid_axis_given_twice_is_refused(tmp_path: Path) -> None:
    """YAML keeps the last of two equal keys: the first axis would vanish from the sweep."""
    path = tmp_path / "grid.yaml"
    path.write_text("grid:\n  tiers.0.min_reclaim_frac: [0, 0.125]\n"
                    "  tiers.0.min_reclaim_frac: [0.5]\n")
    with pytest.raises(PolicyError, match=r"a key is given twice in one mapping \(lines 2 and 3"):
        load_grid(path)


def test_two_axes_on_one_field_are_refused() -> None:
    """A tier by index and by name is one field: the later axis's values replaced the
    earlier's in every setting, so the sweep ran none of them and its table showed them as
    swept (two axes of [0, 0.5] and [0.25] gave one setting, 0.25 in both columns)."""
    spec = make_spec({"tiers.0.min_reclaim_frac": [0, 0.5],
                      "tiers.tier1_trim.min_reclaim_frac": [0.25]})
    with pytest.raises(PolicyError, match="sets the same field as tiers.0.min_reclaim_frac") \
            as err:
        settings(load_policy(BASE), spec)
    assert err.value.key == "tiers.tier1_trim.min_reclaim_frac"
    distinct = make_spec({"tiers.tier1_trim.min_reclaim_frac": [0, 0.5],
                          "tiers.tier2_summary.keep_messages": [8, 16]})
    assert len(settings(load_policy(BASE), distinct)) == 4


def test_an_inline_axis_given_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="tiers.1.keep_messages is given twice"):
        load_spec(None, ["tiers.1.keep_messages=8,16", "tiers.1.keep_messages=24"])
    path = tmp_path / "grid.yaml"
    path.write_text("grid:\n  tiers.1.keep_messages: [8, 16]\n")
    with pytest.raises(PolicyError, match="tiers.1.keep_messages is given twice"):
        load_spec(path, ["tiers.1.keep_messages=24"])


def test_a_grid_files_errors_name_the_file(tmp_path: Path) -> None:
    """Errors found once the settings are made (too many, two axes on one field) named
    ``<grid>``, not the file the user wrote."""
    path = tmp_path / "my-grid.yaml"
    path.write_text("grid:\n  tiers.0.min_reclaim_frac: [0, 0.5]\n"
                    "  tiers.tier1_trim.min_reclaim_frac: [0.25]\n")
    with pytest.raises(PolicyError) as err:
        settings(load_policy(BASE), load_spec(path))
    assert str(path) in str(err.value) and "<grid>" not in str(err.value)
    big = tmp_path / "big.yaml"
    big.write_text("grid:\n  tiers.0.min_reclaim_frac: {start: 0, stop: 1, num: 400}\n"
                   "  tiers.1.keep_messages: {start: 1, stop: 400, num: 400}\n")
    with pytest.raises(PolicyError, match="more than the") as err:
        settings(load_policy(BASE), load_spec(big))
    assert str(big) in str(err.value)
    with pytest.raises(PolicyError, match="more than the") as err:
        settings(load_policy(BASE), load_spec(None, ["tiers.0.min_reclaim_frac=0:1:400",
                                                     "tiers.1.keep_messages=1:400:400"]))
    assert "<--axis>" in str(err.value)


@pytest.mark.parametrize(("text", "said"), [
    ("grid: {name: [2026-01-01, b]}\n", "a YAML date"),
    ("grid: {tiers.0.protect.tool_results: !!binary aGVsbG8=}\n", "a YAML bytes"),
    ("grid: {tiers.0.protect: [{1: a, b: c}]}\n", "a mapping with a key that is not text (1)"),
    ("grid: {tiers.0.protect: [{2026-01-01: a}]}\n", "a mapping with a key that is not text (datetime"),
])
def test_a_grid_value_no_policy_field_takes_is_refused_not_a_traceback(tmp_path: Path, text: str,
                                                                      said: str) -> None:
    """An unquoted date, a ``!!binary`` or a mapping with a number key as a grid value ended
    the sweep in a TypeError traceback (exit 1): its setting could not be named."""
    path = tmp_path / "g.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError, match="not a value a policy field takes: " + re.escape(said)):
        load_spec(path)
    with pytest.raises(PolicyError, match="a YAML date"):
        load_spec(None, ["name=2026-01-01,b"])


def test_a_grid_value_that_is_a_mapping_of_text_keys_is_a_value_not_a_traceback() -> None:
    """A mapping value with text keys (``--axis 'tiers.0.protect={frac: 0.5}'``) ended the
    sweep in an UnboundLocalError traceback: the check of its keys returned for every mapping."""
    spec = load_spec(None, ["tiers.0.protect={frac: 0.5}"])
    assert spec.axes[0].values == ({"frac": 0.5},)
    got = settings(load_policy(BASE), spec)
    assert len(got) == 1 and got[0].policy.tiers[0].protect.frac == 0.5


@pytest.mark.parametrize("rng", [
    "{start: 0, stop: .inf, step: 0.1}", "{start: .nan, stop: 1, step: 0.1}",
    "{start: 0, stop: 1, step: .inf}", "{start: 0, stop: 1.0e+308, step: 1.0e-308}",
    "{start: 0, stop: .nan, num: 3}", "{start: 0, stop: .inf, num: 3}",
    "{start: 0, stop: " + "1" * 400 + ", num: 3}", "{start: -.inf, stop: 0, num: 3}",
])
@pytest.mark.parametrize("design", ["grid", "random", "one_at_a_time"])
def test_a_range_bound_that_is_not_finite_is_refused_with_its_path(tmp_path: Path, rng: str,
                                                                  design: str) -> None:
    """Infinite, nan or float-overflowing range bounds ended the sweep in an OverflowError or
    ValueError traceback (exit 1), or in a policy error about a nan the user never wrote."""
    path = tmp_path / "g.yaml"
    path.write_text(f"grid:\n  tiers.0.min_reclaim_frac: {rng}\ndesign: {design}\n")
    with pytest.raises(PolicyError, match=r"grid\.tiers\.0\.min_reclaim_frac: range bounds must "
                                          r"be finite numbers"):
        settings(load_policy(BASE), load_spec(path))


def test_a_step_too_small_to_count_is_refused_and_a_huge_size_is_said_short(
        tmp_path: Path) -> None:
    """A step whose points overflow a float's count was an OverflowError traceback; a count
    that does fit was printed with every one of its 300 digits, twice."""
    path = tmp_path / "g.yaml"
    path.write_text("grid:\n  tiers.0.min_reclaim_frac: {start: 0, stop: 1, step: 5.0e-324}\n")
    with pytest.raises(PolicyError, match=r"\.step: 5e-324 is too small a step"):
        load_spec(path)
    path.write_text("grid:\n  tiers.0.min_reclaim_frac: {start: 0, stop: 1, step: 1.0e-300}\n")
    with pytest.raises(PolicyError) as err:
        settings(load_policy(BASE), load_spec(path))
    assert "1e+300 settings is more than the 100,000" in str(err.value)
    assert len(str(err.value)) < 300
