"""One replay standing for other settings (``replay.engine.share``): only when it is exact."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun
from replay.engine.probe import Probe
from replay.engine.share import Shapes, same_trace
from replay.policy import Collapse, Policy, Trigger, load_policy, replace_path
from tests.replay.engine.share_checks import columns, sharing_on_samples
from tests.strategies import policies, runs


@st.composite
def moved_levels(draw: Any, policy: Policy, probe: Probe) -> Policy:
    """``policy`` with some tiers' level gates moved (a trigger's at_tokens / at_frac, a collapse
    tier's margin), and sometimes another field of a tier changed too. A trigger moved to
    at_tokens is sometimes put at the highest level its shut gate compared in ``probe``'s replay,
    or just above it: the boundary where ``same_trace`` must say no, then yes."""
    tiers = []
    for t in policy.tiers:
        if isinstance(t, Collapse) and t.trigger is None and draw(st.booleans()):
            t = dataclasses.replace(t, margin_frac=draw(st.floats(0.0, 0.5)))
        elif t.trigger is not None and t.trigger.at_frac is not None and draw(st.booleans()):
            seen = probe.shut(id(t.trigger))
            at = draw(st.integers(0, 60000))
            if seen is not None:
                at = draw(st.sampled_from([at, seen, seen + 1]))
            t = dataclasses.replace(t, trigger=Trigger(at_tokens=at))
        if draw(st.integers(0, 4)) == 0:
            t = dataclasses.replace(t, name=t.name + "-renamed")
        tiers.append(t)
    return dataclasses.replace(policy, tiers=tuple(tiers))


@given(runs(), policies(), st.data())
def test_a_shared_replay_is_the_other_settings_replay(run: PreparedRun, policy: Policy,
                                                       data: st.DataObject) -> None:
    """Whenever ``same_trace`` says another setting's replay repeats this one, replaying that
    setting gives the same three tables, value for value; the probe changes nothing."""
    probe = Probe()
    trace = replay(run, policy, probe=probe)
    assert columns(trace) == columns(replay(run, policy))
    other = data.draw(moved_levels(policy, probe))
    if same_trace(policy, probe, other):
        assert columns(replay(run, other)) == columns(trace)


def test_sharing_on_the_samples_is_exact_and_happens(sample_corpus: Any) -> None:
    """Over the real samples, a grid of summary triggers and emergency margins of the corrected
    two-tier preset: every setting another's replay stands for replays to the same tables, some
    settings share and some do not (their summary or emergency tier acts)."""
    base = load_policy("two-tier-corrected")
    grid = [replace_path(replace_path(base, "tiers.1.trigger.at_tokens", at),
                         "tiers.2.margin_frac", margin)
            for at in (20000, 40000, 80000, 112000) for margin in (0.05, 0.2, 0.32)]
    shared, separate = sharing_on_samples(sample_corpus, sample_corpus.replayable(), grid,
                                          keep_every_replay=False)
    assert shared > 0 and separate > len(sample_corpus.replayable())


def test_a_gate_that_opened_or_is_not_a_level_never_shares() -> None:
    """A tier whose gate opened, or whose trigger is a count, is never assumed quiet."""
    base = load_policy("two-tier-corrected")
    summary = base.tiers[1]
    assert summary.trigger is not None
    probe = Probe()
    probe.saw(id(summary.trigger), 50000, True)
    other = replace_path(base, "tiers.1.trigger.at_tokens", 90000)
    assert not same_trace(base, probe, other)
    quiet = Probe()
    quiet.saw(id(summary.trigger), 50000, False)
    assert same_trace(base, quiet, other)
    assert not same_trace(base, quiet, replace_path(base, "tiers.1.trigger.at_tokens", 50000))
    counted = dataclasses.replace(base, tiers=(
        base.tiers[0], dataclasses.replace(summary, trigger=Trigger(after_events=5)),
        base.tiers[2]))
    assert not same_trace(base, quiet, counted)
    assert not same_trace(base, quiet, replace_path(base, "server.window_tokens", 140000))


@st.composite
def probed_pairs(draw: Any) -> tuple[Policy, Probe, Policy]:
    """A policy, a probe of its gates (some shut below a level, some opened) and another policy:
    its levels moved, or a field outside its tiers changed, or itself rebuilt equal."""
    policy = draw(policies())
    probe = Probe()
    for t in policy.tiers:
        key = id(t) if isinstance(t, Collapse) and t.trigger is None else id(t.trigger)
        probe.saw(key, draw(st.integers(0, 60000)), draw(st.booleans()))
    other = draw(moved_levels(policy, probe))
    change = draw(st.sampled_from(["none", "window", "name", "copy"]))
    if change == "window":
        other = dataclasses.replace(other, server=dataclasses.replace(
            other.server, window_tokens=other.server.window_tokens + 1))
    elif change == "name":
        other = dataclasses.replace(other, name=other.name + "-other")
    elif change == "copy":  # equal, not the same objects: as a sweep's settings are
        other = dataclasses.replace(other, tiers=tuple(dataclasses.replace(t)
                                                       for t in other.tiers))
    return policy, probe, other


@given(st.lists(probed_pairs(), min_size=1, max_size=4))
def test_numbered_shapes_give_the_answer_of_comparing_the_policies(
        pairs: list[tuple[Policy, Probe, Policy]]) -> None:
    """``same_trace`` with the policies' parts numbered (one ``Shapes`` for many policies, as a
    sweep asks) answers exactly as comparing the policies field by field does."""
    shapes = Shapes()
    for policy, probe, other in pairs:
        expected = same_trace(policy, probe, other)
        assert same_trace(policy, probe, other, shapes) == expected
        assert same_trace(other, probe, policy, shapes) == same_trace(other, probe, policy)
