"""The run a Gemini CLI session's history makes (``replay.ingest.parsers.gemini_cli`` says what
each message becomes): messages, tool calls and results, requests, compactions.

Not here: the records and the history they build (``gemini_cli``, ``gemini_cli_history``).
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.content_text import inline_placeholder, not_a_string
from replay.ingest.parsers.gemini_cli_history import History, tool_calls
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.jsonl import as_str as _str
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.run_text import run_name, run_text
from replay.ingest.parsers.source import Issue, Source
from replay.ingest.parsers.typed_text import name_field, said, text_field

NAME = "gemini_cli"


def emit(src: Source, issues: list[Issue], h: History, *, index: int = 0,
         branch: tuple[str, set[str]] | None = None, branch_no: int = 0) -> RunDraft:
    """The run of ``h`` (run ``index`` of the file); with ``branch`` (the main run's id, the
    keys the rewind dropped), the run of the session's ``branch_no``-th abandoned branch:
    linked to the main run, requests only for its own messages (the others are the main run's:
    context here)."""
    model = next((m["model"] for live, _ in h.epochs for m in live.values()
                  if isinstance(m.get("model"), str) and m["model"]), "")
    kind = h.meta.get("kind", UNSET)
    if branch:  # (its session's fields: said with the main run)
        kind = kind if isinstance(kind, str) else ""
        agent = f"abandoned-{branch_no}"
    else:
        kind = run_text(kind, "kind", src.path, issues)
        agent = run_name(h.meta.get("sessionId", UNSET), "sessionId", src.path, issues,
                         nullable=False) if kind == "subagent" else ""
    b = RunBuilder(src, index, NAME, issues, model=model,
                   harness="gemini-cli" + (f" ({kind})" if kind else ""), agent=agent,
                   parent_run_id=branch[0] if branch else "")
    answered = {r["id"] for live, _ in h.epochs for m in live.values() if m["type"] == "user"
                for r in _responses(m.get("content"))}
    done: dict[str, list[int]] = {}
    """Message key -> the run's messages made from it."""
    for k, (live, added) in enumerate(h.epochs):
        for mid, m in live.items():
            if mid in done:
                continue
            done[mid] = []
            b.line = h.lines.get(id(m), 0)  # (what is said of it: at its record's line)
            try:
                if m["type"] == "user":
                    done[mid] = _user(b, m)
                else:
                    done[mid] = _gemini(b, mid, m, answered,
                                        request=branch is None or mid in branch[1])
            except (TypeError, ValueError, AttributeError, KeyError) as exc:
                if branch is None:  # (a branch's messages are counted in the main walk; its
                    # last copy, counted modelled when read, is not: counted once)
                    src.coverage.recount(f"message/{m['type']}", "modelled",
                                         f"message/{m['type']} (malformed)", "unknown")
                issues.append(Issue(src.path, b.line, f"message {mid[:80]!r}: {exc} (kept in "
                                                      "part)"))
        if added:
            kept = sorted(i for mid in h.epochs[k + 1][0] if mid in done for i in done[mid])
            b.line = h.lines.get(id(next(iter(added.values()))), 0)
            event = b.n_events
            b.event("compaction", preserved_msgs=kept, harness_compaction=True)
            msg = b.message("user", ts=_str(next(iter(added.values())).get("timestamp")))
            b.set_event(event, summary_msg=msg)
            bad: list[str] = []
            b.summary("\n\n".join(_parts_text(m.get("content"), bad=bad)
                                  for m in added.values()), counted=False)
            if bad:
                said(b, bad)
            done.update((mid, [msg]) for mid in added)
    return b.build()


def _user(b: RunBuilder, m: dict[str, Any]) -> list[int]:
    """Emit a user message (and the tool results it carries); the message indices made."""
    made = []
    ts = _str(m.get("timestamp"))
    content = m.get("content")
    responses = _responses(content)
    rest = [p for p in content if not (isinstance(p, dict) and "functionResponse" in p)] \
        if isinstance(content, list) else content
    if responses:
        made.append(b.message("tool", ts=ts))
        for r in responses:
            b.tool_result(r["id"], _response_text(r), is_error=_is_error(r))
    bad: list[str] = []
    text = _parts_text(rest, bad=bad)
    if not responses or text:
        made.append(b.message("user", ts=ts))
        b.text(text)
    if bad:
        said(b, bad)
    return made


def _gemini(b: RunBuilder, mid: str, m: dict[str, Any], answered: set[str], *,
            request: bool = True) -> list[int]:
    """Emit a model message, its call and its results; the message indices made (with no
    request when ``request`` is False: another run counts it)."""
    ts = _str(m.get("timestamp"))
    msg = b.message("assistant", ts=ts)
    for t in _list(m.get("thoughts")):
        if isinstance(t, dict):
            b.text("\n".join(x for x in (text_field(b, t.get("subject"), "thought subject"),
                                         text_field(b, t.get("description"),
                                                    "thought description")) if x),
                   kind="reasoning")
    content = m.get("content")
    for k, part in enumerate(content if isinstance(content, list) else [content]):
        if isinstance(part, str):
            if part:
                b.text(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            b.text(part["text"], kind="reasoning" if part.get("thought") else "text")
        elif isinstance(part, dict) and part.get("text") is not None:
            said(b, [not_a_string(part["text"], f"content part {k}: text")])
        elif part is not None and not isinstance(part, dict):
            said(b, [not_a_string(part, f"content part {k}" if isinstance(content, list)
                                  else "content")])
    calls = [tc for tc in tool_calls(m) if isinstance(tc, dict)]
    ids = []
    for k, tc in enumerate(calls):
        call_id = name_field(b, tc.get("id"), f"toolCalls[{k}].id") or \
            f"{mid.lstrip(chr(0)).replace(chr(0), ' ')}-{k}"
        args = tc.get("args")
        b.tool_call(call_id, name_field(b, tc.get("name"), f"toolCalls[{k}].name") or "tool",
                    args if args is not None else {})
        ids.append(call_id)
    tokens = m.get("tokens")
    if request and ("model" in m or isinstance(tokens, dict)):
        t = tokens if isinstance(tokens, dict) else {}
        output = b.count(t.get("output"), "tokens.output")
        thoughts = b.count(t.get("thoughts"), "tokens.thoughts")
        # Gemini's output count leaves its thoughts out (total = input + output + thoughts +
        # tool), and they are billed as output: the request's output is both, as Claude's and
        # OpenAI's usage counts it
        b.request(output_msg=msg, input_tokens=b.count(t.get("input"), "tokens.input"),
                  cache_read_tokens=b.count(t.get("cached"), "tokens.cached"),
                  output_tokens=output + thoughts if output is not None and thoughts else output,
                  reasoning_tokens=thoughts,
                  model=text_field(b, m.get("model"), "model"), ts=ts)
    results = [(cid, tc) for cid, tc in zip(ids, calls)
               if cid not in answered and tc.get("result") is not None]
    if not results:
        return [msg]
    made = [msg, b.message("tool", ts=ts)]
    for cid, tc in results:
        bad: list[str] = []
        b.tool_result(cid, _parts_text(tc["result"], responses=True, bad=bad),
                      is_error=tc.get("status") == "error")
        if bad:
            said(b, [f"tool result {cid!r}: {why}" for why in bad])
    return made


def _responses(content: Any) -> list[dict[str, Any]]:
    """The ``functionResponse`` parts of a user message that carry an id."""
    if not isinstance(content, list):
        return []
    out = []
    for p in content:
        r = p.get("functionResponse") if isinstance(p, dict) else None
        if isinstance(r, dict) and isinstance(r.get("id"), str):
            out.append(r)
    return out


def _response_text(r: dict[str, Any]) -> str:
    resp = r.get("response")
    if isinstance(resp, dict):
        for key in ("output", "error", "content"):
            if isinstance(text := resp.get(key), str):
                return text
    return resp if isinstance(resp, str) else json_text(resp)


def _is_error(r: dict[str, Any]) -> bool:
    resp = r.get("response")
    return isinstance(resp, dict) and "error" in resp and "output" not in resp


def _parts_text(content: Any, *, responses: bool = False, bad: list[str] | None = None) -> str:
    """Text of Gemini parts (a string, a part, or a list of parts); inline data as its
    placeholder (``content_text.inline_placeholder``: an image's or a document's); a part's
    ``text`` that is no string is read as empty and appended to ``bad`` (as ``as_text``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    out = []
    for k, p in enumerate(parts):
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict):
            if isinstance(p.get("text"), str):
                out.append(p["text"])
            elif isinstance(p.get("functionResponse"), dict):
                if responses:
                    out.append(_response_text(p["functionResponse"]))
            elif "inlineData" in p or "fileData" in p:
                data = p.get("inlineData") or p.get("fileData")
                out.append(inline_placeholder(data.get("mimeType")
                                              if isinstance(data, dict) else None))
            elif bad is not None and p.get("text") is not None:
                bad.append(not_a_string(p["text"], f"content part {k}: text"))
        elif bad is not None and p is not None:
            bad.append(not_a_string(p, f"content part {k}" if parts is content else "content"))
    return "\n".join(out)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
