"""Which runs a ``--run`` names: a label, a run key, a source path, a glob, or a run id.

A run's source is its log's path relative to the folder given (``scenarios/big-output.jsonl``);
its key adds ``#N`` for a file's later runs and its label a title (``replay.ingest.run_label``).
``--run`` takes the label as printed (``write-heavy.jsonl — Add a CSV export``, with or
without a subagent's ``↳``), the key (``eval.json#1``), the source, the source with the folder
in front (``logs/scenarios/…``), a glob over sources or labels (``scenarios/*``,
``*CSV export*``) or a run id (``4c7c533dc9ae8261-0``); a value that names a run as it is is
read as that name, not as a glob (``x[1].jsonl`` is that file, not also ``x1.jsonl``).  A value
that names no run is an error with the closest labels, never an empty selection.

Not here: opening the corpus (``replay.corpus``), what a label is (``replay.ingest.run_label``).
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Sequence
from pathlib import Path

from replay.errors import ReplayInputError
from replay.ingest.run_label import run_key, strip_mark


def select_runs(run_ids: Sequence[str], sources: Sequence[str], wanted: Sequence[str],
                roots: Sequence[Path] = (), labels: Sequence[str] | None = None) -> list[str]:
    """The run ids of ``run_ids`` (in their order) that one of ``wanted`` names; ``labels``
    are the runs' labels (default: their keys).

    Raises:
        ReplayInputError: a value names no run (with the closest labels).
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
        if not hit:
            close = difflib.get_close_matches(value, list(dict.fromkeys([*shown, *sources])),
                                              n=3, cutoff=0.4)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise ReplayInputError(f"--run {value!r} names no replayable run (a label, a source "
                                   f"path, a glob such as 'scenarios/*' or a run id){hint}")
        chosen |= hit
    return [r for r in run_ids if r in chosen]
