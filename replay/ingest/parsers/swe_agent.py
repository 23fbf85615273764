"""SWE-agent trajectories (``<instance>.traj``): one JSON object, one run.

Checked against SWE-agent 0.x (a v0 demonstration trajectory) and 1.0 (SWE-bench Verified
runs, 2025-05), the shared samples.

``trajectory[]`` holds one step per model call: ``thought`` / ``response`` (model text),
``action`` (the command run), ``observation`` (its output); in v1.x also ``query`` (the
full prompt of that call) or ``messages`` (the chat after the step).  ``history[]`` is the
final chat; only its opening (system prompt, demonstrations with ``is_demo``, the task)
and, in function-calling runs, its ``tool_calls[].id`` / name / JSON arguments are used.
The trajectory is the source of truth for steps: ``history`` can miss the last ``submit``
and requeried steps, and history processors elide old observations in it.

Each step gives an assistant message (``thought``, which is ``response`` without the
command markup, so the command is not counted twice; ``response`` when there is no
``thought``) with a tool call for a non-empty action, one request, and a ``tool`` message
holding the full raw ``observation``.  A step with an empty action (the model answered in
plain text) has no call; its observation, or the harness's format-error prompt found at
the end of the next step's ``query``, follows as a user message.  Without function calling
the call id is ``call-{step}``, the tool is ``str_replace_editor`` (args parsed into
``{"command", "path", ...}``) or ``bash`` (the raw action: SWE-agent commands such as
``open`` or ``edit`` are shell functions in the container).

Coverage (``src.coverage``): each step as ``step/action`` (it ran a command) or
``step/message`` (plain text), modelled; each ``history`` entry as
``history/<role>[/<message_type>][ (demo)]`` (e.g. ``history/assistant/action``,
``history/tool/observation``): the opening's entries modelled, the rest skipped (the steps
hold the same turns); ``info``, ``replay_config`` and ``environment`` skipped, once each.  A
history role or top-level key not known here, and a step or entry that is not an object, is
``unknown`` (an unknown role is left out of the opening, not read as user text).

Not handled: per-request usage (the log has run totals only, ``info.model_stats``, so
token fields are None); the ``OBSERVATION:`` prefix / ``(Open file: …)`` footer the
templates wrap observations in; the per-step elided prompts; retry/reviewer multi-attempt
files (every step is read as one flat run).
"""

from __future__ import annotations

import re
from typing import Any

from msgspec import UNSET

import replay.ingest.parsers.swe_agent_doc as swe_doc
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.content_text import as_text, named, not_a_string
from replay.ingest.parsers.json_decode import JSON_REFUSED, item, loads
from replay.ingest.parsers.jsonl import ItemLines, load_or_salvage
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.run_text import run_text
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.parsers.typed_text import said
from replay.shell_line import shell_split

NAME = "swe_agent"

_TRAJECTORY = re.compile(rb'"trajectory"\s*:\s*\[')
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "tool": "tool"}
_SKIPPED_KEYS = ("info", "replay_config", "environment")
"""Top-level keys read for the model / version only, or not at all: skipped, once each."""
_LOOKAHEAD = 3
"""How many history tool calls, from the next unused one, are tried against a step."""


def sniff(filename: str, head: bytes) -> bool:
    """True for one JSON object with a ``trajectory`` list and SWE-agent step or run keys.

    Args:
        filename: the file name (unused: content decides).
        head: the first 64 KiB of the file.
    """
    if not head.lstrip().startswith(b"{") or not _TRAJECTORY.search(head):
        return False
    return any(key in head for key in (b'"observation"', b'"history"', b'"info"'))


def evidence(filename: str, head: bytes) -> str:
    """What of SWE-agent the head shows: a ``trajectory`` list and which step or run keys;
    '' for no trajectory list."""
    if not _TRAJECTORY.search(head):
        return ""
    keys = [k for k in ("observation", "history", "info") if b'"%s"' % k.encode() in head]
    shape = "an object" if head.lstrip().startswith(b"{") else "not an object"
    return f"{shape} with a trajectory list" + (f" and {'/'.join(keys)}" if keys else "")


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """One run from a SWE-agent trajectory file; problems go to ``issues``.

    Args:
        src: the source file.
        issues: collects what is wrong in the file (per step, or line 0 for the whole file).
    """
    doc, found = swe_doc.document(src.data), None  # (the steps' prompts left undecoded)
    if doc is None:
        doc, found = load_or_salvage(src, issues, "trajectory", "trajectory steps",
                                     "history and info lost", lazy=("trajectory", "history"))
    if doc is None:
        return []
    if not isinstance(doc, dict) or not isinstance(doc.get("trajectory"), list):
        issues.append(Issue(src.path, 0, "not a SWE-agent trajectory: no trajectory[] list"))
        return []
    lines = ItemLines(src, "trajectory", len(doc["trajectory"]), found)
    info = doc.get("info")
    info = info if isinstance(info, dict) else {}
    version = run_text(info.get("swe_agent_version", UNSET), "info.swe_agent_version", src.path,
                       issues)
    b = RunBuilder(src, 0, NAME, issues, model=_model(doc, src.path, issues),
                   harness=f"swe-agent {version}" if version else "swe-agent")
    steps: list[Any] = doc["trajectory"]  # Steps, or undecoded (jsonl.item) unless salvaged
    first = item(steps[0]) if steps else None
    opening, calls = _read_history(src, doc)
    opening = opening or _opening(_list(swe_doc.field(first, "query"))
                                  or _list(swe_doc.field(first, "messages")))
    for role, text, bad in opening:
        b.message(role)
        b.text(text)
        if bad:  # (the history's entries have no line of their own: the file's)
            said(b, bad)
    cursor = 0
    for i, raw in enumerate(steps):
        step = item(raw)
        try:
            cursor = _step(b, i, swe_doc.as_step(step), steps, calls, cursor, lines)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            src.coverage.unknown("step (malformed)")
            issues.append(Issue(src.path, lines[i], f"trajectory[{i}]: {exc} (step skipped)"))
    return [b.build()]


def _model(doc: dict[str, Any], path: str, issues: list[Issue]) -> str:
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = loads(config)
        except JSON_REFUSED:
            config = None
    agent = config.get("agent") if isinstance(config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    name = model.get("name", UNSET) if isinstance(model, dict) else UNSET
    return run_text(name, "replay_config.agent.model.name", path, issues)


def _list(value: Any) -> list[Any]:
    """``value`` when it is a JSON list, else an empty one."""
    return value if isinstance(value, list) else []


def _opening(messages: list[Any]) -> list[tuple[str, str, list[str]]]:
    """(role, text) of the known-role messages before the first real assistant turn."""
    out: list[tuple[str, str, list[str]]] = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        raw = m.get("role")
        role = _ROLES.get(raw) if isinstance(raw, str) else None
        if role == "assistant" and not m.get("is_demo"):
            return out
        if role is not None:
            bad: list[str] = []
            out.append((role, as_text(m.get("content"), bad), bad))
    return out


def _read_history(src: Source, doc: dict[str, Any]
                  ) -> tuple[list[tuple[str, str, list[str]]], list[dict[str, Any]]]:
    """The ``history``'s opening (``_opening``) and its assistant messages' tool calls, read one
    entry at a time (each decoded, ``jsonl.item``, and let go); counts its entries (the
    opening's modelled) and the file's other top-level keys in ``src.coverage`` (steps are
    counted as they are read)."""
    cov = src.coverage
    for key in doc:
        if key in _SKIPPED_KEYS:
            cov.skipped(key)
        elif key not in ("trajectory", "history"):
            cov.unknown(key)
    raw = doc.get("history")
    if raw is not None and not isinstance(raw, list):
        cov.unknown("history (not a list)")
    opening: list[tuple[str, str, list[str]]] = []
    in_opening = True  # until the first assistant turn that is not a demonstration
    calls: list[dict[str, Any]] = []
    for m in _list(raw):
        m = item(m)
        if not isinstance(m, dict):
            cov.unknown("history (not an object)")
            continue
        role, kind = m.get("role"), m.get("message_type")
        name = (f"history/{role}" if isinstance(role, str) else "history (no role)") \
            + (f"/{kind}" if isinstance(kind, str) and kind else "") \
            + (" (demo)" if m.get("is_demo") else "")
        if role == "assistant":
            calls.extend(tc for tc in _list(m.get("tool_calls")) if isinstance(tc, dict))
        known = _ROLES.get(role) if isinstance(role, str) else None
        if known is None:
            cov.unknown(name)
            continue
        in_opening = in_opening and not (known == "assistant" and not m.get("is_demo"))
        if in_opening:
            bad: list[str] = []
            opening.append((known, as_text(m.get("content"), bad), bad))
            cov.modelled(name)
        else:
            cov.skipped(name)
    return opening, calls


def _step(b: RunBuilder, i: int, step: swe_doc.Step, steps: list[Any],
          calls: list[dict[str, Any]], cursor: int, lines: ItemLines) -> int:
    """Emit one step (its line, ``lines[i]``, found only for an issue); returns the new position
    in the history's tool calls."""
    action = step.action or ""
    if not isinstance(action, str):
        raise TypeError(f"action is {type(action).__name__}, not a string")
    thought, response = step.thought, step.response
    if isinstance(thought, str) and (thought.strip() or action.strip()):
        text = thought
    else:
        text = response if isinstance(response, str) else ""
    bad = None if text else [not_a_string(v, k) for k, v in (("thought", thought),
                                                              ("response", response))
                             if v is not None and not isinstance(v, str)]
    found: list[str] = []  # (a string, nearly every one: no call)
    observation = step.observation
    if observation.__class__ is not str:
        observation = as_text(observation, found)
    b.message("assistant")
    if bad:
        said(b, bad, line=lines[i])
    if text:
        b.text(text)
    call_id = ""
    if action.strip():
        odd: list[str] = []
        call_id, tool, args, cursor = _call(i, action, calls, cursor, odd)
        if odd:
            said(b, odd, line=lines[i])
        b.tool_call(call_id, tool, args)
    b.request()
    if call_id:
        b.message("tool")
        b.tool_result(call_id, observation)
    else:
        note = observation or _requery_prompt(steps, i)
        if note:
            b.message("user")
            b.text(note)
    if found:  # (about the message holding the observation, or the response without one)
        said(b, [f"observation: {why}" for why in found], line=lines[i])
    b.source.coverage.modelled("step/action" if call_id else "step/message")
    return cursor


def _call(i: int, action: str, calls: list[dict[str, Any]], cursor: int,
          odd: list[str]) -> tuple[str, str, Any, int]:
    """(call id, tool, args, new cursor): the history's function call when one matches (its id
    of another type kept as its JSON, appended to ``odd``: ``content_text.named``)."""
    for j in range(cursor, min(cursor + _LOOKAHEAD, len(calls))):
        fn = calls[j].get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            continue
        args: Any = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = loads(args)
            except JSON_REFUSED:
                pass
        words = action.split()
        same_cmd = isinstance(args, dict) and str(args.get("command", "")).strip() == action.strip()
        if fn["name"] == words[0] or same_cmd:
            call_id = calls[j].get("id")
            if call_id.__class__ is not str and call_id is not None:
                call_id = named(call_id, "history: tool_calls id", odd)
            return (call_id if isinstance(call_id, str) and call_id else f"call-{i}",
                    fn["name"], args if args is not None else {}, j + 1)
    if action.split()[0] == "str_replace_editor":
        return f"call-{i}", "str_replace_editor", _editor_args(action), cursor
    return f"call-{i}", "bash", action, cursor


def _editor_args(action: str) -> dict[str, Any]:
    """``str_replace_editor view /p --view_range 1 9`` → {"command", "path", "view_range"}."""
    try:
        words = shell_split(action)
    except ValueError:
        parts = action.split(None, 3)
        args: dict[str, Any] = dict(zip(("command", "path"), parts[1:3]))
        if len(parts) > 3:
            args["args"] = parts[3]
        return args
    args = dict(zip(("command", "path"), words[1:3]))
    key = ""
    for word in words[3:]:
        if word.startswith("--") and len(word) > 2:
            key = word[2:]
            args[key] = []
        elif key:
            args[key].append(word)
        else:
            args.setdefault("args", []).append(word)
    for k, v in list(args.items()):
        if k == "view_range" and isinstance(v, list):
            v = [int(w) if w.lstrip("-").isascii() and w.lstrip("-").isdigit() else w for w in v]
        if isinstance(v, list):
            args[k] = v[0] if len(v) == 1 else v
    return args


def _requery_prompt(steps: list[Any], i: int) -> str:
    """The harness's reply to a step without an action, as the next step's ``query`` ends."""
    query = swe_doc.field(item(steps[i + 1]), "query") if i + 1 < len(steps) else None
    if isinstance(query, list) and query and isinstance(query[-1], dict) \
            and query[-1].get("role") == "user":
        return as_text(query[-1].get("content"))
    return ""
