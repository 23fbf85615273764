"""The report of one or more policies over a corpus: a self-contained HTML page and Markdown.

``write_report(corpus, [(policy, trace), ...], out)`` replays nothing but the fidelity
table (see below): it takes traces (one policy each), computes ``analysis.metrics.metrics``
and the five analyses' frames, and writes

- ``out/report.html`` — one file that needs nothing else: CSS inline, every
  analysis plot a PNG inlined as a base64 ``data:`` URI, the timelines interactive
  (``analysis.report.interactive``: BokehJS inlined), no external URL, nothing fetched;
- ``out/report.md`` — the same tables (headline per run and policy, totals,
  differences, placeholder lint), short enough for a pull-request comment,
  linking the same PNGs written under ``out/report_files/`` (the timelines too, static).

Sections: the policies and their placeholder lint (``analysis.rereads.
lint_placeholders``); totals per policy (``analysis.report.diff.totals``); with several
policies, the largest differences of each against the first
(``analysis.report.diff.diff``); the headline table, one row per run and policy side
by side (cells better / worse than the first policy's are coloured); one plot
per analysis (policies side by side); a timeline per run
(``analysis.report.timeline``) for the ``max_timelines`` runs with the most requests; and the fidelity
of each run with recorded usage (``analysis.fidelity``: the one place the report replays, the
recorded harness's own policy).

Same inputs give byte-identical files: matplotlib's default style, a fixed
hash salt and DPI, and no ``Software`` or date metadata in the PNGs.

Not here: replaying (``replay.corpus``), the plots themselves (each analysis's
``plot_*`` and ``analysis.report.timeline``), the HTML/Markdown markup
(``analysis.report.pages``).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
import pyarrow as pa
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis import frames
from analysis.arg_share import arg_share, plot_arg_share
from analysis.cache_invalidation import cache_invalidation, plot_cache_invalidation
from analysis.fidelity import fidelity
from analysis.metric_spec import DEFAULT_PARAMS
from analysis.metrics import metrics
from analysis.overshoots import overshoots, plot_overshoots
from analysis.report.diff import diff, totals
from analysis.report.interactive import PolicyFrames, RunTimeline, timelines_html
from analysis.report.pages import Image, Page, render_html, render_markdown
from analysis.report.timeline import plot_timeline
from analysis.rereads import REREADS_COLUMNS, lint_placeholders, plot_rereads, rereads
from analysis.summarisation import plot_summarisation, recorded_compactions, summarisation
from replay.apply_policy import read_trace
from replay.atomic_files import atomic_write_bytes, remove_files
from replay.compaction_fit import compaction_report, model_lines
from replay.corpus import Corpus
from replay.engine.trace import Trace
from replay.errors import ReplayInputError
from replay.ingest.run_label import run_labels, short_labels
from replay.policy import Policy, policy_from_dict
from replay.safe_names import file_name

DPI = 100
LINE_RUNS = 4
"""Runs drawn in the per-request line plots (arguments share, cache): the longest ones."""
_RC: Any = {"svg.hashsalt": "ctxreplay", "figure.dpi": DPI, "savefig.dpi": DPI,
       "font.size": 9, "axes.titlesize": "medium"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportFiles:
    """What ``write_report`` wrote."""

    html: Path
    markdown: Path
    images: tuple[Path, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Replayed:
    """One policy's trace over the corpus and every frame the report draws from it."""

    policy: Policy
    metrics: pd.DataFrame
    requests: pd.DataFrame
    actions: pd.DataFrame
    rereads: pd.DataFrame
    arg_share: pd.DataFrame
    summarisation: pd.DataFrame
    cache: pd.DataFrame
    overshoots: pd.DataFrame


def write_report(corpus: Corpus, runs: Sequence[tuple[Policy, Trace]], out: Path, *,
                 max_timelines: int = 20,
                 on_figure: Callable[[int, int], None] | None = None,
                 pricing: str = "") -> ReportFiles:
    """Write ``out/report.html``, ``out/report.md`` and ``out/report_files/*.png``.

    Args:
        corpus: the corpus the traces were replayed from.
        runs: (policy, its trace) pairs, in the order the report shows them; the first is
            the reference the others are compared with.  Policies with the same name are
            shown as ``name #2``, ``name #3``.
        out: the output directory (created).
        max_timelines: timelines drawn, for the runs with the most requests (0: none).
        pricing: how the comparison was priced, in a sentence (``replay.policy.pricing``;
            default: said from the policies).
        on_figure: called with (figures drawn, figures in all): once with 0 before the
            first, then after each (drawing them is most of the report's time).

    Returns:
        The paths written.

    Raises:
        ReplayInputError: no (policy, trace) pair, the traces hold no request, or they hold
            runs the corpus does not have.
    """
    if not runs:
        raise ReplayInputError("report: no policy to report on")
    reps = _gather(corpus, _unique_names(runs))
    run_ids = _run_order(corpus, reps)
    if not run_ids:
        raise ReplayInputError("report: the traces hold no request")
    labels = run_labels(corpus.runs)
    meta = {r["run_id"]: {**r, "label": labels[r["run_id"]]} for r in corpus.runs.select(
        ["run_id", "source", "format", "model"]).to_pylist()}
    all_metrics = pd.concat([r.metrics for r in reps], ignore_index=True)
    todo = _analysis_images(reps, run_ids, {rid: str(m["label"]) for rid, m in meta.items()})
    n_analyses = len(todo)
    todo += _timeline_images(reps, run_ids, meta, max_timelines)
    tick = on_figure or (lambda _done, _total: None)
    tick(0, len(todo))
    drawn: list[Image] = []
    for draw in todo:
        drawn.append(draw())
        tick(len(drawn), len(todo))
    page = Page(
        policies=[(r.policy, lint_placeholders(r.policy)) for r in reps],
        runs=[meta.get(rid, {"run_id": rid, "label": rid, "source": "", "format": "",
                             "model": ""})
              for rid in run_ids],
        metrics=all_metrics, totals=totals(all_metrics),
        diffs=[(reps[0].policy.name, r.policy.name, diff(reps[0].metrics, r.metrics))
               for r in reps[1:]],
        analyses=drawn[:n_analyses],
        timelines=drawn[n_analyses:],
        truth_sources=_truth_sources(reps),
        fidelity=fidelity(corpus, run_ids),
        compaction_model=model_lines(compaction_report(corpus)["model"]),
        interactive=timelines_html(_timelines(reps, run_ids, meta, max_timelines)),
        pricing=pricing,
    )
    files = out / "report_files"
    images = [*page.analyses, *page.timelines]
    for im in images:
        atomic_write_bytes(files / im.file, im.png, within=out)
    keep = {im.file for im in images}  # PNGs a previous report left that this one did not draw
    remove_files(files, within=out, unwanted=lambda name: name.endswith(".png")
                 and name not in keep)
    html, md = out / "report.html", out / "report.md"
    atomic_write_bytes(html, render_html(page).encode(), within=out)
    atomic_write_bytes(md, render_markdown(page, files.name).encode(), within=out)
    return ReportFiles(html=html, markdown=md, images=tuple(files / im.file for im in images))


def read_runs(dirs: Sequence[Path]) -> list[tuple[Policy, Trace]]:
    """The (policy, trace) pairs ``replay run`` wrote under each directory (``summary.json``).

    Args:
        dirs: output directories of ``replay run`` (``traces/*.parquet`` + ``summary.json``).

    Returns:
        One pair per directory, in order.

    Raises:
        ReplayInputError: a directory holds no trace or summary.
    """
    out = []
    for d in dirs:
        summary = d / "summary.json"
        if not summary.is_file() or not (d / "traces" / "requests.parquet").is_file():
            raise ReplayInputError(f"{d}: no traces here (expected summary.json and traces/ "
                                   "written by `replay run`)")
        doc = json.loads(summary.read_text())
        out.append((policy_from_dict(doc["policy"], str(summary)), read_trace(d)))
    return out


def _unique_names(runs: Sequence[tuple[Policy, Trace]]) -> list[tuple[Policy, Trace]]:
    """Policies renamed ``name #k`` where a name repeats (trace rows relabelled to match)."""
    seen: dict[str, int] = {}
    out = []
    for policy, trace in runs:
        k = seen[policy.name] = seen.get(policy.name, 0) + 1
        if k > 1:
            policy, trace = _relabel(policy, trace, f"{policy.name} #{k}")
        out.append((policy, trace))
    return out


def _relabel(policy: Policy, trace: Trace, name: str) -> tuple[Policy, Trace]:
    tables = []
    for t in (trace.requests, trace.actions, trace.evictions):
        i = t.schema.get_field_index("policy")
        tables.append(t.set_column(i, t.schema.field(i), pa.array([name] * t.num_rows,
                                                                   pa.string())))
    return dataclasses.replace(policy, name=name), Trace(*tables)


def _gather(corpus: Corpus, runs: Sequence[tuple[Policy, Trace]]) -> list[_Replayed]:
    """Metrics and analysis frames of every policy (the corpus's frames read once)."""
    present = {rid for _, t in runs for rid in t.requests["run_id"].to_pylist()}
    ids = [rid for rid in corpus.run_ids if rid in present]
    if len(ids) < len(present):
        raise ReplayInputError(f"report: runs {sorted(present - set(ids))[:5]} of the traces are "
                               "not in the corpus (report traces with the data they came from)")
    recorded = frames.recorded_requests_df(corpus, run_ids=ids)
    blocks = frames.messages_df(corpus, REREADS_COLUMNS, kinds=("tool_call", "tool_result"),
                                run_ids=ids)
    flags = frames.messages_df(corpus, ("run_id", "msg", "is_harness_summary"), run_ids=ids)
    comps = recorded_compactions(flags, recorded)
    out = []
    for policy, trace in runs:
        req, act = frames.requests_df(trace), frames.actions_df(trace)
        out.append(_Replayed(
            policy=policy, metrics=metrics(corpus, trace, policy), requests=req, actions=act,
            rereads=rereads(blocks, recorded, frames.evictions_df(trace), policies=[policy.name]),
            arg_share=arg_share(req), summarisation=summarisation(act, req, comps),
            cache=cache_invalidation(req, policy), overshoots=overshoots(req, compactions=comps)))
    return out


def _truth_sources(reps: list[_Replayed]) -> dict[tuple[str, str], str]:
    """(run id, policy) → the truth that judged it (``replay.engine.truth``)."""
    out: dict[tuple[str, str], str] = {}
    for r in reps:
        req = r.requests
        if "truth_source" not in req.columns:  # traces written before the column existed
            continue
        for rid, src in zip(req["run_id"].tolist(), req["truth_source"].tolist()):
            out.setdefault((rid, r.policy.name), src)
    return out


def _run_order(corpus: Corpus, reps: list[_Replayed]) -> list[str]:
    """Run ids in any trace, in corpus order."""
    present = {rid for r in reps for rid in r.metrics["run_id"]}
    return [rid for rid in corpus.run_ids if rid in present]


def _longest(reps: list[_Replayed], run_ids: list[str], k: int) -> list[str]:
    """The ``k`` runs with the most requests (ties in corpus order), longest first."""
    n = pd.concat([r.metrics[["run_id", "n_requests"]] for r in reps]).groupby("run_id")[
        "n_requests"].max()
    pos = {rid: i for i, rid in enumerate(run_ids)}
    return sorted(run_ids, key=lambda rid: (-int(n.get(rid, 0)), pos[rid]))[:k]


LEGEND_CHARS = 40
"""A run's label in a plot legend is cut to this many characters (kept distinct)."""


def _analysis_images(reps: list[_Replayed], run_ids: list[str], labels: dict[str, str]
                     ) -> list[Callable[[], Image]]:
    """One figure per analysis, policies side by side (or together in one axes); each drawn
    when called.  Line plots name runs by their labels (cut, kept distinct) and their captions
    say which runs they show and why."""
    lines = _longest(reps, run_ids, LINE_RUNS)
    names = [labels.get(rid, rid) for rid in lines]
    legend = dict(zip(lines, short_labels(names, LEGEND_CHARS) or names))
    shown = (f"the {len(lines)} runs with the most requests of {len(run_ids)} (more lines "
             f"would not be readable): {'; '.join(names)}" if len(lines) < len(run_ids)
             else f"every run ({'; '.join(names)})")

    def per_policy(frame: Callable[[_Replayed], pd.DataFrame],
                   draw: Callable[..., Axes], title: str) -> Callable[[Figure], None]:
        def paint(fig: Figure) -> None:
            axes = fig.subplots(1, len(reps), sharey=True, squeeze=False)[0]
            for i, (ax, r) in enumerate(zip(axes, reps)):
                df = frame(r)
                draw(df[df["run_id"].isin(lines)], ax=ax, labels=legend)
                ax.set_title(f"{r.policy.name}: {title}")
                if i:
                    ax.set_ylabel("")
        return paint

    def together(frame: Callable[[_Replayed], pd.DataFrame],
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


def _timeline_images(reps: list[_Replayed], run_ids: list[str], meta: dict[str, dict[str, Any]],
                     max_timelines: int) -> list[Callable[[], Image]]:
    """One figure per run (the longest ``max_timelines``), one axes per policy; each drawn
    when called."""
    out: list[Callable[[], Image]] = []
    for i, rid in enumerate(_longest(reps, run_ids, max(max_timelines, 0))):
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
            fig.suptitle(f"{label}  ({rid})".replace("$", r"\$"), fontsize="medium")  # no mathtext
            _margins_in(fig, left=0.85, right=0.2, bottom=1.35, top=0.55, wspace=0.08)

        caption = (f"{label} ({rid}): context size by request under each policy; the window "
                   "and window − reserve lines, tier actions (hollow: undone), overshoots "
                   "(red rings) and re-reads (ticks at the bottom).")
        out.append(functools.partial(_image, file_name(f"timeline_{i:03d}_{rid}", ".png"),
                                     f"Timeline of {label}", caption, (6.5 * len(reps), 5.3),
                                     paint))
    return out


def _timelines(reps: list[_Replayed], run_ids: list[str], meta: dict[str, dict[str, Any]],
               max_timelines: int) -> list[RunTimeline]:
    """The interactive timelines' frames: the runs the static ones draw, every policy."""
    out = []
    for rid in _longest(reps, run_ids, max(max_timelines, 0)):
        out.append(RunTimeline(rid, str(meta.get(rid, {}).get("label", "")) or rid, tuple(
            PolicyFrames(r.policy.name, r.requests[r.requests["run_id"] == rid],
                         r.actions[r.actions["run_id"] == rid],
                         r.rereads[r.rereads["run_id"] == rid]) for r in reps)))
    return out


def _image(file: str, title: str, caption: str, size: tuple[float, float],
           paint: Callable[[Figure], None]) -> Image:
    """Draw ``paint`` on a fresh figure in the fixed style; the PNG without metadata.

    ``paint`` sets the margins (in inches, ``_margins_in``): a layout engine would cost
    an extra drawing pass per figure, most of the report's time.
    """
    with matplotlib.style.context("default"), matplotlib.rc_context(_RC), \
            warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No artists with labels found")
        fig = Figure(figsize=size, dpi=DPI)
        FigureCanvasAgg(fig)
        paint(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
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
