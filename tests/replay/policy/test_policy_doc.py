"""Policy files as people write them: ``extends:`` a preset with changed keys, and the YAML
``show-policy`` prints (``replay.policy.doc``; issue 16 item 8)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import PolicyError
from replay.policy import load_policy, policy_from_dict, presets, replace_path
from replay.policy.doc import policy_yaml

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_extends_a_preset_changing_one_nested_key(tmp_path: Path) -> None:
    p = load_policy(_write(tmp_path, "mine.yaml", "extends: two-tier-corrected\n"
                                                  "server: {window_tokens: 100000}\n"))
    base = load_policy("two-tier-corrected")
    assert p.server.window_tokens == 100_000
    assert p.server.reserve_tokens == base.server.reserve_tokens  # merged, not replaced
    assert p.tiers == base.tiers and p.cache == base.cache and p.provider == "vllm"
    assert p.name == "mine"  # named after its file, not the preset


def test_extends_changes_a_tier_by_name(tmp_path: Path) -> None:
    p = load_policy(_write(tmp_path, "t.yaml", "extends: two-tier-corrected\nname: earlier\n"
                                               "tiers: {tier2_summary: {trigger: {at_tokens: "
                                               "60000}}}\n"))
    want = replace_path(load_policy("two-tier-corrected"), "tiers.1.trigger.at_tokens", 60000)
    assert p == dataclasses.replace(want, name="earlier")


def test_extends_with_a_list_of_tiers_replaces_them(tmp_path: Path) -> None:
    p = load_policy(_write(tmp_path, "t.yaml", "extends: two-tier-corrected\n"
                                               "tiers: [{type: collapse, name: only}]\n"))
    assert [t.name for t in p.tiers] == ["only"]


def test_extends_a_file_relative_to_the_extending_one(tmp_path: Path) -> None:
    _write(tmp_path, "base.yaml", "extends: claude-code\nserver: {window_tokens: 180000}\n")
    (tmp_path / "sub").mkdir()
    p = load_policy(_write(tmp_path / "sub", "top.yaml", "extends: ../base.yaml\n"
                                                         "provider: openai\n"))
    assert p.server.window_tokens == 180_000 and p.server.reserve_tokens == 20_000
    assert p.provider == "openai" and p.cache.granularity_tokens == 128


def test_unknown_preset_is_refused_with_the_field_and_a_suggestion(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.yaml", "extends: two-tier-corected\n")
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    msg = str(err.value)
    assert str(path) in msg and "extends" in msg and "two-tier-corrected" in msg


def test_unknown_tier_name_is_refused_with_its_path(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.yaml", "extends: two-tier-corrected\n"
                                      "tiers: {tier2_sumary: {keep_messages: 4}}\n")
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    assert "tiers.tier2_sumary" in str(err.value) and "tier2_summary" in str(err.value)


def test_a_cycle_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", "extends: b.yaml\n")
    _write(tmp_path, "b.yaml", "extends: a.yaml\n")
    with pytest.raises(PolicyError) as err:
        load_policy(tmp_path / "a.yaml")
    assert "cycle" in str(err.value) and "extends" in str(err.value)


def test_a_self_extending_file_is_a_cycle(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cycle"):
        load_policy(_write(tmp_path, "a.yaml", "extends: a.yaml\n"))


def test_a_bad_key_under_extends_still_names_its_path(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.yaml", "extends: claude-code\nserver: {windw_tokens: 5}\n")
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    assert "server.windw_tokens" in str(err.value) and "window_tokens" in str(err.value)


@pytest.mark.parametrize("name", presets())
@pytest.mark.parametrize("defaults", [False, True])
def test_show_policy_yaml_loads_back_to_the_same_policy(name: str, defaults: bool) -> None:
    p = load_policy(name)
    assert policy_from_dict(yaml.safe_load(policy_yaml(p, defaults=defaults))) == p


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(presets()),
       st.sampled_from(["estimator.chars_per_token", "truth.scale", "server.fixed_overhead_tokens",
                        "cache.ttl_s", "cache.prices.output_per_mtok"]),
       st.integers(1, 500))
def test_show_policy_round_trips_a_changed_field(name: str, path: str, value: int) -> None:
    p = replace_path(load_policy(name), path, float(value) if "tokens" not in path else value)
    if path == "estimator.chars_per_token":
        p = replace_path(p, "estimator.method", "chars")
    assert policy_from_dict(yaml.safe_load(policy_yaml(p))) == p


def test_show_policy_prints_yaml_and_defaults_fill_every_field() -> None:
    short = runner.invoke(app, ["show-policy", "two-tier-corrected"])
    full = runner.invoke(app, ["show-policy", "two-tier-corrected", "--defaults"])
    assert short.exit_code == full.exit_code == 0
    doc, every = yaml.safe_load(short.stdout), yaml.safe_load(full.stdout)
    assert doc["provider"] == "vllm" and "cache" not in doc  # the profile's values, unchanged
    assert "reserve_counts" not in doc["server"] and every["server"]["reserve_counts"] is True
    assert every["cache"]["granularity_tokens"] == 16
    assert len(full.stdout) > len(short.stdout)


def test_the_readme_extends_example_loads(tmp_path: Path) -> None:
    text = (REPO / "README.md").read_text()
    example = text.split("A policy can start from a preset", 1)[1].split("```yaml\n", 1)[1]
    path = _write(tmp_path, "my-policy.yaml", example.split("```", 1)[0])
    p = load_policy(path)
    assert p.name == "my-policy" and p.server.window_tokens == 100_000
    assert p.tiers[1].trigger.at_tokens == 60_000


def test_a_preset_is_parsed_once_until_its_file_changes(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from replay.policy import doc

    shipped = doc.PRESETS_DIR / "two-tier-corrected.yaml"
    preset = tmp_path / "two-tier-corrected.yaml"
    preset.write_bytes(shipped.read_bytes())
    parsed: list[Path] = []
    read = doc.read_yaml_file
    monkeypatch.setattr(doc, "PRESETS_DIR", tmp_path)
    monkeypatch.setattr(doc, "_PRESET_DOCS", {})
    monkeypatch.setattr(doc, "read_yaml_file", lambda p, **k: parsed.append(p) or read(p, **k))
    first, second = load_policy("two-tier-corrected"), load_policy("two-tier-corrected")
    assert first == second and first.server.window_tokens == 130000
    assert parsed == [preset]
    got, _ = doc.read_policy_doc("two-tier-corrected")  # a copy: changing it changes no load
    got["server"]["window_tokens"] = 7
    assert load_policy("two-tier-corrected") == first and parsed == [preset]
    preset.write_text(preset.read_text().replace("window_tokens: 130000", "window_tokens: 90000"))
    assert load_policy("two-tier-corrected").server.window_tokens == 90000  # changed: read again
    assert parsed == [preset, preset]
