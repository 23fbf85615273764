"""Which build of the metric parts runs: the modules ``setup.py`` compiles with mypyc
(``METRIC_MODULES``, their manifest ``_compiled.json`` in this folder) or their ``.py``, decided
as for the engine (``replay.compiled_engine.choose_build``: a stale, half or unnamed build never
runs).  Imported first by this package's ``__init__``, before any part module loads.
"""

from __future__ import annotations

from pathlib import Path

from replay.compiled_engine import METRICS_PACKAGE, METRICS_WHAT, EngineBuild, choose_build

BUILD: EngineBuild = choose_build(Path(__file__).resolve().parent, METRICS_PACKAGE, METRICS_WHAT)
"""The metric parts this process runs: compiled or pure Python, and why."""
