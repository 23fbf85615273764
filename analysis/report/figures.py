"""The report's static figures as PNG bytes: one per analysis (policies side by side, or together
in one axes) and one timeline per run for the runs with the most requests, each drawn when
called (``write_report`` counts them as they are drawn).

Same inputs give byte-identical PNGs: matplotlib's default style, a fixed hash salt and DPI, and
no date metadata (``Software`` is ``PNG_SOFTWARE``, no version: a report's own figure).  Cheap to draw: fixed margins (no layout pass), glyphs drawn
unhinted (matplotlib 3.11 renders each glyph anew; FreeType's hinting was a quarter of it) and
PNGs compressed lightly (zlib level 1: files 4-27 % larger, encoding about 3x cheaper).

Not here: the plots themselves (each analysis's ``plot_*`` and ``analysis.report.timeline``),
the frames they draw from (``analysis.report.replayed``).
"""

from __future__ import annotations

import functools
import io
import warnings
from collections.abc import Callable
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis.arg_share import plot_arg_share
from analysis.cache_invalidation import plot_cache_invalidation
from analysis.figure_text import figure_rc, plot_text
from analysis.metric_spec import DEFAULT_PARAMS
from analysis.overshoots import plot_overshoots
from analysis.report.pages import Image
from analysis.report.replayed import Replayed, longest
from analysis.report.timeline import plot_timeline
from analysis.rereads import plot_rereads
from analysis.summarisation import plot_summarisation
from replay.ingest.run_label import short_labels
from replay.output_targets import PNG_SOFTWARE
from replay.safe_names import file_name

DPI = 100
LINE_RUNS = 4
"""Runs drawn in the per-request line plots (arguments share, cache): the longest ones."""
LEGEND_CHARS = 40
"""A run's label in a plot legend is cut to this many characters (kept distinct)."""
_RC: Any = {"svg.hashsalt": "ctxreplay", "figure.dpi": DPI, "savefig.dpi": DPI,
       "font.size": 9, "axes.titlesize": "medium", "text.hinting": "none"}


def analysis_images(reps: list[Replayed], run_ids: list[str], labels: dict[str, str]
                    ) -> list[Callable[[], Image]]:
    """One figure per analysis, policies side by side (or together in one axes); each drawn
    when called.  Line plots name runs by their labels (cut, kept distinct) and their captions
    say which runs they show and why."""
    lines = longest(reps, run_ids, LINE_RUNS)
    names = [labels.get(rid, rid) for rid in lines]
    legend = dict(zip(lines, short_labels(names, LEGEND_CHARS) or names))
    shown = (f"the {len(lines)} runs with the most requests of {len(run_ids)} (more lines "
             f"would not be readable): {'; '.join(names)}" if len(lines) < len(run_ids)
             else f"every run ({'; '.join(names)})")

    def per_policy(frame: Callable[[Replayed], pd.DataFrame],
                   draw: Callable[..., Axes], title: str) -> Callable[[Figure], None]:
        def paint(fig: Figure) -> None:
            axes = fig.subplots(1, len(reps), sharey=True, squeeze=False)[0]
            for i, (ax, r) in enumerate(zip(axes, reps)):
                df = frame(r)
                draw(df[df["run_id"].isin(lines)], ax=ax, labels=legend)
                ax.set_title(f"{plot_text(r.policy.name)}: {title}")
                if i:
                    ax.set_ylabel("")
        return paint

    def together(frame: Callable[[Replayed], pd.DataFrame],
                 draw: Callable[..., Axes]) -> Callable[[Figure], None]:
        return lambda fig: _empty_note(draw(pd.concat([frame(r) for r in reps],
                                                      ignore_index=True), ax=fig.subplots()))

    wide = (6.0 * len(reps), 4.2)
    specs = [
        ("rereads", "Re-reads by cause",
         ("Reads of a path read before: redundant (the earlier copy was still in context), "
          "eviction-induced (the policy had cut it), refresh (the file was written in between), "
          "retry (the earlier read failed); summed over runs."),
         (max(5.0, 2.0 * len(reps) + 3.0), 4.2), together(lambda r: r.rereads, plot_rereads)),
        ("arg_share", "Call arguments in context",
         ("Share of each request's context bytes held by call arguments (solid) and write/edit "
          f"arguments (dashed), for {shown}."),
         wide, per_policy(lambda r: r.arg_share, plot_arg_share, "call arguments in context")),
        ("summarisation", "Summaries",
         ("Context size right after each replayed summary (dots) and each compaction the "
          "original harness recorded (crosses); red rings: thrash (fewer than "
          f"{DEFAULT_PARAMS.thrash_requests} requests after the previous summary)."),
         (8.0, 4.2), together(lambda r: r.summarisation, plot_summarisation)),
        ("cache_invalidation", "Prefix-cache invalidation",
         (f"Cumulative tokens of the cached prefix invalidated by cuts, for {shown}; the "
          "legend gives each run's cached share of input tokens."),
         wide, per_policy(lambda r: r.cache, plot_cache_invalidation, "cache invalidation")),
        ("overshoots", "Estimator error and overshoots",
         ("Relative error of the harness's token estimate against the truth (and against the "
          "recorded usage where comparable), per request; the title counts requests over "
          "window − reserve."),
         (8.0, 4.2), together(lambda r: r.overshoots, plot_overshoots)),
    ]
    return [functools.partial(_image, f"{name}.png", title, caption, size, _with_margins(paint))
            for name, title, caption, size, paint in specs]


def timeline_images(reps: list[Replayed], run_ids: list[str], meta: dict[str, dict[str, Any]],
                    max_timelines: int) -> list[Callable[[], Image]]:
    """One figure per run (the longest ``max_timelines``), one axes per policy; each drawn
    when called."""
    out: list[Callable[[], Image]] = []
    for i, rid in enumerate(longest(reps, run_ids, max(max_timelines, 0))):
        label = str(meta.get(rid, {}).get("label", "")) or rid

        def paint(fig: Figure, rid: str = rid, label: str = label) -> None:
            axes = fig.subplots(1, len(reps), sharey=True, squeeze=False)[0]
            for i, (ax, r) in enumerate(zip(axes, reps)):
                req = r.requests[r.requests["run_id"] == rid]
                act = r.actions[r.actions["run_id"] == rid]
                rr = r.rereads[r.rereads["run_id"] == rid]
                plot_timeline(req, act, rr, ax=ax, title=r.policy.name)
                if i:
                    ax.set_ylabel("")
            fig.suptitle(plot_text(f"{label}  ({rid})"), fontsize="medium")
            _margins_in(fig, left=0.85, right=0.2, bottom=1.35, top=0.55, wspace=0.08)

        caption = (f"{label} ({rid}): context size by request under each policy; the window "
                   "and window − reserve lines, tier actions (hollow: undone), overshoots "
                   "(red rings) and re-reads (ticks at the bottom).")
        out.append(functools.partial(_image, file_name(f"timeline_{i:03d}_{rid}", ".png"),
                                     f"Timeline of {label}", caption, (6.5 * len(reps), 5.3),
                                     paint))
    return out


def _image(file: str, title: str, caption: str, size: tuple[float, float],
           paint: Callable[[Figure], None]) -> Image:
    """Draw ``paint`` on a fresh figure in the fixed style; the PNG's only metadata its
    ``Software``, ``PNG_SOFTWARE`` (a report's own figure: ``replay.output_targets``).

    ``paint`` sets the margins (in inches, ``_margins_in``): a layout engine would cost
    an extra drawing pass per figure, most of the report's time.
    """
    with matplotlib.style.context("default"), matplotlib.rc_context({**_RC, **figure_rc()}), \
            warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No artists with labels found")
        fig = Figure(figsize=size, dpi=DPI)
        FigureCanvasAgg(fig)
        paint(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": PNG_SOFTWARE},
                    pil_kwargs={"compress_level": 1})
    w, h = (round(v * DPI) for v in size)
    return Image(file=file, title=title, caption=caption, png=buf.getvalue(), width_px=w,
                 height_px=h)


def _with_margins(paint: Callable[[Figure], None]) -> Callable[[Figure], None]:
    """``paint``, then the analysis figures' margins (axis labels left and below, a title)."""
    def painted(fig: Figure) -> None:
        paint(fig)
        _margins_in(fig, left=0.9, right=0.2, bottom=0.6, top=0.35, wspace=0.08)
    return painted


def _margins_in(fig: Figure, *, left: float, right: float, bottom: float, top: float,
                wspace: float) -> None:
    """Subplot margins given in inches (so they do not change with the figure's width)."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=left / w, right=1 - right / w, bottom=bottom / h, top=1 - top / h,
                        wspace=wspace)


def _empty_note(ax: Axes) -> None:
    """Say so on an axes with nothing drawn (e.g. no summaries in these runs)."""
    if not ax.has_data():
        ax.text(0.5, 0.5, "nothing to show for these runs", ha="center", va="center",
                transform=ax.transAxes, color="0.4")
