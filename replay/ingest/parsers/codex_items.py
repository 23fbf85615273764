"""Codex rollout items → the values the run model needs (no state: one item in, values out).

A Responses-API item (``response_item`` payload, legacy bare item, or an item inside a
``compacted`` replacement history) and an ``item_completed`` turn item are read here: a call's
id, tool name and arguments, a message's blocks, visible reasoning, a tool output's text and
error flag, a code-mode command.  Type errors raise ``ValueError``
(the caller turns them into an issue for that line).

Not here: the walk over a file, requests, usage (``replay.ingest.parsers.codex``).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from replay.ingest.parsers.content_text import as_text, unread_text
from replay.ingest.parsers.counts import json_int
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.json_text import json_text

CALLS = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call")
"""Model-output calls whose result comes as a separate output item."""
HOSTED = ("web_search_call", "image_generation_call")
"""Model-output calls the server runs: the item is the call and its result together."""
OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output",
           "tool_search_output")
COMPACTIONS = ("compaction", "compaction_summary", "context_compaction")
"""Remote compaction items: the summary is ``encrypted_content``, not readable."""
COMMANDS = ("CommandExecution", "commandExecution", "command_execution")
"""``item_completed`` item types of a command a code-mode program ran."""
USAGE = (("input_tokens", "input_tokens"), ("cached_input_tokens", "cache_read_tokens"),
         ("cache_creation_input_tokens", "cache_write_tokens"),
         ("cache_write_input_tokens", "cache_write_tokens"),
         ("output_tokens", "output_tokens"), ("reasoning_output_tokens", "reasoning_tokens"))
"""token_count usage keys → request fields."""
ROLES = {"user": "user", "developer": "system", "system": "system", "assistant": "assistant"}
_TOOL = {"local_shell_call": "local_shell", "tool_search_call": "tool_search",
         "web_search_call": "web_search", "image_generation_call": "image_generation"}


def call(no: int, t: str, p: dict[str, Any]) -> tuple[str, str, Any]:
    """(call id, tool name, args) of a model-output call item (``CALLS`` or ``HOSTED``)."""
    call_id = p.get("call_id")
    if type(call_id) is not str or not call_id:  # (else opt_str's answer: no call)
        call_id = opt_str(p, "call_id") or opt_str(p, "id") or f"call-{no}"
    if t in ("web_search_call", "image_generation_call"):
        keep = ("action",) if t == "web_search_call" else ("revised_prompt", "prompt")
        args = {k: p[k] for k in keep if p.get(k) is not None}
        return call_id, _TOOL[t], args.get("action", args) if t == "web_search_call" else args
    if t == "local_shell_call":
        action = p.get("action")
        if not isinstance(action, dict):
            raise ValueError(f"local_shell_call action is {type(action).__name__}, not an object")
        return call_id, "local_shell", action
    if t == "tool_search_call":
        raw = p.get("arguments")
        return call_id, "tool_search", raw if isinstance(raw, (dict, str)) else {}
    name = p.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{t} name is {type(name).__name__}, not a non-empty string")
    raw = p.get("input" if t == "custom_tool_call" else "arguments")
    if raw is None or isinstance(raw, dict):
        return call_id, name, raw or {}
    if not isinstance(raw, str):
        raise ValueError(f"{t} arguments are {type(raw).__name__}, not a string")  # noqa: TRY004
    try:  # only an object's text can decode to one (a sanitiser's marker is no JSON: not tried)
        parsed = loads(raw) if t == "function_call" and raw.lstrip()[:1] == "{" else None
    except JSON_REFUSED:
        parsed = None
    return call_id, name, parsed if isinstance(parsed, dict) else raw


def hosted_result(t: str, p: dict[str, Any]) -> str:
    """What the item records of a hosted call's result: a generated image is an image; a web
    search's results are not in the log ('')."""
    if t == "image_generation_call" and p.get("result"):
        return "[image]"
    return ""


def content(value: Any, bad: list[str] | None = None) -> list[tuple[str, str]]:
    """A message's (or agent message's) content as (kind, text) blocks; an encrypted part is
    an empty text (its content is not readable); a part read as empty although it held a
    value where text belongs (``text: 12345``) is appended to ``bad`` (``not_a_string``)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [("text", value)]
    if not isinstance(value, list):
        raise ValueError(f"message content is {type(value).__name__}, not a list")  # noqa: TRY004
    blocks: list[tuple[str, str]] = []
    for part in value:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_image", "image", "image_url"):
            blocks.append(("image", "[image]"))
        elif kind == "encrypted_content":
            blocks.append(("text", ""))
        elif isinstance(part, dict) and isinstance(part.get("refusal"), str):
            blocks.append(("text", part["refusal"]))
        else:
            text = as_text([part])
            if not text and bad is not None:
                unread_text(value, part, bad, "content part")
            blocks.append(("text", text))
    return blocks


def reasoning(p: dict[str, Any], bad: list[str] | None = None) -> str:
    """Visible reasoning text: summary texts then content texts ('' when only encrypted); a
    text that is no string is left out and appended to ``bad`` (``not_a_string``)."""
    parts: list[str] = []
    for key in ("summary", "content"):
        value = p.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            raise ValueError(f"reasoning {key} is {type(value).__name__}, not a list")  # noqa: TRY004
        for x in value:
            text = x.get("text") if isinstance(x, dict) else x
            if isinstance(text, str):
                if text:
                    parts.append(text)
            elif bad is not None and (text is not None or type(x) is dict and "text" in x):
                unread_text(value, x, bad, f"reasoning {key}")  # (a text null: said too)
    return "\n".join(parts)


def result(t: str, p: dict[str, Any], bad: list[str] | None = None) -> tuple[str, bool]:
    """(text the model saw, is_error) of an output item, a string output kept exactly; a value
    in it where text belongs that was read as empty is appended to ``bad`` (``as_text``)."""
    if t == "tool_search_output" and "output" not in p:
        tools = p.get("tools")
        return ("" if tools is None else json_text(tools)), False
    output = p.get("output")
    if output is None:
        return "", False
    if isinstance(output, str):  # 0.5x exec outputs: {"output": …, "metadata": {"exit_code": N}}
        return output, output.startswith('{"') and _exec_failed(output)
    if isinstance(output, list):
        return as_text(output, bad), False
    if isinstance(output, dict):  # {"content": …, "success": …} or any other object
        failed = output.get("success") is False or output.get("isError") is True \
            or output.get("is_error") is True
        if "content" in output:
            return as_text(output["content"], bad), failed
        if isinstance(output.get("output"), str):
            return output["output"], failed
        return json_text(output), failed
    raise ValueError(f"tool output is {type(output).__name__}, not a string or object")


class _ExecOutput(msgspec.Struct):
    """The one field of a 0.5x exec output document ``result`` reads."""

    metadata: Any = None


_exec_metadata = msgspec.json.Decoder(_ExecOutput).decode
_SUCCEEDED_KEY = '"metadata":{"exit_code":0,"duration_seconds":'
_SUCCEEDED = re.compile(r'[,{]"metadata":\{"exit_code":0,"duration_seconds":[0-9.eE+-]+\}\}')
"""How a 0.5x exec output that succeeded ends (its last member, as Codex writes it), from the
character before ``_SUCCEEDED_KEY``."""
_SUCCEEDED_TAIL = 80
"""Characters of an output's end ``_SUCCEEDED_KEY`` is looked for in (more than it matches)."""


def _exec_failed(output: str) -> bool:
    """Whether a string output is a JSON object whose ``metadata.exit_code`` is set and not 0.

    An output ending as ``_SUCCEEDED`` matches is not (nearly every one: no decoding).  Its
    quotes follow no backslash, so each one delimits a string: in a JSON text the match is
    the last member of the object the final brace closes, the document itself, so its
    ``metadata`` (the last of a repeated key, as ``json`` and msgspec keep) has exit code 0;
    a text that is no JSON is no failure either.  Otherwise its ``metadata`` alone is decoded
    first (msgspec checks the rest as JSON and passes over it: the output's text, most of the
    document, is not built); a document so read and found to succeed is one (the same value:
    msgspec keeps the last of a repeated key, as ``json`` does), and any other is decoded
    whole (``loads``): a failure, or a document msgspec refuses, is decided as before."""
    at = output.rfind(_SUCCEEDED_KEY, len(output) - _SUCCEEDED_TAIL)
    if at > 0 and _SUCCEEDED.fullmatch(output, at - 1):
        return False
    try:
        meta = _exec_metadata(output).metadata
    except Exception:  # noqa: BLE001, S110 - whatever the typed decoder refuses: decoded whole
        pass
    else:
        if not isinstance(meta, dict) or meta.get("exit_code") in (0, None):
            return False
    try:
        doc = loads(output)
    except JSON_REFUSED:
        return False
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return isinstance(meta, dict) and meta.get("exit_code") not in (0, None)


def command(item: dict[str, Any]) -> tuple[str, Any, str, bool]:
    """(id, args, output, is_error) of a code-mode ``CommandExecution`` turn item."""
    cmd = item.get("command")
    if not isinstance(cmd, (str, list)):
        raise ValueError(f"CommandExecution command is {type(cmd).__name__}, not a string")  # noqa: TRY004
    ident = opt_str(item, "call_id") or opt_str(item, "id")
    out = item.get("aggregated_output")
    code = item.get("exit_code")
    return ident, {"cmd": cmd}, out if isinstance(out, str) else "", code not in (0, None)


def instructions(p: dict[str, Any]) -> tuple[str, str]:
    """(which field, text) of a session_meta's model instructions: ``base_instructions.text``
    (0.9x+: the system prompt), else legacy ``instructions`` (the user's AGENTS.md)."""
    base = p.get("base_instructions")
    if isinstance(base, dict) and isinstance(base.get("text"), str) and base["text"]:
        return "base_instructions", base["text"]
    if isinstance(base, str) and base:
        return "base_instructions", base
    legacy = p.get("instructions")
    if isinstance(legacy, str) and legacy:
        return "instructions", legacy
    return "", ""


def parent_session(p: dict[str, Any]) -> str:
    """The session this one was forked or spawned from ('' when none is recorded)."""
    for key in ("forked_from_id", "parent_thread_id"):
        value = p.get(key)
        if isinstance(value, str) and value:
            return value
    source = p.get("source")
    spawn = source.get("subagent") if isinstance(source, dict) else None
    spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
    value = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    return value if isinstance(value, str) else ""


def opt_str(d: dict[str, Any], key: str) -> str:
    """``d[key]`` as a string ('' when absent or null); any other type is an error."""
    value = d.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"field {key!r} is {type(value).__name__}, not a string")
    return value or ""


def opt_int(d: dict[str, Any], key: str, bad: list[str]) -> int | None:
    """``d[key]`` as a count (``json_int``; None when absent); a value that is present but not
    a count is None and its key is appended to ``bad`` (the caller reports it)."""
    value = d.get(key)
    if type(value) is int:  # (nearly every count: json_int's first test, without a call)
        return value
    n = json_int(value)
    if n is None and value is not None:
        bad.append(f"{key} {value!r:.40}")
    return n


def usage(u: dict[str, Any], bad: list[str]) -> dict[str, int | None]:
    """A token_count usage object as request fields (cache writes under either name);
    fields that are not counts are unknown and named in ``bad``."""
    # (``USAGE``'s keys read one by one in its order, not in a loop over it: a tuple
    # iterated and each pair unpacked cost ~4,500 instructions a token_count, compiled)
    input_tokens = opt_int(u, "input_tokens", bad)
    read = opt_int(u, "cached_input_tokens", bad)
    created = opt_int(u, "cache_creation_input_tokens", bad)
    written = opt_int(u, "cache_write_input_tokens", bad)  # (the same field, another name:
    # the one recorded, this one first)
    return {"input_tokens": input_tokens, "cache_read_tokens": read,
            "cache_write_tokens": created if written is None else written,
            "output_tokens": opt_int(u, "output_tokens", bad),
            "reasoning_tokens": opt_int(u, "reasoning_output_tokens", bad)}


def token_usage(info: dict[str, Any], prev_total: Any) -> tuple[dict[str, int | None], list[str]]:
    """One token_count ``info``'s usage as request fields, and the fields that were not counts.
    With totals only, usage is the difference with ``prev_total`` (the previous line's
    ``total_token_usage``); totals that went down make every field unknown."""
    total, last = info.get("total_token_usage"), info.get("last_token_usage")
    if last is None and isinstance(total, dict):  # totals only: difference with the last one
        prev = prev_total if isinstance(prev_total, dict) else {}
        bad: list[str] = []
        now = {k: opt_int(total, k, bad) for k, _ in USAGE if k in total}
        diff = {k: None if v is None else v - (opt_int(prev, k, []) or 0) for k, v in now.items()}
        if min((v for v in diff.values() if v is not None), default=0) >= 0:
            return usage(diff, []), bad
        return {name: None for _, name in USAGE}, bad  # totals went down: this request unknown
    if isinstance(last, dict):
        bad = []
        return usage(last, bad), bad
    raise ValueError("token_count info has no last_token_usage / total_token_usage object")


CONTEXTUAL = ("<environment_context>", "<user_instructions>", "# agents.md instructions",
               "<user_shell_command>", "<skill", "<turn_aborted>", "<subagent_notification>")
"""How the user messages Codex writes for itself begin (lowercased): context, not a turn."""
_CONTEXTUAL_CHARS = max(map(len, CONTEXTUAL))
"""The characters of a text ``is_turn_start`` lowercases: its head, as long as the longest of
``CONTEXTUAL``.  Lowercasing maps each character to one or more, so the first N characters of
the lowercased text come from its first N at most; only a capital sigma's form depends on what
follows, and neither form is ASCII, as ``CONTEXTUAL`` is: the same answer as the whole text's."""


def is_turn_start(blocks: list[tuple[str, str]]) -> bool:
    """Whether a user message's blocks start a user turn (Codex's ``is_user_turn_boundary``:
    a user message that is not context the harness added), i.e. what a rollback counts."""
    for _kind, text in blocks:  # (each text's head lowercased, not the whole text)
        if text.lstrip()[:_CONTEXTUAL_CHARS].lower().startswith(CONTEXTUAL):
            return False
    return True


def joined(blocks: list[tuple[str, str]]) -> str:
    """The text of a message's blocks (``content``), one line apart."""
    if len(blocks) == 1:  # (most messages: no generator, no join)
        return blocks[0][1]
    return "\n".join([text for _, text in blocks])
