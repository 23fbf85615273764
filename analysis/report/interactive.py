"""The HTML report's timelines, interactive: each run's context by request, zoomable and pannable,
the policies overlaid, every layer toggled, and a hover that says what happened.

One Bokeh figure per run (the same runs as the static timelines, ``analysis.report.timeline``,
which report.md keeps): the policies drawn over each other in their own colours, with the layers
``LAYERS`` names — truth, estimate, the recorded prompt, the window, window − reserve, overshoots,
trims, summaries, re-reads — and one more layer per action kind the traces hold outside those
families, named by its kind, so a kind added to the trace later (the induced re-reads) shows and
toggles with no change here (give it a name in ``KIND_LAYERS``). Two rows of checkboxes above a
figure toggle its policies and its layers (plain HTML inputs, ``data-fig``, ``data-policy``,
``data-layer``; a glyph is visible when both its policy and its layer are ticked). Hovering the
truth line shows the request, the truth, estimate and recorded tokens and what acted before it;
hovering a marker shows the action.

Offline in one file: BokehJS (its core bundle only, ~1.3 MB) is inlined, and nothing is fetched.
Deterministic: Bokeh numbers its models from a process-wide counter and names documents with
random UUIDs, so the document is serialised here with its ids renumbered in order of appearance
and fixed document and element names; equal inputs give equal bytes.  Every string from the
data goes into the page as JSON with ``<``, ``>`` and ``&`` escaped, or through ``html_text``.

Not here: computing the frames (``analysis.report.build``), the static timeline
(``analysis.report.timeline``), the page around it (``analysis.report.pages``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from bokeh.document import Document
from bokeh.embed.bundle import bundle_for_objs_and_resources
from bokeh.models import ColumnDataSource, HoverTool, NumeralTickFormatter
from bokeh.models.renderers import DataRenderer
from bokeh.plotting import figure
from bokeh.resources import INLINE

from replay.engine.trace import SUMMARY_KINDS, TRIM_KINDS
from replay.safe_text import html_text

LAYERS: tuple[tuple[str, str], ...] = (
    ("truth", "truth"), ("estimate", "estimate (harness)"), ("recorded", "recorded prompt (log)"),
    ("window", "window"), ("reserve", "window − reserve"), ("overshoots", "overshoots"),
    ("trims", "trims"), ("summaries", "summaries"), ("rereads", "re-reads"),
)
"""(layer, label) of the layers every timeline has, in the order the checkboxes show them."""
KIND_LAYERS: dict[str, str] = {**dict.fromkeys(TRIM_KINDS, "trims"),
                               **dict.fromkeys(SUMMARY_KINDS, "summaries")}
"""Action kind → its layer; any other kind is a layer of its own, named by the kind."""
COLOURS: tuple[str, ...] = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                            "#e377c2", "#17becf")
"""Policy colours, in report order (repeated past eight)."""
MARKERS: dict[str, str] = {"trims": "inverted_triangle", "summaries": "square"}
"""Marker of an action layer (others: diamond)."""
DOC_ID = "ctxreplay-timelines"
_CSS = (".toggles{font-size:.85em;margin:.15em 0}.toggles label{margin-right:.9em;"
        "white-space:nowrap}figure.timeline{margin:1.2em 0 2em}")


@dataclass(frozen=True, slots=True)
class PolicyFrames:
    """One policy's frames of one run, as the report computed them."""

    policy: str
    requests: pd.DataFrame
    """Trace requests of the run (``analysis.frames.requests_df``)."""
    actions: pd.DataFrame
    """Trace actions of the run."""
    rereads: pd.DataFrame
    """``analysis.rereads.rereads`` rows of the run."""


@dataclass(frozen=True, slots=True)
class RunTimeline:
    """One run's timeline: its name and each policy's frames, in report order."""

    run_id: str
    label: str
    policies: tuple[PolicyFrames, ...]


def timelines_html(runs: Sequence[RunTimeline]) -> str:
    """The interactive timelines of ``runs`` as one HTML fragment (scripts included), or ''."""
    if not runs:
        return ""
    doc = Document()
    blocks, names = [], []
    with doc.models.freeze():  # the document's model index recomputed once, not per root
        for i, run in enumerate(runs):
            fig_id = f"ctx-tl-{i}"
            fig, layers = _figure(run, fig_id)
            doc.add_root(fig)
            names.append(layers)
            blocks.append(_controls(run, fig_id, layers))
    ids: dict[str, str] = {}
    content: dict[str, Any] = _renumber(dict(doc.to_json().content), ids)
    roots = {str(r["id"]): f"ctx-tl-{i}-plot" for i, r in enumerate(content["roots"])}
    items = [{"docid": DOC_ID, "roots": roots, "root_ids": list(roots)}]
    bundle = bundle_for_objs_and_resources([doc], INLINE)
    parts = [f"<style>{_CSS}</style>", *(f"<script>{js}</script>" for js in bundle.js_raw)]
    parts += blocks
    fills = {"DOCS": _js({DOC_ID: content}), "ITEMS": _js(items), "LAYERS": _js(names)}
    parts.append("<script>" + _PLACEHOLDER.sub(lambda m: fills[m[0]], _EMBED) + "</script>")
    return "\n".join(parts)


def _figure(run: RunTimeline, fig_id: str) -> tuple[Any, dict[str, list[str]]]:
    """The run's figure and its renderers by layer (renderer names ``fig|policy|layer``)."""
    fig = figure(height=420, sizing_mode="stretch_width", tools="pan,xwheel_zoom,box_zoom,reset",
                 active_drag="pan", x_axis_label="request (index in the run)",
                 y_axis_label="context size (tokens)", output_backend="canvas")
    fig.yaxis.formatter = NumeralTickFormatter(format="0,0")
    fig.toolbar.logo = None
    named: dict[str, list[str]] = {}

    def name(policy: int | str, layer: str) -> str:
        n = f"{fig_id}|{policy}|{layer}|{len(named.get(layer, []))}"
        named.setdefault(layer, []).append(n)
        return n

    hovered: list[DataRenderer] = []
    for p, pf in enumerate(run.policies):
        colour = COLOURS[p % len(COLOURS)]
        req = pf.requests.sort_values("request", kind="stable")
        src = ColumnDataSource(_request_columns(req, pf.actions, pf.policy))
        hovered.append(fig.line("request", "truth", source=src, color=colour, line_width=1.6,
                                name=name(p, "truth")))
        fig.line("request", "estimate", source=src, color=colour, line_dash="dashed",
                 line_width=1.0, name=name(p, "estimate"))
        fig.step("request", "window", source=src, color=colour, mode="center", line_width=1.0,
                 line_alpha=0.7, name=name(p, "window"))
        fig.step("request", "limit", source=src, color=colour, mode="center", line_dash="dotted",
                 line_width=1.0, name=name(p, "reserve"))
        over = ColumnDataSource(_columns(req[req["overshoot_tokens"].fillna(0) > 0], pf.policy,
                                         request="request", y="truth_tokens",
                                         overshoot="overshoot_tokens"))
        fig.scatter("request", "y", source=over, size=11, fill_alpha=0, line_color="red",
                    line_width=1.6, name=name(p, "overshoots"))
        if p == 0:
            fig.scatter("request", "recorded", source=src, size=3, color="#999999",
                        name=name("*", "recorded"))
        marks: list[DataRenderer] = []
        for layer, acts in _action_layers(pf.actions):
            asrc = ColumnDataSource(_action_columns(acts, pf.policy))
            marks.append(fig.scatter("request", "y", source=asrc, marker=MARKERS.get(
                layer, "diamond"), size=8, fill_color=colour, line_color=colour,
                fill_alpha="fill", name=name(p, layer)))
        again = pf.rereads[pf.rereads["is_read"].astype(bool)
                           & (pf.rereads["reread_class"] != "first")] if len(pf.rereads) else \
            pf.rereads
        rsrc = ColumnDataSource(_columns(again, pf.policy, request="request",
                                         reread="reread_class", path="path"))
        rsrc.data["y"] = [0] * len(again)
        fig.scatter("request", "y", source=rsrc, marker="dash", angle=math.pi / 2, size=12,
                    color=colour, name=name(p, "rereads"))
        if marks:
            fig.add_tools(HoverTool(renderers=marks, tooltips=[
                ("policy", "@policy"), ("request", "@request"), ("action", "@kind (@tier)"),
                ("reclaimed", "@reclaimed{0,0} tokens"),
                ("cache invalidated", "@invalidated{0,0} tokens"), ("undone", "@undone")]))
    fig.add_tools(HoverTool(renderers=hovered, mode="vline", tooltips=[
        ("policy", "@policy"), ("request", "@request"), ("truth", "@truth{0,0} tokens"),
        ("estimate", "@estimate{0,0} tokens"), ("recorded", "@recorded{0,0} tokens"),
        ("acted", "@acted")]))
    return fig, named


def _request_columns(req: pd.DataFrame, actions: pd.DataFrame, policy: str) -> dict[str, list[Any]]:
    """The per-request columns of one policy's line, with what acted before each request."""
    acted: dict[int, list[str]] = {}
    for a in actions.sort_values(["request", "action"], kind="stable").itertuples(index=False):
        what = (f"{a.kind} ({a.tier}) −{_int(a.reclaimed_tokens):,} tokens"
                + (f", {_int(a.invalidated_tokens):,} cached invalidated"
                   if _int(a.invalidated_tokens) else "") + (" [undone]" if a.undone else ""))
        acted.setdefault(int(a.request), []).append(what)
    window = _floats(req["window_tokens"])
    reserve = _floats(req["reserve_tokens"])
    requests = [int(r) for r in req["request"]]
    return {
        "request": requests, "policy": [policy] * len(req),
        "truth": _floats(req["truth_tokens"]), "estimate": _floats(req["est_tokens"]),
        "recorded": _floats(req["recorded_input_tokens"]), "window": window,
        "limit": [w - r for w, r in zip(window, reserve)],
        "acted": ["; ".join(acted.get(r, [])) or "–" for r in requests],
    }


def _action_layers(actions: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The actions split by layer: the known families first, then one per other kind."""
    if not len(actions):
        return []
    layer = actions["kind"].astype(str).map(lambda k: KIND_LAYERS.get(k, k))
    order = [n for n, _ in LAYERS] + sorted(set(layer) - {n for n, _ in LAYERS})
    return [(n, actions[layer == n]) for n in order if (layer == n).any()]


def _action_columns(acts: pd.DataFrame, policy: str) -> dict[str, list[Any]]:
    undone = [bool(u) for u in acts["undone"]]
    after, trig = _floats(acts["context_after_tokens"]), _floats(acts["trigger_tokens"])
    return {"request": [int(r) for r in acts["request"]], "policy": [policy] * len(acts),
            "y": [t if u else a for a, t, u in zip(after, trig, undone)],
            "kind": [str(k) for k in acts["kind"]], "tier": [str(t) for t in acts["tier"]],
            "reclaimed": _floats(acts["reclaimed_tokens"]),
            "invalidated": _floats(acts["invalidated_tokens"]), "undone": undone,
            "fill": [0.0 if u else 1.0 for u in undone]}


def _columns(df: pd.DataFrame, policy: str, **cols: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {"policy": [policy] * len(df)}
    for key, col in cols.items():
        values = df[col].tolist() if col in df.columns else [None] * len(df)
        out[key] = [v if isinstance(v, str) else _float(v) for v in values]
    return out


def _floats(series: pd.Series) -> list[float]:
    return [_float(v) for v in series.tolist()]


def _float(v: Any) -> float:
    """A number for Bokeh; NaN where unknown (drawn as a gap, shown as NaN on hover)."""
    try:
        return math.nan if v is None or pd.isna(v) else float(v)
    except (TypeError, ValueError):
        return math.nan


def _int(v: Any) -> int:
    f = _float(v)
    return 0 if math.isnan(f) else int(f)


def _controls(run: RunTimeline, fig_id: str, layers: dict[str, list[str]]) -> str:
    """The run's heading, its policy and layer checkboxes, and the plot's element."""
    e = html_text
    pol = "".join(
        f'<label><input type="checkbox" checked data-fig="{fig_id}" data-policy="{p}">'
        f'<span style="color:{COLOURS[p % len(COLOURS)]}">&#9632;</span> {e(pf.policy)}</label> '
        for p, pf in enumerate(run.policies))
    shown = [(n, label) for n, label in LAYERS if n in layers]
    shown += [(n, n) for n in layers if n not in dict(LAYERS)]
    lay = "".join(f'<label><input type="checkbox" checked data-fig="{fig_id}" '
                  f'data-layer="{e(n)}"> {e(label)}</label> ' for n, label in shown)
    return (f'<figure class="timeline" id="{fig_id}"><figcaption><b>Timeline of {e(run.label)}'
            f"</b> ({e(run.run_id)}): drag to pan, the wheel-zoom or box-zoom tool to zoom, "
            "reset to start again; hover the truth line or a marker for what happened; dashed: "
            "the harness's estimate, step lines: the window (dotted: window − reserve), rings: "
            "overshoots, hollow markers: undone actions, ticks at 0: re-reads.</figcaption>"
            f'<div class="toggles">policies: {pol}</div><div class="toggles">layers: {lay}</div>'
            f'<div id="{fig_id}-plot"></div></figure>')


def _renumber(content: Any, ids: dict[str, str]) -> Any:
    """A copy of ``content`` with every model id renumbered in order of appearance (``m1``,
    ``m2``, …; ``ids``: old → new, filled in).  Model ids are the values of ``id`` keys: user
    data never sits under a key (a source's columns are ``entries`` lists).  A copy, not in
    place: Bokeh shares one reference dict among the places that name a model."""
    if isinstance(content, dict):
        out = {k: _renumber(v, ids) for k, v in content.items()}
        if isinstance(content.get("id"), str):
            out["id"] = ids.setdefault(content["id"], f"m{len(ids) + 1}")
        return out
    if isinstance(content, list):
        return [_renumber(v, ids) for v in content]
    return content


def _js(value: Any) -> str:
    """``value`` as JSON safe inside a ``<script>``: no ``<``, ``>`` or ``&`` left."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)  # key order is Bokeh's:
    # a model is defined where it first appears, referenced after (sorting would break that)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_PLACEHOLDER = re.compile(r"\b(?:DOCS|ITEMS|LAYERS)\b")
"""Where ``_EMBED`` takes its values, filled in one pass over the template: a value is never
searched again (a path or policy named ``ITEMS`` in the document's JSON stays as written)."""
_EMBED = """(function () {
  const docs = DOCS, items = ITEMS, layers = LAYERS;
  Bokeh.embed.embed_items(docs, items).then(function () {
    const doc = Bokeh.documents[Bokeh.documents.length - 1];
    document.querySelectorAll("figure.timeline").forEach(function (fig, i) {
      const boxes = fig.querySelectorAll("input[type=checkbox]");
      function apply() {
        const on = {policy: {}, layer: {}};
        boxes.forEach(function (b) {
          if (b.dataset.policy !== undefined) on.policy[b.dataset.policy] = b.checked;
          else on.layer[b.dataset.layer] = b.checked;
        });
        Object.keys(layers[i]).forEach(function (layer) {
          layers[i][layer].forEach(function (name) {
            const r = doc.get_model_by_name(name), p = name.split("|")[1];
            if (r) r.visible = on.layer[layer] !== false && (p === "*" || on.policy[p] !== false);
          });
        });
        fig.dataset.hidden = boxes.length - fig.querySelectorAll("input:checked").length;
      }
      boxes.forEach(function (b) { b.addEventListener("change", apply); });
      fig.dataset.ready = "1";
    });
    document.body.dataset.timelines = "ready";
  });
})();"""
