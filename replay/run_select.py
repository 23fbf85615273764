"""Which runs a ``--run`` names: a run id, a source path, or a glob over source paths.

A run's source is its log's path relative to the folder given (``scenarios/big-output.jsonl``);
``--run`` takes that path, the same path with the folder in front (``logs/scenarios/…``), a glob
(``scenarios/*``, ``*.jsonl``) or a run id (``4c7c533dc9ae8261-0``).  A value that names no run
is an error with the closest sources, never an empty selection.

Not here: opening the corpus (``replay.corpus``).
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Sequence
from pathlib import Path

from replay.errors import ReplayInputError


def select_runs(run_ids: Sequence[str], sources: Sequence[str], wanted: Sequence[str],
                roots: Sequence[Path] = ()) -> list[str]:
    """The run ids of ``run_ids`` (in their order) that one of ``wanted`` names.

    Raises:
        ReplayInputError: a value names no run (with the closest sources).
    """
    chosen: set[str] = set()
    for value in wanted:
        names = {value, *(value[len(f"{r.as_posix().rstrip('/')}/"):] for r in roots
                          if value.startswith(f"{r.as_posix().rstrip('/')}/"))}
        hit = {rid for rid, src in zip(run_ids, sources, strict=True)
               if rid in names or src in names
               or any(fnmatch.fnmatchcase(src, n) for n in names)}
        if not hit:
            close = difflib.get_close_matches(value, list(sources), n=3, cutoff=0.4)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise ReplayInputError(f"--run {value!r} names no replayable run (a run id, a source "
                                   f"path or a glob such as 'scenarios/*'){hint}")
        chosen |= hit
    return [r for r in run_ids if r in chosen]
