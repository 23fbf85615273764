"""The timeline of one replayed run: context size by request, with everything the policy did.

One axes per (run, policy), over the request index (0-based, in run order):

- ``truth_tokens`` (solid) and ``est_tokens`` (dashed): what the request held by
  the truth the replay judges overshoots by, and by the harness's own estimate;
- ``recorded_input_tokens`` (grey dots) where the log recorded usage: the prompt
  size the original harness actually sent (its own policy, its own window);
- the window (``window_tokens``) and the exact limit ``window − reserve``
  (``window_tokens − reserve_tokens``) as horizontal step lines;
- tier actions as markers by kind at the context size right after the action
  (``context_after_tokens``; an undone pass is hollow, at the size that triggered
  it);
- overshoots (``overshoot_tokens > 0``) as red rings on the truth line;
- re-reads (``analysis.rereads``, every read that is not a first read) as ticks
  along the bottom, coloured by class.

Not here: computing any of it (the trace, ``analysis.rereads``), laying out
several policies side by side (``analysis.report.build``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from analysis._numeric import floats
from analysis.figure_text import plot_text
from replay.engine.trace import COLLAPSE, COLLAPSE_TRIM, CUSTOM_CUT, CUSTOM_TRIM, SUMMARISE, TRIM

ACTION_STYLES: dict[str, tuple[str, str]] = {
    TRIM: ("v", "tab:purple"),
    COLLAPSE_TRIM: ("D", "tab:red"),
    SUMMARISE: ("s", "tab:green"),
    COLLAPSE: ("X", "tab:red"),
    CUSTOM_TRIM: ("<", "tab:olive"),
    CUSTOM_CUT: ("P", "tab:olive"),
}
"""Action kind → (marker, colour); unknown kinds are drawn as black stars."""

REREAD_COLOURS: dict[str, str] = {
    "eviction_induced": "tab:red",
    "redundant": "tab:orange",
    "refresh": "tab:green",
    "retry": "tab:gray",
}
"""Re-read class → colour of its tick."""


def plot_timeline(requests: pd.DataFrame, actions: pd.DataFrame,
                  rereads: pd.DataFrame | None = None, *, ax: Axes | None = None,
                  title: str | None = None) -> Axes:
    """Context tokens by request for one (run, policy), with limits, actions, overshoots, re-reads.

    Args:
        requests: trace requests of one (run_id, policy) (``request``, ``est_tokens``,
            ``truth_tokens``, ``recorded_input_tokens``, ``window_tokens``, ``reserve_tokens``,
            ``overshoot_tokens``).
        actions: trace actions of the same (run, policy) (``request``, ``kind``, ``undone``,
            ``context_after_tokens``, ``trigger_tokens``); may be empty.
        rereads: the output of ``analysis.rereads.rereads`` for the same (run, policy), or None.
        ax: where to draw (default: a new figure); the legend goes below the axes, so
            leave it about 1.2 inches there.
        title: the axes title (default: run id and policy).

    Returns:
        The axes drawn on.

    Raises:
        ValueError: ``requests`` holds more than one (run, policy).
    """
    keys = sorted(set(zip(requests["run_id"].astype(str), requests["policy"].astype(str))))
    if len(keys) > 1:
        raise ValueError(f"plot_timeline draws one (run, policy), got {len(keys)}: {keys[:3]}")
    ax = ax if ax is not None else plt.subplots(figsize=(8, 5), layout="constrained")[1]
    req = requests.sort_values("request", kind="stable")
    x = floats(req["request"]).to_numpy()
    truth = floats(req["truth_tokens"]).to_numpy()
    _limits(ax, x, req)
    recorded = floats(req["recorded_input_tokens"]).to_numpy()
    if not np.isnan(recorded).all():
        ax.plot(x, recorded, linestyle="none", marker=".", markersize=3, color="0.6",
                label="recorded prompt (log)")
    ax.plot(x, floats(req["est_tokens"]).to_numpy(), linestyle="--", linewidth=1,
            color="tab:cyan", label="estimate (harness)")
    ax.plot(x, truth, linewidth=1.4, color="tab:blue", label="truth")
    _actions(ax, actions)
    over = floats(req["overshoot_tokens"]).to_numpy() > 0
    if over.any():
        ax.scatter(x[over], truth[over], s=60, facecolors="none", edgecolors="red",
                   linewidths=1.5, zorder=5, label=f"overshoot ({int(over.sum())})")
    if rereads is not None:
        _rereads(ax, rereads)
    ax.set_xlabel("request (index in the run)")
    ax.set_ylabel("context size (tokens)")
    ax.set_ylim(bottom=0)
    if len(x):
        ax.set_xlim(-0.5, max(float(x.max()), 1.0) + 0.5)
    # fewer ticks than matplotlib's default (nine and eight on a report's axes): each is an
    # object and a label to draw, most of a timeline's CPU with the legend
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.yaxis.set_major_formatter(_thousands)
    ax.grid(True, linewidth=0.3, alpha=0.6)
    # y fixed: no ticks or offset above the axes to clear (y labels are ``_thousands``), and
    # matplotlib's search for them measured the y axis once more per figure
    ax.set_title(plot_text(title if title is not None else " ".join(keys[0]) if keys
                           else "no requests"),
                 fontsize="medium", y=1.0)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(0.0, -0.13), ncol=3,
              frameon=False, borderaxespad=0.0)
    return ax


def _limits(ax: Axes, x: np.ndarray, req: pd.DataFrame) -> None:
    """The window and window − reserve as step lines (constant for one policy, drawn as data)."""
    if not len(x):
        return
    window = floats(req["window_tokens"]).to_numpy()
    limit = window - floats(req["reserve_tokens"]).to_numpy()
    ax.step(x, window, where="mid", color="black", linewidth=1.0,
            label=f"window ({int(window[-1]):,})")
    if (limit != window).any():
        ax.step(x, limit, where="mid", color="black", linestyle=":", linewidth=1.0,
                label=f"window − reserve ({int(limit[-1]):,})")


def _actions(ax: Axes, actions: pd.DataFrame) -> None:
    """One marker series per (kind, applied/undone)."""
    if not len(actions):
        return
    kinds = actions["kind"].astype(str)
    undone = actions["undone"].astype(bool)
    for kind in sorted(set(kinds)):
        marker, colour = ACTION_STYLES.get(kind, ("*", "black"))
        for is_undone in (False, True):
            sel = ((kinds == kind) & (undone == is_undone)).to_numpy()
            if not sel.any():
                continue
            a = actions[sel]
            y = floats(a["trigger_tokens" if is_undone else "context_after_tokens"]).to_numpy()
            label = f"{kind} ({int(sel.sum())})" + (" undone" if is_undone else "")
            face = "none" if is_undone else colour
            ax.scatter(floats(a["request"]).to_numpy(), y, marker=marker, s=28, zorder=4,
                       facecolors=face, edgecolors=colour, linewidths=1.0, label=label)


def _rereads(ax: Axes, rereads: pd.DataFrame) -> None:
    """Re-reads as ticks along the bottom of the axes, one colour per class."""
    again = rereads[rereads["is_read"].astype(bool) & (rereads["reread_class"] != "first")]
    trans = ax.get_xaxis_transform()
    for cls, colour in REREAD_COLOURS.items():
        sub = again[again["reread_class"] == cls]
        if not len(sub):
            continue
        xs = floats(sub["request"]).to_numpy()
        ax.plot(xs, np.full(len(xs), 0.03), linestyle="none", marker="|", markersize=12,
                markeredgewidth=1.5, color=colour, transform=trans,
                label=f"re-read: {cls.replace('_', '-')} ({len(xs)})")


def _thousands(value: float, _pos: float) -> str:
    """Tick label with a thousands separator (``120,000``)."""
    return f"{value:,.0f}"
