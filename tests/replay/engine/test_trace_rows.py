"""The trace's rows are built through named row types declared beside the schemas (#14 item 2):
each type's fields are its table's columns in order and type, checked at import; an action row
says which reclaimed count is the truth and which the estimate by name."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from replay.engine import trace
from replay.engine.context import Context
from replay.engine.fold import replay
from replay.engine.tiers.actions import action_rows, add_to_action, record_action, update_action
from replay.engine.tiers.apply import apply_trims
from replay.engine.tiers.base import Env, Evictions
from replay.engine.trace import ROW_TYPES, TRACE_SCHEMAS, ActionRow, RequestMeasured, RequestRow
from tests.replay.engine.tier_runs import policy, results_of, session


def test_each_row_type_is_its_tables_columns() -> None:
    for name, row in ROW_TYPES.items():
        assert row._fields == tuple(TRACE_SCHEMAS[name].names)  # type: ignore[attr-defined]
    assert set(RequestMeasured._fields) < set(RequestRow._fields)


def test_a_row_type_that_disagrees_with_its_schema_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fields = list(ActionRow.__annotations__.items())
    i = [f for f, _ in fields].index("reclaimed_tokens")
    fields[i], fields[i + 1] = fields[i + 1], fields[i]  # estimate before truth
    monkeypatch.setitem(ROW_TYPES, "actions", NamedTuple("Swapped", fields))  # type: ignore[misc]
    with pytest.raises(AssertionError, match="not the columns of actions"):
        trace._check_rows()
    wrong_type = [(f, str if f == "request" else t) for f, t in ActionRow.__annotations__.items()]
    monkeypatch.setitem(ROW_TYPES, "actions",
                        NamedTuple("WrongType", wrong_type))  # type: ignore[misc]
    with pytest.raises(AssertionError, match="request"):
        trace._check_rows()


def test_an_action_row_puts_truth_and_estimate_under_their_names() -> None:
    run = session([40] * 4, every_step=False)
    est = list(run.tokens["o200k_base"])
    truth = [2 * t for t in est]  # truth counts twice the estimate: the two cannot be swapped
    ctx = Context(run, est, truth, 0)
    ctx.hi = run.req_blocks[-1]
    p = policy([])
    env = Env(policy=p, calibration=None, action_rows=[], evictions=Evictions(), fixed_est=0,
              fixed_truth=0, truth_counter=p.truth)
    first = results_of(run)[0]
    apply_trims(ctx, env, [(first, 1, 1, 1)], protect_from=ctx.hi, tier="t", kind="trim",
                trigger_tokens=0, threshold_tokens=0)
    (row,) = action_rows(env, run.run_id)
    assert isinstance(row, ActionRow)
    assert row.reclaimed_est_tokens == est[first] - 1
    assert row.reclaimed_tokens == truth[first] - 1
    assert row.run_id == run.run_id and row.policy == p.name


def test_record_action_puts_every_value_under_its_name() -> None:
    run = session([40] * 4, every_step=False)
    counts = list(run.tokens["o200k_base"])
    ctx = Context(run, counts, counts, 0)
    ctx.hi = run.req_blocks[-1]
    p = policy([])
    env = Env(policy=p, calibration=None, action_rows=[], evictions=Evictions(), fixed_est=0,
              fixed_truth=1000, truth_counter=p.truth, request=7, when="after")
    given = {"tier": "t", "kind": "k", "trigger_tokens": 11, "threshold_tokens": 12,
             "n_blocks": 13, "first_msg": 14, "last_msg": 15, "reclaimed_est_tokens": 16,
             "reclaimed_tokens": 17, "invalidated": 18, "undone": True, "failed": False,
             "summary_tokens": 19, "recorded": True, "min_reclaim_tokens": 20,
             "protect_first_msg": 21, "induced": True, "size_estimate": "parts_only"}
    record_action(env, ctx, **given)  # type: ignore[arg-type]
    record_action(env, ctx, **given)  # type: ignore[arg-type]
    (row, second) = action_rows(env, run.run_id)
    assert isinstance(row, ActionRow)
    want = {("invalidated_tokens" if k == "invalidated" else
             "recorded_summary" if k == "recorded" else k): v for k, v in given.items()}
    want |= {"run_id": run.run_id, "policy": p.name, "action": 0, "request": 7, "when": "after",
             "context_after_tokens": 1000 + ctx.truth()}
    assert row._asdict() == want
    assert second._asdict() == want | {"action": 1}


def test_trace_rows_read_back_as_the_row_types() -> None:
    run = session([40] * 6, every_step=False)
    got = replay(run, policy([{"type": "trim"}, {"type": "collapse"}], window=900))
    for name, row in ROW_TYPES.items():
        for values in got.table(name).to_pylist():
            assert row(**values)._asdict() == values
    assert got.actions.num_rows > 0


def test_a_replays_columns_come_in_its_row_types_order() -> None:
    """The column lists a replay hands its trace (``fold._columns``: a dict literal, the
    requests'; the evictions' and actions' from their field names) are each table's columns in
    order, as ``Trace.concat`` and a reader of ``columns`` take them, with or without rows."""
    run = session([40] * 6, every_step=False)
    for tiers in ([{"type": "trim"}, {"type": "collapse"}], []):
        got = replay(run, policy(tiers, window=900))
        for name, row in ROW_TYPES.items():
            assert tuple(got.columns(name)) == row._fields, name


def test_update_and_add_to_an_action_change_only_that_action() -> None:
    run = session([40] * 4, every_step=False)
    counts = list(run.tokens["o200k_base"])
    ctx = Context(run, counts, counts, 0)
    p = policy([])
    env = Env(policy=p, calibration=None, action_rows=[], evictions=Evictions(), fixed_est=0,
              fixed_truth=0, truth_counter=p.truth)
    for i in range(3):  # every value distinct from the other actions'
        record_action(env, ctx, tier=f"t{i}", kind="k", trigger_tokens=i, threshold_tokens=i,
                      n_blocks=i, first_msg=i, last_msg=i, reclaimed_est_tokens=i,
                      reclaimed_tokens=i, invalidated=i)
    before = [r._asdict() for r in action_rows(env, run.run_id)]
    update_action(env, 1, n_blocks=-1, induced=True, first_msg=-3)
    after = [r._asdict() for r in action_rows(env, run.run_id)]
    assert after == [before[0], before[1] | {"n_blocks": -1, "induced": True, "first_msg": -3},
                     before[2]]
    with pytest.raises(KeyError):
        update_action(env, 0, no_such_column=1)
    add_to_action(env, 2, n_blocks=3, first_msg=-5, last_msg=1, reclaimed_est_tokens=4,
                  reclaimed_tokens=5, invalidated=1, context_after_tokens=99)
    (*_, last) = [r._asdict() for r in action_rows(env, run.run_id)]
    assert last == before[2] | {"n_blocks": 5, "first_msg": -5, "last_msg": 2,
                                "reclaimed_est_tokens": 6, "reclaimed_tokens": 7,
                                "invalidated_tokens": 2, "context_after_tokens": 99,
                                "induced": True}
