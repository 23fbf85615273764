"""What fetching a block again returns: the content a re-read brings back, and its size.

One definition for the replay's induced re-reads (``replay.engine.induced``: what goes back into
the context) and for judging re-reads after real compactions (``analysis.reread_fidelity``: what
a predicted re-read costs).

- A fetched block that is not a read of a file (a search, a command re-issued): its own
  recorded result.
- A read of a file: the file **whole, as known by then, as the agent's read renders it** — an
  agent that lost a file's content opens the file, not the slice it once looked at (after the
  five real compactions of the samples and of three marot/spotter sessions, 19 of the 25
  re-reads read the whole file, and 5 of the 7 files whose newest read before was a part were
  re-read whole: the range read last does not tell the range read next).  "By then" is
  ``before``: the blocks of the run before it.  The file as known:

  - its newest whole content: a read of the whole file (its result, as rendered), or a
    whole-file write (the written text, rendered as the file's reads render it: each line with
    the line-number prefix the newest read result of the file shows, ``LINE_PREFIX``, e.g.
    Claude Code's ``     1→``; none when the file was never read);
  - with the agent's edits of the file since applied (``EDIT_ARGS``: the replaced text's length
    and line count exchanged for the new text's; an edit whose arguments hold no such pair —
    a patch, an unknown tool — is not applied, and counted (``FileContents.unapplied``; fidelity
    says how many touched the files it sized);
    ``replace_all`` is applied once; a write or edit whose result is an error changes nothing);
  - when the file was only ever read in parts: the largest part read (by characters; at least
    what the agent saw), a lower bound of the file; edits are then not applied.

  Before this rule, a re-read was the newest whole content as recorded, without the edits made
  since and with a write counted as its raw text: on the five real compactions, the whole-file
  re-reads of edited or written files were predicted 5-60 % short.

  Not the whole file when the agent has shown, in this run, how it reads the file once it
  lost it: when its newest read of the file made **without a copy of it in the recorded
  context** (the file read or written before, but none of those reads and writes in what the
  harness sent with the request that made the read: a compaction had removed them) read a
  part, a re-read returns that part, its recorded result (``AS_LOST_BEFORE``: the agent's
  habit with the file, an estimate); a newer such read of the whole file gives the whole file
  back.  Only reads before ``before`` count, so a compaction's own re-reads never size its
  prediction.  The five design compactions are each their run's first (no earlier loss:
  unchanged); on 13 held-out real Claude Code sessions (27 compactions, several per session)
  re-read tokens went from +44 % to +23 % pooled, within ±30 % in 4 → 6 of 12 sessions
  (README, fidelity).

The size (``Refetched``): characters, and a block whose counts, scaled by characters, give the
tokens — the whole read's own result when nothing changed since (exactly its counts), else the
newest read result of the file (the density of the file as rendered), else the write.

A read of part of a file (``reads_part``): a read call whose arguments hold a range
(``PART_ARGS``: Claude Code's ``offset``/``limit``, the editors' ``view_range``, ...), or a shell
read that prints part of the file (``replay.ingest.ops.shell_reads_part``: ``sed -n '1,200p'``,
``head``/``tail``, ``grep``, or a read piped on: ``nl -ba f | sed -n '583,600p'``; Codex's
``["bash", "-lc", "..."]`` unwrapped first).

Pure and deterministic; the per-run index is memoised in ``PreparedRun.memo``.  Not here: which
blocks are fetched content and their keys (``replay.engine.needs``).
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import Any

from replay.engine.needs import RunNeeds, norm_path, run_needs
from replay.engine.prepared import PreparedRun
from replay.ingest.ops import shell_reads_part
from replay.shell_line import recorded_command

PART_ARGS = frozenset({"offset", "limit", "view_range", "line_range", "start_line", "end_line"})
"""Read arguments that make a read one of part of the file."""
WRITE_ARGS = ("content", "file_text", "contents")
"""Arguments of a whole-file write that hold the text written (Claude Code ``Write``, the
editors' ``create``)."""
EDIT_ARGS = (("old_string", "new_string"), ("old_str", "new_str"))
"""Argument pairs of an edit: the text replaced and its replacement (Claude Code ``Edit`` and
``MultiEdit``'s ``edits`` entries, the editors' ``str_replace``)."""
UNAPPLIED_EDITS = "unapplied_edits"
"""A re-read's size misses edits of the file the replay cannot apply (``FileContents.unapplied``)."""
PARTS_ONLY = "parts_only"
"""A re-read's size is the largest part of the file read so far (never read whole): a lower
bound."""
AS_LOST_BEFORE = "as_lost_before"
"""A re-read's size is the part of the file the agent read the last time it read the file
without a copy of it in its recorded context (``FileContents.as_lost_before``): its habit with
this file, not the file."""
SIZE_ESTIMATES = (UNAPPLIED_EDITS, PARTS_ONLY, AS_LOST_BEFORE)
"""Why a re-read's size is an estimate (the trace's ``actions.size_estimate``; "" when exact)."""
LINE_PREFIX = re.compile(r" *\d+(?:→|\t)")
"""A read result's line-number prefix, at the start of its first line."""


def reads_part(run: PreparedRun, call: int) -> bool:
    """Whether read call ``call`` read only part of its file."""
    text = run.text[call]
    args = _args(text)
    if args is not None:
        # not `PART_ARGS & args.keys()`: typeshed types that a frozenset, it is a set, and the
        # compiled engine (mypyc) checks the type and fails
        if not PART_ARGS.isdisjoint(args):
            return True
        text = recorded_command(args)
    return shell_reads_part(text)


@dataclass(frozen=True, slots=True)
class Refetched:
    """What one re-read returns: ``chars`` characters, sized by ``block``'s counts scaled by
    characters (``scaled``)."""

    block: int
    chars: int

    def scaled(self, run: PreparedRun, count: int) -> int:
        """``count`` (a count of ``block``: tokens, bytes) scaled to ``chars`` (rounded half
        up; ``count`` itself when the characters are the block's)."""
        n = run.n_chars[self.block]
        if self.chars == n or n <= 0:
            return count
        return (count * self.chars + n // 2) // n


@dataclass(frozen=True, slots=True)
class FileContents:
    """Per file key (``path:<file>``): the positions of its content events in order — read
    results, whole-file writes and edits — and what a re-read made after each returns."""

    key_of: dict[int, str]
    """Fetched read block → its file key."""
    events: dict[str, list[int]]
    returns: dict[str, list[Refetched]]
    whole_reads: dict[str, list[int]]
    """File key → its fetched reads of the whole file, ascending (what holds it whole)."""
    unapplied: dict[str, list[int]]
    """File key → its edits, ascending, whose arguments hold no replaced/new text pair (not
    applied: the size is an estimate)."""
    stale: dict[str, list[int]]
    """File key → per event (as ``events``), how many of ``unapplied`` a re-read made after it
    misses: those since the newest whole content (a later whole read or write shows them)."""
    parts_only: dict[str, list[bool]]
    """File key → per event (as ``events``), whether the file was known only by reads of parts
    of it then (a re-read made after it is sized as the largest part read: a lower bound)."""
    as_lost_before: dict[str, list[bool]]
    """File key → per event (as ``events``), whether the newest read of the file made without a
    copy of it in the recorded context (after the harness removed it) read a part: a re-read
    made after it returns that part (``returns``)."""

    @property
    def edits_unapplied(self) -> int:
        """Edits of read files not applied, in the whole run."""
        return sum(map(len, self.unapplied.values()))

    def unapplied_before(self, block: int, before: int) -> int:
        """Edits of ``block``'s file before ``before`` not applied to what a re-read returns
        (none before its whole content: that shows them)."""
        key = self.key_of.get(block)
        if key is None or key not in self.unapplied:
            return 0
        i = bisect.bisect_left(self.events[key], before)
        return self.stale[key][i - 1] if i else 0

    def estimate(self, block: int, before: int) -> str:
        """Why what a re-read of ``block`` made with blocks ``[0, before)`` returns is an
        estimate: ``UNAPPLIED_EDITS``, ``PARTS_ONLY``, or "" (exact, as this module defines it)."""
        key = self.key_of.get(block)
        if key is None:
            return ""
        i = bisect.bisect_left(self.events[key], before)
        if not i:
            return ""
        if self.as_lost_before[key][i - 1]:
            return AS_LOST_BEFORE
        if self.parts_only[key][i - 1]:
            return PARTS_ONLY
        return UNAPPLIED_EDITS if self.stale[key][i - 1] else ""

    def refetch(self, run: PreparedRun, block: int, before: int) -> Refetched:
        """``refetch`` on this run's index."""
        key = self.key_of.get(block)
        if key is not None:
            i = bisect.bisect_left(self.events[key], before)
            if i:
                return self.returns[key][i - 1]
        return Refetched(block, run.n_chars[block])


def file_contents(run: PreparedRun) -> FileContents:
    """The run's ``FileContents`` (memoised per run)."""
    memo = run.memo("file_contents")
    got = memo.get(None)
    if got is None:
        got = memo[None] = _index(run, run_needs(run))
    assert isinstance(got, FileContents)
    return got


@dataclass(slots=True)
class _File:
    """A file as known while walking its events."""

    whole: bool = False
    base: int = -1
    """The newest whole content (read result or write call), else the largest part read."""
    base_chars: int = 0
    """Its characters as a read renders them (a write's: raw, rendered in ``chars``)."""
    base_lines: int = 0
    """A write's lines (rendered with the prefix); 0 for a read result (rendered already)."""
    delta_chars: int = 0
    delta_lines: int = 0
    prefix: int = 0
    """Characters of the line-number prefix the newest read result shows (0: none)."""
    newest_read: int = -1
    stale: int = 0
    """Edits since ``base`` not applied (their replaced/new text unknown)."""
    lost_part: int = -1
    """The newest read made without a copy of the file in the recorded context, when it read a
    part (-1: none, or it read the file whole)."""

    def now(self) -> Refetched:
        chars = (self.base_chars + self.prefix * self.base_lines + self.delta_chars
                 + self.prefix * self.delta_lines)
        written = self.base >= 0 and self.base != self.newest_read and self.base_lines > 0
        return Refetched(self.newest_read if written and self.newest_read >= 0 else self.base,
                         max(chars, 0))


def _index(run: PreparedRun, needs: RunNeeds) -> FileContents:
    key_of: dict[int, str] = {}
    events: dict[str, list[int]] = {}
    for b, bn in needs.blocks.items():
        if bn.key.startswith("path:"):
            key_of[b] = bn.key
            events.setdefault(bn.key, []).append(b)
    failed = {run.call_of[b] for b in range(run.n_blocks)
              if run.kind[b] == "tool_result" and run.is_error[b]}
    for b in range(run.n_blocks):
        if (run.kind[b] == "tool_call" and run.op[b] in ("write", "edit") and run.path[b]
                and b not in failed):
            key = "path:" + norm_path(run.path[b])
            if key in events:
                events[key].append(b)
    returns: dict[str, list[Refetched]] = {}
    unapplied: dict[str, list[int]] = {}
    whole_reads: dict[str, list[int]] = {}
    stale: dict[str, list[int]] = {}
    parts_only: dict[str, list[bool]] = {}
    as_lost: dict[str, list[bool]] = {}
    request_of = _request_of(run) if any(run.recorded_from) else None  # else nothing is lost
    for key, found in events.items():
        found.sort()
        f, out, wholes, missed, parts, lost = _File(), [], [], [], [], []
        held: list[int] = []  # the read results and writes so far: what puts the file in context
        for b in found:
            if run.kind[b] == "tool_result":
                if request_of is not None and _lost(run, request_of, held, b):
                    f.lost_part = b if reads_part(run, run.call_of[b]) else -1
                if _read(run, f, b):
                    wholes.append(b)
                held.append(b)
            elif run.op[b] == "write":
                _write(run, f, b)
                held.append(b)
            elif f.whole and not _edit(f, run.text[b]):
                unapplied.setdefault(key, []).append(b)
                f.stale += 1
            out.append(f.now() if f.lost_part < 0 else Refetched(f.lost_part,
                                                                  run.n_chars[f.lost_part]))
            missed.append(f.stale if f.lost_part < 0 else 0)
            parts.append(not f.whole)
            lost.append(f.lost_part >= 0)
        returns[key], whole_reads[key], stale[key], parts_only[key] = out, wholes, missed, parts
        as_lost[key] = lost
    return FileContents(key_of, events, returns, whole_reads, unapplied, stale, parts_only,
                        as_lost)


def _request_of(run: PreparedRun) -> list[int]:
    """Per block: the request whose output holds it (-1: none, a block no request produced)."""
    out = [-1] * run.n_blocks
    for k, (lo, hi) in enumerate(run.req_output_blocks):
        out[lo:hi] = [k] * (hi - lo)
    return out


def _lost(run: PreparedRun, request_of: list[int], held: list[int], b: int) -> bool:
    """Whether read result ``b`` was read without a copy of its file in the recorded context:
    the file was read or written before (``held``, ascending), but not in the context the
    harness sent with the request that made the read (a compaction had removed it)."""
    call = run.call_of[b]
    k = request_of[call] if call >= 0 else -1
    if not held or k < 0:
        return False
    lo, hi = run.recorded_from[k], run.req_blocks[k]
    i = bisect.bisect_left(held, lo)
    return held[0] < lo and not (i < len(held) and held[i] < hi)


def _read(run: PreparedRun, f: _File, b: int) -> bool:
    """Take read result ``b``; returns whether it read the whole file."""
    m = LINE_PREFIX.match(run.text[b])
    f.prefix, f.newest_read = (m.end() if m else 0), b
    if not reads_part(run, run.call_of[b]):
        f.whole, f.base, f.base_chars, f.base_lines = True, b, run.n_chars[b], 0
        f.delta_chars = f.delta_lines = f.stale = 0
        return True
    if not f.whole and (f.base < 0 or run.n_chars[b] > run.n_chars[f.base]):
        f.base, f.base_chars, f.base_lines = b, run.n_chars[b], 0
    return False


def _write(run: PreparedRun, f: _File, b: int) -> None:
    args = _args(run.text[b]) or {}
    text = next((v for k in WRITE_ARGS if isinstance(v := args.get(k), str)), None)
    f.whole, f.base, f.delta_chars, f.delta_lines, f.stale = True, b, 0, 0, 0
    if text is None:  # no text to render: the call's characters, as before this rule
        f.base_chars, f.base_lines = run.n_chars[b], 0
    else:
        f.base_chars, f.base_lines = len(text), text.count("\n") + (not text.endswith("\n"))


def _edit(f: _File, text: str) -> bool:
    """Apply an edit's replacements; False when its arguments hold none."""
    args = _args(text)
    if args is None:
        return False
    pairs = [args, *(e for e in args.get("edits") or () if isinstance(e, dict))]
    applied = False
    for p in pairs:
        for old_k, new_k in EDIT_ARGS:
            old, new = p.get(old_k), p.get(new_k)
            if isinstance(old, str) and isinstance(new, str):
                f.delta_chars += len(new) - len(old)
                f.delta_lines += new.count("\n") - old.count("\n")
                applied = True
    return applied


def _args(text: str) -> dict[str, Any] | None:
    try:
        args = json.loads(text)
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


def refetch(run: PreparedRun, block: int, before: int) -> Refetched:
    """What fetching ``block`` again returns, made when the run's blocks ``[0, before)`` are
    known (``before > block``): for a read of a file, the file whole as known by then and as
    its reads render it (or the part the agent read of it after it lost it last:
    ``AS_LOST_BEFORE``); else ``block``'s own result."""
    return file_contents(run).refetch(run, block, before)
