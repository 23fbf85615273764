"""OpenAI Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``), legacy to 0.149+.

Modern (cli >= ~0.40): lines ``{"timestamp", "type", "payload"}``; 0.14x+ lines carry an
``ordinal`` (counted as ``line ordinal``; one not above the previous line's is an issue and
the line is read where the file has it).  ``response_item`` payloads are the Responses-API
items that form the context; ``event_msg`` ``token_count`` gives usage; ``turn_context`` gives
the model and ``session_meta`` the harness, the system prompt and the parent session.
Legacy (<= Sept 2025): a first line with top-level ``id``/``timestamp``/``instructions``, then
bare Responses items and ``{"record_type": "state"}`` markers; no usage, no model.

Every line and item type met is counted in ``src.coverage`` (``response_item/function_call``,
``event_msg/token_count``, ``event_msg/item_completed/CommandExecution``, …): modelled,
skipped (understood, not context) or unknown.  Skipped: ``world_state`` (harness state the
developer messages already carry), ``inter_agent_communication(_metadata)`` (the delivered
message is an ``agent_message`` item), ``token_usage_record`` (per-turn usage the
``token_count`` events already give), ``retained_context`` (what a compaction kept, which the
``compacted`` line's replacement history holds), ``security_risk_score``, ``realtime_item``,
``ghost_snapshot`` items, every ``event_msg`` but ``token_count`` (UI echoes of items; a
``task_started``'s ``model_context_window`` is read), and ``item_completed`` turn items other
than code-mode commands.

The context, in order:

* ``session_meta.base_instructions.text`` (0.9x+) is the system prompt the model saw: a system
  message first.  Legacy ``instructions`` is the user's AGENTS.md, which the log repeats in a
  ``<user_instructions>`` message: a system message only when no message repeats it.  Only the
  first session_meta counts (a fork replays its parent's lines, metas included); another
  session's session_meta that is no fork's copy begins a run of its own (rollouts written into
  one file, ``replay.ingest.parsers.codex_sessions``; an issue says so).  A session's lines
  written again after a copy of its session_meta (a rollout appended to itself) are skipped as
  repeats (``codex_sessions.sessions``: an issue a copy, counted ``TYPE (repeated copy)``).
* Consecutive model-output items (reasoning, assistant message, calls) form ONE assistant
  message = one request; each tool output is its own ``tool`` message; user and developer
  (→ system) messages and ``agent_message`` items (another agent's message delivered to this
  one) are their own.  Hosted calls (``web_search_call``, ``image_generation_call``) carry their
  result: a call and its result in the assistant message (a web search's results are not in
  the log: an empty result).  ``tool_search_call``/``tool_search_output`` are a call and its
  result like function calls.
* Code mode: commands a program ran (``item_completed`` ``CommandExecution`` items whose id is
  no call of the log) become nested call/result rows with empty text (the model saw them inside
  the program's call and output, counted there), so re-read and argument analyses see them;
  they are not counted in ``n_tool_calls``.  A command that is also a call item is skipped.
* ``compacted`` is a harness compaction (a ``compaction`` ContextEvent pointing at its summary;
  the rollout records no trigger or sizes; one in the middle of a turn — a model call before it,
  no user turn since — is ``auto``: nobody types ``/compact`` mid-turn, and Codex compacts
  there on its own).  The replacement history (``replacement_history`` items, or
  ``replacement_history_entries`` inline / ``reference`` / ``reference_v2`` resolved against
  earlier items' ids; an unresolved reference is an issue) is authoritative (0.149+: the
  ``message`` may be empty): its last item is the summary — a message, or a remote compaction
  item whose summary is encrypted, which becomes a size marker declaring what Codex estimates
  its content at (encoded × 3/4 − 650 bytes: flagged estimated, counted per run and shown; a
  sanitiser's marker declares the encoded length); with no history, the ``message``.  The
  history's other items that repeat messages of the stream (the recent user messages, a remote
  compaction's kept answers, the developer context) are the event's ``preserved_msgs``; the
  history is not added to the stream (the run keeps the raw stream).  A standalone remote
  compaction item (``compaction``, ``compaction_summary``) is a compaction sized the same way;
  the same item inside a ``compacted`` line is not a second compaction (paired once: a later
  compacted line whose history only retains an earlier compaction item is a compaction of its
  own).  A compacted line's field of the wrong type (``replacement_history`` a string, …) is an
  issue and read as if absent; a compacted line with no readable history right after a remote
  compaction item is that compaction's line, not a second compaction (an issue says so).
* Reasoning items keep the length of their ``encrypted_content`` (``Message.encrypted_bytes``):
  Codex's trigger counts earlier turns' reasoning from it (``replay.policy.codex_harness``).

Requests: one per assistant message, usage from ``token_count`` events
(``replay.ingest.parsers.codex_usage``, with the window and auto-compact limit the events record:
``Run.recorded_window_tokens`` / ``recorded_compact_limit_tokens``).  ``is_error`` comes only
from a JSON output's non-zero ``metadata.exit_code``, an output object's ``success: false`` /
``isError: true``, or a command's exit code.

Forks and spawned subagents: the parent session (``forked_from_id``, ``parent_thread_id``,
``source.subagent.thread_spawn.parent_thread_id``) is linked as ``parent_run_id`` when its
rollout (``rollout-*-<id>.jsonl``) is beside this file or in the same ``sessions/`` tree.  A fork
replays its parent's lines (the parent's session_meta first, the parent's timestamps): they are
this run's context, but their assistant turns and token_counts are the parent's requests, not
this run's (no request rows; the token_counts counted as skipped).  A spawned agent's run is
named (``Run.agent``) by ``session_meta.agent_path``, else its ``agent_nickname``: two fields of
their own that a V2 agent writes both of, each checked (null or another type said).

Rollbacks (``event_msg/thread_rolled_back``): ``replay.ingest.parsers.codex_rollback``.

Checked against real rollouts of cli 0.58 and 0.104 (the shared samples, and the 0.104 rollout
with a remote compaction in the same public repository, not copied here: no licence), 0.114
(TraceLab) and 0.135, the third-party catalog of real 0.146–0.149 record types, and the
documented 0.146–0.149 shapes (hand-made fixtures, ``tests/fixtures/codex``).

The walk: ``replay.ingest.parsers.codex_walk`` (its state ``codex_walk_state``; items, events
and compactions ``codex_walk_items``, ``codex_walk_events``, ``codex_walk_compaction``).
"""

from __future__ import annotations

import replay.ingest.parsers.codex_sessions as sessions
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.codex_file import (
    evidence,  # noqa: F401 - the parser interface: NAME, sniff, evidence, parse
    sniff,  # noqa: F401
    unique,
    usage_first,
)
from replay.ingest.parsers.codex_usage import UsageTrack
from replay.ingest.parsers.codex_walk import finish, record
from replay.ingest.parsers.codex_walk_state import Walk
from replay.ingest.parsers.jsonl_list import record_list
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Issue, Source

NAME = "codex"


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """The run of each session of a rollout file (one, unless rollouts were written into one
    file: ``codex_sessions``), and each rollback's abandoned branch; bad records become issues.

    Args:
        src: the rollout file.
        issues: problems found are appended here.
    """
    records = record_list(src, issues)
    src.release_data()  # every record read: the file's bytes are not held while runs are built
    if not records:
        issues.append(Issue(src.path, 0, "no JSON records in this Codex rollout"))
        return []
    parts = sessions.sessions(records, src.path, issues, src.coverage)
    if len(parts) > 1:
        no, first = parts[1][0]
        sid = sessions.session_id(sessions.meta_of(first) or {})
        issues.append(Issue(src.path, no, f"{len(parts) - 1} session_meta line(s) of other "
                            f"sessions (the first here, session {sid[:64]!r}; no fork's copy of "
                            f"its parent): the file holds {len(parts)} rollouts, each read as a "
                            "run of its own"))
    runs: list[RunDraft] = []
    for part in parts:
        part = unique(part, src.path, issues, src.coverage)  # (two sessions may use the same ids)
        walk = Walk(RunBuilder(src, len(runs), NAME, issues), src, issues, part,
                    UsageTrack(src.path, issues, usage_first(part)))
        try:
            for no, rec in part:
                try:
                    record(walk, no, rec)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    issues.append(Issue(src.path, no, f"{exc} (record skipped)"))
                    kind = rec.get("type")  # (counted in coverage too: every line accounted for)
                    walk.cov.unknown(f"{kind if isinstance(kind, str) else 'record'} (not read)")
        finally:
            walk.count_records()
        if walk.b.n_blocks == 0:
            issues.append(Issue(src.path, part[0][0] if len(parts) > 1 else 0,
                                "no context items (response items) in this Codex rollout"))
            continue
        finish(walk)
        runs += [walk.b.build()] + [branch.build() for branch, _ in walk.branches]
    return runs
