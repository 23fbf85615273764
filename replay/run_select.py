"""Which runs a ``--run`` names: a label, a run key, a source path, a glob, or a run id.

A run's source is its log's path relative to the folder given (``scenarios/big-output.jsonl``);
its key adds ``#N`` for a file's later runs and its label a title (``replay.ingest.run_label``).
``--run`` takes the label as printed (``write-heavy.jsonl — Add a CSV export``, with or
without a subagent's ``↳``), the key (``eval.json#1``), the source, the source with the folder
in front (``logs/scenarios/…``), a glob over sources or labels (``scenarios/*``,
``*CSV export*``) or a run id (``4c7c533dc9ae8261-0``); a value that names a run as it is is
read as that name, not as a glob (``x[1].jsonl`` is that file, not also ``x1.jsonl``).  A value
that names no run is an error with the closest labels, never an empty selection.

A run whose entry was renamed in the dataset's manifest by hand is named by the manifest's name
(``replay.ingest.source_name``); its old name, the one its file was parsed under, still selects
it when no run has that name now and it was the name of one file only (``stored``: as a source
or a key, not a glob), and the selection says so (``notes``): a script or a habit that names
the file as it was keeps working, and is told the name to use.

Not here: opening the corpus (``replay.corpus``), what a label is (``replay.ingest.run_label``).
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Mapping, Sequence
from pathlib import Path

from replay.errors import ReplayInputError
from replay.ingest.run_label import run_key, strip_mark


def select_runs(run_ids: Sequence[str], sources: Sequence[str], wanted: Sequence[str],
                roots: Sequence[Path] = (), labels: Sequence[str] | None = None, *,
                stored: Mapping[str, str] | None = None,
                notes: list[str] | None = None) -> list[str]:
    """The run ids of ``run_ids`` (in their order) that one of ``wanted`` names; ``labels``
    are the runs' labels (default: their keys); ``stored``: run id → the source its file was
    parsed under, for runs renamed in the manifest (``Corpus.stored_sources``), each value
    taking a run by it that no run's present name takes, said in ``notes``.

    Raises:
        ReplayInputError: a value names no run (with the closest labels), or names by an old
            name runs of more than one file now.
    """
    keys = [run_key(rid, src) for rid, src in zip(run_ids, sources, strict=True)]
    shown = [strip_mark(lb) for lb in labels] if labels is not None else keys
    chosen: set[str] = set()
    for value in wanted:
        value = strip_mark(value)
        names = {value, *(value[len(f"{r.as_posix().rstrip('/')}/"):] for r in roots
                          if value.startswith(f"{r.as_posix().rstrip('/')}/"))}
        runs = list(zip(run_ids, sources, keys, shown, strict=True))
        hit = {rid for rid, src, key, lb in runs if names & {rid, src, key, lb}} or {
            rid for rid, src, _, lb in runs  # a value that names a run as it is is no glob:
            # 'x[1].jsonl' took x1.jsonl too, a run the user never named
            if any(fnmatch.fnmatchcase(text, n) for n in names for text in (src, lb))}
        if not hit and stored:
            hit = _by_stored_name(value, names, run_ids, sources, stored, notes)
        if not hit:
            close = difflib.get_close_matches(value, list(dict.fromkeys([*shown, *sources])),
                                              n=3, cutoff=0.4)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise ReplayInputError(f"--run {value!r} names no replayable run (a label, a source "
                                   f"path, a glob such as 'scenarios/*' or a run id){hint}")
        chosen |= hit
    return [r for r in run_ids if r in chosen]


def _by_stored_name(value: str, names: set[str], run_ids: Sequence[str], sources: Sequence[str],
                    stored: Mapping[str, str], notes: list[str] | None) -> set[str]:
    """The runs ``value`` (as ``names``) names by the source their file was parsed under (or its
    key), when they are one file's; the note saying so appended to ``notes``.

    Raises:
        ReplayInputError: the old name was that of several files now named otherwise.
    """
    hit = {rid: src for rid, src in zip(run_ids, sources, strict=True)
           if (old := stored.get(rid)) is not None and names & {old, run_key(rid, old)}}
    files = sorted(set(hit.values()))
    if len(files) > 1:
        raise ReplayInputError(f"--run {value!r} names no run by its present name, and was the "
                               f"name of {len(files)} files now named {', '.join(files)} in the "
                               "manifest (renamed by hand): name one of those")
    if hit and notes is not None:
        notes.append(f"--run {value!r}: the name its file was ingested under; the dataset's "
                     f"manifest now names it {files[0]!r} (renamed by hand), the name every "
                     "command shows: selected by the old name")
    return set(hit)
