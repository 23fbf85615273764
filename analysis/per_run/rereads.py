"""The per-run ``rereads_*`` metrics: declarations and their fast computation.

Definitions: ``analysis.rereads`` (whose pandas ``rereads_summary`` computes the same
columns, the tests' oracle); the counts no eviction can change come from the run's facts
(``analysis.run_facts``, computed with ``analysis.rereads``' own helpers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.metric_spec import MetricPart, MetricSpec, PartInput, RunFacts, one_of, run_facts_of
from replay.engine.trace import FATES


def _fast_rereads_many(inps: Sequence[PartInput]) -> list[dict[str, Any]]:
    """``_fast_rereads`` of several replays of one run: the blocks looked up (the candidates'
    previous results) gathered once a run."""
    rows = []
    looked_up: tuple[RunFacts, set[tuple[int, int]], tuple[list[bool], set[int]]] | None = None
    for inp in inps:
        facts = run_facts_of(inp)
        if looked_up is None or looked_up[0] is not facts:
            wanted = {(msg, block) for _, msg, block, _ in facts.candidates}
            looked_up = (facts, wanted, _flags({m for m, _ in wanted}))
        rows.append(_rereads(inp, *looked_up))
    return rows


def _flags(msgs: set[int]) -> tuple[list[bool], set[int]]:
    """``msgs`` as flags by number (0 up to the largest below ``FLAGGED_MSGS``), and those
    that are not (a negative or a larger number: none in a run as the engine numbers it)."""
    flagged = [m for m in msgs if 0 <= m < FLAGGED_MSGS]
    flags = [False] * (max(flagged, default=-1) + 1)
    for m in flagged:
        flags[m] = True
    return flags, msgs.difference(flagged)


FLAGGED_MSGS = 1 << 20
"""Message numbers below this are looked up by flag (``_flags``: a list of that many at most)."""


def _rereads(inp: PartInput, facts: RunFacts, wanted: set[tuple[int, int]],
             wanted_msgs: tuple[list[bool], set[int]]) -> dict[str, Any]:
    """The run's static re-read counts, and which candidates lost their previous result: the
    blocks ``wanted`` (of the messages ``wanted_msgs``: ``_flags``)."""
    ev = inp.evictions
    first: dict[tuple[int, int], tuple[int, str]] = {}
    """The first eviction of each candidate's previous result (no other block is looked up)."""
    if wanted:
        # typed: compiled, a loop of machine words (a message's flag read by its number);
        # most of a replay's evictions are of other messages
        msgs: list[int] = ev["msg"]
        blocks: list[int] = ev["block"]
        requests: list[int] = ev["request"]
        fates: list[str] = ev["fate"]
        flags, others = wanted_msgs
        n_flags = len(flags)
        for i in range(len(msgs)):
            msg = msgs[i]
            if not (flags[msg] if 0 <= msg < n_flags else others and msg in others):
                continue
            key, r = (msg, blocks[i]), requests[i]
            if key in wanted:
                got = first.get(key)
                if got is None or r < got[0]:
                    first[key] = (r, fates[i])
    out = dict(facts.static_rereads)
    induced = dict.fromkeys(FATES, 0)
    n_induced = tok_induced = tok_redundant = 0
    for request, msg, block, tokens in facts.candidates:
        hit = first.get((msg, block))
        if hit is not None and hit[0] <= request:
            n_induced += 1
            tok_induced += tokens
            if hit[1] in induced:
                induced[hit[1]] += 1
        else:
            tok_redundant += tokens
    out["rereads_n_redundant"] = len(facts.candidates) - n_induced
    out["rereads_n_eviction_induced"] = n_induced
    out["rereads_tokens_redundant"] = tok_redundant
    out["rereads_tokens_eviction_induced"] = tok_induced
    for fate, n in induced.items():
        out[f"rereads_n_evicted_{fate}"] = n
    return {c: out[c] for c in REREADS.names}


def _spec(name: str, unit: str, description: str, **kw: Any) -> MetricSpec:
    return MetricSpec(f"rereads_{name}", unit, description, **kw)


REREADS = MetricPart("rereads", (
    _spec("n_reads", "count", "reads of a path"),
    _spec("n", "count", "re-reads (reads of a path read before)"),
    _spec("n_redundant", "count", "re-reads while the previous result was in context",
          better="lower"),
    _spec("n_eviction_induced", "count", "re-reads after the policy evicted the previous result",
          better="lower", label="eviction-induced re-reads"),
    _spec("n_refresh", "count", "re-reads after a write of the path"),
    _spec("n_retry", "count", "re-reads after an error or a missing result"),
    _spec("tokens", "tokens", "result tokens of re-reads"),
    _spec("tokens_redundant", "tokens", "result tokens of redundant re-reads"),
    _spec("tokens_eviction_induced", "tokens", "result tokens of eviction-induced re-reads",
          better="lower"),
    *(_spec(f"n_evicted_{fate}", "count", f"eviction-induced re-reads whose previous result was "
            f"{fate}") for fate in FATES),
    _spec("n_loops", "count", "re-read loops (loop_k reads of a path within "
          "loop_window_requests)", better="lower", label="re-read loops"),
    _spec("loop_reads", "count", "reads inside loops"),
    _spec("max_loop_reads", "count", "reads of the largest loop"),
    _spec("n_identical", "count", "calls identical to an earlier call (tool and arguments)"),
    _spec("n_identical_unchanged", "count", "identical calls with no write in between",
          better="lower"),
), one_of(_fast_rereads_many), many=_fast_rereads_many)
METRICS: tuple[MetricPart, ...] = (REREADS,)
"""The per-run ``rereads_*`` metrics (``rereads_summary`` computes the same with pandas)."""
