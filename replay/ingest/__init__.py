"""Ingest: recorded log files -> runs -> the Parquet store.

Finding files (``discover``, ``input_files``), one parser per format (``parsers/``, with the
tool-call operations in ``ops``), one file into token-counted tables (``parse_file``,
``run_tables``, ``tokens``, ``redaction``), many files into the store (``batch``) and the store
itself (``schema``, ``store``, ``store_index``, ``store_session``, ``run_checks``); how a run
is named (``run_label``) and what ingest makes of one file (``inspect``).  Everything
format-specific stays in here: nothing downstream knows which format a run came from.
"""

from __future__ import annotations

from replay.ingest import _build  # noqa: F401  # first: the compiled parts or their .py
