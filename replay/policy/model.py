"""The policy model: what a harness does to keep its context inside the window, as frozen data.

Every field's unit is in its name.  ``replay.policy`` (the package) loads and validates these
from YAML and re-exports them: import them from there (``from replay.policy import Policy``).
Here, below the loading and checking modules that use them (``check``, ``doc``, ``pricing``), so
that nothing in the package imports its own ``__init__``.

Not here: the tiers and their settings (``replay.policy.tier_model``), loading and validation
(``replay.policy``, ``replay.policy.check``), what tiers do (``replay.engine.tiers``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from replay.policy.hashing import HashedOnce, hashed_once
from replay.policy.providers import DEFAULT_PROVIDER, Cache
from replay.policy.tier_model import Collapse, Custom, Summarise, Trim


@dataclass(frozen=True, slots=True, kw_only=True)
class Server:
    """The model server: the hard limit and what counts against it."""

    window_tokens: int = 200_000
    """Hard context window."""
    reserve_tokens: int = 0
    """Answer tokens requested (max_tokens); request + reserve must fit when ``reserve_counts``."""
    reserve_counts: bool = True
    """Whether the server counts the reserve against the window (vLLM, Anthropic: yes)."""
    message_overhead_tokens: int = 0
    """Template tokens per message (role markers)."""
    fixed_overhead_tokens: int = 0
    """System prompt and tool schemas the logs do not contain, sent with every request (anchored
    truth carries them from the recorded usage instead, on runs that have it)."""


Tokenizer = Literal["o200k_base", "cl100k_base"]
"""The tokenizers a count can use (their per-block counts are ingest's ``tokens_*`` columns)."""


@hashed_once  # a memo key of the engine's (replay.policy.hashing)
@dataclass(frozen=True, slots=True, kw_only=True)
class TokenCounter(HashedOnce):
    """How tokens are counted: chars/N, a tokenizer, or a fit to the recorded usage."""

    method: Literal["chars", "tokenizer", "calibrated", "anchored"] = "tokenizer"
    """``calibrated``: fitted to the run's recorded usage (overhead + scale × count).
    ``anchored``, for truth: the recorded input, plus scale × what the policy changed
    (``replay.engine.truth``); a run without recorded usage falls back to the tokenizer, and the
    trace says so (``truth_source``).  ``anchored``, for an estimator: the previous request's
    size as the server reported it (the replay's truth) plus the count of what changed since
    (tokenizer × the run's calibration scale, else × ``scale``); the first request, before any
    usage is reported, is estimated as ``calibrated`` — what Claude Code, Cline and Gemini CLI
    do (``tokenCountWithEstimation``: last usage + a rough count of the messages since)."""
    chars_per_token: float = 4.0
    """For ``chars``: characters per token."""
    tokenizer: Tokenizer = "o200k_base"
    scale: float = 1.0
    """Multiplier on the count (e.g. 1.1 for a tokenizer that reads 10 % above o200k)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Harness:
    """The harness whose own arithmetic sets the window and one tier's trigger per run, from the
    version and model the log records and the settings below, under the harness's own names
    (``replay.policy.harness``: the rule, its cited table of what changed when)."""

    name: Literal["claude-code", "codex"] = "claude-code"
    tier: str = "autocompact"
    """The tier whose trigger the harness sets (``at_tokens``)."""
    CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: float | None = None
    """Percent of the effective window to compact at; it can only lower the threshold."""
    CLAUDE_CODE_AUTO_COMPACT_WINDOW: int | None = None
    """Caps the window the threshold is computed from (tokens)."""
    autoCompactWindow: int | Literal["auto"] | None = None
    """The settings.json value: 100,000–1,000,000 tokens, or ``auto`` (the model's window);
    the environment variable wins when both are set."""
    model_context_window: int | None = None
    """Codex (config.toml): the model's context window, in place of the one the log records or
    the model table gives (``replay.policy.codex_harness``)."""
    model_auto_compact_token_limit: int | None = None
    """Codex (config.toml): the auto-compact limit, in place of the one the log records or
    9/10 of the window."""
    server_reasoning_included: bool = False
    """Codex: the server counted earlier turns' reasoning in its usage, so Codex does not add
    its estimate of them (``ContextManager::get_total_token_usage``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Behaviour:
    """What the agent does about what the policy removed (``replay.engine.induced``).

    The replay keeps the recorded trajectory, so on its own an eviction of content the agent
    uses later costs nothing.  With ``rereads`` on, where the recorded run depends on a removed
    block (``replay.engine.needs``) and nothing supplies it — not still in context, not fetched
    again as recorded first, not carried by a recorded compaction or a re-attached file — the
    replay inserts the re-read the agent would have made: one more model call, and the block's
    result back in the context, which grows; the cache, the later tiers and the overshoots
    respond.  ``none`` removes nothing and so induces nothing."""

    rereads: bool = True
    """Insert the re-reads unmet needs call for (false: the trajectory costs nothing more)."""
    max_rereads_per_turn: int = 20
    """At most this many re-reads are induced in one turn (the requests answering one user
    message); an unmet need beyond it is counted (an undone ``induced_reread`` action), not
    re-read."""
    invited_recall: Literal["immediate", "at_need"] = "immediate"
    """What a placeholder that asks for a re-call (``replay.policy.invites``) does:
    ``immediate``: the model re-reads what it replaced at the next request, if the content is
    needed later — and if that re-read is trimmed again before the need, again (the seed's
    loop, bounded by ``max_rereads_per_turn``); ``at_need``: like any placeholder, the re-read
    waits for the need."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """A complete context-management policy."""

    name: str = "policy"
    description: str = ""
    source: str = ""
    """Where the settings come from (paper, repository, article)."""
    server: Server = field(default_factory=Server)
    estimator: TokenCounter = field(
        default_factory=lambda: TokenCounter(method="chars", chars_per_token=4.0))
    truth: TokenCounter = field(default_factory=lambda: TokenCounter(method="anchored"))
    """What the replay judges by; anchored on recorded usage unless a policy asks otherwise."""
    subtract_reserve: bool = True
    """Whether the harness subtracts the reserve from the window before its fractions and checks."""
    tiers: tuple[Trim | Summarise | Collapse | Custom, ...] = ()
    harness: Harness | None = None
    """When set, the window and the named tier's trigger follow the harness's own arithmetic
    for each run's recorded version and model (``replay.policy.harness.resolve``)."""
    manual_compactions: Literal["keep", "drop"] = "keep"
    """A compaction the user asked for (Claude Code's ``/compact``, recorded ``trigger:
    manual``): ``keep`` replays it where the log recorded it — the user's command, like the
    user's messages, is part of the run, with the recorded summary (action tier
    ``manual /compact``); ``drop`` replays the run as if it had not been typed."""
    behaviour: Behaviour = field(default_factory=Behaviour)
    """The agent's response to what the policy removed: induced re-reads (``Behaviour``)."""
    provider: str = DEFAULT_PROVIDER
    """The provider profile ``cache`` starts from (``replay.policy.providers``; ``--provider``)."""
    cache: Cache = field(default_factory=Cache)
    """The profile's cache and prices with the policy's overrides (``cache:`` in YAML)."""

    @property
    def usable_tokens(self) -> int:
        """The window the harness plans against (reserve subtracted when it does that)."""
        s = self.server
        return s.window_tokens - (s.reserve_tokens if self.subtract_reserve else 0)

    def digest(self) -> str:
        """A stable hash of every setting (for caches of sweep results)."""
        blob = json.dumps(policy_to_dict(self), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def policy_to_dict(obj: Any) -> Any:
    """Plain data of a policy (the inverse of ``policy_from_dict``)."""
    if dataclasses.is_dataclass(obj):
        out = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            out["class" if f.name == "cls" else f.name] = (
                dict(value) if f.name == "options" else policy_to_dict(value))
        return out
    if isinstance(obj, tuple):
        return [policy_to_dict(v) for v in obj]
    return obj
