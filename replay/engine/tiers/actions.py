"""The actions table as a replay writes it: ``record_action`` appends an action's values to
``Env.action_rows``, one flat list (no row object an action), and ``action_columns`` turns them
into the table's columns once, at the end of the replay.

Called by ``replay.engine.tiers.apply`` (the one place that changes the context; its
``apply_pass`` writes a trim pass's row itself, in ``ACTION_VALUES``' order), by the recorded
compactions and by the induced re-reads.
"""

from __future__ import annotations

from typing import Any, Final

from replay.engine.context import Context
from replay.engine.tiers.base import Env
from replay.engine.trace import ActionRow
from replay.engine.truth import floored


def record_action(env: Env, ctx: Context, tier: str, kind: str, trigger_tokens: int,
                  threshold_tokens: int, n_blocks: int, first_msg: int, last_msg: int,
                  reclaimed_est_tokens: int, reclaimed_tokens: int, invalidated: int,
                  min_reclaim_tokens: int = 0, protect_first_msg: int | None = None,
                  undone: bool = False, failed: bool = False, summary_tokens: int = 0,
                  recorded: bool = False, induced: bool = False,
                  when: str | None = None, size_estimate: str = "") -> None:
    """One actions row; ``reclaimed_est_tokens`` / ``reclaimed_tokens``: what the action took
    out by estimate / by truth; ``recorded``: the summary is the one the log recorded.

    Call it with keywords, except on a hot path: ``apply_trims`` (a trim at every request)
    passes its first 14 values by position, as keyword matching costs more than the row."""
    # ACTION_VALUES in their order onto the flat list (no row object, no NamedTuple
    # constructor; tests/replay/engine/test_trace_rows.py checks the order)
    env.action_rows += (
        env.request, tier, kind, when or env.when, trigger_tokens, threshold_tokens, n_blocks,
        first_msg, last_msg, reclaimed_tokens, reclaimed_est_tokens, invalidated, undone, failed,
        summary_tokens, floored(env.fixed_truth, ctx.truth(), env.truth_floor), recorded,
        min_reclaim_tokens,
        protect_first_msg, induced, size_estimate)


ACTION_VALUES: Final[tuple[str, ...]] = ActionRow._fields[3:]
"""What ``record_action`` records an action, in ``Env.action_rows``: ``ActionRow``'s fields
but the run, the policy and the action's number, the same in every row of a replay or its
position (``action_columns`` fills them in)."""
ACTION_WIDTH: Final = len(ACTION_VALUES)
_ACTION_AT = {name: i for i, name in enumerate(ACTION_VALUES)}
if ActionRow._fields[:3] != ("run_id", "policy", "action"):
    raise AssertionError("replay.engine.tiers.base: ActionRow does not begin with its run, "
                         "policy and number")


def n_actions(env: Env) -> int:
    """Actions recorded so far."""
    return len(env.action_rows) // ACTION_WIDTH


def update_action(env: Env, i: int, **changes: Any) -> None:
    """Action ``i`` with the named values changed (``ACTION_VALUES`` fields)."""
    values, at = env.action_rows, i * ACTION_WIDTH
    for name, value in changes.items():
        values[at + _ACTION_AT[name]] = value


def add_to_action(env: Env, i: int, n_blocks: int, first_msg: int, last_msg: int,
                  reclaimed_est_tokens: int, reclaimed_tokens: int, invalidated: int,
                  context_after_tokens: int) -> None:
    """Action ``i`` joined by more blocks of its pass (induced re-reads trimmed with it): its
    blocks and reclaimed tokens added, its messages widened to ``first_msg``..``last_msg``, what
    it invalidated the larger of the two, the context after it replaced, and marked induced."""
    v, at = env.action_rows, i * ACTION_WIDTH
    v[at + _N_BLOCKS] += n_blocks
    # min/max as conditional expressions (FURB136 off: see replay.engine.tiers.apply.allowed_end)
    first, last, inval = v[at + _FIRST_MSG], v[at + _LAST_MSG], v[at + _INVALIDATED]
    v[at + _FIRST_MSG] = first_msg if first_msg < first else first  # noqa: FURB136
    v[at + _LAST_MSG] = last_msg if last_msg > last else last  # noqa: FURB136
    v[at + _RECLAIMED_EST] += reclaimed_est_tokens
    v[at + _RECLAIMED] += reclaimed_tokens
    v[at + _INVALIDATED] = invalidated if invalidated > inval else inval  # noqa: FURB136
    v[at + _CONTEXT_AFTER] = context_after_tokens
    v[at + _INDUCED] = True


_N_BLOCKS: Final = _ACTION_AT["n_blocks"]
_FIRST_MSG: Final = _ACTION_AT["first_msg"]
_LAST_MSG: Final = _ACTION_AT["last_msg"]
_RECLAIMED_EST: Final = _ACTION_AT["reclaimed_est_tokens"]
_RECLAIMED: Final = _ACTION_AT["reclaimed_tokens"]
_INVALIDATED: Final = _ACTION_AT["invalidated_tokens"]
_CONTEXT_AFTER: Final = _ACTION_AT["context_after_tokens"]
_INDUCED: Final = _ACTION_AT["induced"]
"""Positions in an action's values (statics when compiled, where plain names are looked up)."""


def action_columns(env: Env, run_id: str) -> dict[str, list[Any]]:
    """The actions table's columns, in ``ActionRow``'s order (the flat values sliced)."""
    values, n = env.action_rows, n_actions(env)
    cols: dict[str, list[Any]] = {"run_id": [run_id] * n, "policy": [env.policy.name] * n,
                                  "action": list(range(n))}
    # one dict filled in place (a ``**`` of a comprehension built a second and merged it;
    # Final constants, not a module lookup each column): a replay without actions pays too
    for i, name in enumerate(ACTION_VALUES):
        cols[name] = values[i::ACTION_WIDTH] if n else []
    return cols


def action_rows(env: Env, run_id: str) -> list[ActionRow]:
    """The actions recorded so far as rows (for a reader of whole rows: tests)."""
    return [ActionRow(*row) for row in zip(*action_columns(env, run_id).values())]
