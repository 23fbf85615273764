"""Policy files: presets load, bad policies fail with the file, the key path and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.errors import PolicyError
from replay.policy import load_policy, policy_from_dict, policy_to_dict, presets, replace_path


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", presets())
def test_every_preset_loads_round_trips_and_names_its_source(name: str) -> None:
    policy = load_policy(name)
    assert policy.source, f"preset {name} must name where its settings come from"
    assert policy_from_dict(policy_to_dict(policy)) == policy


def test_presets_reproduce_the_seed_settings() -> None:
    core = load_policy("corecoder")
    assert [t.trigger.at_frac for t in core.tiers[:2]] == [0.5, 0.7]
    assert core.tiers[2].margin_frac == pytest.approx(0.1)
    assert core.estimator.method == "chars" and core.estimator.chars_per_token == 3.0
    assert (core.tiers[0].min_chars, core.tiers[0].min_lines) == (1501, 7)
    assert (core.tiers[1].keep_messages, core.tiers[2].keep_messages) == (8, 4)
    orig, fixed = load_policy("two-tier-original"), load_policy("two-tier-corrected")
    assert "again" in orig.tiers[0].placeholder.template
    assert orig.tiers[0].protect.tokens == 12000 and orig.subtract_reserve is False
    assert {t.when for t in orig.tiers} == {"after"}
    assert fixed.subtract_reserve is True and fixed.tiers[2].margin_frac == pytest.approx(0.2)
    assert (fixed.tiers[0].placeholder.head_chars, fixed.tiers[0].placeholder.tail_chars) == (240, 120)
    assert fixed.tiers[0].min_reclaim_frac == pytest.approx(0.125)
    assert fixed.tiers[1].keep_max_frac == pytest.approx(0.125)
    assert "write_args" in fixed.tiers[0].blocks and "write_args" not in orig.tiers[0].blocks


@pytest.mark.parametrize(("text", "key", "why"), [
    ("server: {window_tokns: 1000}\n", "server.window_tokns", "did you mean 'window_tokens'"),
    ("server: {window_tokens: big}\n", "server.window_tokens", "expected a whole number"),
    ("tiers:\n  - {type: trim, trigger: {at_frac: 1.5}}\n", "tiers.0.trigger.at_frac",
     "between 0 and 1"),
    ("tiers:\n  - {type: trimm}\n", "tiers.0.type", "did you mean 'trim'"),
    ("tiers:\n  - {type: {a: 1}}\n", "tiers.0.type", "unknown tier type {'a': 1}"),
    ("tiers:\n  - {type: [trim]}\n", "tiers.0.type", "unknown tier type ['trim']"),
    ("tiers:\n  - {type: trim, trigger: {at_frac: 0.5, at_tokens: 100}}\n", "tiers.0.trigger",
     "exactly one"),
    ("server: {window_tokens: 1000, reserve_tokens: 1000}\n", "server.reserve_tokens",
     "leaves no room"),
    ("tiers:\n  - {type: trim, min_reclaim_tokens: 5, min_reclaim_frac: 0.1}\n",
     "tiers.0.min_reclaim_frac", "not both"),
    ("estimator: {method: guess}\n", "estimator.method", "not one of"),
    ("tiers:\n  - {type: summarise, reinsert: [tasks]}\n", "tiers.0.reinsert.0", "did you mean 'task'"),
    ("subtract_reserve: 1\n", "subtract_reserve", "expected true or false"),
    ("tiers:\n  - {type: collapse, drop_frac: 0}\n", "tiers.0.drop_frac", "drops nothing"),
    ("tiers:\n  - {type: collapse, drop_frac: 0.5, keep_messages: 10}\n",
     "tiers.0.keep_messages", "drop_frac decides"),
    # a truth scaled by 1e-6 sent 0 tokens at every request, exit 0; an estimate so scaled
    # reached no trigger, as a scale of 0 (refused) would not
    ("truth: {method: tokenizer, scale: 0.000001}\n", "truth.scale", "must be at least 0.001"),
    ("estimator: {scale: 1.0e-300}\n", "estimator.scale", "must be at least 0.001"),
])
def test_invalid_policy_names_file_key_and_reason(tmp_path: Path, text: str, key: str, why: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    message = str(err.value)
    assert str(path) in message and key in message and why in message, message


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(PolicyError, match="invalid YAML"):
        load_policy(path)


def test_missing_policy_lists_the_presets() -> None:
    with pytest.raises(PolicyError, match="two-tier-corrected"):
        load_policy("no-such-policy")


def test_replace_path_changes_one_field_and_validates() -> None:
    base = load_policy("two-tier-corrected")
    changed = replace_path(base, "tiers.1.trigger.at_tokens", 60000)
    assert changed.tiers[1].trigger.at_tokens == 60000
    assert changed.tiers[0] == base.tiers[0] and changed.digest() != base.digest()
    with pytest.raises(PolicyError, match="between 0 and 1"):
        replace_path(base, "tiers.0.min_reclaim_frac", 2.0)


def test_a_setting_the_collapse_tier_would_ignore_is_refused_not_swept() -> None:
    """Cline's tier drops a fraction (drop_frac): a sweep or --set of its keep_messages changed
    nothing in the replay (every row the same) and said nothing; now it is refused, and so is a
    drop_frac of 0 (the tier would fire and never drop); keep_messages: null goes with it."""
    cline = load_policy("cline")
    with pytest.raises(PolicyError, match="drop_frac decides"):
        replace_path(cline, "tiers.truncate_half.keep_messages", 10)
    with pytest.raises(PolicyError, match="drops nothing"):
        replace_path(cline, "tiers.truncate_half.drop_frac", 0.0)
    assert replace_path(cline, "tiers.truncate_half.keep_messages", None).tiers[0].keep_messages is None
    assert replace_path(cline, "tiers.truncate_half.drop_frac", 0.25).tiers[0].drop_frac == 0.25


def test_a_file_named_as_a_preset_never_stands_in_for_it(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A file in the current folder named like a preset was read for that preset without a
    word: ``-p none`` replayed a file ``none`` (and, holding ``name: none``, said so nowhere),
    and the shipped ``deepagents-no-profile``, which ``extends: deepagents``, extended a file
    ``deepagents`` there.  A preset's own parent is a preset; a bare name that is both is
    refused; ``./none`` names the file."""
    monkeypatch.chdir(tmp_path)
    expected = load_policy("deepagents-no-profile")
    (tmp_path / "deepagents").write_text("name: deepagents\nextends: none\n")
    assert load_policy("deepagents-no-profile") == expected
    (tmp_path / "none").write_text("name: none\nextends: two-tier-corrected\n")
    with pytest.raises(PolicyError, match="'none' is both a preset and this file"):
        load_policy("none")
    assert load_policy("./none").tiers == load_policy("two-tier-corrected").tiers
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "p.yaml").write_text("name: p\nextends: none\n")
    (tmp_path / "sub" / "none").write_text("name: other\n")
    with pytest.raises(PolicyError, match="'none' is both a preset and this file"):
        load_policy(tmp_path / "sub" / "p.yaml")
