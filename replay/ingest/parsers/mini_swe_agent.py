"""mini-swe-agent trajectories (``<instance>.traj.json``): one JSON document, one run.

Checked against mini-swe-agent v1.15.0 (SWE-bench bash-only runs, 2025-11) and its oldest
bare-list test fixture, the shared samples.

``messages[]`` is the literal, append-only chat (no compaction).  v1
(``trajectory_format: mini-swe-agent-1``): every message is ``{role, content}``; an
assistant message holds a THOUGHT and its action in a fenced ```bash block (```
``mswea_bash_command`` in old fixtures and v2 text mode; ``action_regex`` from the config
wins when recorded), and the harness runs it only when there is exactly one block; the
next user message is then its observation.  ``extra.response`` is the raw completion with
``usage`` and ``model``.  Very old fixtures are a bare list of ``{role, content}``.

Emitted: system/user → text; assistant → text (the content without the action block) +
one ``bash`` call ``call-{index}`` with the raw command, then one request with its usage
(``prompt_tokens`` is the full prompt, cached included); the observation → a ``tool``
message.  An assistant message with zero or several blocks runs nothing: no call, and the
next user message (the format error) stays a user message.

v1.1 (mini-swe-agent 2.x; checked against a real 2.3.0 tool-calling run,
``tests/fixtures/mini_swe_agent``): structured ``tool_calls`` with ``role:
tool`` results are used as recorded, ``extra.actions`` replaces the regex in text mode,
format-error user messages (``extra.interrupt_type``) stay user messages, the ``exit``
message is skipped, ``extra.timestamp`` becomes ``ts``.  Not handled: Responses-API message
shapes in v2, the reasoning text some providers return in ``extra.response`` (it is not in
the chat, so not in the context; its size is in ``reasoning_tokens``).

Coverage (``src.coverage``): each message as ``message/<role>``, modelled (``exit``:
skipped); the top-level ``info`` (config, stats), ``trajectory_format`` and ``instance_id``
skipped, once each.  A role or top-level key not known here, and a message that is not an
object or has a wrong-typed field, is ``unknown``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from msgspec import UNSET

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.content_text import as_text, held, kept_as_json, not_a_string
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.jsonl import ItemLines
from replay.ingest.parsers.jsonl import as_obj as _obj
from replay.ingest.parsers.linear_pattern import linear_pattern
from replay.ingest.parsers.mini_swe_agent_records import (
    NO_EXTRA,
    NO_RESPONSE,
    Extra,
    Message,
    Response,
    trajectory,
)
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.run_text import run_text
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.parsers.typed_text import name_field, said, text_field

NAME = "mini_swe_agent"

ACTION_PATTERN = r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```"
"""The default action block of an assistant message (group 1: the command)."""
ACTION = re.compile(r"```(?:bash|mswea_bash_command)\s*\n((?:[^\n]++|\n(?!```))*+)\n```",
                    re.DOTALL)
"""``ACTION_PATTERN`` compiled (``re.DOTALL``; the redactor reads the same fences with it), the
same matches and groups: the command runs to the first newline followed by a fence (as ``.*?``
followed by it finds) in whole lines, not one character a step (0.64 -> 0.29 ms over the
samples' 169 assistant texts, their heredoc scripts the longest)."""
_CLOSE = "\n```"
"""How ``ACTION``'s block ends."""


def action_blocks(regex: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """The action blocks ``regex`` finds in an assistant ``text``.  With ``ACTION``, none is
    looked for past the text's last closing fence (``endpos``): a block ends with one, and an
    opening fence after the last one made the search read the rest of the text from each of
    them (thousands of fences written inline and never closed: 27 s for a 320 KB file).  The
    same matches: a block's lookahead ends in its closing fence, inside the text searched."""
    if regex is not ACTION:
        return list(regex.finditer(text))
    end = text.rfind(_CLOSE)
    return [] if end < 0 else list(regex.finditer(text, 0, end + len(_CLOSE)))


_HEAD_MARKS = (b'"trajectory_format": "mini-swe-agent', b'"trajectory_format":"mini-swe-agent',
               b'"mini_version"')
_TEXT_ROLES = {"system": "system", "developer": "system", "user": "user"}
_ROLES = {*_TEXT_ROLES, "assistant", "tool", "exit"}
_RTYPES = {role: f"message/{role}" for role in _ROLES}
"""Coverage names of the known roles' messages, made once."""
_EXPECTED = "one of system, developer, user, assistant, tool, exit"
"""The roles a message may have, as an issue says what was expected."""


def sniff(filename: str, head: bytes) -> bool:
    """True for a ``*.traj.json`` file or a head naming the mini-swe-agent format.

    Args:
        filename: the file name.
        head: the first 64 KiB of the file.
    """
    return filename.endswith(".traj.json") or any(mark in head for mark in _HEAD_MARKS)


def evidence(filename: str, head: bytes) -> str:
    """What of mini-swe-agent the file shows: its name (``*.traj.json``) or the format's marks
    in the head; '' for neither."""
    marks = [m.decode().split(":")[0].strip('"') for m in _HEAD_MARKS if m in head]
    said = [f"name {filename!r}"] if filename.endswith(".traj.json") else []
    said += [f"{m} in the head" for m in dict.fromkeys(marks)]
    return ", ".join(said)


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """One run from a mini-swe-agent trajectory; problems go to ``issues``.

    Args:
        src: the source file.
        issues: collects what is wrong in the file (per message, or line 0 for the file).
    """
    read = trajectory(src, issues)
    if read is None:
        return []
    messages, info, found = read
    bare = src.data.lstrip()[:1] == b"["
    cov = src.coverage
    lines = ItemLines(src, None if bare else "messages", len(messages), found)
    config = _obj(info.get("config"))
    version = run_text(info.get("mini_version", UNSET), "info.mini_version", src.path, issues)
    b = RunBuilder(src, 0, NAME, issues, model=_model(config, messages, src.path, issues),
                   harness=f"mini-swe-agent {version}" if version else "mini-swe-agent")
    regex = _regex(config, src, issues)
    pending: list[str] = []
    counted: dict[str, int] = {}  # message type -> messages read (into ``cov`` at the end)
    try:
        for i, m in enumerate(messages):
            is_obj = type(m) is Message
            role = m.role if is_obj else None
            if role is UNSET:
                role = None
            rtype = "message (not an object)" if not is_obj else \
                (_RTYPES.get(role) or f"message/{role}") if type(role) is str else \
                "message (no role)" if role is None else "message (role not a string)"
            try:
                if not is_obj:
                    raise TypeError(f"expected an object, got {held(m)}")
                pending = _message(b, i, m, pending, regex, lines)
                if role == "exit":
                    cov.skipped(rtype)
                else:
                    counted[rtype] = counted.get(rtype, 0) + 1
            except (TypeError, ValueError, AttributeError, KeyError) as exc:
                known = isinstance(role, str) and role in _ROLES
                cov.unknown(f"{rtype} (malformed)" if known else rtype)
                issues.append(Issue(src.path, lines[i], f"messages[{i}]: {exc} (message "
                                                        "skipped)"))
    finally:
        for rtype, n in counted.items():
            cov.modelled(rtype, n)
    return [b.build()]


def _model(config: dict[str, Any], messages: list[Any], path: str, issues: list[Issue]) -> str:
    name = _obj(config.get("model")).get("model_name", UNSET)
    if isinstance(name, str):
        return name
    run_text(name, "info.config.model.model_name", path, issues)  # (said when of another type)
    for m in messages:
        name = _response(m).model
        if isinstance(name, str) and name:
            return name
    return ""


def _regex(config: dict[str, Any], src: Source, issues: list[Issue]) -> re.Pattern[str]:
    """The trajectory's own ``action_regex`` when it is a valid pattern that runs in linear
    time, else ``ACTION_PATTERN``, with one issue saying why (the pattern comes from the file:
    a crafted one could hang the batch)."""
    for part in ("model", "agent"):
        pattern = _obj(config.get(part)).get("action_regex")
        if not isinstance(pattern, str):
            continue
        if pattern == ACTION_PATTERN:
            return ACTION
        try:
            compiled = re.compile(pattern, re.DOTALL)
        except (re.error, RecursionError, OverflowError) as exc:
            why = f"is not a valid pattern ({exc})"
        else:
            why = "" if linear_pattern(compiled.pattern) else \
                "repeats a repetition or an alternation (matching could take exponential time)"
            if not why:
                return compiled
        issues.append(Issue(src.path, 0, f"config.{part}.action_regex {pattern[:60]!r} {why}; "
                                         "the default action pattern is used"))
        break
    return ACTION


def _response(m: Any) -> Response:
    """A message's response (``NO_RESPONSE`` for none, or for one that is no object)."""
    extra = m.extra if type(m) is Message else None
    response = extra.response if type(extra) is Extra else None
    return response if type(response) is Response else NO_RESPONSE



def _message(b: RunBuilder, i: int, m: Message, pending: list[str],
             regex: re.Pattern[str], lines: ItemLines) -> list[str]:
    """Emit one message; returns the text-mode call ids still waiting for an observation.

    Raises:
        TypeError, ValueError: what is wrong with the message, in the log's terms (its field,
            what it holds, what was expected): the caller skips it with an issue.
    """
    role = m.role
    if type(role) is not str:  # (a list is no key of the role tables: said here)
        raise TypeError(f"role is {'missing' if role is UNSET else held(role)}, not a string "
                        f"({_EXPECTED})")
    extra: Any = m.extra
    if type(extra) is not Extra:  # (none, or one that is no object: read as none)
        extra = NO_EXTRA
    ts = extra.timestamp
    if type(ts) is not str:  # (a string, nearly every one: no call)
        ts = _ts(ts)
    content = m.content
    if role == "exit":
        return []
    if role == "assistant":
        return _assistant(b, i, m, extra, ts, regex, lines)
    if role == "tool":
        b.message("tool", ts=ts)
        call_id = m.tool_call_id
        if type(call_id) is not str and call_id is not None:  # (its JSON, said)
            call_id = name_field(b, call_id, "tool_call_id", line=lines[i])
        if not call_id:
            call_id = pending[0] if pending else f"call-{i}"
        b.tool_result(call_id, _text(b, content, lines, i), line=lines.at(i))
        return [c for c in pending if c != call_id]
    if role not in _TEXT_ROLES:
        raise ValueError(f"unknown role {role[:40]!r} ({_EXPECTED})")
    if content is not None and not isinstance(content, (str, list)):
        raise TypeError(f"content is {held(content)}, not a string or a list of parts")
    if role == "user" and pending and not extra.interrupt_type:
        b.message("tool", ts=ts)
        b.tool_result(pending[0], _text(b, content, lines, i), line=lines.at(i))
        return pending[1:]
    b.message(_TEXT_ROLES[role], ts=ts)
    b.text(_text(b, content, lines, i))
    return []


def _text(b: RunBuilder, content: Any, lines: ItemLines, i: int) -> str:
    """``as_text(content)``, each value in it read as empty although it held one said about the
    message being written (``typed_text.said``; at message ``i``'s line, found only then)."""
    if type(content) is str:
        return content
    bad: list[str] = []
    text = as_text(content, bad)
    if bad:
        said(b, bad, line=lines[i])
    return text


def _assistant(b: RunBuilder, i: int, m: Message, extra: Extra, ts: str,
               regex: re.Pattern[str], lines: ItemLines) -> list[str]:
    content = m.content
    if content is not None and not isinstance(content, (str, list)):
        raise TypeError(f"content is {held(content)}, not a string or a list of parts")
    bad: list[str] = []  # (said once the message is made; a string: none, no call)
    text = content if type(content) is str else as_text(content, bad)
    listed = m.tool_calls  # (none in text mode: no list made)
    if listed is not None and type(listed) is not list:
        raise TypeError(f"tool_calls is {held(listed)}, not a list of calls")
    tool_calls = [tc for tc in listed if isinstance(tc, dict)] if listed else []
    if listed and len(tool_calls) < len(listed):
        k, tc = next((k, tc) for k, tc in enumerate(listed) if not isinstance(tc, dict))
        b.issues.append(Issue(b.source.path, lines[i], f"messages[{i}]: tool_calls[{k}] is "
                              f"{held(tc)}, not an object ({len(listed) - len(tool_calls)}"
                              f" of {len(listed)} calls left out)"))
    actions = extra.actions
    found = [] if tool_calls else action_blocks(regex, text)
    commands = [found[0].group(1).strip()] if len(found) == 1 else []
    if commands:
        text = (text[:found[0].start()] + text[found[0].end():]).strip()
    wrong: list[str] = []  # (values of the wrong type, said once the message is made)
    if not tool_calls and isinstance(actions, list) and actions:
        commands = _commands(actions, wrong)
    b.message("assistant", ts=ts)
    if bad:
        said(b, bad, line=lines[i])
    if text:
        b.text(text)
    for k, tc in enumerate(tool_calls):
        fn = _obj(tc.get("function"))
        args: Any = fn.get("arguments", "")
        if isinstance(args, str):
            try:
                args = loads(args)
            except JSON_REFUSED:
                pass
        call_id, name = tc.get("id"), fn.get("name")
        if name is not None and type(name) is not str:
            wrong.append(f"tool_calls[{k}]: function.name is {held(name)}, not a string (read as "
                         "'bash', the one tool mini-swe-agent has)")
        if type(call_id) is not str and call_id is not None:  # (its JSON, said)
            call_id = name_field(b, call_id, f"tool_calls[{k}].id", line=lines[i])
        b.tool_call(call_id or f"call-{i}-{k}", name if type(name) is str and name else
                    "bash", args)
    ids = [f"call-{i}"] if len(commands) == 1 else [f"call-{i}-{k}" for k in range(len(commands))]
    for call_id, command in zip(ids, commands):
        b.tool_call(call_id, "bash", command)
    if wrong:
        b.issues.extend(Issue(b.source.path, lines[i], f"messages[{i}]: {why}") for why in wrong)
    response: Any = extra.response  # (``_response(m)``: extra is m's, an ``Extra``)
    _request(b, response if type(response) is Response else NO_RESPONSE, ts, lines, i)
    return ids


def _commands(actions: list[Any], wrong: list[str]) -> list[str]:
    """The commands of ``extra.actions`` (text mode: the harness's parsed actions), each its
    ``command``: one that is no string kept as its JSON (a list: ``["ls", "-la"]``, not
    Python's ``['ls', '-la']``; null read as empty, not ``None``), an action that is no object
    left out, each appended to ``wrong``."""
    commands = []
    for k, a in enumerate(actions):
        if type(a) is not dict:
            wrong.append(f"extra.actions[{k}] is {held(a)}, not an object (left out)")
            continue
        command = a.get("command", "")
        if type(command) is not str:
            where = f"extra.actions[{k}].command"
            wrong.append(not_a_string(None, where) if command is None else
                         kept_as_json(command, where))
            command = "" if command is None else json_text(command)
        commands.append(command)
    return commands


def _request(b: RunBuilder, response: Response, ts: str, lines: ItemLines,
             i: int) -> None:
    usage = response.usage
    if type(usage) is not dict:
        usage = _obj(usage)
    prompt = _details(usage, "prompt_tokens_details", "input_tokens_details")
    completion = _details(usage, "completion_tokens_details", "output_tokens_details")
    model = response.model
    if type(model) is not str:  # (another type: said; its line found only then)
        model = "" if model is None else text_field(b, model, "response.model", line=lines[i])
    b.request(input_tokens=b.count(usage.get("prompt_tokens", usage.get("input_tokens")),
                                   "prompt_tokens"),
              cache_read_tokens=b.count(prompt.get("cached_tokens",
                                                   usage.get("cache_read_input_tokens")),
                                        "cached_tokens"),
              cache_write_tokens=b.count(usage.get("cache_creation_input_tokens"),
                                         "cache_creation_input_tokens"),
              output_tokens=b.count(usage.get("completion_tokens", usage.get("output_tokens")),
                                    "completion_tokens"),
              reasoning_tokens=b.count(completion.get("reasoning_tokens"), "reasoning_tokens"),
              model=model, ts=ts)


def _details(usage: dict[str, Any], first: str, second: str) -> dict[str, Any]:
    """The first of two keys of ``usage`` holding an object, that object ({} for none)."""
    value = usage.get(first)
    if isinstance(value, dict):
        return value
    value = usage.get(second)
    return value if isinstance(value, dict) else {}



def _ts(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=UTC).isoformat()
        except (OverflowError, OSError, ValueError):
            return ""
    return value if isinstance(value, str) else ""
