"""Codex's own auto-compact arithmetic, per run, as openai/codex computes it (#26 items 6, 8).

Read in openai/codex (the project's stored copies):

- ``codex-rs/protocol/src/openai_models.rs`` @ ``0d4367d0e6a976082b36d9eea8f8a579fca368cb``:
  ``ModelInfo::auto_compact_token_limit()`` = the model's (or config's) limit, else
  ``context_window * 9 / 10``; ``effective_context_window_percent`` defaults to 95 — the window
  a rollout records as ``token_count`` ``info.model_context_window`` is
  ``context_window × 95 / 100`` (272,000 → 258,400; 128,000 → 121,600).
- ``codex-rs/core/src/context_manager/history.rs`` @ ``a20bf059710752cb1606ac1635ab8af68b214afe``:
  what is compared with the limit, ``get_total_token_usage`` = the last response's
  ``total_tokens`` (input + output) + the byte estimate (bytes / 4) of the items added since the
  last model output + — unless the server says it counted them (``server_reasoning_included``)
  — the estimate of every encrypted reasoning item before the last user turn, which the server
  no longer counts: ``estimate_reasoning_length`` = encoded length × 3 / 4 − 650 bytes, / 4.
- ``codex-rs/core/src/session/context_window.rs`` @ ``faae6d98619eacda6089e6e9f3b3ce39be2b895f``
  and the turn loop (``run_turn``: after each sampling request, ``token_limit_reached &&
  needs_follow_up`` runs ``run_auto_compact`` mid-turn; before a turn, the same comparison):
  the check runs before every request, as a replay's trigger does.

So, for a run (``resolve``):

    context_window = the user's model_context_window, else the recorded
                     model_context_window × 100 / 95, else the model table below
    level          = the user's model_auto_compact_token_limit, else the recorded
                     auto_compact_token_limit, else context_window × 9 // 10
    compared       = last usage + count since + earlier turns' reasoning (the engine:
                     ``replay.engine.hidden_reasoning``)

Measured on the real 0.104 rollout of madshn/localpush (gpt-5.3-codex, model_context_window
258,400): it compacted mid-turn right after a request of 209,950 input + 2,184 output tokens;
with the 33,320 tokens of earlier turns' encrypted reasoning and the 80 of the newest tool
output, Codex's total was 245,534 ≥ 244,800, and 243,279 < 244,800 one request before.

Not here: the byte arithmetic (``estimate_reasoning_length``, bytes → tokens:
``replay.codex_bytes``); the dispatch over harnesses and what ``Resolved`` holds
(``replay.policy.harness``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from replay.policy.model import Harness, Policy

EFFECTIVE_WINDOW_PERCENT = 95
"""``default_effective_context_window_percent`` (openai_models.rs)."""
AUTO_COMPACT_NUM, AUTO_COMPACT_DEN = 9, 10
"""``context_window * 9 / 10`` (``ModelInfo::auto_compact_token_limit``)."""
PRESET_LEVEL_TOKENS = 244_800
"""The level the ``codex`` preset writes (272,000 × 9 / 10): a tier whose trigger is anything
else was set by the user, and their level stands."""


@dataclass(frozen=True, slots=True)
class ModelWindow:
    """A model's ``context_window`` when the log does not record it."""

    prefix: str
    window_tokens: int
    source: str


MODEL_WINDOWS: tuple[ModelWindow, ...] = (
    ModelWindow("gpt-5.3-codex-spark", 128_000,
                "not in the bundled models.json (served by the /models catalog): 128,000 in "
                "third-party snapshots of that catalog; the 0.140/0.142 rollouts of #26 record "
                "121,600 = 95 % of it"),
    ModelWindow("gpt-5", 272_000,
                "openai/codex codex-rs/core/models.json @ 8ec57243 (gpt-5.2, gpt-5.2-codex) and "
                "codex-rs/models-manager/models.json @ 0dcb02e0 (gpt-5.4): context_window "
                "272000; the 0.104 and 0.114 rollouts record 258,400 = 95 % of it"),
    ModelWindow("codex-", 272_000, "the same catalog (codex-* models)"),
)
"""Most specific first: the first prefix a model id starts with (after a provider prefix such
as ``openai/``) gives its window.  A model in none of them: 272,000, said to be assumed."""
DEFAULT_WINDOW_TOKENS = 272_000


def model_window(model: str) -> tuple[int, str, bool]:
    """(context_window, why, assumed) of ``model`` from ``MODEL_WINDOWS``."""
    slug = model.rsplit("/", 1)[-1].lower()
    for row in MODEL_WINDOWS:
        if slug.startswith(row.prefix):
            return row.window_tokens, f"{model}: {row.window_tokens:,} (model table)", False
    why = f"{model or 'model not recorded'}: {DEFAULT_WINDOW_TOKENS:,} assumed (not in the table)"
    return DEFAULT_WINDOW_TOKENS, why, True


@dataclass(frozen=True, slots=True)
class CodexLevel:
    """Codex's window and auto-compact level for one run, and how they were reached."""

    window_tokens: int
    level_tokens: int
    basis: str
    window_from_table: bool
    """The log records no window: the model table's (``MODEL_WINDOWS``) was taken."""
    estimated: bool
    """A figure is assumed (a model not in the table)."""


def codex_level(h: Harness, harness: str, model: str, recorded_window: int | None,
                recorded_limit: int | None) -> CodexLevel:
    """Codex's arithmetic for a run recorded by ``harness`` with ``model``, the window and limit
    its log records (None: not recorded) and the user's settings in ``h``."""
    assumed = False
    if h.model_context_window is not None:
        window = h.model_context_window
        why = f"model_context_window {window:,} (setting)"
        from_table = False
    elif recorded_window is not None:
        window = recorded_window * 100 // EFFECTIVE_WINDOW_PERCENT
        why = (f"recorded model_context_window {recorded_window:,} = {window:,} × "
               f"{EFFECTIVE_WINDOW_PERCENT} %")
        from_table = False
    else:
        window, why, assumed = model_window(model)
        why, from_table = f"window not recorded; {why}", True
    if h.model_auto_compact_token_limit is not None:
        level = h.model_auto_compact_token_limit
        how = f"model_auto_compact_token_limit {level:,} (setting)"
    elif recorded_limit is not None:
        level, how = recorded_limit, f"recorded auto_compact_token_limit {recorded_limit:,}"
    else:
        level = window * AUTO_COMPACT_NUM // AUTO_COMPACT_DEN
        how = f"{window:,} × 9 / 10 = {level:,}"
    reasoning = ("" if h.server_reasoning_included else
                 "; earlier turns' encrypted reasoning counted (×3/4 − 650 bytes, / 4)")
    basis = f"{harness or 'codex (version not recorded)'}, {why}: level {how}{reasoning}"
    return CodexLevel(window, level, basis, from_table, assumed)


def with_codex_level(policy: Policy, lv: CodexLevel) -> Policy:
    """``policy`` planning against ``lv``'s window (the server's window, no reserve)."""
    return dataclasses.replace(policy, server=dataclasses.replace(
        policy.server, window_tokens=lv.window_tokens))
