"""The report's markup: one ``Page`` of tables and images rendered as HTML or as Markdown.

``render_html`` gives a self-contained page: inline CSS, images as base64
``data:image/png`` URIs, every text escaped, no external URL; its one script is the
interactive timelines' (``Page.interactive``, BokehJS inlined), when there are any.
``render_markdown`` gives the same tables for a pull-request comment, linking the
PNGs by relative path.  Both are pure functions of the ``Page``: no clock, no
environment, so equal pages give equal bytes.

Not here: computing the tables or drawing the images (``analysis.report.build``).
"""

from __future__ import annotations

import base64
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.fidelity import RunFidelity, fidelity_totals
from analysis.fidelity_lines import FIDELITY_NOTE, totals_lines
from analysis.induced import includes_induced
from analysis.metrics import METRIC_DIRECTIONS, SPECS, known
from analysis.per_run.notes import estimated_by_policy, figure_notes
from analysis.report.diff import TOTAL
from analysis.report.verdict import priced_by, verdict
from replay.engine.truth import TRUTH_SOURCES
from replay.policy import Policy
from replay.policy.pricing import pricing_note
from replay.policy.providers import provider_label
from replay.safe_text import html_text, markdown

HEADLINE: tuple[tuple[str, str], ...] = tuple((m, SPECS[m].header) for m in known(
    "n_requests", "tokens_sent", "peak_tokens", "overshoots_n", "overshoots_max_tokens",
    "n_summaries", "n_trims", "cache_invalidation_n_small_trims",
    "cache_invalidation_cached_share", "rereads_n_eviction_induced", "rereads_n_loops",
    "arg_share_args_mean", "arg_share_write_mean", "cost_usd", "induced_rereads_n",
    "induced_rereads_tokens"))
"""(metric column, header) of the headline and totals tables."""
DIFF_ROWS_TOTAL = 15
DIFF_ROWS_RUN = 10

_CSS = """
body{font-family:sans-serif;margin:1.5em auto;max-width:1400px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{font-size:1.3em;margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.82em;margin:.6em 0}
th,td{border:1px solid #ccc;padding:.2em .45em;vertical-align:top}
th{background:#f2f2f2;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.better{background:#e3f4e3}td.worse{background:#fbe3e3}
tr.first td{border-top:2px solid #999}
.wide{overflow-x:auto}
figure{margin:1.2em 0}img{max-width:100%;height:auto;border:1px solid #ddd}
figcaption{font-size:.85em;color:#444;max-width:70em}
.lint{color:#a00}.muted{color:#666}code{font-size:.95em}
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Image:
    """One PNG of the report."""

    file: str
    title: str
    caption: str
    png: bytes
    width_px: int
    height_px: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """Everything the report shows, computed."""

    policies: list[tuple[Policy, list[str]]]
    """Each policy, in report order, with its placeholder lint findings."""
    runs: list[dict[str, Any]]
    """``run_id``, ``label`` (``replay.ingest.run_label``), ``source``, ``format``, ``model`` of each
    run, in report order."""
    metrics: pd.DataFrame
    totals: pd.DataFrame
    diffs: list[tuple[str, str, pd.DataFrame]]
    """(reference policy, other policy, ``analysis.report.diff.diff`` of the two)."""
    analyses: list[Image]
    timelines: list[Image]
    truth_sources: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)
    """(run id, policy) → what judged its tokens (``replay.engine.truth.TRUTH_SOURCES``)."""
    notes: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)
    """(run id, policy) → the run's note under the policy, as ``replay run`` shows it
    (``analysis.per_run.rollup.replay_note``: estimates, recorded /compacts replayed, …);
    listed under the runs table."""
    fidelity: list[RunFidelity] = dataclasses.field(default_factory=list)
    """Per run with recorded usage: how closely its harness's own policy reproduces the log
    (``analysis.fidelity``), in report order."""
    compaction_model: list[str] = dataclasses.field(default_factory=list)
    """The counterfactual-compaction model fitted on the corpus's recorded compactions, in
    words (``replay.compaction_fit.model_lines``)."""
    pricing: str = ""
    """How the comparison was priced, as the command chose it (``replay.policy.pricing``;
    '' : said from the policies as replayed)."""
    interactive: str = ""
    """The HTML page's timelines, interactive (``analysis.report.interactive``; scripts
    inlined): shown instead of the ``timelines`` PNGs, which report.md keeps ('' : the PNGs)."""
    estimated_text: dict[str, int] = dataclasses.field(default_factory=dict)
    """Run id → its redacted blocks sized as estimates
    (``analysis.per_run.notes.estimated_text_by_run``): said in the overview."""
    not_replayed: list[str] = dataclasses.field(default_factory=list)
    """Labels of the runs with no recorded request (``replay.corpus.not_replayed``): said in the
    overview, never dropped silently."""
    input_problems: str = ""
    """What the logs held that the runs leave out (``replay.ingest.entry_notes.problems_said``) and
    the input files that failed at the dataset's ingest (``failed_inputs.failed_said``): said
    in the overview ('' : nothing)."""


def fmt_value(metric: str, v: Any) -> str:
    """A metric value for a table: by its unit when it is a declared metric
    (``MetricSpec.format``: one rule per unit), else shares as percentages, counts with
    separators."""
    if metric in SPECS:
        return SPECS[metric].format(v)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    v = float(v)
    is_count = metric.endswith("_request") or "bytes" in metric
    if not is_count and ("share" in metric or metric.endswith("_frac")):
        return f"{v:.1%}"
    if metric.endswith("_usd"):
        return f"{v:,.4f}"
    if v.is_integer():
        return f"{int(v):,}"
    return f"{v:,.2f}"


def fmt_rel(rel: float) -> str:
    """A relative change: ``+12%``, ``new`` when the reference was 0."""
    if math.isnan(rel):
        return "–"
    if math.isinf(rel):
        return "from 0"
    return f"{rel:+.0%}"


def render_html(page: Page) -> str:
    """The report as one self-contained HTML document."""
    e = html_text
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>ctxreplay report</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>ctxreplay report</h1>", f"<p><strong>{e(_verdict_line(page))}</strong></p>",
             f"<p>{e(_overview(page))}</p>",
             "<h2>Policies</h2>", _html_table(*_policy_rows(page))]
    parts.append("<h2>Placeholder lint</h2><ul>")
    for policy, found in page.policies:
        if found:
            parts += [f'<li class="lint"><code>{e(policy.name)}</code>: {e(f)}</li>' for f in found]
        else:
            parts.append(f"<li><code>{e(policy.name)}</code>: no placeholder invites "
                         "re-calling</li>")
    parts.append("</ul><h2>Totals over all runs</h2>")
    parts.append(_html_table(*_totals_rows(page)))
    for a, b, d in page.diffs:
        parts.append(f"<h2>Differences: {e(b)} against {e(a)}</h2>")
        parts.append(_html_table(*_diff_rows(d, page, a, b)))
    parts.append("<h2>Runs</h2>")
    parts.append(_html_headline(page))
    if notes := _run_notes(page):
        parts.append('<ul class="notes">' + "".join(f"<li>{e(t)}</li>" for t in notes)
                     + "</ul>")
    parts.append("<h2>Fidelity: the recorded harness's own policy against its log</h2>")
    parts += [f'<p class="muted">{e(FIDELITY_NOTE)}</p>', _html_table(*_fidelity_rows(page))]
    parts.append("<ul>" + "".join(f"<li>{e(t)}</li>" for t in _fidelity_totals(page)) + "</ul>")
    parts.append("<h2>Analyses</h2>")
    parts += [_html_figure(im) for im in page.analyses]
    parts.append("<h2>Timelines</h2>")
    if len(page.timelines) < len(page.runs):
        parts.append(f'<p class="muted">{len(page.timelines)} of {len(page.runs)} runs '
                     "(those with the most requests).</p>")
    parts += [page.interactive] if page.interactive else [_html_figure(im)
                                                          for im in page.timelines]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def render_markdown(page: Page, image_dir: str) -> str:
    """The report's tables as Markdown, with links to the PNGs under ``image_dir``."""
    lines = ["# ctxreplay report", "", f"**{markdown(_verdict_line(page))}**", "",
             markdown(_overview(page)), "", "## Policies", "",
             *_md_table(*_policy_rows(page)), "", "## Placeholder lint", ""]
    for policy, found in page.policies:
        lines += ([f"- **{markdown(policy.name)}**: {markdown(f)}" for f in found] if found
                  else [f"- {markdown(policy.name)}: no placeholder invites re-calling"])
    lines += ["", "## Totals over all runs", "", *_md_table(*_totals_rows(page))]
    for a, b, d in page.diffs:
        lines += ["", f"## Differences: {markdown(b)} against {markdown(a)}", "",
                  *_md_table(*_diff_rows(d, page, a, b))]
    header, rows, _ = _headline_rows(page)
    lines += ["", "## Runs", "", *_md_table(header, rows)]
    if notes := _run_notes(page):
        lines += ["", *[f"- {markdown(t)}" for t in notes]]
    lines += ["", "## Fidelity: the recorded harness's own policy against its log", "",
              markdown(FIDELITY_NOTE), "", *_md_table(*_fidelity_rows(page)), "",
              *[f"- {markdown(t)}" for t in _fidelity_totals(page)]]
    lines += ["", "## Figures", ""]
    lines += [f"- [{markdown(im.title)}]({image_dir}/{im.file})"
              for im in [*page.analyses, *page.timelines]]
    return "\n".join(lines) + "\n"


def _run_notes(page: Page) -> list[str]:
    """Each run's note under each policy ('label (policy): note'), in the runs table's order."""
    names = [p.name for p, _ in page.policies]
    return [f"{run.get('label', run['run_id'])} ({name}): {note}" for run in page.runs
            for name in names if (note := page.notes.get((run["run_id"], name)))]


def _fidelity_rows(page: Page) -> tuple[list[str], list[list[str]]]:
    """One row per run with recorded usage; 'unknown' where a figure cannot be computed."""
    label = {r["run_id"]: r.get("label", r["run_id"]) for r in page.runs}
    header = ["run", "harness policy", "truth", "recorded compaction (request, trigger)",
              "replayed compaction (request)", "placement error (requests)",
              "placement error, half fit (requests)",
              "recorded prompt before it / policy trigger (tokens)",
              "post-compaction size error (median)", "cache-read error (median, of input)",
              "held-out error of the truth used (median)",
              "held-out error, anchored / fitted model (median)",
              "re-reads after recorded compactions: recall / precision / tokens error"]
    rows = [[str(label.get(f.run_id, f.source)), f.policy, f.truth_source,
             "none" if f.recorded_compaction is None
             else f"{f.recorded_compaction} ({f.recorded_trigger or 'trigger unknown'})",
             "none" if f.replayed_compaction is None else str(f.replayed_compaction),
             _or_unknown(f.placement_error_requests, "{:+d}"),
             _or_unknown(f.placement_half_fit_error_requests, "{:+d}"),
             (f"{_or_unknown(f.recorded_pre_tokens, '{:,}')} / "
              f"{_or_unknown(f.policy_trigger_tokens, '{:,}')}"
              + (" (not judged: harness configured otherwise)" if f.not_judged_reason else "")),
             _or_unknown(f.post_size_error_median_frac, "{:+.1%}"),
             _or_unknown(f.cache_read_error_median_frac, "{:.2%}"),
             _or_unknown(f.held_out_error_frac, "{:.2%}"),
             (f"{_or_unknown(f.held_out_anchored_error_frac, '{:.2%}')} / "
              f"{_or_unknown(f.held_out_fitted_error_frac, '{:.2%}')}"),
             (f"{_or_unknown(f.reread_recall, '{:.2f}')} / "
              f"{_or_unknown(f.reread_precision, '{:.2f}')} / "
              f"{_or_unknown(f.reread_tokens_error_frac, '{:+.0%}')}")] for f in page.fidelity]
    if not rows:
        rows.append(["(no run with recorded usage)", *[""] * (len(header) - 1)])
    return header, rows


def _fidelity_totals(page: Page) -> list[str]:
    lines = (totals_lines(fidelity_totals(page.fidelity, runs_in_corpus=len(page.runs)))
             if page.fidelity else [])
    return lines + [f"counterfactual compactions, model fitted on this corpus: {t}"
                    for t in page.compaction_model]


def _or_unknown(v: float | None, form: str) -> str:
    return "unknown" if v is None else form.format(v)


def _overview(page: Page) -> str:
    formats: dict[str, int] = {}
    for r in page.runs:
        formats[str(r["format"])] = formats.get(str(r["format"]), 0) + 1
    fmts = ", ".join(f"{k} {v}" for k, v in sorted(formats.items()))
    names = ", ".join(p.name for p, _ in page.policies)
    used: dict[str, int] = {}
    for src in page.truth_sources.values():
        used[src] = used.get(src, 0) + 1
    truth = "; ".join(f"{k} ({v} of the replays, one a run under a policy): "
                      f"{TRUTH_SOURCES.get(k, k)}" for k, v in sorted(used.items()))
    t = page.totals
    induced = "induced_rereads_n" in t and includes_induced(t["induced_rereads_n"])
    n_estimated, estimated_scope = estimated_by_policy(
        list(zip(t["policy"], t["induced_rereads_estimated_n"].fillna(0).astype(int)))
        if induced and "induced_rereads_estimated_n" in t else [])
    return (f"{len(page.runs)} run{'s' if len(page.runs) != 1 else ''} ({fmts}) replayed under "
            f"{len(page.policies)} polic{'ies' if len(page.policies) != 1 else 'y'}: {names}; "
            f"{page.pricing or pricing_note([p for p, _ in page.policies])}."
            + (f" Truth: {truth}." if truth else "")
            + "".join(f" Note: {note}." for note in figure_notes(
                induced=induced, n_estimated=n_estimated, estimated_scope=estimated_scope,
                estimated_text=page.estimated_text, not_replayed=page.not_replayed))
            + (f" Inputs: {page.input_problems}." if page.input_problems else ""))


def _policy_rows(page: Page) -> tuple[list[str], list[list[str]]]:
    header = ["policy", "digest", "window (tokens)", "reserve (tokens)", "tiers", "provider",
              "description"]
    rows = [[p.name, p.digest(), f"{p.server.window_tokens:,}", f"{p.server.reserve_tokens:,}",
             " → ".join(f"{t.type}:{t.name}" for t in p.tiers) or "-",
             provider_label(p.provider, p.cache), p.description]
            for p, _ in page.policies]
    return header, rows


def _verdict_line(page: Page) -> str:
    return verdict(page.totals, [p for p, _ in page.policies], page.pricing)


def _totals_rows(page: Page) -> tuple[list[str], list[list[str]]]:
    prices = priced_by([p for p, _ in page.policies])
    header = ["policy", "runs", *[h for _, h in HEADLINE], "cost priced under"]
    rows = [[str(t["policy"]), f"{int(t['n_runs']):,}",
             *[fmt_value(c, t.get(c)) for c, _ in HEADLINE],
             prices.get(str(t["policy"]), "–")]
            for t in page.totals.to_dict(orient="records")]
    return header, rows


def _diff_rows(d: pd.DataFrame, page: Page, a: str, b: str) -> tuple[list[str], list[list[str]]]:
    """The largest total changes with a direction, then the largest per-run ones."""
    label = {r["run_id"]: r.get("label", r["run_id"]) for r in page.runs}
    moved = d[(d["direction"] != "") & (d["delta"] != 0) & d["delta"].notna()]
    rows = []
    for scope, n in (("total", DIFF_ROWS_TOTAL), ("run", DIFF_ROWS_RUN)):
        for r in moved[moved["scope"] == scope].head(n).to_dict(orient="records"):
            run = TOTAL if scope == "total" else label.get(r["run_id"], r["run_id"])
            rows.append([run, r["metric"], fmt_value(r["metric"], r["a"]),
                         fmt_value(r["metric"], r["b"]), fmt_rel(r["rel_delta"]),
                         f"{r['verdict']} ({r['direction']} is better)"])
    if not rows:
        rows.append([TOTAL, "(no metric with a direction changed)", "", "", "", ""])
    return ["run", "metric", a, b, "change", "verdict"], rows


def _headline_rows(page: Page) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """Header, cell texts and cell classes ('better' / 'worse' than the first policy)."""
    by_key = {(r["run_id"], r["policy"]): r for r in page.metrics.to_dict(orient="records")}
    names = [p.name for p, _ in page.policies]
    header = ["run", "run id", "policy", "truth", *[h for _, h in HEADLINE]]
    rows, classes = [], []
    for run in page.runs:
        ref = by_key.get((run["run_id"], names[0]))
        for name in names:
            m = by_key.get((run["run_id"], name))
            if m is None:
                continue
            rows.append([str(run.get("label", run["run_id"])), run["run_id"], name,
                         page.truth_sources.get((run["run_id"], name), "–"),
                         *[fmt_value(c, m[c]) for c, _ in HEADLINE]])
            classes.append(["", "", "", "", *[_verdict(c, ref, m) if name != names[0] else ""
                                          for c, _ in HEADLINE]])
    return header, rows, classes


def _verdict(col: str, ref: dict[Any, Any] | None, m: dict[Any, Any]) -> str:
    direction = METRIC_DIRECTIONS.get(col)
    if ref is None or direction is None:
        return ""
    a, b = float(ref[col]), float(m[col])
    if math.isnan(a) or math.isnan(b) or a == b:
        return ""
    return "better" if (b < a) == (direction == "lower") else "worse"


def _html_headline(page: Page) -> str:
    """The headline table; a run's rows share its label and run id cells (rowspan)."""
    header, rows, classes = _headline_rows(page)
    e = html_text
    span: dict[str, int] = {}
    for row in rows:
        span[row[0]] = span.get(row[0], 0) + 1
    out = ['<div class="wide"><table>',
           "<tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>"]
    prev = None
    for row, cls in zip(rows, classes):
        cells = []
        if row[0] != prev:
            cells += [f'<td rowspan="{span[row[0]]}">{e(t)}</td>' for t in row[:2]]
        cells.append(f"<td>{e(row[2])}</td>")
        for text, c in zip(row[3:], cls[3:]):
            cells.append(f'<td class="{" ".join(k for k in ("n", c) if k)}">{e(text)}</td>')
        out.append(f'<tr class="first">{"".join(cells)}</tr>' if row[0] != prev
                   else f"<tr>{''.join(cells)}</tr>")
        prev = row[0]
    out.append("</table></div>")
    return "\n".join(out)


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    e = html_text
    out = ['<div class="wide"><table>',
           "<tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def _html_figure(im: Image) -> str:
    e = html_text
    data = base64.b64encode(im.png).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{e(im.title)}" '
            f'width="{im.width_px}" height="{im.height_px}">'
            f"<figcaption><b>{e(im.title)}.</b> {e(im.caption)}</figcaption></figure>")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(markdown(h) for h in header) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(markdown(c) for c in row) + " |" for row in rows]
    return out
