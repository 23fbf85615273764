"""Truth: how many tokens the server would really have counted for each replayed request.

The replay judges overshoots, cache shares and cost by a *truth* count.  Which one a replay
uses is decided here, once per (run, policy), and named by a ``truth_source`` that goes into
the trace and every summary:

- ``anchored`` — anchored on the usage the log recorded.  A request whose replayed context
  is the recorded one takes the recorded input exactly (input + cache read + cache write);
  once the policy has changed the context, truth = recorded input + scale × (replayed count −
  recorded count), anchored on the most recent request with recorded usage (requests before
  the first one anchor on it).  The offset ``recorded input − recorded count`` carries what
  the log never spells out (system prompt, tool schemas, attachments, the provider's
  tokenizer) exactly instead of fitting it.  ``scale`` is the run's calibration scale when
  the fit is usable (``Calibration.usable``), otherwise the policy's ``truth.scale``
  (source ``anchored-unscaled``).  A recorded input below its own count makes the offset
  negative, and a replay that removed more than the difference would send a negative number
  of tokens.  When the scale this implies (the lowest recorded input ÷ tokenizer count of the
  run) is below ``calibrate.PLAUSIBLE_SCALE``, the recorded usage is not the prompt's size
  (the uncached input alone, a made-up figure) and is not anchored on at all
  (``tokenizer-implausible-usage``: the tokenizer count, as ``tokenizer-fallback``); else a
  scale that was assumed (no usable fit) is lowered to it, so that no offset is negative
  (``anchored-scaled-down``).  A fitted scale is kept: a fit is a measurement over the whole
  run, and one request below its line is noise.  Its offset stays negative, so that the
  request, left as recorded, still takes its recorded input; a context the replay made
  smaller is never sized below the lowest plausible scale × its plain count (``floored``).
  After a harness compaction the recorded context is the
  harness's summary plus what followed it (``PreparedRun.recorded_from`` /
  ``recorded_summary``), which is what the recorded count measures.  What the harness
  re-attached after its summary without writing it to the log (files it re-read, the todo
  list) shows as a jump of the offset across the compaction (``reattached_tokens``); a replay
  that did not reuse that recorded compaction does not hold it, so its offsets leave the jump
  out (``TruthPlan.offsets``; as far as every later offset of its stretch holds it: ``_held``),
  and one that reused it adds it back (``TruthPlan.reattached``).
  Cache reads are anchored the same way (``replay.engine.cache_anchor``): an unchanged request
  reads what the log recorded, a changed one the model's read less the recorded shortfall.
- ``fitted`` — ``overhead + scale × count`` from the run's calibration
  (``truth.method: calibrated``); a fit whose scale is below ``calibrate.PLAUSIBLE_SCALE`` or
  whose overhead is below ``calibrate.NEGATIVE_OVERHEAD_TOKENS`` is not used
  (``tokenizer-implausible-usage``); a slightly negative overhead (fitting noise: three real
  mini-swe-agent runs fit −32 to −150) is, and a small context is floored as above.
- ``tokenizer`` / ``chars`` — a plain count the policy asked for explicitly.
- ``tokenizer-fallback`` — the policy asked for ``anchored`` or ``calibrated`` but the run
  has no recorded usage (or no fit): the policy's tokenizer × ``truth.scale`` plus
  ``server.fixed_overhead_tokens``.

Everything here is computed once per run and counter (memoised on the ``PreparedRun``):
a replay adds one list lookup per request.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from replay.engine.calibrate import NEGATIVE_OVERHEAD_TOKENS, PLAUSIBLE_SCALE
from replay.engine.prepared import Calibration, PreparedRun
from replay.policy import Policy, TokenCounter, Tokenizer

TRUTH_SOURCES: dict[str, str] = {
    "anchored": "recorded input + run-fitted scale × (replayed − recorded count); cache reads "
                "carry the recorded cache's shortfall",
    "anchored-unscaled": "recorded input + policy scale × (replayed − recorded count); "
                         "no usable fit for the run; cache reads carry the recorded cache's "
                         "shortfall",
    "anchored-scaled-down": "as anchored-unscaled, with the scale lowered so that no offset is "
                            "negative: the log recorded an input below its own count at some "
                            "request",
    "fitted": "overhead + scale × count, fitted on the run's recorded usage",
    "tokenizer": "plain tokenizer count (asked for by the policy)",
    "chars": "characters / N (asked for by the policy)",
    "tokenizer-fallback": "tokenizer count: the policy asked for recorded usage the run lacks",
    "tokenizer-implausible-usage": "tokenizer count: the run's recorded usage is below the lowest "
                                   "plausible scale × its own count at some request, or fits "
                                   "one below it or an overhead below -500 (not the whole "
                                   "prompt: e.g. only the uncached input)",
}
"""Every value ``truth_source`` can take, with what it means (shown by the report)."""
NOT_RECORDED: dict[str, str] = {"tokenizer-fallback": "recorded none",
                                "tokenizer-implausible-usage": "recorded usage at odds with "
                                                               "their text"}
"""Truth sources of a run judged by the tokenizer count although the policy asked for recorded
usage (anchored or calibrated), each with why in a few words (what the commands say under
their tables: ``analysis.truth_notes.tokenizer_judged_note``)."""
USAGE_AT_ODDS: frozenset[str] = frozenset({"anchored-scaled-down", "tokenizer-implausible-usage"})
"""Truth sources chosen because the log's recorded usage is at odds with its own text (a run's
note says so: ``analysis.truth_notes.run_note``)."""


@dataclass(frozen=True, slots=True)
class TruthPlan:
    """How one replay counts truth: per-block counts and a per-request offset."""

    source: str
    counter: TokenCounter
    """The counter per-block truth counts (and created texts) are taken under."""
    offsets: list[int]
    """Per request: tokens added to the context's count (fixed overhead or anchor offset,
    without what a recorded compaction re-attached unseen)."""
    reattached: list[int] = field(default_factory=list)
    """Per harness compaction: the unseen re-attached tokens, added back to the offsets of the
    requests it heads when the replay reused that compaction (anchored truth only)."""
    floor_ratio: float = 0.0
    """The least a context is sized at, per token of its count (``floored``; 0: no floor): set
    when a kept fitted scale, or a calibrated fit's overhead, leaves an offset negative
    (``PLAUSIBLE_SCALE``'s lowest ÷ the scale)."""


def floored(fixed_truth: int, context_tokens: int, floor_ratio: float) -> int:
    """The truth of a context whose count is ``context_tokens`` (under the plan's counter), with
    ``fixed_truth`` (the request's offset) added, never below ``floor_ratio`` × that count.

    A fitted scale keeps an offset negative where the log recorded an input below the fit
    (``_plan``); a replay that removed more than the difference would otherwise size its
    request at fewer than no tokens.  The floor is the lowest plausible scale × the plain
    count, which every recorded input is at or above (else the usage is set aside): under
    anchored truth a request the replay left as recorded is never floored and still takes its
    recorded input (under calibrated truth, a fit, a small context may be)."""
    total = fixed_truth + context_tokens
    if floor_ratio:
        low = int(floor_ratio * context_tokens)
        if total < low:
            return low
    return total


def truth_plan(run: PreparedRun, policy: Policy, calibration: Calibration | None) -> TruthPlan:
    """Decide the truth of ``policy`` over ``run`` (see the module docstring); memoised per
    run, truth counter, overheads and calibration: what it depends on.  A replay only reads
    the plan's lists."""
    t, s = policy.truth, policy.server
    key = (t, s.fixed_overhead_tokens, s.message_overhead_tokens, calibration)
    memo = run.memo("truth_plan")
    got: TruthPlan | None = memo.get(key)
    if got is None:
        got = memo[key] = _plan(run, t, s.fixed_overhead_tokens, s.message_overhead_tokens,
                                calibration)
    return got


def _plan(run: PreparedRun, t: TokenCounter, fixed: int, overhead: int,
          calibration: Calibration | None) -> TruthPlan:
    n = run.n_requests
    if t.method == "anchored":
        if has_usage(run):
            usable = calibration is not None and calibration.usable
            scale = calibration.scale if usable else t.scale  # type: ignore[union-attr]
            counter = tokenizer_counter(run, t.tokenizer, scale)
            source = "anchored" if usable else "anchored-unscaled"
            share = lowest_share(run, counter, overhead)
            if share < 1.0:  # a recorded input below its own count: its offset is negative
                if scale * share < PLAUSIBLE_SCALE[0]:
                    return TruthPlan("tokenizer-implausible-usage", _plain(run, t), [fixed] * n)
                if not usable:  # the scale assumed, not fitted: lowered to what the log shows
                    scale, source = scale * share, "anchored-scaled-down"
                    counter = tokenizer_counter(run, t.tokenizer, scale)
            offsets = anchor_offsets(run, counter, overhead)
            jumps = reattached_tokens(run, counter, overhead)
            if any(jumps):
                jumps = _held(jumps, offsets, run)
                offsets = [o - jumps[c] if c >= 0 else o
                           for o, c in zip(offsets, run.recorded_summary)]
            if source == "anchored-scaled-down" and min(offsets) < 0:  # (the lowered scale's
                offsets = [max(0, o) for o in offsets]  # per-block rounding: a few tokens)
            floor = PLAUSIBLE_SCALE[0] / scale if min(offsets) < 0 else 0.0  # (a fitted scale)
            return TruthPlan(source, counter, offsets, jumps, floor)
        return TruthPlan("tokenizer-fallback", _plain(run, t), [fixed] * n)
    if t.method == "calibrated":
        if calibration is None:
            return TruthPlan("tokenizer-fallback", _plain(run, t), [fixed] * n)
        if calibration.scale < PLAUSIBLE_SCALE[0] \
                or calibration.overhead_tokens < NEGATIVE_OVERHEAD_TOKENS:
            # (a fit below the plausible scale, or whose overhead is negative beyond fitting
            # noise: the usage it was fitted on is not the prompt's size)
            return TruthPlan("tokenizer-implausible-usage", _plain(run, t), [fixed] * n)
        offset = fixed + round(calibration.overhead_tokens)  # (noise may make it negative:
        floor = PLAUSIBLE_SCALE[0] / calibration.scale if offset < 0 else 0.0  # floored)
        return TruthPlan("fitted", t, [offset] * n, floor_ratio=floor)
    return TruthPlan(t.method, t, [fixed] * n)


def has_usage(run: PreparedRun) -> bool:
    """Whether any request of the run recorded its prompt size (memoised)."""
    got = run._counts.get("has_usage")
    if got is None:
        got = run._counts["has_usage"] = any(v is not None and v > 0 for v in run.recorded_input)
    return got


def _plain(run: PreparedRun, t: TokenCounter) -> TokenCounter:
    return tokenizer_counter(run, t.tokenizer, t.scale)


def tokenizer_counter(run: PreparedRun, tokenizer: Tokenizer, scale: float) -> TokenCounter:
    """The tokenizer count × ``scale``, as one counter object per run and value (memoised): the
    run's memos are keyed by counter, and a key that is the same object is found without the
    dataclass's interpreted ``__eq__`` (as a new one each replay was, several times a replay)."""
    memo = run.memo("tokenizer_counter")
    got: TokenCounter | None = memo.get((tokenizer, scale))
    if got is None:
        got = memo[(tokenizer, scale)] = TokenCounter(method="tokenizer", tokenizer=tokenizer,
                                                      scale=scale)
    return got


def lowest_share(run: PreparedRun, counter: TokenCounter, msg_overhead: int) -> float:
    """The lowest recorded input ÷ recorded count over the requests with recorded usage (inf
    when none has both): below 1, the server counted fewer tokens than ``counter`` at that
    request, and its anchor offset is negative."""
    offsets, sizes = _anchors(run, counter, msg_overhead)
    rec, low = run.recorded_input, float("inf")
    for k, (o, s) in enumerate(zip(offsets, sizes)):
        r, count = rec[k], s - o
        if r is not None and r > 0 and count > 0 and r < low * count:
            low = r / count
    return low


def anchor_offsets(run: PreparedRun, counter: TokenCounter, msg_overhead: int) -> list[int]:
    """Per request: recorded input − recorded count of the anchor request (memoised)."""
    return _anchors(run, counter, msg_overhead)[0]


def recorded_truths(run: PreparedRun, counter: TokenCounter, msg_overhead: int) -> list[int]:
    """Per request: the true size of the context the harness really sent — its recorded input,
    or for a request without one its recorded count plus the anchor offset (what a replay
    that keeps the recorded context sends under anchored truth); memoised."""
    return _anchors(run, counter, msg_overhead)[1]


def _anchors(run: PreparedRun, counter: TokenCounter,
             msg_overhead: int) -> tuple[list[int], list[int]]:
    key = ("anchor", counter, msg_overhead)
    got = run._counts.get(key)
    if got is not None:
        return got  # type: ignore[no-any-return]
    _, pre = run.sized(run.counts(counter), msg_overhead)
    summaries = [recorded_summary_truth(run, i, counter, msg_overhead)
                 for i in range(len(run.harness_summary_tokens))]
    offsets: list[int | None] = []
    counts: list[int] = []
    last: int | None = None
    for k, hi in enumerate(itertools.accumulate(run.req_blocks, max)):
        rec = run.recorded_input[k]
        s = run.recorded_summary[k]
        count = pre[hi] - pre[run.recorded_from[k]] + (summaries[s] if s >= 0 else 0)
        counts.append(count)
        if rec is not None and rec > 0:
            last = rec - count
        offsets.append(last)
    first = next(o for o in offsets if o is not None)
    filled = [first if o is None else o for o in offsets]
    sizes = [o + c for o, c in zip(filled, counts)]
    run._counts[key] = (filled, sizes)
    return filled, sizes


def reattached_tokens(run: PreparedRun, counter: TokenCounter, msg_overhead: int) -> list[int]:
    """Per harness compaction: the anchor offset of its first request after minus that of the
    last request with recorded usage before it — what the harness sent after its summary that
    the log does not spell out (0 when either side has no recorded usage; a negative jump is
    the count's error on the recorded summary, not a re-attachment: 0)."""
    if not run.harness_first_request or not has_usage(run):
        return [0] * len(run.harness_first_request)
    offsets = anchor_offsets(run, counter, msg_overhead)
    rec, out = run.recorded_input, []
    for first in run.harness_first_request:
        before = next((k for k in range(first - 1, -1, -1) if rec[k]), None) \
            if first is not None else None
        out.append(max(0, offsets[first] - offsets[before])
                   if first is not None and before is not None and rec[first] else 0)
    return out


def _held(jumps: list[int], offsets: list[int], run: PreparedRun) -> list[int]:
    """Each compaction's re-attached tokens (``reattached_tokens``: its offset's jump at its first
    request), at most the offset of every later request of its stretch with recorded usage: the
    jump is taken off those offsets (a replay that does not reuse the compaction does not hold
    what it re-attached), and a recorded usage that fell by more than the jump's worth would
    leave a negative offset, which a replay then sends as fewer than no tokens."""
    held = list(jumps)
    rec = run.recorded_input
    for k, h in enumerate(run.recorded_summary):
        if h >= 0 and held[h] > 0 and rec[k] and offsets[k] < held[h]:
            held[h] = max(0, offsets[k])
    return held


def recorded_summary_truth(run: PreparedRun, i: int, counter: TokenCounter, msg_overhead: int) -> int:
    """True tokens of harness compaction ``i``'s recorded summary, as the anchor counts it
    (so a replay that reuses it at the recorded point sends the recorded prompt exactly)."""
    return _summary_count(run, i, counter) + msg_overhead


def _summary_count(run: PreparedRun, i: int, counter: TokenCounter) -> int:
    return summary_count(run, i, counter.tokenizer, counter.scale)


def summary_count(run: PreparedRun, i: int, tokenizer: str, scale: float) -> int:
    """Harness compaction ``i``'s recorded summary under ``tokenizer`` × ``scale``, from its
    ingest counts (a summary redacted to a size marker is sized from the marker, like any block;
    another tokenizer's count when this one was not stored)."""
    tokens = run.harness_summary_tokens[i]
    base = tokens.get(tokenizer)
    if base is None:
        base = next(iter(tokens.values()), 0)
    return base if scale == 1.0 else round(base * scale)
