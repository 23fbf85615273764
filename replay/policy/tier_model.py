"""The tier model: the four tier types a policy lists (``Trim``, ``Summarise``, ``Collapse``,
``Custom``; the ``Tier`` union) and what they are set with (``Trigger``, ``Protect``,
``Placeholder``, ``Restore``, ``OlderReads``), as frozen data.

Every field's unit is in its name.  ``replay.policy`` re-exports them: import them from there.

Not here: the policy around the tiers (server, token counters, harness, behaviour:
``replay.policy.model``), loading and validation (``replay.policy``, ``replay.policy.check``),
what tiers do (``replay.engine.tiers``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from replay.policy.hashing import HashedOnce, hashed_once


@dataclass(frozen=True, slots=True, kw_only=True)
class Trigger:
    """When a tier considers acting; exactly one field is set."""

    every_request: bool = False
    at_tokens: int | None = None
    """Estimated context tokens at or above which it fires."""
    at_frac: float | None = None
    """Fraction of the harness's usable window at or above which it fires."""
    after_messages: int | None = None
    """Messages in context at or above which it fires."""
    after_events: int | None = None
    """Events in context at or above which it fires (OpenHands' condensers count events, not
    tokens).  An event is a tool call, a tool result, or a message with neither (text, a
    summary); a head item (summary, re-inserted item) is one event
    (``replay.engine.prepared.PreparedRun.event_prefix``)."""
    idle_minutes: float | None = None
    """Fires on a request that comes at least this many minutes after the previous
    timestamped request (Claude Code's time-based microcompact: the server's cache has expired
    anyway).  The gap is taken between the requests' recorded timestamps; a request with no
    timestamp, or the first one, never fires it (``replay.engine.prepared.PreparedRun.gaps_s``)."""
    never: bool = False
    """The tier is switched off (kept in the policy, e.g. to compare with and without it)."""

    def level_tokens(self, usable_tokens: int) -> int | None:
        """The estimated-token level it fires at: ``at_tokens``, or ``at_frac`` of the usable
        window (None for every-request, message and never triggers)."""
        if self.at_tokens is not None:
            return self.at_tokens
        return None if self.at_frac is None else int(self.at_frac * usable_tokens)


TRIGGER_KINDS: tuple[str, ...] = ("every_request", "at_tokens", "at_frac", "after_messages",
                                  "after_events", "idle_minutes", "never")
"""The fields of ``Trigger``: exactly one is set (``replay.policy.check``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Protect:
    """The recent range a tier leaves alone; unset fields protect nothing."""

    messages: int = 0
    tokens: int = 0
    frac: float = 0.0
    """Fraction of the usable window, counted back from the newest message."""
    tool_results: int = 0
    """The newest N tool results (of the tier's ``tools`` when it names some)."""
    tool_result_tokens: int = 0
    """The newest tool results up to this many estimated tokens in all (Gemini CLI's 50,000-token
    budget of function responses): results are taken newest first while their sum stays within
    it."""
    newest: bool = True
    """Never touch the newest message (output the model has not seen yet)."""


@hashed_once  # a memo key of the engine's (replay.policy.hashing)
@dataclass(frozen=True, slots=True, kw_only=True)
class Placeholder(HashedOnce):
    """What a trimmed block becomes: head and tail of the original around a note."""

    template: str = "[{tool} output trimmed: {lines} lines, {chars} chars]"
    """Variables: {tool}, {path}, {lines}, {chars}, {call_id}."""
    head_lines: int = 0
    tail_lines: int = 0
    head_chars: int = 0
    tail_chars: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Trim:
    """Replace old tool output (and completed write/edit arguments) with placeholders."""

    type: Literal["trim"] = "trim"
    name: str = "trim"
    when: Literal["before", "after"] = "before"
    """Check before sending each request, or only after sending (too late for new output)."""
    trigger: Trigger = field(default_factory=lambda: Trigger(every_request=True))
    blocks: tuple[Literal["tool_results", "write_args", "call_args"], ...] = ("tool_results",)
    tools: tuple[str, ...] = ()
    """Only blocks of these tools (names as recorded), and ``protect.tool_results`` counts only
    their results (Claude Code's compactable tools); empty: every tool."""
    exclude_tools: tuple[str, ...] = ()
    """Never blocks of these tools (names as recorded); they still count for
    ``protect.tool_results`` (Gemini CLI's retrieval tools, exempt from collapsing)."""
    min_chars: int = 0
    min_lines: int = 0
    protect: Protect = field(default_factory=Protect)
    placeholder: Placeholder = field(default_factory=Placeholder)
    write_note: str = "[{tool} applied to {path}: {lines} lines]"
    """What completed write/edit arguments shrink to."""
    min_reclaim_tokens: int = 0
    min_reclaim_frac: float = 0.0
    """Undo the whole pass when it would reclaim less than this fraction of the usable window."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Restore:
    """What a summary brings back: the recorded summary and restoration where the log recorded
    a compaction nearby, a modelled summary size and re-attached files elsewhere
    (``replay.engine.tiers.summarise``; the model: ``replay.compaction_fit``)."""

    recorded_within_requests: int | None = 3
    """When a recorded compaction's first request after is within this many requests of the
    replayed summary, the replay uses the recorded summary and keeps what the harness kept
    after it (re-attached files, todo list, the messages after the boundary) instead of the stub
    summary and the re-inserted items (None: never)."""
    summary_base_tokens: int | None = None
    """Elsewhere (a counterfactual compaction), the stub summary's size is this plus
    ``summary_tokens_per_summarised`` × the true tokens it replaces (None: the tier's fixed
    ``summary_tokens``).  ``replay calibrate`` fits both on the corpus's recorded compactions
    (``replay.compaction_fit``)."""
    summary_tokens_per_summarised: float = 0.0
    files: int = 0
    """Re-attach the last this many files read before the cut (each file's newest read result,
    in reading order), as Claude Code does after a compaction (0: none)."""
    file_max_tokens: int = 5000
    """A file over this many estimated tokens is not re-attached (Claude Code names it instead:
    ``replay.engine.tiers.restore``)."""
    files_max_tokens: int = 50000
    """Re-attached files stop before this total (estimated tokens)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Summarise:
    """Replace old messages with a (stub) summary, keep a verbatim remainder."""

    type: Literal["summarise"] = "summarise"
    name: str = "summarise"
    when: Literal["before", "after"] = "before"
    trigger: Trigger = field(default_factory=lambda: Trigger(at_frac=0.8))
    min_messages: int = 0
    """Only summarise with more messages than this in context."""
    keep_messages: int = 8
    """Verbatim remainder, in messages."""
    keep_events: int | None = None
    """Verbatim remainder in events instead (OpenHands: ``max_size // 2 − keep_first − 1``): the
    newest whole messages holding at most this many events (``Trigger.after_events``)."""
    keep_first_messages: int = 0
    """The run's first this many messages stay verbatim in front of the summary (OpenHands'
    ``keep_first`` events: the summary goes in at offset ``keep_first``)."""
    keep_max_frac: float = 1.0
    """Cap on the remainder as a fraction of the usable window."""
    only_at_user_message: bool = False
    """Fire only before a request whose newest message is the user's own text (a turn's start):
    Goose checks its auto-compact threshold when the user's message arrives, not inside the
    tool loop (``Agent::reply``)."""
    summary_tokens: int = 2000
    reinsert: tuple[Literal["task", "todo", "user_messages"], ...] = ()
    """Items re-inserted verbatim after every summary: the task (the run's first user text),
    the newest todo list, or the newest user messages within ``reinsert_user_tokens`` (Codex:
    ``build_compacted_history`` keeps the most recent real user messages, newest first, the
    one at the budget's edge cut)."""
    reinsert_user_tokens: int = 20_000
    """The budget of ``user_messages`` in estimated tokens (Codex's
    ``COMPACT_USER_MESSAGE_MAX_TOKENS``, compact.rs)."""
    fail_every: int = 0
    """Inject a summariser failure every N summaries (0: never)."""
    fallback_tokens: int = 400
    """Size of the marked mechanical fallback used when the summariser fails."""
    restore: Restore = field(default_factory=Restore)


@dataclass(frozen=True, slots=True, kw_only=True)
class Collapse:
    """Emergency: when the estimate nears the limit, trim inside the protected range, then drop."""

    type: Literal["collapse"] = "collapse"
    name: str = "collapse"
    when: Literal["before", "after"] = "before"
    margin_frac: float = 0.1
    """Fires when estimate ≥ (1 − margin) × usable window."""
    may_trim_protected: bool = False
    placeholder: Placeholder = field(default_factory=Placeholder)
    keep_messages: int | None = 4
    """Messages kept after dropping (None: drop only until under the threshold)."""
    trigger: Trigger | None = None
    """When set, the tier fires on this trigger instead of the margin."""
    summary_tokens: int = 0
    """Size of the stub summary that replaces dropped messages (0: none)."""
    drop_frac: float | None = None
    """Drop this fraction of the live messages after the kept first ones, oldest first, rounded
    down to an even count, in place of ``keep_messages`` (Cline's ``getNextTruncationRange``
    "half": ``floor(rest / 4) * 2``; Roo Code's ``truncateConversation``).  The cut walks back to
    a safe split (keeps more); None: ``keep_messages`` decides.  Above 0, and with
    ``keep_messages`` left out (``replay.policy.check``: either would be a setting the tier
    ignores)."""
    keep_first_messages: int = 0
    """The run's first this many messages stay verbatim in front of what is kept (Cline keeps
    the first user/assistant pair: 2), as ``Summarise.keep_first_messages``."""
    older_reads: OlderReads | None = None
    """When set, older reads of each file are replaced first, and the cut is skipped when that
    saved enough (``OlderReads``: Cline's duplicate-file-read removal); None: no such step."""


DUPLICATE_READ_NOTICE = ("[[NOTE] This file read has been removed to save space in the context "
                         "window. Refer to the latest file read for the most up to date version "
                         "of this file.]")
"""Cline's ``formatResponse.duplicateFileReadNotice()`` (src/core/prompts/responses.ts)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OlderReads:
    """Cline's duplicate-file-read removal (``ContextManager.applyContextOptimizations``), tried
    first each time a collapse tier fires: in the live context every read of a file (a tool
    result whose call reads a path, or the replay's induced re-read of one) but the newest read
    of that file becomes ``notice`` (a ``collapse_trim`` action); when that saves at least ``enough_frac`` of the live context's
    bytes, the tier cuts nothing at this request.  Reads already replaced or trimmed are not
    counted again, as Cline skips the messages it altered before."""

    notice: str = DUPLICATE_READ_NOTICE
    enough_frac: float = 0.3
    """Cline's ``charactersSavedPercentage >= 0.3`` (its characters are UTF-16 units, here
    UTF-8 bytes: the same for ASCII)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Custom:
    """A tier implemented in Python (``module:Class``); see ``replay.engine.tiers.custom``."""

    type: Literal["custom"] = "custom"
    name: str = "custom"
    when: Literal["before", "after"] = "before"
    cls: str = ""
    options: tuple[tuple[str, Any], ...] = ()
    trigger: Trigger = field(default_factory=lambda: Trigger(every_request=True))
    """When the class is asked (``decide``); every request by default."""


Tier = Trim | Summarise | Collapse | Custom
"""The tier types; YAML picks one by its ``type`` (``replay.policy.check``)."""
