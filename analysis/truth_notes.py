"""What a command says about the truth its figures rest on (``replay.engine.truth``).

A replay's sizes and costs are judged by its truth: the log's recorded usage when the policy
asks for it (``anchored``, ``calibrated``), else a count.  A run may be judged by the tokenizer
count although the policy asked for recorded usage — the log recorded none, or usage at odds
with its own text (``NOT_RECORDED``) — and its figures are then the count's, not the log's.
Every command that prints figures says so where the user reads them, from one definition:

- ``run_note`` — a run's own note (``replay run``'s ``note`` column), when its recorded usage
  is at odds with its text (``USAGE_AT_ODDS``), some of its requests are sized at the
  truth's floor (``replay.engine.truth.floored``), or under anchored truth some recorded no
  usage (their sizes are estimates);
- ``judged_runs`` / ``tokenizer_judged_note`` — how many runs the tokenizer judged, by why, and
  the sentence ``replay run``, ``sweep``, ``diff`` and ``check`` print under their tables
  (their ``--json`` carries the counts); the report shows each run's truth in its tables.

Not here: choosing the truth (``replay.engine.truth``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from replay.corpus import Corpus
from replay.engine.trace import Trace
from replay.engine.truth import NOT_RECORDED, TRUTH_SOURCES, USAGE_AT_ODDS
from replay.ingest.schema import unrecorded

ANCHORED: frozenset[str] = frozenset(s for s in TRUTH_SOURCES if s.split("-")[0] == "anchored")
"""The truth sources anchored on the log's recorded usage (``anchored``, ``-unscaled``,
``-scaled-down``): a request that recorded none takes the offset of the nearest that did."""

__all__ = ["judged_runs", "run_note", "tokenizer_judged_note", "trace_sources", "truth_of",
           "unrecorded_count", "unrecorded_note", "unrecorded_requests"]


def unrecorded_count(source: str | None, recorded_inputs: Iterable[int | None]) -> int:
    """A run's requests that recorded no usage (``recorded_inputs``: its recorded inputs, None
    or 0 where not recorded) when anchored truth judged it (``source``): each is sized as its
    count plus the offset of the nearest request that did, an estimate; 0 under any other
    truth (a count sizes every request alike)."""
    return unrecorded(recorded_inputs) if source in ANCHORED else 0


def run_note(source: str | None, n_floored: int = 0,
             recorded_inputs: Sequence[int | None] = ()) -> str | None:
    """Why a run's truth is not what the policy asked for, when the log's recorded usage is at
    odds with its own text (``USAGE_AT_ODDS``); how many of its requests are sized at the
    truth's floor (``n_floored``: the trace's ``truth_floored``); and under anchored truth how
    many recorded no usage (``recorded_inputs``: the trace's ``recorded_input_tokens``, None
    or 0 where not recorded), each sized on the offset of the nearest request that did: an
    estimate.  None when none of these."""
    notes = [f"truth {source}: {TRUTH_SOURCES[source]}"] if source in USAGE_AT_ODDS else []
    if unrecorded := unrecorded_count(source, recorded_inputs):
        notes.append(f"{unrecorded} of {len(recorded_inputs)} request(s) recorded no usage: "
                     "sized as their count plus the offset of the nearest request that did "
                     "(estimated)")
    if n_floored:
        notes.append(f"{n_floored} request(s) sized at the truth's floor, 0.7 x the plain count "
                     "(the log recorded an input below the run's fitted line there, and the "
                     "policy removed more than that: truth_floored)")
    return "; ".join(notes) or None


def truth_of(trace: Trace) -> str | None:
    """The truth that judged a replay of one run (a replay has one truth a run: its first
    request's); None when it has no request."""
    sources = trace.columns("requests")["truth_source"]
    return str(sources[0]) if sources else None


def trace_sources(trace: Trace) -> list[tuple[str, str]]:
    """(run id, truth source) of each run a trace replays (a replay has one truth a run)."""
    rq = trace.columns("requests")
    return list(dict(zip(rq["run_id"], rq["truth_source"])).items())


def judged_runs(cells: Iterable[tuple[str, str | None]]) -> dict[str, int]:
    """Runs judged by the tokenizer count although recorded usage was asked for, by truth
    source (``NOT_RECORDED``'s, in its order; only those with a run).

    Args:
        cells: (run id, truth source) of each replay (None: not replayed); a run replayed
            several times (policies, settings) counts once, under the first such source.
    """
    first: dict[str, str] = {}
    for rid, source in cells:
        if source in NOT_RECORDED:
            first.setdefault(rid, source)
    return {s: n for s in NOT_RECORDED if (n := sum(1 for v in first.values() if v == s))}


NAMED_RUNS = 5
"""Runs a note names at most (``tokenizer_judged_note`` without ``where``); the rest are
counted."""


def tokenizer_judged_note(cells: Iterable[tuple[str, str | None]],
                          where: str | None = None) -> str | None:
    """The sentence under a command's table when runs were judged by the tokenizer count
    although recorded usage was asked for (``judged_runs``), by why; None when none was.

    Args:
        cells: (run id, truth source) of each replay (None: not replayed).
        where: where the user finds which run (``"truth_source (--wide, --json)"``); None:
            the note ends with the runs' ids (``NAMED_RUNS`` of them, in order, and how many
            more).
    """
    cells = list(cells)
    judged = judged_runs(cells)
    if not judged:
        return None
    runs = {rid for rid, source in cells if source is not None}
    with_judged = {rid for rid, source in cells if source in NOT_RECORDED}
    of_theirs = [source for rid, source in cells if rid in with_judged]
    n_judged = sum(1 for source in of_theirs if source in NOT_RECORDED)
    partly = (f", in {n_judged} of their {len(of_theirs)} replays"
              if n_judged < len(of_theirs) else "")
    why = ", ".join(f"{n} {NOT_RECORDED[s]} ({s})" for s, n in judged.items())
    note = (f"{len(with_judged)} of {len(runs)} replayed runs are judged by the tokenizer "
            f"count, not by recorded usage: {why}{partly}; ")
    if where is not None:
        return note + f"{where} says which run"
    ids = list(dict.fromkeys(rid for rid, source in cells if source in NOT_RECORDED))
    more = len(ids) - NAMED_RUNS
    return note + "the runs: " + ", ".join(ids[:NAMED_RUNS]) + (
        f" and {more} more" if more > 0 else "")


def unrecorded_requests(corpus: Corpus, cells: Iterable[tuple[str, str | None]]) -> dict[str, int]:
    """Run id → its requests that recorded no usage, of the runs that recorded some and that
    anchored truth judged (``cells``: (run id, truth source) of each replay): each such request
    is sized as its count plus the nearest recorded request's offset, an estimate (a run's own
    note says it: ``run_note``)."""
    anchored = {rid: source for rid, source in cells if source in ANCHORED}
    if not anchored:
        return {}
    inputs = corpus.request_values("input_tokens", anchored)
    return {rid: n for rid, v in inputs.items() if (n := unrecorded_count(anchored[rid], v))}


def unrecorded_note(counts: dict[str, int]) -> str | None:
    """The sentence under ``sweep``'s, ``diff``'s, ``check``'s and ``fidelity``'s tables when some runs judged by
    anchored truth have requests that recorded no usage (``unrecorded_requests``); None when
    none do."""
    if not counts:
        return None
    n = sum(counts.values())
    return (f"{n:,} request(s) in {len(counts)} run(s) recorded no usage: under anchored truth "
            "each is sized as its count plus the offset of the nearest request that did "
            "(estimated; replay run's note names each run)")
