"""The order a sweep replays its settings in (``replay.engine.share.share_rank``)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from replay.engine.share import share_rank
from replay.policy import Policy, Trigger, load_policy, replace_path
from tests.strategies import policies


def _setting(at_tokens: int, protect: float, margin: float) -> Policy:
    policy = load_policy("two-tier-corrected")
    for path, value in (("tiers.1.trigger.at_tokens", at_tokens),
                        ("tiers.0.protect.frac", protect), ("tiers.2.margin_frac", margin)):
        policy = replace_path(policy, path, value)
    return policy


def test_settings_differing_in_levels_and_token_protection_come_together_lowest_first() -> None:
    """One group (the protected fraction is a token protection, the summary trigger and the
    emergency margin levels), by the protected tokens, then by the summary trigger, then by the
    emergency level (1 - margin: a wider margin is a lower level)."""
    given_order = [(80000, 0.3, 0.1), (40000, 0.05, 0.2), (40000, 0.3, 0.2),
                   (80000, 0.05, 0.1), (40000, 0.3, 0.1), (80000, 0.05, 0.2)]
    rank = share_rank([_setting(*p) for p in given_order])
    ordered = [p for _, p in sorted(zip(rank, given_order))]
    assert ordered == [(40000, 0.05, 0.2), (80000, 0.05, 0.2), (80000, 0.05, 0.1),
                       (40000, 0.3, 0.2), (40000, 0.3, 0.1), (80000, 0.3, 0.1)]


def test_another_protection_or_no_token_protection_is_another_group() -> None:
    """A token protection of another kind of setting (protected messages) is a group of its
    own, in the order it first appears."""
    given_order = [_setting(80000, 0.3, 0.1),
                   replace_path(_setting(40000, 0.3, 0.1), "tiers.0.protect.messages", 4),
                   _setting(40000, 0.05, 0.1)]
    rank = share_rank(given_order)
    assert [rank[i] for i in range(3)] == [1, 2, 0]


@given(st.lists(policies(), min_size=1, max_size=6))
def test_the_rank_is_an_order_of_all_and_groups_keep_their_first_appearance(
        drawn: list[Policy]) -> None:
    """Every policy gets one place; copies under another name (a group of their own: the name
    is not a level) all come after every group of the originals, which appear first."""
    drawn = [dataclasses.replace(p, name="a") for p in drawn]
    named = [*drawn, *(dataclasses.replace(p, name="b") for p in drawn), *drawn]
    rank = share_rank(named)
    assert sorted(rank) == list(range(len(named)))
    names = [named[i].name for i in sorted(range(len(named)), key=rank.__getitem__)]
    n = 2 * len(drawn)
    assert names == ["a"] * n + ["b"] * len(drawn)


def test_a_fraction_level_is_taken_from_each_policys_own_window() -> None:
    """The same summary trigger (half the usable window) under two windows: its level is half
    of each one's, so under the smaller window it comes before a trigger at 70,000 tokens
    (~40,700) and under the larger after it (~92,700), however the tiers seen first were
    worked out."""
    policy = load_policy("two-tier-corrected")
    tiers = list(policy.tiers)
    tiers[1] = dataclasses.replace(tiers[1], trigger=Trigger(at_frac=0.5))
    half = dataclasses.replace(policy, tiers=tuple(tiers))
    large = replace_path(half, "server.window_tokens", 210000)
    at_70k = replace_path(policy, "tiers.1.trigger.at_tokens", 70000)
    large_70k = replace_path(at_70k, "server.window_tokens", 210000)
    given_order = [large, large_70k, half, at_70k]
    rank = share_rank(given_order)
    assert [given_order[i] for i in sorted(range(4), key=rank.__getitem__)] == [
        large_70k, large, half, at_70k]
    # the same tier objects under both windows (as a grid's settings share them)
    large, large_70k = (dataclasses.replace(p, server=large.server) for p in (half, at_70k))
    assert large.tiers[1] is half.tiers[1]
    given_order = [large, large_70k, half, at_70k]
    rank = share_rank(given_order)
    assert [given_order[i] for i in sorted(range(4), key=rank.__getitem__)] == [
        large_70k, large, half, at_70k]
