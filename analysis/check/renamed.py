"""A baseline keyed by a renamed file's old name: the run still compared, and said so.

A baseline keys a run by its source (``analysis.check.baseline``: the log's path, ``#N`` for a
file's later runs).  After an entry of the dataset's manifest is renamed by hand, every command
names its runs by the manifest's name (``replay.ingest.source_name``), so a baseline written
before the rename would hold them as "missing run" and the check as "new run", neither
compared (and, every run renamed, "no run compared": exit 1).  ``keyed_as_baseline`` keys such
a run as the baseline does — by the name its file was parsed under (``Corpus.stored_sources``)
— when the baseline holds that key and not the new one, and says so in one note: the check
compares what the user meant, and tells the key ``--update-baseline`` will write.  A log whose
bytes changed is still a "changed log" under the old key.

Not here: the comparison (``analysis.check.gate``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from analysis.check.baseline import Baseline
from replay.corpus import Corpus
from replay.ingest.run_label import run_key

SHOWN = 5
"""Renamed runs named at most in the note."""


def keyed_as_baseline(current: Baseline, baseline: Baseline,
                      corpus: Corpus) -> tuple[Baseline, dict[str, str]]:
    """``current`` with each renamed file's run that ``baseline`` holds only under the old
    name keyed by it, and the keys changed (old key → present key)."""
    sources = dict(zip(corpus.runs["run_id"].to_pylist(), corpus.runs["source"].to_pylist()))
    renamed: dict[str, str] = {}  # present key → old key
    for rid, old in corpus.stored_sources.items():
        new_key, old_key = run_key(rid, sources[rid]), run_key(rid, old)
        if new_key in current.runs and new_key not in baseline.runs and \
                old_key in baseline.runs and old_key not in current.runs:
            renamed[new_key] = old_key
    if not renamed:
        return current, {}

    def rekey(d: dict[str, Any]) -> dict[str, Any]:
        return {renamed.get(k, k): v for k, v in d.items()}

    return replace(current, runs=rekey(current.runs), policies={
        name: replace(p, values=rekey(p.values), truth=dict(sorted(rekey(p.truth).items())))
        for name, p in current.policies.items()}), {o: n for n, o in sorted(renamed.items())}


def renamed_note(renamed: dict[str, str]) -> str | None:
    """What the check says of the runs it keyed by their old name (None when none)."""
    if not renamed:
        return None
    named = "; ".join(f"{old} → {new}" for old, new in list(renamed.items())[:SHOWN])
    more = f"; and {len(renamed) - SHOWN} more" if len(renamed) > SHOWN else ""
    return (f"{len(renamed)} run(s) of a file renamed in the dataset's manifest by hand are "
            f"compared with the baseline's runs of their old name ({named}{more}); "
            "`--update-baseline` keys them by the new name")
