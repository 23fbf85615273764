"""What the log recorded of a run's harness compactions, as fidelity reads it: the first
compaction, the level the harness compacted at and the trigger it recorded, and the replay's
size after its first cut against the count the harness recorded after its own.

The level is the compaction's own count where the log has it (``ContextEvent.pre_tokens``:
Claude Code's ``compactMetadata.preTokens``, the count the client compared with its
threshold: the last usage plus its estimate of what came since) and it follows from the log
(the last recorded usage plus what the log holds since, with a margin: a hand-made file's
count that the usage cannot explain is not taken), else the last recorded prompt before it —
which is short of the level by what arrived after that request (a large tool result can be
most of the 5 % tolerance).

Not here: the figures and their targets (``analysis.fidelity``).
"""

from __future__ import annotations

import bisect
from typing import Any

from replay.engine.hidden_reasoning import counts_hidden_reasoning, reasoning_between
from replay.engine.prepared import PreparedRun
from replay.engine.trace import CUT_KINDS
from replay.policy import Policy


def first_compaction(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's first recorded compaction event (None: none)."""
    rows = [e for e in events if e["kind"] == "compaction"]
    return min(rows, key=lambda e: e["msg"]) if rows else None


def pre_tokens(run: PreparedRun, events: list[dict[str, Any]],
               policy: Policy | None = None) -> tuple[int | None, str]:
    """The level the harness compacted at and where it comes from (``recorded_pre_tokens``).
    For a harness that also counts earlier turns' reasoning (Codex: ``policy`` counts it), a
    recorded request's figure is what the harness compared: its input and output and the
    reasoning before its turn (``replay.engine.hidden_reasoning``)."""
    first = run.first_compaction_request
    rec = run.recorded_input
    if first is None:
        k = max((k for k, r in enumerate(rec) if r), key=lambda k: rec[k] or 0, default=None)
        return _compared(run, k, policy, "largest request")
    k = next((k for k in range(first - 1, -1, -1) if rec[k]), None)
    event = first_compaction(events)
    own = event["pre_tokens"] if event is not None else None
    if own and event is not None and _follows(run, k, own, event["msg"]):
        return own, "compaction"
    return _compared(run, k, policy, "last request" if not own else (
        f"last request (the compaction's own count, {own:,}, is not the last usage plus what "
        "the log holds since)"))


def _compared(run: PreparedRun, k: int | None, policy: Policy | None,
              basis: str) -> tuple[int | None, str]:
    """Request ``k``'s recorded prompt, or for Codex what it compared after that request."""
    if k is None:
        return None, ""
    pre = run.recorded_input[k] or 0
    if policy is not None and counts_hidden_reasoning(policy):
        end = run.req_output_blocks[k][1]
        pre += (run.recorded_output[k] or 0) + reasoning_between(run, run.recorded_from[k], end)
        basis += " with its output and earlier turns' reasoning"
    return pre, basis


def _follows(run: PreparedRun, k: int | None, own: int, msg: int) -> bool:
    """Whether a compaction's own count can be the last recorded usage (request ``k``'s prompt
    and output) plus what the log holds between that request's answer and the compaction
    (counted, with a margin: twice that count and 2,000 tokens + 2 % of the prompt)."""
    if k is None:
        return True
    prompt = run.recorded_input[k] or 0
    tokens = next(iter(run.tokens.values()))
    since = sum(tokens[run.req_output_blocks[k][1]:bisect.bisect_left(run.msg, msg)])
    slack = 2_000 + 0.02 * prompt
    return prompt - slack <= own <= (prompt + (run.recorded_output[k] or 0) + 2 * since
                                      + slack)


def post_tokens_error(trace: Any, events: list[dict[str, Any]]) -> float | None:
    """``post_tokens_error_frac``: the replay's context after its first cut against the first
    recorded compaction's own post-compaction count."""
    event = first_compaction(events)
    if event is None or not event["post_tokens"]:
        return None
    act = trace.columns("actions")
    after = next((a for k, u, a in zip(act["kind"], act["undone"], act["context_after_tokens"])
                  if k in CUT_KINDS and not u), None)
    return None if after is None else (after - event["post_tokens"]) / event["post_tokens"]


def first_trigger(events: list[dict[str, Any]]) -> str:
    """The trigger of the run's first recorded compaction (its ``ContextEvent``), '' unknown."""
    event = first_compaction(events)
    return event["trigger"] if event is not None else ""
