"""The engine's per-replay states made by their own ``__init__`` (not the dataclass's: compiled,
the generated one runs as Python): each sets every field, those that declare a default to it.

(``Context``'s is checked in test_context.py, with the values it takes from the run.)
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

import pytest
from hypothesis import given, settings

from replay.engine.induced_items import Induced
from replay.engine.induced_state import InduceState, need_plan
from replay.engine.measured import Measured
from replay.engine.prepared import PreparedRun
from replay.engine.summariser import Facts
from replay.engine.tiers.collapse import CollapseState
from replay.engine.tiers.custom import CustomState
from replay.engine.tiers.summarise import SummariseState
from replay.engine.tiers.trigger import TriggerCheck
from replay.engine.tiers.trim_state import TrimState
from replay.policy import Trigger
from tests.strategies import runs

_IMPL, _TRIGGER = object(), Trigger(every_request=True)


@pytest.mark.parametrize(("cls", "args"), [
    (Induced, ()), (Measured, ()), (Facts, ()), (TrimState, ()), (SummariseState, ()), (CollapseState, ()),
    (CustomState, (_IMPL,)), (TriggerCheck, (_TRIGGER, 3))])
def test_an_own_init_sets_every_field_to_its_declared_default(cls: type,
                                                              args: tuple[Any, ...]) -> None:
    """A fresh object holds every field (an unset one raises ``AttributeError``), each one that
    declares a default at that default (a factory's value equal to a fresh one), the rest as
    passed, in field order."""
    _check_fields(cls(*args), args)


@settings(max_examples=5)
@given(runs())
def test_an_induce_state_sets_every_field_to_its_declared_default(run: PreparedRun) -> None:
    """The same for ``InduceState`` (its plan a run's)."""
    args = (need_plan(run), 2, frozenset({"t"}), [-1] * run.n_blocks)
    _check_fields(InduceState(*args), args)


def _check_fields(got: Any, args: tuple[Any, ...]) -> None:
    cls = type(got)
    values = {f.name: getattr(got, f.name) for f in fields(cls)}
    declared = {f.name: f.default if f.default is not MISSING else f.default_factory()
                for f in fields(cls)
                if f.default is not MISSING or f.default_factory is not MISSING}
    assert {name: values[name] for name in declared} == declared
    assert [values[f.name] for f in fields(cls) if f.name not in declared] == list(args)


def test_an_own_init_makes_fresh_mutable_defaults() -> None:
    """Two states share no list, dict or set: each replay starts empty."""
    a, b = TrimState(), TrimState()
    assert a.pending is not b.pending and a.sized_result is not b.sized_result
    x, y = Induced(), Induced()
    assert all(getattr(x, f.name) is not getattr(y, f.name) for f in fields(Induced)
               if isinstance(getattr(x, f.name), list))
    s, t = SummariseState(), SummariseState()
    assert s.facts is not t.facts and s.reused is not t.reused
