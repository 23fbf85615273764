"""The per-run ``induced_rereads_*`` metrics: declarations and their fast computation.

What the replay added because the policy removed content the recorded run needs later
(``replay.engine.induced``): the re-reads it inserted, their tokens and cost, the ones past the
policy's cap per turn, and the repeats (a block re-read again after its re-read was removed:
the loop a re-call placeholder starts).  Definitions: ``analysis.induced`` (whose pandas
``induced_summary`` computes the same columns, the tests' oracle).  Every other figure of a
replay with induced re-reads includes them (cost, tokens sent, cache, overshoots); these say how
much of it they are.
"""

from __future__ import annotations

from typing import Any

from analysis.metric_spec import MetricPart, MetricSpec, PartInput
from analysis.per_run.stats import kahan_sum
from replay.engine.trace import INDUCED_INVITED, INDUCED_REREAD

INDUCED_NOTE = ("figures include induced work: re-reads the replay inserted where the recorded "
                "run needs content the policy removed (induced_rereads_*; the model calls "
                "that re-read are priced in cost_usd but are not in n_requests or tokens_sent, "
                "which sum the recorded requests, grown by what the re-reads returned; the "
                "policy's behaviour.rereads: false leaves them out)")
"""What every output says when its figures include induced re-reads."""


def estimated_note(n_estimated: int) -> str:
    """What an output says when ``n_estimated`` induced re-reads were sized as estimates
    (``induced_rereads_estimated_n``); empty when none were."""
    if not n_estimated:
        return ""
    return (f"{n_estimated} induced re-read(s) sized as estimates — of a file edited by an edit "
            "the replay cannot apply (a patch, an unknown tool), or only ever read in parts "
            "(sized as the largest part read, a lower bound): induced_rereads_estimated_n, "
            "the traces' actions.size_estimate")


def _fast_induced(inp: PartInput) -> dict[str, Any]:
    """Induced re-reads: made, their tokens and cost, capped, repeated."""
    rq, ac = inp.requests, inp.actions
    seen: set[int] = set()
    capped = repeats = invited = estimated = 0
    kinds: list[str] = ac["kind"]
    undone: list[bool] = ac["undone"]
    first_msg: list[int] = ac["first_msg"]
    when: list[str] = ac["when"]
    size_estimate: list[str] = ac["size_estimate"]
    # the re-reads among the actions, found in C (``list.index``: most actions are of the tiers,
    # and most replays have no re-read, one scan of their kinds)
    for i in _positions(kinds, INDUCED_REREAD):
        if undone[i]:
            capped += 1
            continue
        if when[i] == INDUCED_INVITED:
            invited += 1
        if size_estimate[i]:
            estimated += 1
        msg = first_msg[i]
        if msg in seen:
            repeats += 1
        else:
            seen.add(msg)
    return {
        "induced_rereads_n": sum(rq["induced_rereads"]),
        "induced_rereads_tokens": sum(rq["induced_tokens"]),
        "induced_rereads_cost_usd": kahan_sum(rq["induced_cost_usd"]),
        "induced_rereads_capped_n": capped,
        "induced_rereads_repeat_n": repeats,
        "induced_rereads_invited_n": invited,
        "induced_rereads_estimated_n": estimated,
    }


def _positions(values: list[str], value: str) -> list[int]:
    """Where ``value`` is in ``values``, in order (each found by ``list.index``, in C)."""
    out: list[int] = []
    at = -1
    while True:
        try:
            at = values.index(value, at + 1)
        except ValueError:
            return out
        out.append(at)


def _spec(name: str, unit: str, description: str, **kw: Any) -> MetricSpec:
    return MetricSpec(f"induced_rereads_{name}", unit, description, **kw)


INDUCED = MetricPart("induced", (
    _spec("n", "count", "re-reads the replay inserted where the recorded run needs content the "
          "policy removed (one more model call each)", better="lower",
          label="induced re-reads"),
    _spec("tokens", "tokens", "tokens those re-reads put back into the context (call and "
          "result)", better="lower", label="induced re-read tokens"),
    _spec("cost_usd", "USD", "what the inserted calls cost (included in cost_usd)",
          dtype="float64", better="lower"),
    _spec("capped_n", "count", "unmet needs past the policy's cap per turn (not re-read)",
          better="lower"),
    _spec("repeat_n", "count", "re-reads of content the replay had already re-read once (its "
          "re-read removed again before the need: the loop of a re-call placeholder)",
          better="lower", label="induced re-read repeats"),
    _spec("invited_n", "count", "re-reads a placeholder asking for a re-call made at once "
          "(behaviour.invited_recall: immediate)", better="lower"),
    _spec("estimated_n", "count", "re-reads whose size is an estimate (actions.size_estimate): "
          "of a file edited by an edit the replay cannot apply (a patch, an unknown tool), or "
          "only ever read in parts (sized as the largest part read, a lower bound)",
          better="lower"),
), _fast_induced, needs_facts=False)
METRICS: tuple[MetricPart, ...] = (INDUCED,)
"""The per-run ``induced_rereads_*`` metrics (``induced_summary`` computes the same with
pandas)."""
