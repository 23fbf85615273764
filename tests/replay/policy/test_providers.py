"""Provider profiles: separate from the harness policy, chosen by name, overridable, and what
comparisons are priced under (``replay.policy.providers``; issue 16 item 1)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import PolicyError
from replay.policy import Cache, load_policy, policy_from_dict, policy_to_dict, presets
from replay.policy.pricing import one_provider, with_provider
from replay.policy.providers import DEFAULT_PROVIDER, PROVIDERS

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "write-heavy.jsonl"

# The OpenAI GPT-5 list price (openai.com/api/pricing), written out here independently of the
# profile: USD per million tokens for fresh input, cached input and output; no write premium.
OPENAI_IN, OPENAI_READ, OPENAI_OUT = 1.25, 0.125, 10.0


def test_the_default_profile_is_the_default_cache() -> None:
    assert PROVIDERS[DEFAULT_PROVIDER].cache == Cache()
    assert policy_from_dict({}).cache == Cache()


def test_every_profile_names_its_source() -> None:
    for prof in PROVIDERS.values():
        assert "harness-policies.md" in prof.source
        assert "pricing" in prof.source or "NO list price" in prof.source


def test_a_policy_names_a_provider_and_overrides_one_price() -> None:
    p = policy_from_dict({"provider": "vllm", "cache": {"prices": {"output_per_mtok": 12.0}}})
    vllm = PROVIDERS["vllm"].cache
    assert p.provider == "vllm"
    assert p.cache.prices.output_per_mtok == 12.0
    assert p.cache.prices.input_per_mtok == vllm.prices.input_per_mtok
    assert (p.cache.granularity_tokens, p.cache.ttl_s) == (vllm.granularity_tokens, vllm.ttl_s)
    assert policy_from_dict(policy_to_dict(p)) == p


def test_an_unknown_provider_is_refused_with_the_field_and_a_suggestion() -> None:
    with pytest.raises(PolicyError) as err:
        policy_from_dict({"provider": "anthropic-sonet-4"}, "p.yaml")
    assert "provider" in str(err.value) and "anthropic-sonnet-4" in str(err.value)


def test_presets_name_their_profile() -> None:
    named = {n: load_policy(n).provider for n in presets()}
    assert named["claude-code"] == "anthropic-sonnet-4"
    assert named["two-tier-corrected"] == "vllm"
    assert named["corecoder"] == "openai"


def test_a_comparison_puts_every_policy_under_the_first_ones_provider_and_says_so() -> None:
    a, b = load_policy("claude-code"), load_policy("two-tier-corrected")
    assert a.cache != b.cache
    priced = one_provider([a, b])
    assert priced.one_provider and priced.policies[1].cache == a.cache
    assert "anthropic-sonnet-4" in priced.note and "two-tier-corrected: vllm" in priced.note
    own = one_provider([a, b], own=True)
    assert not own.one_provider and own.policies[1].cache == b.cache
    assert "cost differences include the price difference" in own.note
    forced = one_provider([a, b], "openai")
    assert all(p.cache == PROVIDERS["openai"].cache for p in forced.policies)


@given(st.integers(0, 400_000), st.integers(0, 400_000), st.integers(0, 50_000),
       st.sampled_from(sorted(PROVIDERS)))
def test_two_presets_price_the_same_tokens_alike_under_one_provider(
        n_in: int, prefix: int, n_out: int, name: str) -> None:
    from replay.engine.cache import request_cache

    a = with_provider(load_policy("claude-code"), name)
    b = with_provider(load_policy("two-tier-corrected"), name)
    assert request_cache(a.cache, n_in, prefix, n_out) == request_cache(b.cache, n_in, prefix, n_out)


def _requests(tmp_path: Path, policy: str, *extra: str) -> list[dict]:
    out = tmp_path / policy.replace("/", "_")
    result = runner.invoke(app, ["run", "-p", policy, str(LOG), "--out", str(out), "-q",
                                 "--json", *extra])
    assert result.exit_code == 0, result.output
    return pq.read_table(out / "traces" / "requests.parquet").to_pylist()


def test_run_under_one_provider_prices_two_presets_by_one_list(tmp_path: Path) -> None:
    """Two presets whose own price models differ (Anthropic $3 vs vLLM $1 input): under
    ``--provider openai`` every request of both costs what the OpenAI list price says for its
    fresh, cached and output tokens."""
    for policy in ("claude-code", "two-tier-corrected"):
        rows = _requests(tmp_path, policy, "--provider", "openai")
        assert rows
        for r in rows:
            assert r["cache_write_tokens"] == 0  # OpenAI: no write premium
            want = (r["fresh_tokens"] * OPENAI_IN + r["cached_tokens"] * OPENAI_READ
                    + r["output_tokens"] * OPENAI_OUT) / 1e6
            # cost_usd includes the induced re-reads' calls (#22), priced the same way
            assert r["cost_usd"] - r["induced_cost_usd"] == pytest.approx(want, rel=1e-9,
                                                                          abs=1e-9)


def test_diff_of_one_harness_under_two_price_models_shows_no_cost_change(tmp_path: Path) -> None:
    """The same harness with two price models sends the same tokens: ``diff`` puts both under
    one provider by default, so cost does not move; ``--own-providers`` shows the price gap."""
    doc = policy_to_dict(load_policy("two-tier-corrected"))
    doc.update(name="tt-anthropic", provider="anthropic-sonnet-4")
    doc.pop("cache")
    (tmp_path / "tt.yaml").write_text(json.dumps(doc))
    args = ["diff", str(LOG), "-p", "two-tier-corrected", "-p", str(tmp_path / "tt.yaml"),
            "--out", str(tmp_path / "o"), "-q", "--json"]

    def cost_rows(*extra: str) -> tuple[list[dict], str]:
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        return [r for r in doc["rows"] if r["metric"] == "cost_usd"], doc["pricing"]

    same, note = cost_rows()
    assert same and all(r["a"] == r["b"] for r in same)
    assert "priced under one provider, vllm" in note
    own, note = cost_rows("--own-providers")
    assert all(r["b"] > r["a"] > 0 for r in own)  # Anthropic's $3 input against vLLM's $1
    assert "include the price difference" in note


def test_with_provider_drops_the_policys_own_overrides() -> None:
    p = policy_from_dict({"provider": "vllm", "cache": {"ttl_s": 5.0}})
    q = with_provider(p, "vllm")
    assert q.cache == PROVIDERS["vllm"].cache and q.cache != p.cache
    assert dataclasses.replace(q, cache=p.cache) == p


def test_the_readme_provider_example_is_a_valid_policy() -> None:
    import yaml

    text = (REPO / "README.md").read_text().split("## Providers", 1)[1]
    doc = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    p = policy_from_dict(doc, "README")
    assert p.provider == "vllm" and p.cache.ttl_s == 600
    assert p.cache.granularity_tokens == PROVIDERS["vllm"].cache.granularity_tokens


def test_the_providers_table_shows_what_a_written_token_costs() -> None:
    """A profile without a write premium charges a written token as plain input: the table
    says that price (not "unknown", which would be a lie: it is known), and a price of
    $0.125 a million tokens is shown as such, not rounded to 0.12."""
    table = runner.invoke(app, ["providers", "--columns", "name,cache_read,cache_write"])
    assert table.exit_code == 0, table.output
    row = next(line for line in table.output.splitlines() if "│ openai " in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells == ["openai", f"{OPENAI_READ:.3f}", f"{OPENAI_IN:.2f}"]
    rows = {r["name"]: r for r in json.loads(runner.invoke(app, ["providers", "--json"]).output)}
    assert rows["openai"]["cache_write"] == OPENAI_IN and rows["openai"]["write_premium"] is False
    assert rows["anthropic-sonnet-4"]["cache_write"] == 3.75
    assert rows["anthropic-sonnet-4"]["write_premium"] is True
