"""Which build of the ingest's parts runs: the modules ``setup.py`` compiles with mypyc
(``INGEST_MODULES``: the parsers' and tables' hot path, their manifest ``_compiled.json`` in this
folder) or their ``.py``, decided as for the engine (``replay.compiled_engine.choose_build``: a
stale, half or unnamed build never runs).  Imported first by this package's ``__init__``, before
any of its modules loads.
"""

from __future__ import annotations

from pathlib import Path

from replay.compiled_engine import INGEST_PACKAGE, INGEST_WHAT, EngineBuild, choose_build

BUILD: EngineBuild = choose_build(Path(__file__).resolve().parent, INGEST_PACKAGE, INGEST_WHAT)
"""The ingest parts this process runs: compiled or pure Python, and why."""
