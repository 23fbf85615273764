"""What a counterfactual compaction brings back: the modelled summary size and the files read
last, re-attached after the summary as Claude Code does (harness-policies.md A2: up to 5
recently read files, at most 5,000 tokens each, 50,000 in all).

A re-attached file is the newest read result of its path before the cut (the log holds what the
file said when it was read; the harness re-reads it from disk), cut to ``file_max_tokens``
estimated tokens.  Files are taken newest first while the total stays under
``files_max_tokens`` and put after the summary in reading order.  Pure: everything comes from
the run's blocks.
"""

from __future__ import annotations

from bisect import bisect_left

from replay.engine.context import Context, HeadItem
from replay.engine.prepared import PreparedRun
from replay.engine.summariser import CHARS_PER_TOKEN
from replay.engine.tiers.base import Env
from replay.policy import Restore, Summarise


def summary_size(tier: Summarise, ctx: Context, split: int) -> int:
    """Tokens of the stub summary replacing everything before block ``split``."""
    r = tier.restore
    if r.summary_base_tokens is None:
        return tier.summary_tokens
    return max(0, r.summary_base_tokens
               + round(r.summary_tokens_per_summarised * ctx.truth_before(split)))


def restored_files(restore: Restore, ctx: Context, env: Env, split: int) -> list[HeadItem]:
    """The files re-attached after a summary that cuts before block ``split``."""
    if not restore.files:
        return []
    return [_file(b, restore.file_max_tokens, ctx, env)
            for b in pick_files(ctx.run, split, restore, ctx.est_of)]


def pick_files(run: PreparedRun, split: int, restore: Restore, tokens_of: list[int]) -> list[int]:
    """The read results re-attached before block ``split``, in reading order: the newest of
    each of the last ``restore.files`` paths, while the total of their sizes (``tokens_of``,
    each capped at ``file_max_tokens``) stays within ``files_max_tokens``."""
    reads = read_results(run)
    picked: list[int] = []
    seen: set[str] = set()
    total, i = 0, bisect_left(reads, split)
    while i > 0 and len(picked) < restore.files:
        i -= 1
        b = reads[i]
        path = run.path[run.call_of[b]]
        if path in seen:
            continue
        seen.add(path)
        size = min(tokens_of[b], restore.file_max_tokens)
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


def _file(b: int, cap_tokens: int, ctx: Context, env: Env) -> HeadItem:
    text = ctx.run.text[b]
    if ctx.est_of[b] <= cap_tokens:
        return HeadItem("file", text, ctx.est_of[b], ctx.truth_of[b], ctx.run.n_bytes[b], b)
    text = text[:cap_tokens * CHARS_PER_TOKEN]
    return HeadItem("file", text, env.est_text(text), env.truth_text(text),
                    len(text.encode("utf-8", "surrogatepass")), b)
