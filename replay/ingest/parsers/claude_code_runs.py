"""The runs of one Claude Code session: its main run, the runs of the branches a rewind
abandoned (``claude_code_branches``) and of the subagent conversations written inline in it
(``claude_code_session.sidechains``), each built from the path through its records
(``claude_code_path``) and emitted (``claude_code_emit``), with the coverage of its records.

Not here: reading the file's records into sessions (``replay.ingest.parsers.claude_code``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.claude_code_branches import Extras, abandoned_branches, kept_extra
from replay.ingest.parsers.claude_code_emit import (
    Group,
    Shared,
    State,
    emit,
    emit_response,
    fill,
    order,
    wanted,
)
from replay.ingest.parsers.claude_code_ends import TITLE_KEYS as _TITLE_KEYS
from replay.ingest.parsers.claude_code_file import (
    fork_parent_run_id,
    parent_run_id,
    session_folder,
)
from replay.ingest.parsers.claude_code_node import Node
from replay.ingest.parsers.claude_code_path import Resolved
from replay.ingest.parsers.claude_code_records import Rec
from replay.ingest.parsers.claude_code_session import Session, sidechains
from replay.ingest.parsers.coverage import Coverage
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Issue, Source

NAME = "claude_code"


def session_runs(src: Source, issues: list[Issue], sess: Session, n_runs: int, group: int,
                 path: Path, again: Callable[[int], str] | None
                 ) -> Iterator[tuple[int | None, RunDraft]]:
    """The runs of one session (``claude_code.iter_runs``; ``n_runs``: runs made before, ``group``: its
    number), each made when the one before was taken."""
    is_sub = path.name.startswith("agent-") and session_folder(path) is not None
    sides = [] if is_sub else sidechains(sess)
    if not any(r.role in ("user", "assistant") for r in sess.nodes):
        for r in sess.nodes:
            src.coverage.skipped(r.rtype)
        return
    paths = Resolved(sess.nodes, sess.links, is_sub, unique=True)  # (``seen_uuids``)
    extras = Extras()  # (kept_extra's sets: each path's read once; the session's index)
    branches, more = abandoned_branches(sess.nodes, sess.links, sess.by_line, is_sub, paths,
                                        extras)
    shared: Shared | None = {} if branches else None
    main = _run(src, issues, sess, n_runs, path, is_sub, paths=paths, again=again,
                branch_lines=set().union(*(br.own for br in branches)),
                consume=not branches, shared=shared, extras=extras)
    main_id: str = main.run["run_id"]
    n_runs += 1
    yield (group if branches else None), main
    del main  # (taken: its rows are the caller's)
    for k, br in enumerate(branches, 1):
        view = Session(sess.nodes, sess.links, sess.version, sess.agent_id,
                        forked=sess.forked | br.shared, lines=sess.by_line())
        n_runs += 1
        yield group, _run(src, issues, view, n_runs - 1, path, is_sub, leaf=br.leaf,
                          again=again, branch=(main_id, f"abandoned-{k}"), paths=paths,
                          extras=extras,
                          consume=k == len(branches), shared=shared)
    sess.lines = shared = None  # (the session's records and texts: let go with its runs)
    if more:
        issues.append(Issue(src.path, 0, f"{more} more abandoned branch(es) than "
                                         f"{len(branches)} (not made into runs; their "
                                         "records are counted off the path)"))
    for side in sides:
        n_runs += 1
        yield None, _run(src, issues, side, n_runs - 1, path, True, parent=main_id,
                         consume=True, again=again)


def _run(src: Source, issues: list[Issue], sess: Session, index: int, path: Path,
         is_sub: bool, parent: str = "", *, leaf: Node | None = None,
         branch: tuple[str, str] | None = None, branch_lines: set[int] | None = None,
         paths: Resolved | None = None, consume: bool = False,
         again: Callable[[int], str] | None = None, shared: Shared | None = None,
         extras: Extras | None = None) -> RunDraft:
    """One session's run (a subagent's when ``is_sub``; ``parent``: its session's run id when
    the subagent was written inline, else found from the subagents folder).  ``leaf`` and
    ``branch`` (the run id it branched from, its agent name): the run of an abandoned branch,
    whose records the main run counted in the coverage (``branch_lines``: those of them only
    the branch runs hold); ``paths``: the paths through ``sess``'s records, when already
    resolved for its other runs.  ``consume``: no later run reads ``sess``'s records, so they
    (and ``paths``) are let go as the run is emitted, not held beside its rows.  ``again``:
    the text of the record of a line, held as ``AGAIN``, read again from the file (``fill``);
    ``shared``: the texts the session's earlier runs made of its records (``State.shared``);
    ``extras``: ``kept_extra``'s sets for the session's paths (``abandoned_branches`` found
    them first)."""
    agent_id = sess.agent_id or (path.stem[len("agent-"):] if is_sub and not parent else "")
    if is_sub and not agent_id:
        agent_id = f"sidechain-{index}"
    b = RunBuilder(src, index, NAME, issues, harness=f"claude-code {sess.version}".strip(),
                   agent=branch[1] if branch else agent_id if is_sub else "",
                   parent_run_id=branch[0] if branch else (parent or parent_run_id(path, src.rel))
                   if is_sub else fork_parent_run_id(path, sess.fork_of, src.rel),
                   title=next((sess.titles[k] for k in _TITLE_KEYS if k in sess.titles), ""))
    found = (paths or Resolved(sess.nodes, sess.links, is_sub, unique=True))(leaf)
    cov = src.coverage if branch is None else Coverage()  # a branch's records: counted above
    if found.cycle:
        issues.append(Issue(src.path, 0, "the parentUuid chain loops; the records before the "
                                         "loop are used"))
    issues += [Issue(src.path, line, why) for line, why in found.notes]
    recs = sess.by_line() if found.off_path else {}
    extra = kept_extra(found, recs, extras, leaf) if found.off_path else set()
    for line in found.off_path - extra if branch is None else ():  # (a branch's: not counted)
        rec = recs.get(line)
        if rec is not None and line in (branch_lines or ()):
            cov.modelled(f"{rec.rtype} (abandoned branch: a run of its own)")
        elif rec is not None:
            cov.skipped(f"{rec.rtype} (off the conversation path)")
    kept = found.records(sess.nodes, extra)
    models: Counter[str] = Counter()
    state = State(found.preserved, wanted(kept, found.preserved), shared=shared)
    items = order(kept)
    del kept, found
    if consume:  # the last run made of these records: each is let go once it is emitted
        sess.nodes.clear()
        sess.lines = None
        del recs
        if paths is not None:
            paths.forget()
    items.reverse()
    item: Rec | Group | None = None
    modelled: dict[str, int] = {}  # (counted here, into ``cov`` at the end: a call a type)
    try:
        while items:
            item = items.pop()
            if isinstance(item, Group):
                copy = bool(sess.forked) and all(r.line in sess.forked for r in item.recs)
                for r in item.recs:
                    t = f"{r.rtype} (copied by a fork: context, the parent's request)" \
                        if copy else r.rtype
                    modelled[t] = modelled.get(t, 0) + 1
                emit_response(b, item, models, state, copy=copy)
            else:
                t = item.rtype
                modelled[t] = modelled.get(t, 0) + 1
                emit(b, item, state)
    finally:  # (what was emitted is counted, as it was, however the run ends)
        for t, n in modelled.items():
            cov.modelled(t, n)
    item = rec = None  # (the last ones let go too: ``fill`` reads the texts in their place)
    fill(b, state, again)
    b.model = max(models, key=models.__getitem__) if models else ""  # (most_common(1)'s
    # first most counted, without heapq)
    return b.build()
