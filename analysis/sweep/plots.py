"""A sweep's figures: its Pareto fronts and each main metric against each swept path, as PNGs.

``write_plots(table, params, out)`` draws ``pareto_<y>_vs_<x>.png`` for each pair of
``analysis.sweep.pareto.PARETO_PAIRS`` and ``metrics_vs_<path>.png`` (one small panel per main
metric) for each swept path.  The figures are independent, so with ``jobs`` above 1 they are
drawn in worker processes (the loky pool a sweep used, still warm after it: ``jobs`` is then
its size, so the pool is reused as it is; starting a pool only for the plots costs more than
it saves on two cores) and written as they finish; the bytes do not depend on where a figure
was drawn.

Drawing is most of a small sweep's time, so the figures are made cheap to draw: fixed
margins and title positions (no layout pass), figures outside pyplot, only the panels drawn
made, x ticks only under the lowest panel of each column (the others share its range) and at
the swept values, two y ticks (the panel's lowest and highest value) with compact labels
(``60M``, ``172k``: no ``1e7`` offset over the title), each metric's unit in its panel title
instead of a rotated y label, PNGs compressed lightly.  Every Axes, tick and label is an
object to make and text to render (about 13, 2 and 2-3 ms of CPU each with matplotlib 3.11).

Not here: aggregating and choosing (``analysis.sweep.pareto``), running the sweep
(``analysis.sweep.core``).
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import as_completed
from pathlib import Path

import matplotlib
import pandas as pd
from joblib.externals.loky import get_reusable_executor
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

from analysis.figure_text import figure_rc
from analysis.metrics import METRIC_DIRECTIONS
from analysis.sweep.pareto import (
    PARETO_PAIRS,
    _label,
    _numeric,
    _short,
    _slug,
    aggregate,
    plot_metric,
    plot_pareto,
)
from replay.atomic_files import atomic_write_bytes
from replay.output_targets import PNG_SOFTWARE
from replay.workers import IDLE_SECONDS, init_worker

Spec = tuple[str, tuple[str, ...]]
"""One figure: ``("pareto", (x, y, "min"|"max"))`` or ``("metrics", (path,))``."""


def write_plots(table: pd.DataFrame, params: Sequence[str], out: Path, *, jobs: int = 1,
                on_figure: Callable[[int, int], None] | None = None) -> list[Path]:
    """Draw the Pareto fronts, and each main metric against each swept path, as PNGs.

    The main metrics are those of ``METRIC_DIRECTIONS`` (every analysis's headline
    numbers) that vary across the settings; the table holds all of them.

    Args:
        table: a sweep table.
        params: the swept paths.
        out: the folder (``pareto_<y>_vs_<x>.png``, ``metrics_vs_<path>.png``).
        jobs: worker processes drawing figures (1: this process; 0: one per core); pass a
            sweep's ``stats.n_workers`` to draw in its pool.
        on_figure: called with (figures drawn, figures in all): once with 0 before the
            first, then after each (progress).

    Returns:
        The files written, in the order above.
    """
    agg = aggregate(table, params)
    metrics = tuple(c for c in METRIC_DIRECTIONS if c in agg and agg[c].nunique(dropna=True) > 1)
    specs: list[tuple[Path, Spec]] = [
        (out / f"pareto_{y}_vs_{x}.png", ("pareto", (x, y, "min" if low else "max")))
        for x, y, low in PARETO_PAIRS]
    specs += [(out / f"metrics_vs_{_slug(p)}.png", ("metrics", (p,)))
              for p in (params if metrics else ())]
    tick = on_figure or (lambda _done, _total: None)
    tick(0, len(specs))
    workers = jobs if jobs > 0 else (os.cpu_count() or 1)  # as many as a sweep's pool: reused
    done = 0
    if workers <= 1 or len(specs) <= 1:
        for path, spec in specs:
            atomic_write_bytes(path, figure_png(agg, metrics, tuple(params), spec), within=out)
            done += 1
            tick(done, len(specs))
        return [p for p, _ in specs]
    pool = get_reusable_executor(max_workers=workers, initializer=init_worker,
                                 initargs=(os.getpid(),), timeout=IDLE_SECONDS)
    futures = {pool.submit(figure_png, agg, metrics, tuple(params), spec): path
               for path, spec in specs}
    try:
        for fut in as_completed(futures):
            atomic_write_bytes(futures[fut], fut.result(), within=out)
            done += 1
            tick(done, len(specs))
    finally:
        for fut in futures:
            fut.cancel()
    return [p for p, _ in specs]


def figure_png(agg: pd.DataFrame, metrics: tuple[str, ...], params: tuple[str, ...],
               spec: Spec) -> bytes:
    """One figure of ``write_plots`` as PNG bytes (the work a worker does; pure), in the
    figures' fonts (``analysis.figure_text``: a name in any script drawn or escaped)."""
    kind, args = spec
    with matplotlib.rc_context(figure_rc()):
        if kind == "pareto":
            x, y, direction = args
            fig = _figure((6, 4.5))
            ax = fig.add_subplot()
            plot_pareto(agg, x, y, minimise_y=direction == "min", ax=ax)
            ax.set_title(ax.get_title(), fontsize="medium", y=1.0, pad=6)
            fig.subplots_adjust(left=0.15, right=0.97, bottom=0.12, top=0.92)
        else:
            fig = _metrics_figure(agg, args[0], metrics, params)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=72, metadata={"Software": PNG_SOFTWARE},
                    pil_kwargs={"compress_level": 1})
    return buf.getvalue()


def _figure(size: tuple[float, float]) -> Figure:
    """A figure outside pyplot (nothing to close, no figure manager), drawn by Agg."""
    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig


def _metrics_figure(agg: pd.DataFrame, param: str, metrics: Sequence[str],
                    params: Sequence[str]) -> Figure:
    """Each metric against ``param``, one small panel each, five to a row.

    A panel's y ticks are its data's lowest and highest values, and the x ticks (under the
    lowest panel of each column) the swept values when there are at most six: each tick
    costs an object and a label to draw, and these are the values a reader looks for.
    """
    ncols = min(5, len(metrics))
    nrows = -(-len(metrics) // ncols)
    fig = _figure((3.2 * ncols, 2.3 * nrows + 0.8))
    x = _numeric(agg[param])
    pad = 0.05 * (x.max() - x.min()) or 0.5
    lowest = {c: max(r for r in range(nrows) if r * ncols + c < len(metrics))
              for c in range(ncols)}
    numeric = pd.api.types.is_numeric_dtype(agg[param])
    x_ticks = (FixedLocator(sorted(x.dropna().unique())) if x.nunique() <= 6
               else MaxNLocator(nbins=4))
    axes = []
    for i, metric in enumerate(metrics):
        ax = fig.add_subplot(nrows, ncols, i + 1)  # only the panels drawn: no hidden Axes
        axes.append(ax)
        plot_metric(agg, param, metric, params, ax=ax)
        ax.set_title(_label(metric), fontsize="x-small", y=1.0, pad=3)
        ax.set_xlabel("")
        ax.set_ylabel("")
        ax.set_xlim(x.min() - pad, x.max() + pad)
        if i // ncols != lowest[i % ncols]:
            ax.xaxis.set_visible(False)  # the panel below shows the same ticks
        elif numeric:
            ax.xaxis.set_major_locator(x_ticks)
        ends = sorted({float(v) for v in ax.dataLim.intervaly if math.isfinite(v)})
        ax.yaxis.set_major_locator(FixedLocator(ends))
        ax.yaxis.set_major_formatter(FuncFormatter(_compact_apart(ends)))
        ax.tick_params(labelsize="x-small")
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper right", fontsize="small")
    fig.suptitle(f"main metrics (over {int(agg['n_runs'].max())} runs) vs {param}")
    fig.supxlabel(_short(param), fontsize="small")
    fig.subplots_adjust(left=0.05, right=0.98, bottom=0.35 / fig.get_figheight() + 0.03,
                        top=1 - 0.8 / fig.get_figheight(), wspace=0.35, hspace=0.5)
    return fig


def _compact(v: float, digits: int = 4) -> str:
    """A tick label without an offset or exponent above the axes: 1.2M, 35k, 0.25, to
    ``digits`` significant digits."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(v) >= scale:
            return f"{v / (1e3 if suffix == 'k' else scale):.{digits}g}{suffix}"
    return f"{v:.{digits}g}"


def _compact_apart(ends: Sequence[float]) -> Callable[[float, object], str]:
    """``_compact`` labels for a panel's ticks at ``ends`` (its lowest and highest values) with
    the fewest significant digits, 4 at least, that tell them apart: 114,912 and 114,930
    tokens read 114.91k and 114.93k, not 114.9k twice, as if the metric did not move."""
    digits = next((d for d in range(4, 16)
                   if len({_compact(v, d) for v in ends}) == len(ends)), 16)

    def label(v: float, _pos: object = None) -> str:
        return _compact(v, digits)
    return label
