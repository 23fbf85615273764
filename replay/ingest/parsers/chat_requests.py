"""A chat dump's requests: a response's usage object as one request (``add_request``: OpenAI or
Anthropic field names, Anthropic input summed with its cache fields), and shape (d), JSON Lines
of ``{"messages": prompt, "response": completion}``: its lines as calls (``request_calls``), and
a log whose history never changed (``unchanged_history``: every prompt and its response a
prefix of the longest one) read as before (``request_log``: the longest prompt plus its response
is the transcript; each line is one request whose output is the message its response became).

Not here: the messages themselves (``replay.ingest.parsers.chat_messages``), a log whose
history was rewritten between requests (``replay.ingest.parsers.chat_rewrites``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.chat_messages import emit_message, message_key, record_ts
from replay.ingest.parsers.content_text import not_a_string
from replay.ingest.parsers.source import Issue

Call = tuple[int, dict[str, Any], dict[str, Any], list[Any], dict[str, Any]]
"""One request line of shape (d): (line, record, response, prompt, response message)."""


def add_request(rb: RunBuilder, usage: Any, model: Any, output_msg: int | None,
                models: Counter[str], ts: str = "", *, line: int = 0) -> None:
    """One request of the run: the counts of its usage object (OpenAI or Anthropic names; a
    value there that is not a count is reported), its model as the log writes it (counted in
    ``models``; one that is no string read as empty, said at ``line``), its time."""
    u = usage if isinstance(usage, dict) else {}
    if model.__class__ is not str:
        if model is not None:
            rb.issues.append(Issue(rb.source.path, line, not_a_string(model, "model")))
        model = ""

    def count(*path: str) -> int | None:
        """The count at ``path`` in the usage object (reported by ``rb.count`` when present
        but not a count); None when absent."""
        d: Any = u
        for key in path[:-1]:
            d = d.get(key) if isinstance(d, dict) else None
        return rb.count(d.get(path[-1]), ".".join(path)) if isinstance(d, dict) else None

    inp, out, cache_write = count("prompt_tokens"), count("completion_tokens"), \
        count("cache_creation_input_tokens")
    cache_read = count("prompt_tokens_details", "cached_tokens")
    if cache_read is None:
        cache_read = count("input_tokens_details", "cached_tokens")
    anthropic_read = count("cache_read_input_tokens")
    if cache_read is None:
        cache_read = anthropic_read
    if inp is None and u.get("prompt_tokens") is None:
        inp = count("input_tokens")
        if inp is not None and ("cache_read_input_tokens" in u
                                or "cache_creation_input_tokens" in u):  # Anthropic: parts
            bad = any(u.get(k) is not None and n is None for k, n in
                      (("cache_read_input_tokens", anthropic_read),
                       ("cache_creation_input_tokens", cache_write)))
            inp = None if bad else inp + (anthropic_read or 0) + (cache_write or 0)
    if out is None and u.get("completion_tokens") is None:
        out = count("output_tokens")
    reasoning = count("completion_tokens_details", "reasoning_tokens")
    if reasoning is None:
        reasoning = count("output_tokens_details", "reasoning_tokens")
    if model:
        models[model] += 1
    rb.request(output_msg=output_msg, input_tokens=inp, cache_read_tokens=cache_read,
               cache_write_tokens=cache_write, output_tokens=out, reasoning_tokens=reasoning,
               model=model, ts=ts)


def request_calls(rb: RunBuilder, items: list[tuple[int, Any]]) -> list[Call]:
    """Shape (d)'s lines as calls (a system prompt given beside the messages put first); a
    malformed line is reported, counted and skipped."""
    calls: list[Call] = []
    for no, rec in items:
        try:
            if not isinstance(rec["messages"], list):  # list("text") would be one per letter
                raise TypeError(f"'messages' is a {type(rec['messages']).__name__}, not a list")
            prompt = list(rec["messages"])
            if rec.get("system"):
                prompt.insert(0, {"role": "system", "content": rec["system"]})
            resp = rec["response"]
            choices = resp.get("choices")
            out = choices[0]["message"] if isinstance(choices, list) else resp
            if not isinstance(out, dict):
                raise TypeError("the response message is not an object")
            calls.append((no, rec, resp, prompt, {**out, "role": out.get("role") or "assistant"}))
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            rb.source.coverage.unknown("request (malformed)")
            rb.issues.append(Issue(rb.source.path, no, f"request line {no} skipped: "
                                                       f"{type(exc).__name__}: {exc}"))
    return calls


def _longest(calls: list[Call]) -> Call:
    """The call with the longest prompt (the last of them on a tie): the transcript's."""
    return max(enumerate(calls), key=lambda c: (len(c[1][3]), c[0]))[1]


def unchanged_history(calls: list[Call]) -> bool:
    """Whether every call's prompt plus its response is a prefix of the longest prompt plus its
    response (the same messages, compared as parsed, else by ``message_key``), in whatever
    order the lines come: the history never changed, and the longest transcript holds every
    message any line held."""
    if not calls:
        return True
    _, _, _, prompt, out = _longest(calls)
    full = [*prompt, out]
    keys: dict[int, Any] = {}

    def same(i: int, m: Any) -> bool:
        if m == full[i]:
            return True
        if i not in keys:
            keys[i] = message_key(full[i])
        return keys[i] is not None and message_key(m) == keys[i]

    for _, _, _, p, o in calls:
        if len(p) >= len(full) or not same(len(p), o):
            return False
        for i, m in enumerate(p):
            if not same(i, m):
                return False
    return True


def request_log(rb: RunBuilder, calls: list[Call], models: Counter[str]) -> None:
    """Shape (d) of an unchanged history: the longest prompt + its response is the transcript;
    one request per line whose response it holds (a line whose response it lacks, a repeated
    line, is dropped: ``dropped_requests``)."""
    if not calls:
        return
    no_last, _, _, prompt, out = _longest(calls)
    keys: dict[int, str] = {}  # stream index -> content key, for messages that were emitted
    where: dict[int, int] = {}  # stream index -> builder message index
    for i, m in enumerate([*prompt, out]):
        msg = emit_message(rb, no_last, m, f"message {i + 1} of line {no_last}")
        key = message_key(m)
        if msg is not None and key is not None:
            where[i], keys[i] = msg, key
    used: set[int] = set()
    dropped: list[int] = []  # lines of the requests whose response the transcript lacks
    for no, rec, resp, p, out in calls:
        want = message_key(out)
        idx = len(p) if keys.get(len(p)) == want and len(p) not in used else next(
            (i for i, k in keys.items() if k == want and i not in used), None)
        if want is None or idx is None:
            rb.source.coverage.skipped("request (not in the transcript)")
            dropped.append(no)
            continue
        used.add(idx)
        rb.source.coverage.modelled("request")
        add_request(rb, resp.get("usage"), resp.get("model"), where[idx], models,
                    record_ts(rec) or record_ts(resp), line=no)
    if dropped:
        rb.issues.append(dropped_requests(rb.source.path, dropped, len(calls)))


def dropped_requests(path: str, lines: list[int], calls: int) -> Issue:
    """One issue for every request of an unchanged history whose response the transcript holds
    only for another line (a line repeated: the same prompt and response) or not at all (a
    malformed response), each dropped: said once with how many and which lines, not once a
    line."""
    shown = ", ".join(map(str, lines[:8])) + (f", … ({len(lines) - 8} more)" if len(lines) > 8
                                               else "")
    return Issue(path, lines[0], f"{len(lines)} of {calls} request line(s) dropped: the longest "
                                 "transcript holds their response once, for another line (a "
                                 "line repeated), or not at all (a malformed response); lines "
                                 f"{shown}")
