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
from replay.ingest.names import MAX_COUNT

_COUNTS = ("n_chars", "n_bytes", "n_lines", "tokens_o200k", "tokens_cl100k")
"""Message columns that are sizes: never negative."""
MAX_TOTAL = MAX_COUNT
"""The most a run's column of message sizes may sum to: its text in all, 2^40 tokens or bytes
(a thousand times the 1 GiB file ingest reads at most), so a replay's sums of them, each
request's context added up over a run's requests, stay far inside a 64-bit integer."""
_REQUEST_COUNTS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens",
                   "reasoning_tokens")


def check_run_tables(messages: pa.Table, requests: pa.Table, run_id: str) -> None:
    """Refuse a run whose rows break the run model.

    Rules: message numbers are whole, ≥ 0 and in order, and blocks are numbered 0, 1, …
    within each message; sizes and recorded token counts are ≥ 0 and at most ``MAX_COUNT``
    where known, and a column of message sizes sums to at most ``MAX_TOTAL``; each request
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
        if name in messages.column_names and (why := _out_of_range(messages[name], MAX_TOTAL)):
            _refuse(run_id, f"{why} {name}")
    for name in _REQUEST_COUNTS:  # (each a parser's count: a log may hold any number of them)
        if name in requests.column_names and (why := _out_of_range(requests[name], None)):
            _refuse(run_id, f"{why} recorded {name}")
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


def _out_of_range(column: pa.ChunkedArray, max_total: int | None) -> str:
    """What is wrong with a column of counts ('' when nothing): a negative one, one above
    ``MAX_COUNT`` (no count a parser keeps or a tokenizer makes of a file ingest reads), or a
    sum above ``max_total`` (2^62 tokens in a block ended a replay in an OverflowError
    traceback: the sums of a run's counts left a 64-bit integer)."""
    values = column.drop_null().to_numpy()
    if not len(values):
        return ""
    if values.min() < 0:
        return "a negative"
    high = int(values.max())
    if high > MAX_COUNT:
        return f"a count above {MAX_COUNT:,} (2^40) in"
    if max_total is not None and high * len(values) > max_total \
            and float(values.sum(dtype=np.float64)) > max_total:  # (the sum only when it may be)
        return f"a total above {max_total:,} of"
    return ""


def _refuse(run_id: str, what: str) -> None:
    raise StoreError(f"damaged dataset: run {run_id}: {what}; re-ingest the logs")
