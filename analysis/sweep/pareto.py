"""Choosing a setting from a sweep: totals over runs, constraints, Pareto fronts, and their plots.

``aggregate`` turns the sweep table (one row per run and setting) into one row
per setting, each metric combined over runs as ``diff`` combines them
(``analysis.run_totals``: ratios from summed parts, maxima, minima, means weighted by
requests, sums; ``*_request`` columns left out).

``best`` keeps the settings that meet every constraint (pandas ``query``
expressions such as ``"overshoots_n == 0"``; the short names ``overshoots``,
``cached_share``, ``summaries``, ``trims``, ``requests`` (``ALIASES``) work too, and
swept paths are written in backticks) and orders them by an objective.
``pareto_front`` keeps the settings no other setting beats on both of two metrics;
``plot_pareto`` and ``plot_metric`` draw them on an axes.

Not here: running the sweep (``analysis.sweep.core``), writing its figures (``analysis.sweep.plots``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.figure_text import plot_text
from analysis.metrics import METRIC_COLUMNS, known
from analysis.run_totals import combine
from replay.errors import ReplayInputError

if TYPE_CHECKING:  # matplotlib loads only when a plot is drawn (start-up of the CLI)
    from matplotlib.axes import Axes

ALIASES: dict[str, str] = {
    "overshoots": "overshoots_n",
    "max_overshoot_tokens": "overshoots_max_tokens",
    "cached_share": "cache_invalidation_cached_share",
    "summaries": "n_summaries",
    "trims": "n_trims",
    "requests": "n_requests",
    "induced_rereads": "induced_rereads_n",
}
"""Short names usable in constraints and objectives (the ``replay run`` summary used them before
it took the metric names)."""
PARETO_PAIRS: tuple[tuple[str, str, bool], ...] = (
    ("tokens_sent", "overshoots_n", True),
    ("tokens_sent", "cache_invalidation_cached_share", False),
    ("cost_usd", "induced_rereads_n", True),
)
"""The fronts a sweep draws (``analysis.sweep.plots``): (x, y, whether lower y is better); lower
x is better.  The last is the trade-off of induced re-reads (``replay.engine.induced``): a cheaper
setting that makes the agent fetch more again."""
known(*ALIASES.values(), *(m for x, y, _ in PARETO_PAIRS for m in (x, y)))

OBJECTIVES: tuple[str, ...] = (*(c for c in METRIC_COLUMNS if not c.endswith("_request")),
                               *ALIASES)
"""What a setting may be chosen by: a metric, combined over runs (``aggregate``), or its
``ALIASES`` name.  Not a ``…_request`` metric (a request's number, no amount), nor a swept
path, ``setting`` (a hash), ``n_runs`` or ``run_id``: ranked by one of those, the order says
nothing of the setting's cost (and a swept path leaves every setting of one value tied, the
tie broken by the setting's hash)."""


def aggregate(table: pd.DataFrame, params: Sequence[str] = ()) -> pd.DataFrame:
    """One row per setting, each metric combined over runs (see the module docstring).

    Args:
        table: a sweep table (``SweepResult.table``).
        params: the swept paths (kept as columns).

    Returns:
        ``setting``, the params, ``n_runs`` and the metric columns, sorted by setting.
    """
    g = table.groupby("setting", sort=True)
    out = g[list(params)].first() if params else pd.DataFrame(index=g.size().index)
    out["n_runs"] = g.size()
    totals = combine(table, "setting", METRIC_COLUMNS)
    out = out.join(totals)
    return out.reset_index()


def best(table: pd.DataFrame, constraints: Sequence[str] = (), objective: str = "tokens_sent",
         *, minimise: bool = True, params: Sequence[str] = (),
         by: str | None = "setting", aggregated: pd.DataFrame | None = None) -> pd.DataFrame:
    """The settings that meet every constraint, best objective first.

    Args:
        table: a sweep table.
        constraints: pandas ``query`` expressions, e.g. ``"overshoots_n == 0"``.
        objective: the metric to order by (a column or an ``ALIASES`` name).
        minimise: lower is better (False: higher is better).
        params: the swept paths (kept as columns).
        by: ``"setting"``: aggregate over runs first; None: rank the rows as they are.
        aggregated: ``aggregate(table, params)`` when the caller has it already (not changed).

    Returns:
        The qualifying rows, best first (ties broken by setting id); may be empty.

    Raises:
        ReplayInputError: a constraint or the objective names no column, or does not parse.
    """
    frame = (table.copy() if by != "setting" else aggregate(table, params) if aggregated is None
             else aggregated.copy())
    _check_objective(objective, frame.columns)
    if objective not in frame.columns:
        objective = ALIASES.get(objective, objective)
    for alias, col in ALIASES.items():
        if col in frame.columns and alias not in frame.columns:
            frame[alias] = frame[col]
    if objective not in frame.columns:
        raise ReplayInputError(f"objective {objective!r}: no such metric"
                               f"{_did_you_mean(objective, frame.columns)}")
    for expr in constraints:
        _check_names(expr, frame.columns)
        try:
            frame = frame.query(_normalise(expr))
        except Exception as exc:  # noqa: BLE001 - pandas raises many kinds for a bad expression
            raise ReplayInputError(f"constraint {expr!r}: {exc}") from None
    frame = frame.drop(columns=[a for a in ALIASES if a not in table.columns
                                and a in frame.columns])
    return frame.sort_values([objective, "setting"], ascending=[minimise, True],
                             kind="stable").reset_index(drop=True)


def unknown_in_constraints(aggregated: pd.DataFrame, constraints: Sequence[str],
                           kept: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """Each metric a constraint names that settings ``best`` left out (not in ``kept``) have no
    value for (no run gave it one: NaN, as ``cache_invalidation_cached_share_where_recorded`` of
    runs that recorded no usage), with how many of them (``aggregated``: the settings summed
    over runs, ``aggregate``, as ``best`` judges them): a comparison with an unknown value is
    never true, so that may be why they were."""
    if not constraints:
        return ()
    frame = aggregated[~aggregated["setting"].isin(list(kept))]
    columns = {a: c for a, c in ALIASES.items() if c in frame.columns and a not in frame.columns}
    names = dict.fromkeys(m.group(1) or m.group(2) for expr in constraints
                          for m in _NAME.finditer(_STRING.sub("''", _normalise(expr))))
    counts = ((n, int(frame[columns.get(n, n)].isna().sum())) for n in names
              if n not in _NOT_NAMES and columns.get(n, n) in frame.columns)
    return tuple((n, k) for n, k in counts if k)


def check_choice(constraints: Sequence[str], objective: str, params: Sequence[str] = ()) -> None:
    """Fail early (before a sweep runs) when a constraint or the objective names no metric.

    Args:
        constraints: as for ``best``.
        objective: as for ``best``.
        params: the swept paths.

    Raises:
        ReplayInputError: a name is not a metric, a swept path or an ``ALIASES`` name (with
            the closest metric names).
    """
    columns = pd.Index(["setting", "n_runs", *params, *ALIASES,
                        *(c for c in METRIC_COLUMNS if not c.endswith("_request"))])
    _check_objective(objective, columns)
    empty = pd.DataFrame({c: pd.Series(dtype="float64") for c in columns})
    for expr in constraints:
        _check_names(expr, columns)
        try:  # its syntax too: a typo found after the sweep ran wastes the sweep
            empty.query(_normalise(expr))
        except Exception as exc:  # noqa: BLE001 - pandas raises many kinds for a bad expression
            raise ReplayInputError(f"constraint {expr!r}: {exc}") from None


def pareto_front(frame: pd.DataFrame, x: str, y: str, *, minimise_y: bool = True) -> pd.DataFrame:
    """The rows no other row beats on both ``x`` (lower is better) and ``y``.

    Args:
        frame: one row per setting (``aggregate``).
        x: the first metric (lower is better).
        y: the second metric.
        minimise_y: lower ``y`` is better (False: higher).

    Returns:
        The non-dominated rows, by increasing ``x`` (rows with NaN left out).
    """
    sign = 1.0 if minimise_y else -1.0
    f = frame.dropna(subset=[x, y]).assign(_y=lambda d: sign * d[y])
    f = f.sort_values([x, "_y", "setting"] if "setting" in f else [x, "_y"], kind="stable")
    keep, best_y = [], np.inf
    for i, v in zip(f.index, f["_y"]):
        if v < best_y:
            keep.append(i)
            best_y = v
    return f.loc[keep].drop(columns="_y")


def plot_pareto(frame: pd.DataFrame, x: str, y: str, *, minimise_y: bool = True,
                ax: Axes | None = None) -> Axes:
    """Every setting as a dot, the Pareto front as a line.

    Args:
        frame: one row per setting (``aggregate``).
        x: the metric on the x axis (lower is better).
        y: the metric on the y axis.
        minimise_y: lower ``y`` is better.
        ax: where to draw (default: a new figure).

    Returns:
        The axes drawn on.
    """
    import matplotlib.pyplot as plt  # lazy: matplotlib loads only when a plot is drawn

    ax = ax if ax is not None else plt.subplots(figsize=(6, 4.5))[1]
    front = pareto_front(frame, x, y, minimise_y=minimise_y)
    ax.scatter(frame[x], frame[y], s=12, color="0.6", label=f"settings ({len(frame)})")
    ax.plot(front[x], front[y], "o-", color="C3", label=f"Pareto front ({len(front)})")
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label(y))
    ax.set_title(f"Pareto front: lower x, {'lower' if minimise_y else 'higher'} y",
                 fontsize="medium")
    ax.legend(fontsize="small")
    return ax


def plot_metric(frame: pd.DataFrame, param: str, metric: str, params: Sequence[str] = (), *,
                ax: Axes | None = None) -> Axes:
    """One metric against one swept path.

    With exactly one other swept path of at most six values, one line per value
    (labelled, for a legend); otherwise the mean over the other paths' values, with
    their min–max range shaded.  A path with more than 20 values (a random design)
    is drawn as dots.

    Args:
        frame: one row per setting (``aggregate``).
        param: the swept path on the x axis.
        metric: the metric on the y axis.
        params: every swept path.
        ax: where to draw (default: a new figure).

    Returns:
        The axes drawn on.
    """
    import matplotlib.pyplot as plt  # lazy: matplotlib loads only when a plot is drawn

    ax = ax if ax is not None else plt.subplots(figsize=(5, 3.5))[1]
    others = [p for p in params if p != param]
    # only the columns drawn: grouping a sweep's ~80 metric columns per panel was slow
    f = frame[list(dict.fromkeys([param, metric, *others]))].assign(_x=_numeric(frame[param]))
    if f["_x"].nunique() > 20:
        ax.scatter(f["_x"], f[metric], s=8)
    elif len(others) == 1 and f[others[0]].nunique() <= 6:
        for value, g in f.groupby(others[0], sort=True, dropna=False):
            g = g.sort_values("_x")
            ax.plot(g["_x"], g[metric], "o-", ms=3, label=plot_text(f"{_short(others[0])}={value}"))
    else:
        by_x = f.groupby("_x", sort=True)[metric]
        mean, lo, hi = by_x.mean(), by_x.min(), by_x.max()
        ax.plot(mean.index, mean.to_numpy(), "o-", ms=3, label="mean over the other paths")
        if others:
            ax.fill_between(mean.index, lo.to_numpy(), hi.to_numpy(), alpha=0.2,
                            label="min–max")
    ax.set_xlabel(_short(param), fontsize="small")
    ax.set_ylabel(_label(metric), fontsize="x-small")
    if not pd.api.types.is_numeric_dtype(frame[param]):
        labels = sorted(frame[param].astype(str).unique())
        ax.set_xticks(range(len(labels)), [plot_text(v) for v in labels], rotation=30,
                      fontsize="x-small")
    return ax


def _normalise(expr: str) -> str:
    """Backtick swept paths (dotted names) so ``query`` reads them as columns."""
    return re.sub(r"(?<![`'\"\w.])([A-Za-z_]\w*(?:\.\w+)+)(?![`'\"\w])", r"`\1`", expr)


_NOT_NAMES = frozenset({"and", "or", "not", "in", "is", "True", "False", "None", "nan", "inf"})
_STRING = re.compile(r"'[^']*'|\"[^\"]*\"")
_NAME = re.compile(r"`([^`]+)`|(?<![\w.@])([A-Za-z_]\w*)(?!\w|\s*\()")


def _check_objective(objective: str, columns: pd.Index) -> None:
    """The objective is a metric (``OBJECTIVES``) and a column of ``columns`` (or its alias is).

    Raises:
        ReplayInputError: it is not: why (another column of the table: a swept path,
            ``setting``…; or no column), the closest metric names, and every choice.
    """
    if objective in OBJECTIVES and ALIASES.get(objective, objective) in columns:
        return
    why = ("a request's number, no amount" if objective in METRIC_COLUMNS
           else "a setting's id" if objective == "setting" else "a count of runs"
           if objective == "n_runs" else "a run's id" if objective == "run_id"
           else "not a metric" if objective in columns else "no such metric")
    near = difflib.get_close_matches(objective, OBJECTIVES, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(near)}?)" if near and why == "no such metric" else ""
    raise ReplayInputError(
        f"objective {objective!r}: {why}{hint}; a setting is chosen by a metric combined "
        f"over its runs: one of {', '.join(o for o in OBJECTIVES if o not in ALIASES)} "
        f"(or {', '.join(ALIASES)})")


def _check_names(expr: str, columns: pd.Index) -> None:
    """Every name in a constraint is a metric (a column of the sweep table) or a swept path.

    Raises:
        ReplayInputError: a name is none of these (with the closest metric names).
    """
    for m in _NAME.finditer(_STRING.sub("''", _normalise(expr))):
        name = m.group(1) or m.group(2)
        if name not in _NOT_NAMES and name not in columns:
            raise ReplayInputError(f"constraint {expr!r}: no metric {name!r}"
                                   f"{_did_you_mean(name, columns)}")


def _did_you_mean(name: str, columns: pd.Index) -> str:
    """``; did you mean X?`` (the closest metric names), and where the names are listed."""
    names = [str(c) for c in columns if c not in ALIASES]
    near = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    return ((hint or ".") + " Metrics are the sweep table's columns (out/sweep/sweep.csv), e.g. "
            "overshoots_n, tokens_sent, cache_invalidation_cached_share, cost_usd")


def _numeric(s: pd.Series) -> pd.Series:
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        return s.astype("float64")
    labels = sorted(s.astype(str).unique())
    return s.astype(str).map({v: i for i, v in enumerate(labels)}).astype("float64")


def _label(col: str) -> str:
    unit = ("tokens" if col.endswith("_tokens") or col == "tokens_sent" else
            "USD" if col.endswith("_usd") else "fraction" if col.endswith(("_share", "_frac"))
            else "count" if col.startswith("n_") or col.endswith("_n") or "_n_" in col else "")
    return f"{col} ({unit})" if unit else col


def _short(path: str) -> str:
    """A swept path without the policy's nesting: ``tiers.1.trigger.at_tokens`` → ``tier1…``."""
    return re.sub(r"^tiers\.(\d+)\.", r"tier\1.", path)


def _slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")
