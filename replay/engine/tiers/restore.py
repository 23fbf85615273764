"""What a counterfactual compaction brings back: the modelled summary size and the files read
last, re-attached after the summary as Claude Code does (harness-policies.md A2: up to 5
recently read files, at most 5,000 tokens each, 50,000 in all).

A re-attached file is the newest read result of its path before the cut (the log holds what the
file said when it was read; the harness re-reads it from disk).  Of the last ``files`` paths
read, newest first, a file over ``file_max_tokens`` estimated tokens is not re-attached: it
keeps its place among them but Claude Code names it instead of attaching it (a
``compact_file_reference``: read it again if you need it), so nothing carries it and a later
need of it is unmet.  Files are taken newest first while the total stays under
``files_max_tokens`` and put after the summary in reading order.  Pure: everything comes from
the run's blocks.

Measured on the five real 2.1.39 compactions (``replay calibrate --compactions``): the first
request after each carried 2,577, 5,371, 13,127, 5,327 and 916 tokens beyond its context (files,
todo list, hook output); the last five files read re-attach 4,656, 4,035, 7,978, 2,803 and 2,170
this way, and 4,656, 10,147, 7,978, 2,803 and 8,970 with the big ones cut to 5,000 tokens
instead (4d5611e5 and fa812bfe, whose last five include big ones, 4,776 and 8,054 over what
their harness sent): median error 2,079 tokens against 4,776.  Of the two files so left out
(4d5611e5's transcript_renderer.ex, fa812bfe's pane_list_live.ex) the agent read
pane_list_live.ex again whole at the first request after, transcript_renderer.ex never.  Not
adopted: each file sized as the harness reads it (whole, the edits since applied:
``replay.engine.refetch``) and the last five ordered by reads, edits and writes — closer to the
harness's mechanics, it fits the same five worse (15,661 for ae4a77f8's 5,327; median error
4,356).
"""

from __future__ import annotations

from bisect import bisect_left

from replay.engine.context import Context, HeadItem
from replay.engine.prepared import PreparedRun
from replay.policy import Restore, Summarise


def summary_size(tier: Summarise, ctx: Context, split: int) -> int:
    """Tokens of the stub summary replacing everything before block ``split``."""
    r = tier.restore
    if r.summary_base_tokens is None:
        return tier.summary_tokens
    return max(0, r.summary_base_tokens
               + round(r.summary_tokens_per_summarised * ctx.truth_before(split)))


def restored_files(restore: Restore, ctx: Context, split: int) -> list[HeadItem]:
    """The files re-attached after a summary that cuts before block ``split``."""
    if not restore.files:
        return []
    run = ctx.run
    return [HeadItem("file", run.text[b], ctx.est_of[b], ctx.truth_of[b], run.n_bytes[b], b)
            for b in pick_files(run, split, restore, ctx.est_of)]


def pick_files(run: PreparedRun, split: int, restore: Restore, tokens_of: list[int]) -> list[int]:
    """The read results re-attached before block ``split``, in reading order: of the last
    ``restore.files`` paths read, the newest read of each whose size (``tokens_of``) is within
    ``file_max_tokens`` (a bigger file keeps its place but is only named, not attached), while
    the total of their sizes stays within ``files_max_tokens``."""
    reads = read_results(run)
    picked: list[int] = []
    seen: set[str] = set()
    total, i = 0, bisect_left(reads, split)
    while i > 0 and len(seen) < restore.files:
        i -= 1
        b = reads[i]
        path = run.path[run.call_of[b]]
        if path in seen:
            continue
        seen.add(path)
        size = tokens_of[b]
        if size > restore.file_max_tokens:
            continue
        if total + size > restore.files_max_tokens:
            break
        total += size
        picked.append(b)
    return picked[::-1]


def read_results(run: PreparedRun) -> list[int]:
    """The run's tool results answering a read of a named file, in order (memoised)."""
    memo = run.memo("read_results")
    got = memo.get(None)
    if got is None:
        kind, call_of, op, path = run.kind, run.call_of, run.op, run.path
        got = memo[None] = [b for b in range(run.n_blocks)
                            if kind[b] == "tool_result" and call_of[b] >= 0
                            and op[call_of[b]] == "read" and path[call_of[b]]
                            and not run.is_error[b]]
    return got

