"""A harness's own arithmetic: the trigger it computes from its version, the model and the
user's settings, for the run being replayed (#26 items 5 and 6): Claude Code's here, Codex's in
``replay.policy.codex_harness`` (``harness: {name: codex}``), both through ``resolve``.

A policy with ``harness: {name: claude-code, …}`` does not fix its window and auto-compact
level: ``resolve`` sets them per run from what the log records — the harness version
(``Run.harness``, e.g. ``claude-code 2.1.7``) and the model — and from the settings the user
gave under the harness's own names (``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``,
``CLAUDE_CODE_AUTO_COMPACT_WINDOW``, ``autoCompactWindow``).  Pure: the same policy and run
facts give the same policy; ``Resolved.basis`` says how the level was reached, in words, and
``Resolved.estimated`` when a figure is not documented for that version.

Claude Code (``CLAUDE_CODE_BUFFERS``, ``claude_code_window``):

    window     = the model's context window (1,000,000 for a ``[1m]`` model id, the models
                 that ship with 1M, and a run whose recorded prompts pass 200,000; else
                 200,000), capped by CLAUDE_CODE_AUTO_COMPACT_WINDOW, else by the
                 autoCompactWindow setting (100,000–1,000,000 or ``auto``)

What a transcript records of the window: the assistant records' ``message.model`` is the API's
model id, without the ``[1m]`` the user chose (a stream-json ``system/init`` line names
``claude-opus-4-6[1m]`` where the assistant message of the same session names
``claude-opus-4-6``, as public captures quoted in test suites show; the 1M window is the
``context-1m`` beta header, not in the transcript); ``autoCompactWindow`` is a setting, not in
the transcript.  What it does record is usage: a prompt over 200,000 tokens was sent to a 1M
window (the API refuses a prompt over the window), so such a run is planned against 1,000,000
(``claude_code_window``'s ``largest_prompt_tokens``; ``basis`` says so).
    effective  = window − min(max output, 20,000)            (20,000 for every current model)
    threshold  = effective − buffer(version)                 (13,000 from 2.1.25; 25,000 ≤ 2.1.7)
    with CLAUDE_AUTOCOMPACT_PCT_OVERRIDE = p: min(floor(effective × p / 100), threshold)

The harness sets the tier's trigger only while it is the preset's (``at_tokens`` at
``TODAY_LEVEL_TOKENS``): a level the user wrote in the tier stands, and ``basis`` says so.

Not here: the policy model (``replay.policy``), where a replay applies it
(``replay.engine.fold``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from replay.policy.codex_harness import PRESET_LEVEL_TOKENS as CODEX_PRESET_LEVEL
from replay.policy.codex_harness import codex_level, with_codex_level
from replay.policy.model import Harness, Policy
from replay.policy.tier_model import Tier, Trigger

OUTPUT_RESERVE_CAP_TOKENS = 20_000
"""MAX_OUTPUT_TOKENS_FOR_SUMMARY: the effective window is the window less min(max output, this)
(autoCompact.ts as quoted by the teardown in harness-policies.md A2)."""


@dataclass(frozen=True, slots=True)
class BufferEra:
    """Claude Code's auto-compact buffer (beyond the output reserve) from a version on."""

    first_version: tuple[int, int, int]
    buffer_tokens: int
    measured: bool
    """Whether this figure was measured on sessions of this era (else carried over)."""
    source: str


CLAUDE_CODE_BUFFERS: tuple[BufferEra, ...] = (
    BufferEra((0, 0, 0), 25_000, True,
              "window − 45,000: /context 'Autocompact buffer 45.0k (22.5 %)' on 2.0.30 "
              "(checkeagle.com, harness-policies.md A2) and 2.0.53 (anthropics/claude-code#12333); "
              "three 2.1.7 sessions auto-compacted at 154.0k–154.5k recorded tokens (#26)"),
    BufferEra((2, 1, 8), 13_000, False,
              "2.1.8–2.1.24 not measured: the figure of 2.1.25 on is assumed"),
    BufferEra((2, 1, 25), 13_000, True,
              "window − 33,000 = − min(max output, 20,000) − AUTOCOMPACT_BUFFER_TOKENS 13,000 "
              "(autoCompact.ts, harness-policies.md A2); /context 'Autocompact buffer: 33k' "
              "(anthropics/claude-code#23409, 2026-02-05; #63015, 2.1.153); sessions of "
              "2.1.25–2.1.45 auto-compacted at 167,000 (#26)"),
)
"""What changed when, oldest first: the era of a version is the last whose first version it
reaches.  Verified figures only; a gap between measured versions says so (``measured``)."""

ONE_MILLION_MODELS: tuple[str, ...] = ("claude-opus-5", "claude-fable-5", "claude-sonnet-5-5")
"""Model id prefixes whose Claude Code window is 1,000,000 tokens without a ``[1m]`` suffix:
opus-5 and fable-5 sessions (Abinesh-L/claude-crusts v0.8.0 release notes), claude-sonnet-5-5
(xsyetopz/claudetto wiki, 'Compaction And Context', Claude Code 2.1.296)."""
DEFAULT_WINDOW_TOKENS = 200_000
"""Claude Code's default window (the 2.1.296 strings, claudetto wiki)."""
ONE_MILLION_TOKENS = 1_000_000
AUTO_COMPACT_WINDOW_RANGE = (100_000, 1_000_000)
"""The values the autoCompactWindow setting takes besides ``auto`` (claude-code docs as quoted
by claude-code-log; Astro-Han/claude-pace v0.9.6: Claude Code 2.1.311+)."""


TODAY_LEVEL_TOKENS = DEFAULT_WINDOW_TOKENS - OUTPUT_RESERVE_CAP_TOKENS - 13_000
"""The level a preset writes for its harness tier (a 200k model today: 167,000).  A tier whose
trigger is anything else was set by the user: their level stands, the window still follows the
model."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """A policy with its window and trigger set for one run, and how."""

    policy: Policy
    level_tokens: int
    basis: str
    """The arithmetic in words (version, model, window, buffer, settings)."""
    estimated: bool
    """A figure used is not documented for the run's version (or the version is unknown)."""
    window_from_table: bool = False
    """The log records no window: the harness's model table gave it (Codex)."""


def version_of(harness: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a recorded harness string such as ``claude-code 2.1.39``."""
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", harness)
    return None if m is None else (int(m[1]), int(m[2]), int(m[3]))


def buffer_era(version: tuple[int, int, int] | None) -> BufferEra:
    """The buffer era of a Claude Code version (the newest for an unknown version)."""
    if version is None:
        return CLAUDE_CODE_BUFFERS[-1]
    return [e for e in CLAUDE_CODE_BUFFERS if version >= e.first_version][-1]


def claude_code_window(model: str, h: Harness,
                       largest_prompt_tokens: int | None = None) -> tuple[int, str]:
    """The window Claude Code plans against for ``model`` under the user's settings, and why;
    ``largest_prompt_tokens``: the run's largest recorded prompt (over 200,000: a 1M window)."""
    one_m = model.endswith("[1m]") or model.startswith(ONE_MILLION_MODELS)
    window = ONE_MILLION_TOKENS if one_m else DEFAULT_WINDOW_TOKENS
    why = f"{model or 'model not recorded'}: {window:,} window"
    if not one_m and largest_prompt_tokens is not None \
            and largest_prompt_tokens > DEFAULT_WINDOW_TOKENS:
        window = ONE_MILLION_TOKENS
        why = (f"{model or 'model not recorded'}: {window:,} window (a recorded prompt of "
               f"{largest_prompt_tokens:,} tokens is over {DEFAULT_WINDOW_TOKENS:,}: a [1m] model "
               "or the context-1m beta, which the transcript does not name)")
    cap = h.CLAUDE_CODE_AUTO_COMPACT_WINDOW
    name = "CLAUDE_CODE_AUTO_COMPACT_WINDOW"
    if cap is None and isinstance(h.autoCompactWindow, int):
        cap, name = h.autoCompactWindow, "autoCompactWindow"
    if cap is not None and cap < window:
        window, why = cap, f"{why}, capped at {cap:,} by {name}"
    return window, why


def largest_prompt(recorded_input: list[int | None]) -> int | None:
    """The largest recorded prompt of a run (None when none is recorded)."""
    return max((r for r in recorded_input if r is not None), default=None)


def resolve(policy: Policy, harness: str, model: str,
            largest_prompt_tokens: int | None = None, *, window_tokens: int | None = None,
            compact_limit_tokens: int | None = None) -> Resolved:
    """``policy`` with its window, reserve and harness tier's trigger set for a run recorded by
    ``harness`` (as ``Run.harness`` records it) with ``model`` and, when given, its largest
    recorded prompt (``largest_prompt``: evidence of the window), and the window and limit its
    log records (``Run.recorded_window_tokens`` / ``recorded_compact_limit_tokens``; Codex)."""
    h = policy.harness
    if h is None:
        raise ValueError(f"policy {policy.name} names no harness")
    if h.name == "codex":
        return _codex(policy, h, harness, model, window_tokens, compact_limit_tokens)
    version = version_of(harness) if harness.startswith(h.name) else None
    era = buffer_era(version)
    window, why = claude_code_window(model, h, largest_prompt_tokens)
    reserve = min(OUTPUT_RESERVE_CAP_TOKENS, window - 1)
    effective = window - reserve
    level = max(0, effective - era.buffer_tokens)  # a window smaller than the buffer: at once
    recorded = ".".join(map(str, version)) if version else f"(version not recorded: {harness!r})"
    basis = (f"claude-code {recorded}"
             f", {why}: {window:,} − {reserve:,} − {era.buffer_tokens:,} = {level:,}")
    pct = h.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE
    if pct is not None:
        lowered = min(int(effective * pct / 100), level)
        basis += (f"; CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={pct:g}: min({effective:,} × {pct:g} % , "
                  f"{level:,}) = {lowered:,}")
        level = lowered
    server = dataclasses.replace(policy.server, window_tokens=window, reserve_tokens=reserve)
    tier = next(t for t in policy.tiers if t.name == h.tier)
    own = getattr(tier, "trigger", None)
    if own is None or own.at_tokens != TODAY_LEVEL_TOKENS:  # the user set their own level
        fixed = own.level_tokens(window - reserve) if own is not None else None
        basis = (f"{h.tier}'s trigger set by the policy, not by the harness's arithmetic "
                 f"({basis}); level {fixed:,}" if fixed is not None else basis)
        resolved = dataclasses.replace(policy, server=server)
        return Resolved(resolved, fixed if fixed is not None else level, basis, estimated=False)
    tiers = tuple(_with_level(t, level) if t.name == h.tier else t for t in policy.tiers)
    resolved = dataclasses.replace(policy, server=server, tiers=tiers)
    return Resolved(resolved, level, basis, estimated=version is None or not era.measured)


def _codex(policy: Policy, h: Harness, harness: str, model: str, window: int | None,
           limit: int | None) -> Resolved:
    """Codex's arithmetic (``replay.policy.codex_harness``) applied as Claude Code's is: the
    tier's trigger only while it is the preset's."""
    lv = codex_level(h, harness, model, window, limit)
    resolved = with_codex_level(policy, lv)
    tier = next(t for t in policy.tiers if t.name == h.tier)
    own = getattr(tier, "trigger", None)
    basis = lv.basis + (" (the model table's window: the log records none)"
                        if lv.window_from_table else "")
    if own is None or own.at_tokens != CODEX_PRESET_LEVEL:  # the user set their own level
        fixed = own.level_tokens(lv.window_tokens) if own is not None else None
        if fixed is not None:
            basis = (f"{h.tier}'s trigger set by the policy, not by the harness's arithmetic "
                     f"({basis}); level {fixed:,}")
        return Resolved(resolved, fixed if fixed is not None else lv.level_tokens, basis,
                        estimated=False, window_from_table=lv.window_from_table)
    tiers = tuple(_with_level(t, lv.level_tokens) if t.name == h.tier else t
                  for t in policy.tiers)
    return Resolved(dataclasses.replace(resolved, tiers=tiers), lv.level_tokens, basis,
                    estimated=lv.estimated, window_from_table=lv.window_from_table)


def _with_level(tier: Tier, level: int) -> Tier:
    """``tier`` with its trigger at ``level`` tokens."""
    return dataclasses.replace(tier, trigger=Trigger(at_tokens=level))
