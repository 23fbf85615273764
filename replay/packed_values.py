"""Lists of Python numbers as native int64 / float64 bytes, packed by ``struct``: a list packed in
one call, ~100 instructions a value against NumPy's ~210 (``np.fromiter`` converts each value
through its generic packing).  The one packer of the ingest's Arrow columns
(``replay.ingest.arrow_columns``) and the metrics' request arrays
(``analysis.per_run.stats.lists_array``).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable
from itertools import islice

PACKED_ROWS = 1 << 16
"""Values ``int64s`` packs a call at the most (each call holds its values as one tuple of
arguments: a column's values are never all held as int objects at once)."""


@functools.lru_cache(maxsize=64)
def packer(code: str, n: int) -> struct.Struct:
    """The ``struct`` of ``n`` native values of ``code`` (``q``: int64, ``d``: float64)."""
    return struct.Struct(f"{n}{code}")


def int64s(values: Iterable[int], n: int) -> bytes:
    """The ``n`` integers of ``values`` as native int64s (``np.fromiter(values, np.int64,
    n)``'s bytes), packed by ``struct``, ``PACKED_ROWS`` at a time: ~100 instructions a value
    against numpy's ~210 (its ``fromiter`` converts each value through its generic packing).

    Raises:
        struct.error: an integer beyond int64, a value that is no integer, or other than ``n``
            values (the caller asks numpy then, for its exception).
    """
    if n <= PACKED_ROWS:  # (the values handed over as they are: no iterator around them)
        return packer("q", n).pack(*values)
    items = iter(values)
    parts = [packer("q", min(PACKED_ROWS, n - start)).pack(*islice(items, PACKED_ROWS))
             for start in range(0, n, PACKED_ROWS)]
    if next(items, None) is not None:
        raise struct.error(f"more than {n} values to pack")
    return b"".join(parts)
