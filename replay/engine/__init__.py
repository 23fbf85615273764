"""Engine: a prepared run replayed under a policy -> a trace.

``fold.replay(run, policy) -> Trace`` is a pure, deterministic fold over the run's requests:
``prepared`` (the run as plain lists, made once), ``context`` (the live context with
incremental totals), ``tiers/`` (trim, summarise, collapse, custom), ``summariser`` (the stub),
``cache`` (prefix cache and prices), ``truth`` and ``calibrate`` (what the replay judges by),
``trace`` (the trace tables and their vocabulary).  No clock, no I/O, no unseeded randomness.
"""

from replay.compiled_engine import choose

choose()  # before any engine module loads: the compiled build, or the pure modules (and why)
