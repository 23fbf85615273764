"""Arrow arrays read back without a compute call: each value's UTF-8 bytes of a string array
(``utf8_lengths``), the sum of an ``int64`` column (``int64_total``).

Not here: the arrays built (``replay.ingest.arrow_columns``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from replay.ingest.arrow_columns import NUMPY_ROWS

_STRING, _INT64 = pa.string(), pa.int64()
_INT64_ID = _INT64.id


def utf8_lengths(text: pa.Array) -> np.ndarray:
    """The UTF-8 bytes of each value of a ``string`` array (int64; a null: 0), read from its
    offsets: ``pc.binary_length``'s values without a compute call (that and its cast to int64
    cost ~30x this a file's column)."""
    if text.type != _STRING:
        raise TypeError(f"expected a string array, got {text.type}")
    n = len(text)
    if n == 0:
        return np.zeros(0, np.int64)
    offsets = np.frombuffer(text.buffers()[1], np.int32, n + 1, text.offset * 4)
    lengths = np.subtract(offsets[1:], offsets[:-1], dtype=np.int64)
    if text.null_count:  # (a null's slots may span bytes: it has none)
        valid = np.unpackbits(np.frombuffer(text.buffers()[0], np.uint8), count=text.offset + n,
                              bitorder="little")[text.offset:]
        lengths[valid == 0] = 0
    return lengths


def int64_total(values: pa.ChunkedArray | pa.Array) -> int:
    """The sum of an ``int64`` column's values (a null counts 0; no values: 0):
    ``pc.sum(values).as_py() or 0``, of one chunk read from its buffers without a compute call
    (that costs ~30 µs a call inside an ingest: a file's token total); of several chunks (a
    streamed file's: one a run) one ``pc.sum`` (numpy costs ~3.5 µs a chunk).  (Fewer than
    ``NUMPY_ROWS`` values without a null are summed by Python: exact, the same total while it
    fits an int64, as every token total does.)"""
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks != 1:  # (``values.chunks``: a wrapper a chunk, 0.7 µs)
            if values.type != _INT64:
                raise TypeError(f"expected an int64 array, got {values.type}")
            return (pc.sum(values).as_py() or 0) if values.num_chunks else 0
        values = values.chunk(0)  # (its type then read from the array, which holds it: a
        # chunked array makes a new type object at each read, ~5,000 instructions an int64)
    if values.type.id != _INT64_ID:
        raise TypeError(f"expected an int64 array, got {values.type}")
    n = len(values)
    if n == values.null_count:  # (no values, or all null: no data buffer to read)
        return 0
    if n < NUMPY_ROWS and not values.null_count:  # (a small file's: a sum over the bytes seen
        # as int64s, ~2 against numpy's ~6 µs)
        return sum(memoryview(values.buffers()[1])[values.offset * 8:(values.offset + n) * 8]
                   .cast("q"))
    ints = np.frombuffer(values.buffers()[1], np.int64, n, values.offset * 8)
    if values.null_count:  # (a null's slot may hold any value)
        valid = np.unpackbits(np.frombuffer(values.buffers()[0], np.uint8),
                              count=values.offset + n, bitorder="little")[values.offset:]
        ints = ints[valid == 1]
    return int(ints.sum())
