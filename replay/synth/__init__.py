"""The generated corpus: deterministic Claude Code sessions for ``logs/``.

``scenario`` (a session's knobs), ``generate`` (``synth_run``: one session as JSON Lines, with
``repo``, ``tools`` and ``prose``), ``embedded`` (the five long sessions shipped in ``logs/``),
``failure_cases`` (one run per failure the seed harness's authors measured, ``logs/scenarios``).
"""
