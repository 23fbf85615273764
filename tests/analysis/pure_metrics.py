"""A sweep's metric table over the samples and ``logs/``, in a process of its own.

    CTXREPLAY_PURE=1 python -m tests.analysis.pure_metrics OUT.pkl DATASET [DATASET ...]

``test_compiled_metrics.py`` runs this under the pure-Python metric parts (and engine) and
compares its table, cell by cell to the bit, with the same sweep made in the test's process by
the compiled parts (``setup.py``'s ``METRIC_MODULES``).  The datasets are the session's
(``sample_corpus``, ``logs_corpus``), opened as they are.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pandas as pd

from analysis.sweep.core import sweep
from analysis.sweep.grid import make_spec, settings
from replay.corpus import Corpus, open_corpus
from replay.policy import load_policy

AXES = {
    "tiers.1.trigger.at_tokens": {"start": 40000, "stop": 112000, "num": 4},
    "tiers.0.protect.frac": {"start": 0.05, "stop": 0.5, "num": 3},
    "tiers.2.margin_frac": {"start": 0.05, "stop": 0.32, "num": 3},
}
"""A small grid of the corrected two-tier preset (``benchmarks/sweep_speed.py``'s axes):
summaries, trims, overshoots and induced re-reads all vary across it."""


def tables(corpora: list[Corpus]) -> list[pd.DataFrame]:
    """Each corpus's sweep table over ``AXES`` (serial: the metrics' batches as a sweep makes
    them)."""
    grid = settings(load_policy("two-tier-corrected"), make_spec(AXES))
    return [sweep(corpus, grid, jobs=1).table for corpus in corpora]


def main(out: Path, datasets: list[Path]) -> None:
    corpora = [open_corpus([d]) for d in datasets]
    out.write_bytes(pickle.dumps(tables(corpora)))


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]])
