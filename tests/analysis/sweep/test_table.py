"""A sweep's table from its cells (``analysis.sweep.table.Cells``): units' rows carried once per
replay and cached rows, in any order, the units announced or not, the cells ordered before the
last units' rows arrive or after, give the table pandas' sort of every cell's own row gives."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.per_run.fast_metrics import FLOAT_COLUMNS, METRIC_COLUMNS
from analysis.sweep.cache import ROW_COLUMNS, VALUE_COLUMNS, rows_frame
from analysis.sweep.grid import Setting
from analysis.sweep.table import Cells
from analysis.sweep.unit import UnitRows
from replay.policy import load_policy

_RUNS = ("r-b", "r-a", "r-c")
_IDS = ("9f", "1a", "c0", "55")
_POLICY = load_policy("none")


class _Runs:
    """What ``Cells.table`` reads of a corpus: its runs' ids and sources (one run has none)."""

    runs = pa.table({"run_id": list(_RUNS), "source": ["b.jsonl", None, "c.jsonl"]})


def _values(k: int) -> tuple[Any, ...]:
    """A replay's row, every value telling which replay made it."""
    return (f"policy-{k % 2}", f"truth-{k % 3}", *(k / 7 if c in FLOAT_COLUMNS else k * 3 + j
                                                   for j, c in enumerate(METRIC_COLUMNS)))


def _oracle(rows: list[tuple[Any, ...]], chosen: list[Setting]) -> pd.DataFrame:
    """The table as the sweep made it before ``Cells``: one frame of every cell's own row,
    its columns put in place, sorted by pandas."""
    frame = rows_frame(rows)
    source = dict(zip(_Runs.runs["run_id"].to_pylist(), _Runs.runs["source"].to_pylist()))
    out = pd.DataFrame({"run_id": frame["run_id"].astype(str),
                        "source": frame["run_id"].map(source).fillna("").astype(str),
                        "setting": frame["setting"].astype(str)})
    held = {s.id: dict(s.params) for s in chosen}
    out["x"] = pd.Series([held[s]["x"] for s in out["setting"]], dtype="object").infer_objects()
    out = pd.concat([out, frame[list(VALUE_COLUMNS)]], axis=1)
    return out.sort_values(["run_id", "setting"], kind="stable").reset_index(drop=True)


@settings(max_examples=30)
@given(st.data())
def test_the_table_of_shared_and_cached_rows_is_every_cells_own_row_sorted(
        data: st.DataObject) -> None:
    n_settings = data.draw(st.integers(1, len(_IDS)), label="settings")
    chosen = [Setting(_IDS[i], (("x", i * 10),), _POLICY) for i in range(n_settings)]
    cells = [(r, i) for r in _RUNS for i in range(n_settings)]
    cells = data.draw(st.permutations(cells), label="order")
    cached_n = data.draw(st.integers(0, len(cells)), label="cached")
    table = Cells(chosen)
    rows: list[tuple[Any, ...]] = []
    n_made = 0
    cached = [(chosen[i].id, r, *_values(100 + k)) for k, (r, i) in enumerate(cells[:cached_n])]
    if cached:
        table.add_cached(rows_frame(cached))
    rows += cached
    todo = cells[cached_n:]
    units = []
    while todo:  # units of one run each, a few settings sharing one replay's row
        run = todo[0][0]
        unit = [c for c in todo if c[0] == run][:data.draw(st.integers(1, 4), label="unit")]
        todo = [c for c in todo if c not in unit]
        which = [data.draw(st.integers(0, k), label="row") for k in range(len(unit))]
        units.append((run, unit, which))
    # announced in the plan's order, or not; added in any order; ordered before the last
    # ones are added, or when the table is made
    if data.draw(st.booleans(), label="announced"):
        table.expect([(run, tuple(i for _, i in unit)) for run, unit, _ in units])
    units = data.draw(st.permutations(units), label="arrival")
    prepared_at = data.draw(st.integers(0, len(units) + 1), label="prepared at")
    for added, (run, unit, which) in enumerate(units):
        if added == prepared_at:
            table.prepare(_Runs())  # type: ignore[arg-type]
        made = sorted(set(which))
        values = [_values(n_made + k) for k in range(len(made))]
        done = UnitRows(run, tuple(i for _, i in unit), [made.index(w) for w in which],
                        values, loaded=False)
        table.add_unit(done)
        rows += [(chosen[i].id, run, *values[made.index(w)]) for (_, i), w in zip(unit, which)]
        n_made += len(made)
    assert (table.n_cached, table.n_computed) == (cached_n, len(cells) - cached_n)
    got = table.table(_Runs())  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(got, _oracle(rows, chosen), check_exact=True)
    computed = table.computed_frame()
    assert list(computed.columns) == list(ROW_COLUMNS)
    pd.testing.assert_frame_equal(computed, rows_frame(rows[cached_n:]), check_exact=True)
