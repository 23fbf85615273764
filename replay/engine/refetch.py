"""What fetching a block again returns: the content a re-read brings back.

One definition for the replay's induced re-reads (``replay.engine.induced``: what goes back into
the context) and for judging re-reads after real compactions (``analysis.reread_fidelity``: what
a predicted re-read costs).

- A fetched block that is not a read of a file (a search, a command re-issued): its own
  recorded result.
- A read of a file: the file **whole, as known by then** — an agent that lost a file's content
  opens the file, not the slice it once looked at (after the real compactions of the samples and
  of three marot/spotter sessions, two re-reads in three read the whole file).  "By then" is
  ``before``: the content blocks of the run before it.  The newest whole content among them: a
  read of the whole file or a whole-file write; when the file was only ever read in parts, the
  largest part read (by characters; at least what the agent saw), a lower bound of the file.

A read of part of a file (``reads_part``): a read call whose arguments hold a range
(``PART_ARGS``: Claude Code's ``offset``/``limit``, the editors' ``view_range``, ...), or a shell
read by ``head``/``tail`` (``PART_COMMANDS``).

Pure and deterministic; the per-run index is memoised in ``PreparedRun.memo``.  Not here: which
blocks are fetched content and their keys (``replay.engine.needs``).
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass

from replay.engine.needs import RunNeeds, norm_path, run_needs
from replay.engine.prepared import PreparedRun

PART_ARGS = frozenset({"offset", "limit", "view_range", "line_range", "start_line", "end_line"})
"""Read arguments that make a read one of part of the file."""
PART_COMMANDS = frozenset({"head", "tail"})
"""Shell readers that read part of a file."""


def reads_part(run: PreparedRun, call: int) -> bool:
    """Whether read call ``call`` read only part of its file."""
    text = run.text[call]
    try:
        args = json.loads(text)
    except ValueError:
        args = None
    if isinstance(args, dict):
        if PART_ARGS & args.keys():
            return True
        command = args.get("command", args.get("cmd"))
        text = " ".join(map(str, command)) if isinstance(command, list) else str(command or "")
    words = text.split()
    return bool(words) and words[0].rsplit("/", 1)[-1] in PART_COMMANDS


@dataclass(frozen=True, slots=True)
class FileContents:
    """Per file key (``path:<file>``): its content blocks in order — read results and
    whole-file writes — and, per position, the block a re-read made after it returns."""

    key_of: dict[int, str]
    """Fetched read block → its file key."""
    blocks: dict[str, list[int]]
    returns: dict[str, list[int]]

    def refetch(self, block: int, before: int) -> int:
        """``refetch_block`` on this run's index."""
        key = self.key_of.get(block)
        if key is None:
            return block
        i = bisect.bisect_left(self.blocks[key], before)
        return self.returns[key][i - 1] if i else block


def file_contents(run: PreparedRun) -> FileContents:
    """The run's ``FileContents`` (memoised per run)."""
    memo = run.memo("file_contents")
    got = memo.get(None)
    if got is None:
        got = memo[None] = _index(run, run_needs(run))
    assert isinstance(got, FileContents)
    return got


def _index(run: PreparedRun, needs: RunNeeds) -> FileContents:
    whole: dict[int, bool] = {}
    blocks: dict[str, list[int]] = {}
    key_of: dict[int, str] = {}
    for b, bn in needs.blocks.items():
        if bn.key.startswith("path:"):
            key_of[b] = bn.key
            blocks.setdefault(bn.key, []).append(b)
            whole[b] = not reads_part(run, bn.call_block)
    for b in range(run.n_blocks):
        if run.kind[b] == "tool_call" and run.op[b] == "write" and run.path[b]:
            key = "path:" + norm_path(run.path[b])
            if key in blocks:
                blocks[key].append(b)
                whole[b] = True
    returns: dict[str, list[int]] = {}
    n_chars = run.n_chars
    for key, found in blocks.items():
        found.sort()
        out, newest_whole, largest = [], -1, -1
        for b in found:
            if whole[b]:
                newest_whole = b
            if largest < 0 or n_chars[b] > n_chars[largest]:
                largest = b
            out.append(newest_whole if newest_whole >= 0 else largest)
        returns[key] = out
    return FileContents(key_of, blocks, returns)


def refetch_block(run: PreparedRun, block: int, before: int) -> int:
    """The block whose content fetching ``block`` again returns, made when the run's blocks
    ``[0, before)`` are known (``before > block``): the file whole as known by then for a read
    of a file, else ``block`` itself."""
    return file_contents(run).refetch(block, before)
