"""Custom tiers: a Python class, named ``module:Class`` in the policy, for what YAML cannot say.

The protocol is small.  The class is built with the policy's ``options`` as
keyword arguments, and its ``decide(view)`` — asked when the tier's ``trigger`` fires, every
request by default — gets a read-only ``View`` of the
context and returns ``None`` (do nothing) or a decision: ``TrimBlocks`` (replace
these blocks with a note) or ``CutBefore`` (drop every message before this
one, optionally behind a stub summary).  The engine applies decisions through
the same safe mechanisms as the built-in tiers: a cut walks back to a safe
split point, the newest output is never cut.

Loading Python from a policy runs code, so it needs ``allow_python=True``
(``--allow-python`` on the command line).  ``DropStaleReads`` is a worked example.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from replay.engine.context import Context, HeadItem
from replay.engine.summariser import Facts, summarise
from replay.engine.tiers.apply import apply_cut, apply_trims
from replay.engine.tiers.base import Env
from replay.engine.tiers.step import Step
from replay.engine.tiers.trigger import TriggerCheck, fires_check, trigger_check
from replay.engine.trace import CUSTOM_CUT, CUSTOM_TRIM, DROPPED
from replay.errors import PolicyError
from replay.policy import Custom


@dataclass(frozen=True, slots=True)
class BlockView:
    """One live block as a custom tier sees it."""

    index: int
    msg: int
    kind: str
    tool: str
    op: str
    path: str
    n_chars: int
    n_lines: int
    est_tokens: int
    is_trimmed: bool


@dataclass(frozen=True, slots=True)
class View:
    """Read-only view of the context for ``decide``."""

    request: int
    est_tokens: int
    usable_tokens: int
    n_messages: int
    _ctx: Context

    def blocks(self) -> Iterator[BlockView]:
        """The live blocks, oldest first."""
        c, r = self._ctx, self._ctx.run
        for b in range(c.lo, c.hi):
            yield BlockView(b, r.msg[b], r.kind[b], r.tool[b], r.op[b], r.path[b], r.n_chars[b],
                            r.n_lines[b], c.cur_est[b], c.trimmed[b])


@dataclass(frozen=True, slots=True)
class TrimBlocks:
    """Replace these blocks (indices from ``BlockView.index``) with ``note``."""

    blocks: tuple[int, ...]
    note: str = "[{tool} output removed by a custom tier]"


@dataclass(frozen=True, slots=True)
class CutBefore:
    """Drop every message before message ``msg`` (walked back to a safe split)."""

    msg: int
    summary_tokens: int = 0


class CustomTier(Protocol):
    """What a ``module:Class`` tier implements."""

    def decide(self, view: View) -> TrimBlocks | CutBefore | None:
        """What to do with the context as it is now."""


def load(tier: Custom, *, allow_python: bool, where: str = "policy") -> CustomTier:
    """Instantiate the class a custom tier names (``where`` names its policy in errors)."""
    if not allow_python:
        raise PolicyError(where, f"tiers.{tier.name}.class",
                          f"{tier.cls!r} is Python code; allow it explicitly (--allow-python)")
    module, _, name = tier.cls.partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise PolicyError(where, f"tiers.{tier.name}.class", f"cannot load: {exc}") from exc
    obj: CustomTier = cls(**dict(tier.options))
    return obj


@dataclass(slots=True, init=False)
class CustomState:
    """One custom tier's state in one replay: its instance, its stub summaries' facts and its
    trigger read once (made by its own ``__init__``: compiled, a dataclass's generated one runs
    as Python; tests/replay/engine/test_own_inits.py checks the defaults agree)."""

    impl: CustomTier
    facts: Facts = field(default_factory=Facts)
    check: TriggerCheck | None = None

    def __init__(self, impl: CustomTier) -> None:
        self.impl, self.facts, self.check = impl, Facts(), None


class CustomStep(Step):
    """A custom tier bound for one replay, with its instance (``replay.engine.tiers.step``)."""

    def __init__(self, tier: Custom, impl: CustomTier) -> None:
        self.tier, self.state = tier, CustomState(impl)

    def act(self, ctx: Context, env: Env) -> None:
        """Ask the class if the trigger fires (``act``)."""
        act(self.tier, self.state, ctx, env)


def act(tier: Custom, st: CustomState, ctx: Context, env: Env) -> None:
    """Ask the class, then apply its decision through the engine's safe mechanisms: blocks
    outside ``[lo, newest output)`` or already trimmed are left out of a trim, and a cut walks
    back to a safe split point before the newest output."""
    check = st.check
    if check is None:
        check = st.check = trigger_check(tier.trigger)
    if not check.every_request and not fires_check(check, ctx, env):
        return
    view = View(env.request, env.fixed_est + ctx.est(), env.usable, ctx.n_messages, ctx)
    decision = st.impl.decide(view)
    run = ctx.run
    newest = ctx.newest_output_start()
    if isinstance(decision, TrimBlocks):
        chosen = sorted(b for b in set(decision.blocks)
                        if ctx.lo <= b < newest and not ctx.trimmed[b])
        if not chosen:
            return
        notes = [(b, decision.note.format(tool=run.tool[b] or "tool", path=run.path[b]))
                 for b in chosen]
        apply_trims(ctx, env, [(b, env.est_text(note), env.truth_text(note), len(note.encode()))
                               for b, note in notes],
                    tier=tier.name, kind=CUSTOM_TRIM, protect_from=newest,
                    trigger_tokens=view.est_tokens, threshold_tokens=0)
    elif isinstance(decision, CutBefore):
        target = next((b for b in range(ctx.lo, ctx.hi) if run.msg[b] >= decision.msg), ctx.hi)
        split = ctx.safe_split_at_or_before(min(target, newest))
        if split <= ctx.lo:
            return
        head: list[HeadItem] = []
        if decision.summary_tokens:
            text = summarise(st.facts, run, ctx.lo, split, decision.summary_tokens)
            head = [HeadItem("summary", text, env.est_text(text), env.truth_text(text),
                             len(text.encode()))]
        apply_cut(ctx, env, split, head, tier=tier.name, kind=CUSTOM_CUT, fate=DROPPED,
                  protect_from=newest, trigger_tokens=view.est_tokens, threshold_tokens=0,
                  summary_tokens=sum(h.truth for h in head))


class DropStaleReads:
    """Example: once a file is read again, earlier reads of it are replaced by a note."""

    def __init__(self, min_chars: int = 0) -> None:
        self.min_chars = min_chars

    def decide(self, view: View) -> TrimBlocks | None:
        """Trim every read result of a path that has a newer read in context."""
        latest: dict[str, int] = {}
        stale: list[int] = []
        for blk in view.blocks():
            if blk.kind == "tool_result" and blk.op == "read" and blk.path and not blk.is_trimmed:
                if blk.path in latest and blk.n_chars >= self.min_chars:
                    stale.append(latest[blk.path])
                latest[blk.path] = blk.index
        return TrimBlocks(tuple(stale), "[older read of {path}; a newer read follows]") if stale else None
