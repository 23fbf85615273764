"""Reasoning the server no longer counts but Codex does: its trigger's extra term.

Codex compares with its auto-compact limit the last response's usage plus what was added since,
plus — unless the server says it counted them — its estimate of every encrypted reasoning item
before the last user turn (``replay.codex_bytes``: encoded length × 3 / 4 − 650 bytes, / 4 a
token).  The server drops those items from later turns' input, so the recorded usage and
the replay's anchored estimate hold none of them; without this term a replay of Codex fires
requests late (the 0.104 rollout of madshn/localpush: 33,320 tokens of it at its compaction).

``earlier_reasoning_tokens(ctx)`` is that term for the live context: the reasoning blocks from
the context's first live block up to the start of its newest user message (the turn boundary;
every user-role message counts, the contextual ones Codex skips come at turn starts).  Blocks
before a cut are gone, so after a compaction the term starts again from nothing, as in Codex.
Per-run prefix sums make it two lookups a request.

Not here: where it is added (``replay.engine.tiers.trigger.harness_estimate``; fidelity's
recorded figure, ``analysis.fidelity``).
"""

from __future__ import annotations

import itertools

from replay.codex_bytes import approx_tokens, decrypted_bytes
from replay.engine.context import Context
from replay.engine.prepared import PreparedRun
from replay.policy import Policy


def counts_hidden_reasoning(policy: Policy) -> bool:
    """Whether the policy's harness adds earlier turns' reasoning to what it compares (Codex,
    unless the server said it counted them)."""
    h = policy.harness
    return h is not None and h.name == "codex" and not h.server_reasoning_included


def has_hidden_reasoning(run: PreparedRun) -> bool:
    """Whether the run records any encrypted reasoning (else the term is 0 throughout)."""
    return bool(_arrays(run)[0])


def earlier_reasoning_tokens(ctx: Context) -> int:
    """Codex's estimate of the live context's reasoning before its newest user turn."""
    return reasoning_between(ctx.run, ctx.lo, ctx.hi)


def reasoning_between(run: PreparedRun, lo: int, hi: int) -> int:
    """The same for the blocks ``lo`` to ``hi`` of the run (e.g. a context the log recorded)."""
    prefix, turn_start = _arrays(run)
    if not prefix or hi <= lo:
        return 0
    end = turn_start[hi - 1]
    return prefix[end] - prefix[lo] if end > lo else 0


def _arrays(run: PreparedRun) -> tuple[list[int], list[int]]:
    """(prefix sums of each block's estimate, per block the start of the newest user message
    at or before it), memoised; empty when the run records no encrypted reasoning."""
    memo = run.memo(("hidden_reasoning",))
    got = memo.get(0)
    if got is None:
        enc = run.encrypted_bytes
        if not any(enc):
            got = memo[0] = ([], [])
        else:
            per = [approx_tokens(decrypted_bytes(n)) if n and kind == "reasoning" else 0
                   for n, kind in zip(enc, run.kind)]
            starts, last = [], 0
            for b in range(run.n_blocks):
                o = run.ordinal[b]
                if run.role[b] == "user" and run.msg_start[o] == b:
                    last = b
                starts.append(last)
            got = memo[0] = ([0, *itertools.accumulate(per)], starts)
    return got
