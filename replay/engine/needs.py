"""Need detection: where the recorded run depends on a block's content, and where it fetched it again.

A replay keeps the recorded trajectory fixed, so removing content the agent used later costs
nothing unless something says where that content was used.  This module says it, once per
prepared run (``run_needs(run)``, memoised in ``PreparedRun.memo``; pure, deterministic, no I/O).

**Blocks.**  Indices are ``PreparedRun`` block indices.  A *fetched* block is a ``tool_result``
whose call fetched content the agent could fetch again: a ``read`` of a path, or any other
call that is not a write, an edit or the todo list (search, list, exec, other), re-issued
identically.  Its *key* names that content: ``path:<file>`` for a read of a file,
``call:<tool>\\x00<arguments>`` otherwise.  Other blocks have no entry (``RunNeeds.of`` gives
None).

**Requests.**  Request ``r`` sends blocks ``[0, run.req_blocks[r])`` and produces the blocks
``run.req_output_blocks[r]``; a call issued at ``r`` is one of those.  Every request index below
is such an ``r``.

**Needs** (``BlockNeeds.needs`` / ``need_requests``): the requests whose output depends on the
block's content, each a ``Need`` with the request, the dependent block (a call or an assistant
message in the request's output, or a user-role message that arrived just before it: the
request answers it), its operation kind (``replay.ingest.ops``: read, write, edit, search,
exec, list, todo, other; ``text`` for an assistant message, ``user`` for a user-role one) and
the name of the rule that found it (``RULES``).  A need is always at a request whose context
holds the block (``block < run.req_blocks[need.request]``), so strictly after the request that
issued its call.

**Refetches** (``refetch_requests`` / ``refetch_blocks``): the later requests whose output fetched
the same content again as recorded — a read of the same file (any range), or the same call
re-issued — with the re-issued call blocks.  A read whose result is an error (the file not
found, permission denied) brought nothing of the file back: it is no refetch (it satisfies no
need, and fidelity's recorded side does not count it as a re-read); it is kept apart
(``failed_reread_requests``) and counted where fidelity reports.  A refetch is never evidence of a need: it is what a
need predicts, so no rule looks at it.

**Cost** of fetching the block again: ``replay.engine.refetch`` (what a re-read returns).

**Unmet needs.**  ``RunNeeds.first_unmet_need(block, removed_at_request)`` is the first need at or
after ``removed_at_request`` (the first request whose context lacks the block) that no recorded
refetch at or before it satisfies — the request where an agent without the block would have
fetched it again — or None.  O(log n): two bisections.  A refetch issued by the same request as
the need counts as satisfying it (the tools of one request run in order).  Whether the content
is still in context some other way (a later copy kept, a summary that carries it) is the
caller's to know.

Rules (``RULES``, one ``Rule`` each, data; the evidence they use is defined once in
``replay.engine.need_evidence.EVIDENCE``), per operation kind of the later block; they apply to
reads of a file.  A text *names* a file by its path where it writes one with a directory
(``cli/lib/x.ts``, ``/home/u/repo/x.ts``: a file of the same name in another directory or
another checkout is another file), by its file name where it writes the bare name, resolved
against the directory a ``cd`` before it entered (``need_evidence.named_in``):

- ``edits-file`` (edit, write): an edit or write of the same file — Claude Code refuses to edit
  a file not read in the session, and an edit's old text quotes the file;
- ``searches-file`` (search, list): a search whose arguments name the file looks inside it
  again; a listing (a glob) naming it looks for it to open it;
- ``uses-path`` (exec, other): a command or call whose arguments name the file, except
  (``need_evidence``, each a set of names, data):
  - a command that only stages, moves, lists or removes files (``BOOKKEEPING``: ``git add
    a.py``, ``chmod``, ``rm``: they use the name, not what the file says; the commands as the
    shell cuts them, ``replay.shell_line.commands``: a commit message in a heredoc is git's);
  - a command that runs, builds, tests or type-checks the file (``RUNNERS``: ``bun test
    x.test.ts``, ``tsc -p tsconfig.json``, ``python x.py``): its text goes to a program, not to
    the model — unless the run failed (the agent reads the error against the file), and a
    script in its heredoc that opens the file still uses it (it prints what the file holds);
  - a call that hands a prompt to a subagent (``DELEGATES``: Claude Code's ``Task``): the
    subagent reads the file in its own context.
  Not an edit or write of another file: a name in the code being written refers to the file (a
  test naming its fixture), it does not use what the file says;
- ``mentions-file`` (text): an assistant message names the file in a response that also makes
  a call (it talks about what the file holds as it works on it: "Now register it in
  application.ex:"); not a response that is only text, which ends the turn: a report to the
  user naming what was changed or finished names the file without using it;
- ``notified-file`` (user): a user-role message names the file — the user pointing at it; of a
  harness notice (``need_evidence.NOTICES``: Claude Code's ``<task-notification>``), only the
  file it points the agent at (``<output-file>``, a background task's output, read with
  ``tail`` while the task ran), not the files a finished subagent's report names.

The exceptions of ``uses-path``, ``mentions-file`` and ``notified-file``, and naming a file by
its path, were written from false predictions on held-out real sessions (13 Claude Code
sessions of another project, 27 compactions, not in the repository: no licence); those
sessions are no longer independent evidence for them (README, fidelity).

``NAIVE_RULES`` is the issue's naive rule, kept to compare with: a file read before is needed by
any later call other than a read that names its path or file name (by file name, in any
directory).  Measured, not adopted: a
code identifier that the file was the last to bring into context, used in a later call or
message (on the two sample compactions it found no re-read the other rules miss and one the agent
never made; identifiers of a real code base recur in the agent's own edits); the assistant's
recorded reasoning naming the file, like ``mentions-file`` (on the five real compactions it
changed no prediction: where reasoning names a file, the text or a call does too).  A re-read that
nothing in the run's calls explains (the agent re-opening a file it is about to work on) is
beyond these rules: the log holds no evidence of it before it happens.

Not here: the fetched blocks' index and the evidence tests (``replay.engine.need_evidence``),
acting on needs (the engine's induced re-reads), judging them against real compactions
(``analysis.fidelity``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from itertools import pairwise

from replay.engine.need_evidence import (
    BOOKKEEPING,
    EVIDENCE,
    FETCH_OPS,
    TEXT_OP,
    USER_OP,
    Fetched,
    FetchedIndex,
    call_failed,
    fetched_block,
    norm_path,
    op_of,
    path_names,
    refetched_keys,
    same_file,
)
from replay.engine.prepared import PreparedRun

__all__ = ["BOOKKEEPING", "FETCH_OPS", "NAIVE_RULES", "NEEDS_VERSION", "RULES", "TEXT_OP",
           "USER_OP", "BlockNeeds", "Need", "Rule", "RunNeeds", "norm_path", "path_names",
           "run_needs", "same_file"]

NEEDS_VERSION = 8
"""Bumped whenever the rules change what they find (traces that use needs depend on it)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One need rule: which fetched blocks it applies to, which later blocks it looks at, and
    the evidence that makes a later block depend on the fetched one."""

    name: str
    fetched_ops: frozenset[str]
    """Operation kinds of the fetched block's call (a ``read`` needs a path)."""
    dependent_ops: frozenset[str]
    """Operation kinds of the later block (``text``: an assistant message)."""
    evidence: str
    """Key of ``EVIDENCE``: how the later block shows it depends on the fetched content."""
    description: str


NAIVE_RULES: tuple[Rule, ...] = (
    Rule("names-path", frozenset({"read"}),
         frozenset({"write", "edit", "search", "exec", "list", "todo", "other"}), "names_file_name",
         "a later call other than a read names the file's path or file name"),
)
"""The naive rule of issue #22, kept to compare with (``analysis.reread_fidelity``)."""

RULES: tuple[Rule, ...] = (
    Rule("edits-file", frozenset({"read"}), frozenset({"edit", "write"}), "same_file",
         "an edit or write of the same file (Claude Code refuses an edit of a file not read)"),
    Rule("searches-file", frozenset({"read"}), frozenset({"search", "list"}), "names_path",
         "a search or a file listing whose arguments name the file (it looks inside it again, "
         "or looks for it to open it)"),
    Rule("uses-path", frozenset({"read"}), frozenset({"exec", "other"}),
         "names_path_in_use",
         "a command or call whose arguments name the file, unless each command naming it only "
         "stages, moves, lists or removes files (BOOKKEEPING: git, rm, mv, chmod, ...) or runs, "
         "builds or tests it and succeeded (RUNNERS), or the call hands it to a subagent "
         "(DELEGATES)"),
    Rule("mentions-file", frozenset({"read"}), frozenset({TEXT_OP}), "names_path_at_work",
         "an assistant message in a response that also makes a call names the file"),
    Rule("notified-file", frozenset({"read"}), frozenset({USER_OP}), "names_path_noticed",
         "a user-role message names the file: the user's words, or of a harness notice the "
         "output file it points at (a background task's), not a subagent's report"),
)
"""The rules, in the order a need's ``rule`` is attributed (the first that finds it)."""


@dataclass(frozen=True, slots=True)
class Need:
    """A request whose output depends on a block's content."""

    request: int
    block: int
    """The dependent block: a call or an assistant message in that request's output, or a
    user-role message that arrived just before it."""
    op: str
    """Its operation kind (``text``: an assistant message, ``user``: a user-role one)."""
    rule: str
    """The ``Rule.name`` that found it."""


@dataclass(frozen=True, slots=True)
class Refetches:
    """The requests that fetched one content (a key) again, as recorded, shared by the fetched
    blocks of that key: a block's are those from the first request whose context holds it on
    (``BlockNeeds.refetch_from``).  One list a key, not one a block: a file read hundreds of
    times in a long run held each read's later re-reads (20,000 requests: 8 million entries,
    1.4 GB, 17 s)."""

    requests: list[int]
    """Ascending requests whose output fetched the content again (one per request)."""
    blocks: list[int]
    """The refetching call blocks, one per entry of ``requests``."""
    failed: list[int]
    """Ascending requests that tried to read the file again and failed (the read's result an
    error: not found, permission denied): not refetches, the content did not come back."""


@dataclass(frozen=True, slots=True)
class KeyNeeds:
    """The needs of one content (a key) as recorded, shared by its fetched blocks as
    ``Refetches`` is: a block's are those from the first request whose context holds it on
    (``BlockNeeds.needs_from``).  A file read at every turn and edited after each read held a
    need a read at every later edit (20,000 requests: 2 million needs, 5.5 s, 274 MB)."""

    needs: list[Need]
    """Ascending by request (at most one per request: the first dependent block)."""
    requests: list[int]
    """Their requests."""


@dataclass(frozen=True, slots=True)
class BlockNeeds:
    """What the recorded run did later with one fetched block's content."""

    block: int
    call_block: int
    """The call that fetched it."""
    key: str
    """The content: ``path:<file>`` or ``call:<tool>\\x00<arguments>``."""
    key_needs: KeyNeeds
    """Its key's needs; the block's own are ``needs_from`` on."""
    refetches: Refetches
    """Its key's refetches; the block's own are ``refetch_from`` and ``failed_from`` on."""
    needs_from: int = 0
    refetch_from: int = 0
    failed_from: int = 0

    @property
    def needs(self) -> tuple[Need, ...]:
        """Ascending by request (at most one per request: the first dependent block)."""
        return tuple(self.key_needs.needs[self.needs_from:])

    @property
    def need_requests(self) -> tuple[int, ...]:
        """The requests of ``needs``."""
        return tuple(self.key_needs.requests[self.needs_from:])

    @property
    def refetch_requests(self) -> tuple[int, ...]:
        """Ascending requests that fetched the same content again (one per request)."""
        return tuple(self.refetches.requests[self.refetch_from:])

    @property
    def refetch_blocks(self) -> tuple[int, ...]:
        """The refetching call blocks, one per entry of ``refetch_requests``."""
        return tuple(self.refetches.blocks[self.refetch_from:])

    @property
    def failed_reread_requests(self) -> tuple[int, ...]:
        """Ascending requests that tried to read the file again and failed."""
        return tuple(self.refetches.failed[self.failed_from:])


@dataclass(frozen=True, slots=True)
class RunNeeds:
    """Every fetched block's needs and refetches in one run (``run_needs``)."""

    blocks: dict[int, BlockNeeds]
    """Fetched block → its needs; blocks that are not fetched content are absent."""
    rules: tuple[Rule, ...]

    def of(self, block: int) -> BlockNeeds | None:
        """The block's needs (None: not fetched content)."""
        return self.blocks.get(block)

    def first_unmet_need(self, block: int, removed_at_request: int) -> Need | None:
        """The first need at or after ``removed_at_request`` not satisfied by a recorded refetch
        at or before it (None: none; the block has no needs, or a refetch comes first)."""
        got = self.blocks.get(block)
        if got is None:
            return None
        key = got.key_needs
        i = bisect.bisect_left(key.requests, removed_at_request, got.needs_from)
        if i == len(key.needs):
            return None
        need = key.needs[i]
        again = got.refetches.requests
        j = bisect.bisect_left(again, removed_at_request, got.refetch_from)
        if j < len(again) and again[j] <= need.request:
            return None
        return need


def run_needs(run: PreparedRun, rules: tuple[Rule, ...] = RULES) -> RunNeeds:
    """The needs of every fetched block of ``run`` under ``rules`` (memoised per rules)."""
    memo = run.memo("needs")
    got = memo.get(rules)
    if got is None:
        got = memo[rules] = _compute(run, rules)
    assert isinstance(got, RunNeeds)
    return got


# -- the computation ----------------------------------------------------------------------------


def _compute(run: PreparedRun, rules: tuple[Rule, ...]) -> RunNeeds:
    fetched = [f for b in range(run.n_blocks) if (f := fetched_block(run, b)) is not None]
    index = FetchedIndex(run, {}, {})
    firsts: dict[str, Fetched] = {}  # key -> its first fetched block (stands for the key)
    for f in fetched:
        if f.op != "read":
            index.by_call.setdefault(f.key, []).append(f)
        elif f.key not in firsts:  # (a read's evidence is of its file: one block a key)
            firsts[f.key] = f
            index.by_name.setdefault(f.name, []).append(f)
    needs = {f.key: KeyNeeds([], []) for f in fetched}
    streams = {f.key: Refetches([], [], []) for f in fetched}
    seen = 0
    for r, (lo, hi) in enumerate(run.req_output_blocks):
        # what arrived before request r (user messages: their need is at r), then its output
        arrived = [b for b in range(seen, run.req_blocks[r]) if not lo <= b < hi]
        seen = max(seen, run.req_blocks[r], hi)
        for b in (*arrived, *range(lo, hi)):
            op = op_of(run, b)
            if op is None:
                continue
            again = refetched_keys(index, b, r)  # (every fetched block of these keys that
            # request r's context holds is fetched again by b)
            if again and run.op[b] == "read" and call_failed(index, b):
                for key in again:  # a read that failed brought nothing back: no refetch
                    failed = streams[key].failed
                    if not failed or failed[-1] != r:
                        failed.append(r)
                again = []
            for key in again:
                got = streams[key]
                if not got.requests or got.requests[-1] != r:
                    got.requests.append(r)
                    got.blocks.append(b)
            for rule in rules:
                if op not in rule.dependent_ops:
                    continue
                for f in EVIDENCE[rule.evidence](index, b, r):  # (a key's first block, held
                    # in r's context: the key's blocks held there are needed)
                    got_n = needs[f.key]
                    if (f.op in rule.fetched_ops and f.key not in again
                            and (not got_n.requests or got_n.requests[-1] != r)):
                        got_n.needs.append(Need(r, b, op, rule.name))
                        got_n.requests.append(r)
    out = {}
    growing = all(a <= b for a, b in pairwise(run.req_blocks))
    for f in fetched:
        key_needs, refetches, starts = needs[f.key], streams[f.key], (0, 0, 0)
        if growing:  # the block's own: its key's from the first request holding it on
            first = bisect.bisect_right(run.req_blocks, f.block)
            starts = (bisect.bisect_left(key_needs.requests, first),
                      bisect.bisect_left(refetches.requests, first),
                      bisect.bisect_left(refetches.failed, first))
        else:
            key_needs, refetches = _picked(run, f.block, key_needs, refetches)
        out[f.block] = BlockNeeds(
            block=f.block, call_block=f.call, key=f.key, key_needs=key_needs,
            refetches=refetches, needs_from=starts[0], refetch_from=starts[1],
            failed_from=starts[2])
    return RunNeeds(blocks=out, rules=rules)


def _picked(run: PreparedRun, block: int, needs: KeyNeeds,
            refetches: Refetches) -> tuple[KeyNeeds, Refetches]:
    """A fetched block's needs and refetches among its key's, in lists of its own: those of
    the requests whose context holds it.  For a run whose contexts do not only grow (no log
    gives one); else they are the key's from the first request holding it on (``_compute``)."""
    held = run.req_blocks
    mine = [k for k, r in enumerate(refetches.requests) if held[r] > block]
    need = [n for n in needs.needs if held[n.request] > block]
    return (KeyNeeds(need, [n.request for n in need]),
            Refetches([refetches.requests[k] for k in mine], [refetches.blocks[k] for k in mine],
                      [r for r in refetches.failed if held[r] > block]))
