"""The actions table as a replay writes it: ``record_action`` appends an action's values to
``Env.action_rows``, one flat list (no row object an action), and ``action_columns`` turns them
into the table's columns once, at the end of the replay.

Called by ``replay.engine.tiers.apply`` (the one place that changes the context; its
``apply_pass`` writes a trim pass's row itself, in ``ACTION_VALUES``' order), by the recorded
compactions and by the induced re-reads.
"""

from __future__ import annotations

from typing import Any

from replay.engine.context import Context
from replay.engine.tiers.base import Env
from replay.engine.trace import ActionRow


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
        summary_tokens, env.fixed_truth + ctx.truth(), recorded, min_reclaim_tokens,
        protect_first_msg, induced, size_estimate)


ACTION_VALUES: tuple[str, ...] = ActionRow._fields[3:]
"""What ``record_action`` records an action, in ``Env.action_rows``: ``ActionRow``'s fields
but the run, the policy and the action's number, the same in every row of a replay or its
position (``action_columns`` fills them in)."""
ACTION_WIDTH = len(ACTION_VALUES)
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
    v[at + _FIRST_MSG] = min(v[at + _FIRST_MSG], first_msg)
    v[at + _LAST_MSG] = max(v[at + _LAST_MSG], last_msg)
    v[at + _RECLAIMED_EST] += reclaimed_est_tokens
    v[at + _RECLAIMED] += reclaimed_tokens
    v[at + _INVALIDATED] = max(v[at + _INVALIDATED], invalidated)
    v[at + _CONTEXT_AFTER] = context_after_tokens
    v[at + _INDUCED] = True


(_N_BLOCKS, _FIRST_MSG, _LAST_MSG, _RECLAIMED_EST, _RECLAIMED, _INVALIDATED, _CONTEXT_AFTER,
 _INDUCED) = (_ACTION_AT[name] for name in (
    "n_blocks", "first_msg", "last_msg", "reclaimed_est_tokens", "reclaimed_tokens",
    "invalidated_tokens", "context_after_tokens", "induced"))


def action_columns(env: Env, run_id: str) -> dict[str, list[Any]]:
    """The actions table's columns, in ``ActionRow``'s order (the flat values sliced)."""
    values, n = env.action_rows, n_actions(env)
    return {"run_id": [run_id] * n, "policy": [env.policy.name] * n, "action": list(range(n)),
            **{name: values[i::ACTION_WIDTH] for i, name in enumerate(ACTION_VALUES)}}


def action_rows(env: Env, run_id: str) -> list[ActionRow]:
    """The actions recorded so far as rows (for a reader of whole rows: tests)."""
    return [ActionRow(*row) for row in zip(*action_columns(env, run_id).values())]
