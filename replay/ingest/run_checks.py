"""What one run's stored tables must satisfy before the engine reads them.

A dataset on disk may be damaged or crafted: the engine indexes blocks by message number
and requests by the message they answer, so rows out of order, negative or out-of-range
numbers, or negative counts would give wrong figures without a word (or an index error far
from the cause).  ``check_run_tables`` states the invariants the parsers and ``ingest``
guarantee, and refuses a run that breaks one with a ``StoreError`` naming the run and the
rule (the command exits 2 and says to re-ingest).

Not here: reading the store (``replay.ingest.store``), building the prepared run
(``replay.engine.prepared``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from replay.errors import StoreError

_COUNTS = ("n_chars", "n_bytes", "n_lines", "tokens_o200k", "tokens_cl100k")
"""Message columns that are sizes: never negative."""
_REQUEST_COUNTS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens",
                   "reasoning_tokens")


def check_run_tables(messages: pa.Table, requests: pa.Table, run_id: str) -> None:
    """Refuse a run whose rows break the run model.

    Rules: message numbers are whole, ≥ 0 and in order, and blocks are numbered 0, 1, …
    within each message; sizes and recorded token counts are ≥ 0 where known; each request
    answers an existing message, in order.

    Raises:
        StoreError: naming the run and the first rule broken.
    """
    msg = _ints(messages, "msg", run_id)
    block = _ints(messages, "block", run_id)
    if len(msg) and msg[0] < 0:
        _refuse(run_id, "a negative message number")
    step = np.diff(msg)
    if (step < 0).any():
        _refuse(run_id, "messages out of order")
    new_msg = np.concatenate(([True], step > 0)) if len(msg) else np.zeros(0, bool)
    expected = np.arange(len(block)) - np.maximum.accumulate(
        np.where(new_msg, np.arange(len(block)), 0)) if len(block) else block
    if not np.array_equal(block, expected):
        _refuse(run_id, "blocks not numbered 0, 1, ... within their message")
    for name in _COUNTS:
        if name in messages.column_names and _negative(messages[name]):
            _refuse(run_id, f"a negative {name}")
    for name in _REQUEST_COUNTS:
        if name in requests.column_names and _negative(requests[name]):
            _refuse(run_id, f"a negative recorded {name}")
    out = _ints(requests, "output_msg", run_id)
    if len(out) and (out.min() < 0 or (len(msg) and out.max() > msg[-1]) or not len(msg)):
        _refuse(run_id, "a request answering a message the run does not have")
    if (np.diff(out) < 0).any():
        _refuse(run_id, "requests out of order")


def _ints(table: pa.Table, name: str, run_id: str) -> np.ndarray:
    column = table[name]
    if column.null_count:
        _refuse(run_id, f"{name} missing in {column.null_count} rows")
    return np.asarray(column.to_numpy(), dtype=np.int64)


def _negative(column: pa.ChunkedArray) -> bool:
    values = column.drop_null().to_numpy()
    return bool(len(values) and values.min() < 0)


def _refuse(run_id: str, what: str) -> None:
    raise StoreError(f"damaged dataset: run {run_id}: {what}; re-ingest the logs")
