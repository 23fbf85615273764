"""Harbor ATIF trajectories (``trajectory.json``): one JSON document, one run per trajectory.

ATIF (Agent Trajectory Interchange Format, Harbor RFC 0001) is one JSON object:
``schema_version`` (``ATIF-v1.0`` … ``ATIF-v1.7``), ``agent{name, version, model_name}``
and ``steps[]``.  Every step has a ``source``: ``system`` (a system prompt, or a harness note),
``user`` or ``agent``.  An agent step is one model call: ``reasoning_content``, ``message``
(a string, or since v1.6 a list of text/image content parts), ``tool_calls[]{tool_call_id,
function_name, arguments}``, ``observation.results[]{source_call_id, content}`` (what the
harness sent back) and ``metrics{prompt_tokens, completion_tokens, cached_tokens, extra}``.

Emitted, in step order: system → a system text message; user → a user message; agent → an
assistant message (reasoning block, text, one ``tool_call`` per call) and one request, then
its observation: a ``tool`` message with one ``tool_result`` per result (paired by
``source_call_id``, else by position with the step's calls), or, when the step made no tool
call (Terminus-2 in JSON mode, whose commands live in the message), a user message holding
the observation text, which is what the harness sent as the next prompt.

Tokens: ``prompt_tokens`` is the whole prompt with cached tokens included (spelled out in
v1.2), which is what ``Request.input_tokens`` holds; ``cached_tokens`` → cache reads.
Harbor's Claude Code converter writes ``prompt_tokens = input_tokens + cache reads`` and the
raw Anthropic usage into ``metrics.extra``: its ``cache_creation_input_tokens`` are cache
writes, added to the prompt (Anthropic bills and counts them as prompt tokens).  A step
whose ``cached_tokens`` exceeds its ``prompt_tokens`` comes from a producer that left cached
tokens out (pre-v1.2 style): its input is read as the sum, with one issue per file saying
how many steps.

Converter artefacts: Harbor's Claude Code converter makes one agent step per transcript
record, so one API response (text, then each tool call) becomes several steps carrying the
same usage and ``extra.requestId``; consecutive agent steps with the same ``requestId`` /
``request_id`` / ``message_id`` make one request (the first step's), the others are counted
as ``note/agent step of the same API response``.  Its tool steps' message
"Executed <tool> <id>" is the converter's, not the model's: left out of the text and
counted as ``note/converter placeholder message``.

Compactions: a ``system`` step whose message or ``extra`` speaks of summarisation or
compaction (Terminus-2's "Performed context summarization and handoff …", with
``subagent_trajectory_ref`` to the summariser runs) is a harness compaction: a ``compaction``
ContextEvent (no trigger or sizes: ATIF records none) and a summary block holding that message (the summary text itself lives in the referenced files, which
are runs of their own).  Steps marked ``is_copied_context`` (a continuation file repeating
the context it starts from) are context but made no request here.  A step with
``llm_call_count: 0`` (v1.7, deterministic dispatch) makes no request.  Embedded
``subagent_trajectories`` (v1.7) become further runs whose parent is the trajectory
holding them.  ATIF v1.7/1.8 marks a compaction on the step itself:
``extra.context_management{type: "compaction", boundary: "replace"}`` on a system step, or on
an agent step that calls a ``compact`` tool (``llm_call_count: 0``); either is a compaction
whose message and observation results are the summary (``step/<source> (compaction)``).  A
step whose ``source`` is redacted or missing, but which carries ``llm_call_count`` ≥ 1,
``metrics``, ``tool_calls``, ``reasoning_content`` or ``model_name``, is an agent step (counted
as ``note/source … agent step by <field>``, and said in one issue per file); without such
fields it stays unknown.

Coverage types: ``step/<source>``, ``step/agent (copied context)``, ``step/system
(compaction)``, ``observation/result``, ``observation/subagent_trajectory_ref`` (skipped:
the referenced file is its own run), ``subagent_trajectory`` (an embedded one); ``note/…``
entries count what was done to steps already counted (the converter artefacts below).

``final_metrics`` (the trajectory's totals) is not read: it counts model calls this file
records no step for (the summariser runs of ``subagent_trajectory_ref`` files, a call cut off
by a timeout: Harbor's ``terminus2-timeout`` golden file's totals are 982 prompt tokens, its
steps' 882), so a run's recorded usage is its steps' sum, each step a request.

Checked against: Harbor's golden trajectories (ATIF-v1.5: Terminus-2 2.0.0 with context
summarization, linear-history continuation and timeout; OpenHands 1.0.0) and the field list
of the RFC up to v1.7.  Not handled: ``logprobs`` / token ids (not context), the content of
referenced files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.content_text import as_text, named, not_a_string
from replay.ingest.parsers.jsonl import ItemLines, load_or_salvage
from replay.ingest.parsers.jsonl import as_obj as _obj
from replay.ingest.parsers.jsonl import as_str as _str
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.run_text import run_name, run_text
from replay.ingest.parsers.source import Issue, Source

NAME = "atif"

_MARK = re.compile(rb'"schema_version"\s*:\s*"ATIF-v\d')
_STEPS = re.compile(rb'"steps"\s*:\s*\[\s*\{')
_STEP_SOURCE = re.compile(rb'"source"\s*:\s*"(?:agent|user|system)"')
COMPACTION_WORDS = re.compile(r"summari[sz]|compact", re.IGNORECASE)
"""What a system step says when it is a compaction (its message or ``extra``)."""
_SOURCES = ("system", "user", "agent")
_REQUEST_KEYS = ("requestId", "request_id", "message_id")
"""Keys of ``step.extra`` naming the API response a step came from."""
_MAX_DEPTH = 8
"""Embedded subagent trajectories deeper than this are reported, not read."""


def sniff(filename: str, head: bytes) -> bool:
    """True for a JSON object naming an ATIF schema version, or with ATIF-shaped ``steps``.

    Args:
        filename: the file name (unused: content decides).
        head: the first 64 KiB of the file.
    """
    text = head.lstrip()
    if not text.startswith(b"{"):
        return False
    if _MARK.search(text):
        return True
    return _STEPS.search(text) is not None and b'"step_id"' in text \
        and _STEP_SOURCE.search(text) is not None


def evidence(filename: str, head: bytes) -> str:
    """What of ATIF the head shows: its schema version, or ATIF-shaped steps; '' for neither."""
    mark = re.search(rb'"schema_version"\s*:\s*"(ATIF-v[0-9.]{1,10})"', head)
    if mark:
        return f"schema_version {mark.group(1).decode()}"
    if b'"step_id"' in head and _STEP_SOURCE.search(head):
        return "steps with step_id and source (no ATIF schema_version)"
    return ""


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """One run per trajectory (the file's, then any embedded ones); problems go to ``issues``.

    Args:
        src: the source file.
        issues: collects what is wrong in the file (per step, or line 0 for the file).
    """
    doc, found = load_or_salvage(src, issues, "steps", "steps", "agent info and final metrics lost")
    if doc is None:
        return []
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        issues.append(Issue(src.path, 0, "not an ATIF trajectory: no steps[] list"))
        return []
    drafts: list[RunDraft] = []
    _trajectory(src, issues, doc, drafts, ItemLines(src, "steps", len(doc["steps"]), found),
                parent="", depth=0)
    return drafts


@dataclass(slots=True)
class _State:
    """What one trajectory's walk remembers across steps."""

    b: RunBuilder
    lines: ItemLines | None
    excluded: int = 0
    """Steps whose cached tokens exceeded their prompt tokens (read as excluded)."""
    request_id: str = ""
    """The API response id of the last agent step ('' when it had none)."""
    inferred: int = 0
    """Steps whose ``source`` was redacted or missing, read as agent steps by their fields."""


def _trajectory(src: Source, issues: list[Issue], doc: dict[str, Any], drafts: list[RunDraft],
                lines: ItemLines | None, *, parent: str, depth: int, where: str = "") -> None:
    agent = _obj(doc.get("agent"))  # (``where``: a subagent's place, its fields' prefix)
    name = run_text(agent.get("name", UNSET), f"{where}agent.name", src.path, issues)
    version = run_text(agent.get("version", UNSET), f"{where}agent.version", src.path, issues)
    schema = run_text(doc.get("schema_version", UNSET), f"{where}schema_version", src.path, issues)
    harness = " ".join(x for x in (name, version) if x)
    if schema:
        harness = f"{harness} ({schema})" if harness else schema
    b = RunBuilder(src, len(drafts), NAME, issues,
                   model=run_text(agent.get("model_name"), f"{where}agent.model_name", src.path,
                                  issues, nullable=True),  # (optional: null is unknown)
                   harness=harness, parent_run_id=parent,
                   agent=run_name(doc.get("trajectory_id"), f"{where}trajectory_id", src.path, issues)
                   if depth else "")
    state = _State(b, lines)
    for i, step in enumerate(doc["steps"]):
        try:
            if not isinstance(step, dict):
                raise TypeError(f"expected an object, got {type(step).__name__}")
            _step(state, i, step)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            src.coverage.unknown("step (malformed)")
            issues.append(Issue(src.path, lines[i] if lines else 0,
                                f"steps[{i}]: {exc} (step skipped)"))
    if state.inferred:
        issues.append(Issue(src.path, 0, f"{state.inferred} step(s) have a redacted or missing "
                                         "source: read as agent steps (they carry "
                                         "llm_call_count, metrics or tool calls)"))
    if state.excluded:
        issues.append(Issue(src.path, 0, f"{state.excluded} step(s) have cached_tokens above "
                                         "prompt_tokens: read as prompt + cached (a producer "
                                         "that left cached tokens out of prompt_tokens)"))
    drafts.append(b.build())
    subs = doc.get("subagent_trajectories")
    if not isinstance(subs, list):
        return
    for k, sub in enumerate(subs):
        if depth + 1 >= _MAX_DEPTH or not isinstance(sub, dict) \
                or not isinstance(sub.get("steps"), list):
            src.coverage.unknown("subagent_trajectory")
            issues.append(Issue(src.path, 0, f"subagent_trajectories[{k}] (depth {depth + 1}) "
                                             "is not a readable trajectory (skipped)"))
            continue
        src.coverage.modelled("subagent_trajectory")
        _trajectory(src, issues, sub, drafts, None, parent=b.run_id, depth=depth + 1,
                    where=f"{where}subagent_trajectories[{k}].")


def _step(state: _State, i: int, step: dict[str, Any]) -> None:
    b, cov = state.b, state.b.source.coverage
    source = step.get("source")
    ts = _str(step.get("timestamp"))
    copied = step.get("is_copied_context") is True
    bad: list[str] = []
    text = as_text(step.get("message"), bad)
    if bad:
        _said(state, i, "message", bad)
    if source not in _SOURCES and (inferred := _agent_evidence(step)):
        cov.modelled(f"note/source {'redacted' if source else 'missing'}: agent step by "
                     f"{inferred}")
        state.inferred += 1
        source = "agent"
    if source != "agent":
        state.request_id = ""  # a new prompt: the next agent step is a new API response
    if not copied and _replaces(step):
        # v1.7+: the context before this step is replaced (by a system note or a compact call
        # of the agent: its message and results are what follows in the context)
        cov.modelled(f"step/{source} (compaction)")
        event = b.n_events
        b.event("compaction", harness_compaction=True)
        b.set_event(event, summary_msg=b.message("user", ts=ts))
        b.summary(text, counted=False)
        if source == "agent" and step.get("llm_call_count") != 0 and step.get("metrics"):
            cov.skipped("note/compaction call (its usage is not a context request)")
        _observation(state, i, step, [], ts, as_text_blocks=True)
        return
    if source == "system":
        if not copied and _is_compaction(step, text):
            cov.modelled("step/system (compaction)")
            event = b.n_events
            b.event("compaction", harness_compaction=True)
            b.set_event(event, summary_msg=b.message("user", ts=ts))
            b.summary(text, counted=False)
        else:
            cov.modelled("step/system")
            b.message("system", ts=ts)
            b.text(text)
        _observation(state, i, step, [], ts, as_text_blocks=True)
        return
    if source == "user":
        cov.modelled("step/user")
        b.message("user", ts=ts)
        b.text(text)
        return
    if source != "agent":
        cov.unknown(f"step/{source}" if isinstance(source, str) else "step (no source)")
        raise ValueError(f"unknown source {source!r}")
    cov.modelled("step/agent (copied context)" if copied else "step/agent")
    msg = b.message("assistant", ts=ts)
    reasoning = step.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        b.text(reasoning, kind="reasoning")
    elif reasoning is not None and not isinstance(reasoning, str):
        _said(state, i, "", [not_a_string(reasoning, "reasoning_content")])
    tool_calls = step.get("tool_calls")
    tool_calls = [_obj(tc) for tc in tool_calls] if isinstance(tool_calls, list) else []
    if len(tool_calls) == 1 and text == "Executed " + " ".join(
            x for x in (_str(tool_calls[0].get("function_name")),
                        _str(tool_calls[0].get("tool_call_id"))) if x):
        cov.skipped("note/converter placeholder message")
    elif text:
        b.text(text)
    calls = []
    wrong: list[str] = []  # (a name or an id that is no string: kept as its JSON, said)
    for k, tc in enumerate(tool_calls):
        call_id = _named(tc.get("tool_call_id"), f"tool_calls[{k}].tool_call_id", wrong) or \
            f"call-{i}-{k}"
        args = tc.get("arguments")
        b.tool_call(call_id, _named(tc.get("function_name"), f"tool_calls[{k}].function_name",
                                    wrong) or "tool",
                    args if isinstance(args, (dict, str)) else ({} if args is None else args))
        calls.append(call_id)
    if wrong:
        _said(state, i, "", wrong)
    request_id = next((v for k in _REQUEST_KEYS
                       if isinstance(v := _obj(step.get("extra")).get(k), str) and v), "")
    if copied or step.get("llm_call_count") == 0:
        pass
    elif request_id and request_id == state.request_id:
        cov.skipped("note/agent step of the same API response")
    else:
        _request(state, i, step, msg, ts)
    state.request_id = request_id
    _observation(state, i, step, calls, ts, as_text_blocks=False)


def _is_compaction(step: dict[str, Any], text: str) -> bool:
    extra = _obj(step.get("extra"))
    return bool(COMPACTION_WORDS.search(text)) or "context_management" in extra


def _replaces(step: dict[str, Any]) -> bool:
    """ATIF v1.7+'s compaction mark on any step: ``extra.context_management.boundary`` is
    ``replace`` (the context before the step is replaced by what follows)."""
    cm = _obj(_obj(step.get("extra")).get("context_management"))
    return cm.get("boundary") == "replace"


def _agent_evidence(step: dict[str, Any]) -> str:
    """Which field shows a step with a redacted or missing ``source`` is a model call ('' for
    none): ``llm_call_count`` ≥ 1, token ``metrics``, ``tool_calls``, ``reasoning_content`` or
    ``model_name`` (fields only agent steps carry)."""
    calls = step.get("llm_call_count")
    if isinstance(calls, int) and not isinstance(calls, bool) and calls >= 1:
        return "llm_call_count"
    for key in ("metrics", "tool_calls", "reasoning_content", "model_name"):
        if step.get(key):
            return key
    return ""


def _observation(state: _State, i: int, step: dict[str, Any], calls: list[str], ts: str, *,
                 as_text_blocks: bool) -> None:
    b, cov = state.b, state.b.source.coverage
    results = _obj(step.get("observation")).get("results")
    if not isinstance(results, list):
        return
    started = as_text_blocks
    for k, r in enumerate(results):
        if isinstance(r, str):  # some producers write bare strings
            r = {"content": r}
        if not isinstance(r, dict):
            cov.unknown("observation/result (malformed)")
            continue
        if "content" not in r and r.get("subagent_trajectory_ref") is not None:
            cov.skipped("observation/subagent_trajectory_ref")
            continue
        cov.modelled("observation/result")
        bad: list[str] = []
        content = as_text(r.get("content"), bad)
        if bad:
            _said(state, i, f"observation result {k}:", bad)
        if as_text_blocks:
            b.text(content)
            continue
        wrong: list[str] = []
        call_id = _named(r.get("source_call_id"), f"observation result {k}: source_call_id",
                         wrong) or \
            (calls[k] if len(results) == len(calls) else calls[0] if len(calls) == 1 else "")
        if wrong:
            _said(state, i, "", wrong)
        if not call_id:
            b.message("user", ts=ts)
            b.text(content)
            started = False
            continue
        if not started:
            b.message("tool", ts=ts)
            started = True
        line = state.lines.at(i) if state.lines else 0
        b.tool_result(call_id, content, line=line)


def _named(value: Any, field: str, wrong: list[str]) -> str:
    """A name or an id: a string as it is, '' when absent, another value its JSON (appended
    to ``wrong``: ``content_text.named``)."""
    return "" if value is None else named(value, field, wrong)


def _model_name(state: _State, i: int, value: Any) -> str:
    """Step ``i``'s ``model_name``: a string as it is, '' when absent, another value '' and
    said."""
    if value is not None and value.__class__ is not str:
        _said(state, i, "", [not_a_string(value, "model_name")])
        return ""
    return value or ""


def _said(state: _State, i: int, what: str, bad: list[str]) -> None:
    """One issue for each value where text belongs that was no string (read as empty), at step
    ``i``'s line, ``what`` naming where in the step."""
    line = state.lines[i] if state.lines else 0
    state.b.issues.extend(Issue(state.b.source.path, line,
                                f"step {i}: {what + ' ' if what else ''}{why}") for why in bad)


def _request(state: _State, i: int, step: dict[str, Any], msg: int, ts: str) -> None:
    m = _obj(step.get("metrics"))
    extra = _obj(m.get("extra"))
    b = state.b
    prompt, cached = b.count(m.get("prompt_tokens"), "prompt_tokens"), \
        b.count(m.get("cached_tokens"), "cached_tokens")
    write = b.count(extra.get("cache_creation_input_tokens"), "cache_creation_input_tokens")
    if prompt is not None and cached is not None and cached > prompt:
        state.excluded += 1
        prompt += cached
    if prompt is not None and write is not None and "cache_read_input_tokens" in extra:
        prompt += write  # an Anthropic usage (Harbor's Claude Code converter): writes not in it
    state.b.request(output_msg=msg, input_tokens=prompt, cache_read_tokens=cached,
                    cache_write_tokens=write,
                    output_tokens=b.count(m.get("completion_tokens"), "completion_tokens"),
                    reasoning_tokens=b.count(extra.get("reasoning_tokens"), "reasoning_tokens"),
                    model=_model_name(state, i, step.get("model_name")), ts=ts)
