"""DataFrame loaders: the one place where Arrow tables become pandas frames.

Each loader takes a ``Corpus`` (store tables) or a ``Trace`` (replay output) and
returns a pandas frame with Arrow-backed dtypes (``pd.ArrowDtype``), so integer
columns that may be missing (recorded usage) stay integers with ``<NA>`` instead
of turning into floats.  Names follow the evaluation tools' ``<noun>_df`` style.

The metric modules take these frames (or hand-built frames with the same
columns, with any pandas dtypes) and never read files or Arrow tables.

Not here: filtering by policy or run (plain pandas), metric arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from replay.corpus import Corpus
from replay.engine.trace import Trace
from replay.ingest.schema import SCHEMAS

MESSAGE_COLUMNS_NO_TEXT: tuple[str, ...] = (
    "run_id", "msg", "block", "role", "kind", "call_id", "tool", "op", "path", "n_bytes",
    "n_chars", "n_lines", "tokens_o200k", "tokens_cl100k", "tokens_estimated", "is_error",
    "is_harness_summary", "ts", "agent",
)
"""Message columns loaded by default: every column except the (large) ``text``."""


def runs_df(corpus: Corpus) -> pd.DataFrame:
    """One row per run (store ``runs`` table).

    Args:
        corpus: an opened corpus.

    Returns:
        The runs table with Arrow-backed dtypes.
    """
    return _to_pandas(corpus.runs)


def messages_df(corpus: Corpus, columns: Sequence[str] | None = None, *,
                kinds: Sequence[str] | None = None,
                run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per content block (store ``messages`` table), in store order.

    Args:
        corpus: an opened corpus.
        columns: the columns to load; default every column but ``text``
            (``MESSAGE_COLUMNS_NO_TEXT``).  Pass ``text`` explicitly when it is needed.
        kinds: keep only blocks of these kinds (e.g. ``("tool_call",)``), filtered
            before conversion so large tool output is never copied.
        run_ids: load only these runs, one store entry at a time (default: every run,
            which reads the whole store at once).

    Returns:
        The messages table with Arrow-backed dtypes.
    """
    cols = list(columns) if columns is not None else list(MESSAGE_COLUMNS_NO_TEXT)
    parts = []
    for tbl in _per_run(corpus, run_ids, 0):
        if kinds is not None:
            tbl = tbl.filter(pc.is_in(tbl["kind"], value_set=pa.array(list(kinds), pa.string())))
        parts.append(tbl.select(cols))
    return _to_pandas(_concat(parts, SCHEMAS["messages"] if not parts else None, cols))


def recorded_requests_df(corpus: Corpus, *, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per recorded model call (store ``requests`` table): output_msg and usage.

    Args:
        corpus: an opened corpus.
        run_ids: load only these runs (default: every run).

    Returns:
        The store's requests table with Arrow-backed dtypes (usage columns nullable).
    """
    parts = list(_per_run(corpus, run_ids, 1))
    return _to_pandas(_concat(parts, SCHEMAS["requests"] if not parts else None, None))


def requests_df(trace: Trace) -> pd.DataFrame:
    """One row per (run_id, policy, request) of a replay (trace ``requests`` table).

    Args:
        trace: a replay's trace (one or several policies concatenated).

    Returns:
        The trace's requests table with Arrow-backed dtypes.
    """
    return _to_pandas(trace.requests)


def actions_df(trace: Trace) -> pd.DataFrame:
    """One row per tier action of a replay (trace ``actions`` table).

    Args:
        trace: a replay's trace.

    Returns:
        The trace's actions table with Arrow-backed dtypes.
    """
    return _to_pandas(trace.actions)


def evictions_df(trace: Trace) -> pd.DataFrame:
    """One row per block a tier trimmed, summarised or dropped (trace ``evictions`` table).

    Args:
        trace: a replay's trace.

    Returns:
        The trace's evictions table with Arrow-backed dtypes.
    """
    return _to_pandas(trace.evictions)


def _per_run(corpus: Corpus, run_ids: Sequence[str] | None, which: int) -> Iterator[pa.Table]:
    """The messages (``which=0``) or requests (1) of the given runs, or of all at once."""
    if run_ids is None:
        yield corpus.messages if which == 0 else corpus.requests
        return
    for rid in run_ids:
        yield corpus.run_tables(rid)[which]


def _concat(parts: list[pa.Table], empty: pa.Schema | None,
            cols: list[str] | None) -> pa.Table:
    if parts:
        return pa.concat_tables(parts)
    assert empty is not None
    tbl = empty.empty_table()
    return tbl.select(cols) if cols is not None else tbl


def _to_pandas(tbl: pa.Table) -> pd.DataFrame:
    return tbl.to_pandas(types_mapper=pd.ArrowDtype, use_threads=False)
