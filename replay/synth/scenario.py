"""A synthetic session's knobs: size, action mix, and the failure cases it contains.

A ``Scenario`` is checked when made (weights and probabilities in [0, 1], ranges ordered, an
action mix that is not all zero); ``replay.synth.generate.synth_run`` generates its session.

Not here: the generator (``replay.synth.generate``), the sessions shipped in ``logs/``
(``replay.synth.embedded``) and the seed failure scenarios (``replay.synth.failure_cases``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

KINDS = ("read", "edit", "write", "test", "grep", "glob", "bash")
"""The action kinds; ``Scenario.p_<kind>`` are their weights."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """One synthetic session: its size, its action mix and the failure cases it contains.

    ``p_read`` … ``p_bash`` are relative weights of the action kinds (each in [0, 1]);
    the other ``p_`` fields are probabilities.  Request indices count from 0.
    """

    name: str
    seed: int
    n_requests: int
    task_text: str
    model: str = "claude-sonnet-4-5-20250929"
    start_ts: str = "2026-01-12T09:00:00.000Z"
    n_files: int = 40
    file_lines_min: int = 60
    file_lines_max: int = 300
    p_read: float = 0.35
    p_edit: float = 0.2
    p_write: float = 0.04
    p_test: float = 0.12
    p_grep: float = 0.12
    p_glob: float = 0.03
    p_bash: float = 0.08
    p_reread: float = 0.25
    """A read targets a file already read or written (else a new one, while any is left)."""
    p_partial_read: float = 0.2
    """A read of a file over 120 lines uses ``offset``/``limit``."""
    reread_burst_at_request: int | None = None
    """From here, ``reread_burst_reads`` requests in a row read one module (see below)."""
    reread_burst_reads: int = 0
    reread_burst_target: Literal["smallest", "largest"] = "smallest"
    """Which module the burst reads: the smallest (a cheap loop) or the largest (each copy is
    long enough for a trim tier to replace it)."""
    test_output_lines_min: int = 30
    test_output_lines_max: int = 150
    p_test_fail: float = 0.6
    """A test run fails (decreasing to 40 % of this by the end of the run)."""
    big_output_at_request: int | None = None
    """This request's only call is a verbose test run of about ``big_output_tokens``."""
    big_output_tokens: int = 14_000
    write_lines_min: int = 20
    """Write content lines; an Edit inserts a quarter to a third of this range."""
    write_lines_max: int = 120
    p_parallel: float = 0.12
    """A response makes 2-4 parallel calls."""
    p_thinking: float = 0.25
    p_intent: float = 0.55
    """A response with calls starts with a short text ("Let me read `x.py`.")."""
    p_error: float = 0.04
    """A read or an edit fails (missing file, string not found)."""
    todo_every_requests: int = 30
    """A TodoWrite at request 1 and every this many requests after (0: never)."""
    turn_every_requests: int = 80
    """Mean requests per human turn: a turn ends with a text-only answer (0: one turn)."""
    system_overhead_tokens: int = 17_800
    """System prompt and tool schemas: in every prompt, never in the log."""
    compact_at_tokens: int | None = None
    """The recorded harness compacts before a request when the previous prompt exceeded this."""
    claude_token_scale: float = 1.08
    lean_tool_results: bool = False
    """Record ``toolUseResult`` without its copies of file contents and outputs (the parsers read
    the message content, so only the file gets smaller; no random draw depends on it)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.startswith("p_") and not 0.0 <= v <= 1.0:
                raise ValueError(f"Scenario.{f.name}: {v} is not in [0, 1]")
        if self.n_requests < 1:
            raise ValueError(f"Scenario.n_requests: {self.n_requests} < 1")
        for lo, hi in (("file_lines_min", "file_lines_max"), ("write_lines_min", "write_lines_max"),
                       ("test_output_lines_min", "test_output_lines_max")):
            if not 1 <= getattr(self, lo) <= getattr(self, hi):
                raise ValueError(f"Scenario.{lo}/{hi}: need 1 <= min <= max")
        if sum(getattr(self, f"p_{k}") for k in KINDS) <= 0:
            raise ValueError("Scenario.p_read..p_bash: the action mix is all zero")
        if self.compact_at_tokens is not None \
                and self.compact_at_tokens <= self.system_overhead_tokens:
            raise ValueError("Scenario.compact_at_tokens: must exceed system_overhead_tokens")
