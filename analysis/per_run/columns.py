"""The request columns of the replays whose metrics are computed together, as NumPy arrays:
each column converted once, on first use, and kept for every part that reads it (the cached
share and the overshoots both read ``truth_tokens``).

``part_metrics_many`` gives the replays of a batch one ``BatchArrays``
(``PartInput.arrays``); a part's function of several replays asks ``request_columns`` for its
columns, which come from that when the part computes exactly those replays, in order (else,
e.g. a replay the part takes alone, they are converted for it).  The arrays are
``stats.request_arrays``' (a column's rows slices of one array replays × columns × requests,
each row contiguous): the same values, and the same steps of a reduction along a row, whichever
part converted them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.per_run.stats import request_arrays

if TYPE_CHECKING:
    from analysis.metric_spec import PartInput


class BatchArrays:
    """The request columns of several replays of one run (as many requests each), each as an
    array replays × requests, converted when first asked for and kept."""

    __slots__ = ("_got", "requests")

    def __init__(self, requests: Sequence[Mapping[str, list[Any]]]) -> None:
        self.requests = requests
        """Each replay's request columns, in order."""
        self._got: dict[tuple[str, Any], np.ndarray] = {}

    def holds(self, inps: Sequence[PartInput]) -> bool:
        """These are the replays of ``inps``, in order."""
        return len(inps) == len(self.requests) and all(
            inp.requests is rq for inp, rq in zip(inps, self.requests))

    def of(self, names: Sequence[str], dtype: Any) -> list[np.ndarray]:
        """The columns ``names`` as arrays of ``dtype`` (those not asked for before converted
        together, in one ``request_arrays`` call)."""
        missing = [c for c in names if (c, dtype) not in self._got]
        if missing:
            got = request_arrays(self.requests, missing, dtype)
            for k, c in enumerate(missing):
                self._got[(c, dtype)] = got[:, k]
        return [self._got[(c, dtype)] for c in names]


def request_columns(inps: Sequence[PartInput], names: Sequence[str],
                    dtype: Any) -> list[np.ndarray]:
    """The request columns ``names`` of the replays ``inps`` (of one run), each an array
    replays × requests of ``dtype``: the batch's (``PartInput.arrays``) when ``inps`` are its
    replays, else converted here."""
    arrays = inps[0].arrays
    if not isinstance(arrays, BatchArrays) or not arrays.holds(inps):
        arrays = BatchArrays([inp.requests for inp in inps])
    return arrays.of(names, dtype)
