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

Same inputs give byte-identical files (the figures: ``analysis.report.figures``).

Not here: replaying (``replay.corpus``), the frames each policy's trace gives
(``analysis.report.replayed``), drawing the figures (``analysis.report.figures``; the plots
themselves: each analysis's ``plot_*`` and ``analysis.report.timeline``), the HTML/Markdown
markup (``analysis.report.pages``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from analysis.fidelity import fidelity
from analysis.per_run.notes import estimated_text_by_run
from analysis.report.diff import diff, totals
from analysis.report.figures import analysis_images, timeline_images
from analysis.report.interactive import PolicyFrames, RunTimeline, timelines_html
from analysis.report.pages import Image, Page, render_html, render_markdown
from analysis.report.replayed import (
    Replayed,
    gather,
    longest,
    replay_notes,
    run_order,
    truth_sources,
)
from analysis.rereads import lint_placeholders
from replay.atomic_files import atomic_write_bytes, remove_files
from replay.compaction_fit import compaction_report, model_lines
from replay.corpus import Corpus, not_replayed
from replay.engine.trace import Trace
from replay.errors import ReplayInputError
from replay.ingest.entry_notes import problems_said
from replay.ingest.failed_inputs import failed_said
from replay.ingest.run_label import run_labels
from replay.policy import Policy
from replay.run_folder import read_run


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportFiles:
    """What ``write_report`` wrote."""

    html: Path
    markdown: Path
    images: tuple[Path, ...]


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
    named = _unique_names(runs)
    reps = gather(corpus, named)
    run_ids = run_order(corpus, reps)
    if not run_ids:
        raise ReplayInputError("report: the traces hold no request")
    labels = run_labels(corpus.runs)
    meta = {r["run_id"]: {**r, "label": labels[r["run_id"]]} for r in corpus.runs.select(
        ["run_id", "source", "format", "model"]).to_pylist()}
    all_metrics = pd.concat([r.metrics for r in reps], ignore_index=True)
    todo = analysis_images(reps, run_ids, {rid: str(m["label"]) for rid, m in meta.items()})
    n_analyses = len(todo)
    todo += timeline_images(reps, run_ids, meta, max_timelines)
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
        truth_sources=truth_sources(reps),
        notes=replay_notes(corpus, named),
        fidelity=fidelity(corpus, run_ids),
        compaction_model=model_lines(compaction_report(corpus)["model"]),
        interactive=timelines_html(_timelines(reps, run_ids, meta, max_timelines)),
        pricing=pricing,
        estimated_text=estimated_text_by_run(corpus, run_ids),
        not_replayed=not_replayed(corpus),
        input_problems=". ".join(filter(None, (
            problems_said(corpus.entries),
            failed_said(corpus.failed, {e.source for e in corpus.entries})))),
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
        ReplayInputError: a directory holds neither a summary nor traces (not a ``replay run``
            folder: a usage error).
        RunFolderError: a directory holds one of them but is damaged: a part missing, a
            symlink, a file not what ``replay run`` writes, or a summary that does not describe
            the traces beside it (``replay.run_folder.read_run``: an input that failed).
    """
    out = []
    for d in dirs:
        if not any(os.path.lexists(p) for p in (d / "summary.json", d / "traces")):
            raise ReplayInputError(f"{d}: no traces here (expected summary.json and traces/ "
                                   "written by `replay run`)")
        out.append(read_run(d))
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


def _timelines(reps: list[Replayed], run_ids: list[str], meta: dict[str, dict[str, Any]],
               max_timelines: int) -> list[RunTimeline]:
    """The interactive timelines' frames: the runs the static ones draw, every policy."""
    out = []
    for rid in longest(reps, run_ids, max(max_timelines, 0)):
        out.append(RunTimeline(rid, str(meta.get(rid, {}).get("label", "")) or rid, tuple(
            PolicyFrames(r.policy.name, r.requests[r.requests["run_id"] == rid],
                         r.actions[r.actions["run_id"] == rid],
                         r.rereads[r.rereads["run_id"] == rid]) for r in reps)))
    return out
