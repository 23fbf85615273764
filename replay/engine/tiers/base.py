"""What every tier shares: the replay environment, placeholders.

``Env`` carries the per-replay constants (policy, counters, usable window) and
the trace columns that actions and evictions are appended to; ``placeholder`` renders what a
trimmed block becomes (the action rows: ``replay.engine.tiers.actions``; whether a trigger
fires: ``replay.engine.tiers.trigger``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from replay.engine.context import Context, HeadItem
from replay.engine.hidden_reasoning import counts_hidden_reasoning
from replay.engine.induced_state import InduceState
from replay.engine.prepared import Calibration, PreparedRun, text_count
from replay.engine.probe import Probe
from replay.engine.truth import floored
from replay.policy import Placeholder, Policy, TokenCounter


@dataclass(slots=True, init=False)
class Evictions:
    """The evictions table as four columns (block, request, tier, fate) for blocks evicted one
    by one (trims), and each cut as one range where it came in that order; run, policy, message
    and block ids are filled in at the end, a cut's as slices of the run's: no object per evicted
    block beyond its values.  (Columns rather than a list of row tuples: compiled, a row tuple
    cost its making, its freeing and its transposition at the end, about 600 instructions a row
    more than four appends.)  Made empty, by its own ``__init__`` (see ``Env``)."""

    blocks: list[int]
    requests: list[int]
    tiers: list[str]
    fates: list[str]
    cuts: list[tuple[int, range, int, str, str]]
    """(blocks evicted one by one before it, the range cut, request, tier, fate) per cut."""
    n: int
    """Evicted blocks so far."""
    induced_rows: list[int]
    """The positions in ``blocks`` of induced re-reads (``add_induced``: their block is the one
    re-read), ascending."""

    def __init__(self) -> None:
        self.blocks, self.requests, self.tiers, self.fates = [], [], [], []
        self.cuts, self.n, self.induced_rows = [], 0, []

    def add(self, b: int, request: int, tier: str, fate: str) -> None:
        """Block ``b`` was trimmed, summarised or dropped before ``request``."""
        self.blocks.append(b)
        self.requests.append(request)
        self.tiers.append(tier)
        self.fates.append(fate)
        self.n += 1

    def add_induced(self, b: int, request: int, tier: str, fate: str) -> None:
        """An induced re-read of block ``b`` was trimmed, summarised or dropped before
        ``request``."""
        self.induced_rows.append(len(self.blocks))
        self.add(b, request, tier, fate)

    def add_many(self, blocks: list[int], request: int, tier: str, fate: str) -> None:
        """Each of ``blocks``, in order, was trimmed, summarised or dropped before ``request``
        (a loop, not ``repeat``: compiled, its calls cost more than the few blocks of a
        pass)."""
        self.blocks += blocks
        requests, tiers, fates = self.requests, self.tiers, self.fates
        for _ in blocks:
            requests.append(request)
            tiers.append(tier)
            fates.append(fate)
        self.n += len(blocks)

    def add_range(self, lo: int, hi: int, request: int, tier: str, fate: str) -> None:
        """Blocks ``[lo, hi)`` were removed before ``request``."""
        self.cuts.append((len(self.blocks), range(lo, hi), request, tier, fate))
        self.n += hi - lo

    def columns(self, run: PreparedRun) -> tuple[list[int], list[int], list[int], list[str],
                                                 list[str], list[bool]]:
        """Message id, block id, request, tier, fate and whether it is an induced re-read, of
        every evicted block, in order (once, at the end of the replay: without cuts, the lists
        are its own)."""
        blocks, requests, tiers, fates = self.blocks, self.requests, self.tiers, self.fates
        flags = None
        if self.induced_rows:  # a flag per row made at C speed, then the few set
            flags = [False] * len(blocks)
            for i in self.induced_rows:
                flags[i] = True
        msg, block = run.msg, run.block
        if not self.cuts:
            return ([msg[b] for b in blocks], [block[b] for b in blocks], requests, tiers, fates,
                    flags if flags is not None else [False] * self.n)
        msgs: list[int] = []
        block_ids: list[int] = []
        out_requests: list[int] = []
        out_tiers: list[str] = []
        out_fates: list[str] = []
        out_flags: list[bool] = []
        done = 0
        for at, cut, request, tier, fate in [*self.cuts, (len(blocks), range(0), 0, "", "")]:
            if at > done:  # the blocks evicted one by one since the previous cut
                one_by_one = blocks[done:at]
                msgs += [msg[b] for b in one_by_one]
                block_ids += [block[b] for b in one_by_one]
                out_requests += requests[done:at]
                out_tiers += tiers[done:at]
                out_fates += fates[done:at]
                out_flags += flags[done:at] if flags is not None else repeat(False, at - done)
                done = at
            msgs += msg[cut.start:cut.stop]
            block_ids += block[cut.start:cut.stop]
            out_requests += repeat(request, len(cut))
            out_tiers += repeat(tier, len(cut))
            out_fates += repeat(fate, len(cut))
            out_flags += repeat(False, len(cut))
        return msgs, block_ids, out_requests, out_tiers, out_fates, out_flags


@dataclass(slots=True, init=False)
class Reinserts:
    """What re-inserting items after a summary remembers across one replay (made empty, by its
    own ``__init__``: see ``Env``)."""

    task: int | None
    """The run's task block (its first user text; -1: none), found at first use (None: not
    yet)."""
    todo_upto: int
    """The furthest split so far: the todo list re-inserted is the newest before it."""

    def __init__(self) -> None:
        self.task, self.todo_upto = None, 0


@dataclass(slots=True, init=False)
class Env:
    """Per-replay constants and the trace being written.

    Its own ``__init__`` (not the dataclass's): the compiled engine runs a generated
    ``__init__`` as Python, an attribute set through the interpreter each field, several times
    the cost of this one, once a replay."""

    policy: Policy
    calibration: Calibration | None
    action_rows: list[Any]
    """The actions table, flat: ``ACTION_VALUES`` an action, one after another
    (``replay.engine.tiers.actions``: ``record_action`` extends it, ``action_columns`` slices it
    into the table's columns)."""
    evictions: Evictions
    fixed_est: int
    fixed_truth: int
    """Tokens the truth adds to the context's count for the current request (fixed overhead,
    a fitted overhead, or the anchor offset: ``replay.engine.truth``)."""
    truth_counter: TokenCounter
    """The counter truth counts are taken under (``replay.engine.truth.TruthPlan.counter``)."""
    truth_floor: float
    """The least a context is sized at, per token of its count (0: no floor;
    ``replay.engine.truth.floored``)."""
    request: int
    """The request the next action takes effect for (0 at first)."""
    when: str
    """``before`` (at first) or ``after``: when the acting tier checks."""
    prev_truth: int
    """True tokens of the last request sent (what the cache holds; 0 at first)."""
    n_summaries: int
    """Summaries made so far, by every tier (for ``fail_every``)."""
    reinserts: Reinserts
    """What re-inserting items after a summary remembers (shared by every tier; each tier's own
    state lives in its step, ``replay.engine.tiers.bind``)."""
    usable: int
    """The window the harness plans against (set from the policy)."""
    reattached: list[int]
    """Per harness compaction: its unseen re-attached tokens (``replay.engine.truth.TruthPlan``;
    empty when not given)."""
    induce: InduceState | None
    """The agent's re-reads of what the policy removed (``replay.engine.induced``; None: the
    policy's ``behaviour.rereads`` is off, or nothing in the run is ever needed again)."""
    reused: set[int]
    """Recorded compactions a tier reused: from their first request after on, their unseen
    restoration is in ``fixed_truth`` (``reuse_recorded``)."""
    probe: Probe | None
    """Where the tiers' gates record what they compared (``replay.engine.probe``; None: not
    recorded)."""
    hidden_reasoning: bool
    """The harness also counts earlier turns' encrypted reasoning (Codex, unless
    ``server_reasoning_included``): ``harness_estimate`` adds it (set from the policy)."""

    def __init__(self, *, policy: Policy, calibration: Calibration | None,
                 action_rows: list[Any], evictions: Evictions, fixed_est: int, fixed_truth: int,
                 truth_counter: TokenCounter, request: int = 0, when: str = "before",
                 reattached: list[int] | None = None, probe: Probe | None = None) -> None:
        self.policy, self.calibration = policy, calibration
        self.action_rows, self.evictions = action_rows, evictions
        self.fixed_est, self.fixed_truth, self.truth_counter = fixed_est, fixed_truth, truth_counter
        self.request, self.when, self.prev_truth, self.n_summaries = request, when, 0, 0
        self.reinserts = Reinserts()
        self.usable = policy.usable_tokens
        self.reattached = reattached if reattached is not None else []
        self.induce, self.reused, self.probe = None, set(), probe
        self.hidden_reasoning = counts_hidden_reasoning(policy)
        self.truth_floor = 0.0

    def est_text(self, text: str) -> int:
        """Estimated tokens of a text the replay creates."""
        return text_count(text, self.policy.estimator, self.calibration)

    def truth_text(self, text: str) -> int:
        """True tokens of a text the replay creates."""
        return text_count(text, self.truth_counter, self.calibration)


def placeholder(run: PreparedRun, b: int, ph: Placeholder) -> str:
    """What block ``b`` becomes when trimmed: head, the note, tail (memoised per run)."""
    memo = run.memo(("placeholder", ph))
    if b not in memo:
        memo[b] = _render(run, b, ph)
    text: str = memo[b]
    return text


def _render(run: PreparedRun, b: int, ph: Placeholder) -> str:
    text = run.text[b]
    note = ph.template.format_map(_Vars(tool=run.tool[b] or "tool", path=run.path[b] or "",
                                        lines=run.n_lines[b], chars=run.n_chars[b],
                                        call_id=run.call_id[b]))
    parts = []
    if ph.head_lines or ph.tail_lines:
        lines = text.split("\n")
        if ph.head_lines:
            parts.append("\n".join(lines[: ph.head_lines]))
        parts.append(note)
        if ph.tail_lines:
            parts.append("\n".join(lines[-ph.tail_lines:]))
    else:
        if ph.head_chars:
            parts.append(text[: ph.head_chars])
        parts.append(note)
        if ph.tail_chars:
            parts.append(text[-ph.tail_chars:])
    return "\n".join(parts)


def write_note(run: PreparedRun, b: int, template: str) -> str:
    """What completed write/edit arguments shrink to."""
    return template.format_map(_Vars(tool=run.tool[b] or "tool", path=run.path[b] or "a file",
                                     lines=run.n_lines[b], chars=run.n_chars[b],
                                     call_id=run.call_id[b]))


def invalidated_from(ctx: Context, env: Env, first_block: int | None) -> int:
    """Tokens of the last sent request a change at ``first_block`` (None: the head) invalidates."""
    if env.prev_truth <= 0:
        return 0
    prefix = floored(env.fixed_truth, 0 if first_block is None else ctx.truth_before(first_block),
                   env.truth_floor)
    return max(0, env.prev_truth - prefix)


def reuse_recorded(env: Env, ctx: Context, c: int) -> None:
    """A tier reuses recorded compaction ``c``: from the requests it heads in the log on, the
    truth holds what the harness re-attached after it unseen."""
    env.reused.add(c)
    heads = ctx.run.recorded_summary
    if env.request < len(heads) and heads[env.request] == c and env.reattached:
        env.fixed_truth += env.reattached[c]


class _Vars(dict[str, Any]):
    """Template variables; an unknown ``{name}`` stays as written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def kept_first(ctx: Context, split: int, n_messages: int) -> list[HeadItem]:
    """The run's first ``n_messages`` messages as head items in front of a summary or of what a
    cut keeps (each block one item, as the context counts it), those of them the cut before
    ``split`` takes."""
    run = ctx.run
    if not n_messages:
        return []
    end = min(split, run.msg_start[min(n_messages, len(run.msg_start) - 1)])
    return [HeadItem("first", run.text[b], ctx.est_of[b], ctx.truth_of[b], run.n_bytes[b])
            for b in range(end)]


def reinserted(ctx: Context, env: Env, split: int, items: tuple[str, ...],
               user_tokens: int = 0) -> list[HeadItem]:
    """The items re-inserted verbatim after a summary that cuts before ``split`` (the user
    messages within ``user_tokens``)."""
    run, out, memory = ctx.run, [], env.reinserts
    if "task" in items:
        task = memory.task
        if task is None:
            task = memory.task = next((b for b in range(run.n_blocks)
                                       if run.role[b] == "user" and run.kind[b] == "text"), -1)
        if 0 <= task < split:
            out.append(_item("task", run.text[task], ctx, env, task))
    if "todo" in items:
        # the newest todo-list call before the furthest split so far
        upto = memory.todo_upto = max(memory.todo_upto, split)
        todos = _todo_calls(run)
        i = bisect.bisect_left(todos, upto)
        latest = todos[i - 1] if i else -1
        if 0 <= latest < split:
            out.append(_item("todo", run.text[latest], ctx, env, latest))
    if "user_messages" in items:
        out.extend(_user_messages(ctx, env, split, user_tokens))
    return out


def _user_messages(ctx: Context, env: Env, split: int, budget: int) -> list[HeadItem]:
    """The newest user text blocks before ``split`` whose estimates fit ``budget`` together,
    oldest first; the one at the budget's edge cut to what is left (its head and tail, as
    Codex's ``truncate_text`` keeps them)."""
    run, kept = ctx.run, []
    b = split
    while budget > 0 and b > 0:
        b -= 1
        if run.role[b] != "user" or run.kind[b] != "text" or not run.text[b]:
            continue
        if ctx.est_of[b] <= budget:
            kept.append(_item("user message", run.text[b], ctx, env, b))
            budget -= ctx.est_of[b]
            continue
        text = run.text[b]
        keep = max(0, len(text) * budget // max(ctx.est_of[b], 1))
        cut = f"{text[:keep // 2]}…{ctx.est_of[b] - budget} tokens truncated…{text[len(text) - keep // 2:]}"
        kept.append(HeadItem(label="user message", text=cut, est=env.est_text(cut),
                             truth=env.truth_text(cut), n_bytes=len(cut.encode("utf-8", "replace")),
                             block=b))
        break
    return kept[::-1]


def _todo_calls(run: PreparedRun) -> list[int]:
    """The run's todo-list calls (op ``todo``, ``replay.ingest.ops``), in order (memoised per run)."""
    memo = run.memo("todo_calls")
    got = memo.get("blocks")
    if got is None:
        kind, op = run.kind, run.op
        got = memo["blocks"] = [b for b in range(run.n_blocks)
                                if kind[b] == "tool_call" and op[b] == "todo"]
    return got


def _item(label: str, text: str, ctx: Context, env: Env, b: int) -> HeadItem:
    return HeadItem(label=label, text=text, est=ctx.est_of[b], truth=ctx.truth_of[b],
                    n_bytes=ctx.run.n_bytes[b], block=b)
