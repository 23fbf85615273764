"""Shape (d) of a chat dump whose history was rewritten between requests: a harness that sends a
window of its latest messages, replaces old turns by a summary, or trims old tool outputs.

Every request line is read, in file order, into one message stream that holds every message any
prompt or response held, once, in the order first met (``read_rewritten``); each request keeps
its usage and its output, the message its response became (always a new message).  For request
k with prompt P, P's messages already in the stream are matched by ``message_key`` and the
others appended (``_Stream.place``): where P holds the previous response, the messages after
it are the next turn and those before it are matched against the previous context from its end
backwards (a window or a summary keeps the latest messages, so a message repeated verbatim
pairs with the occurrence the harness kept), then with any occurrence not yet matched in P.

A *rewrite* is a request whose prompt no longer holds a message of the previous context (the
previous prompt plus its response); a prompt that is that context plus new messages is a normal
extension.  A rewrite is a ``compaction`` event, counted in ``n_harness_compactions`` as the
harness's own, at the first message appended for P (at its response when P brings nothing
new), whose request is k, whose ``preserved_msgs`` are P's older messages (those it kept) and
whose trigger is '' (a request log does not record why).  Its ``summary_msg`` is the message the
harness put in place of the removed ones, added as a ``summary`` row flagged
``is_harness_summary`` before P's other new messages: the first text-only message (user, system
or assistant) of a run of new messages standing where messages were removed (not the same
number of the same roles), or, when P kept none of the previous context's non-system messages,
the first of two or more new messages.  Else it is None (a window).  A run of new messages that
replaces as many removed ones role by role is the changed messages (a trimmed tool output: the
same ``tool_call_id`` with shorter content; a system prompt that changed): new messages of the
stream after the event (the old text stays where it was, before it), no summary.

Not handled: the order of a prompt that moved older messages or put a new one among them (the
stream keeps the order first met: the counts are right, a prefix cache is not); a retried
request (the previous response dropped) reads as a rewrite; lines out of order read as rewrites
(a log whose lines are all prefixes of its longest prompt is not read here:
``chat_requests.unchanged_history``).
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from itertools import accumulate
from typing import Any

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.chat_messages import (
    emit_message,
    message_blocks,
    message_key,
    message_type,
    record_ts,
)
from replay.ingest.parsers.chat_requests import Call, add_request

_NEW = -1
"""A prompt slot holding a message not yet in the stream."""
_BAD = -2
"""A prompt slot holding a malformed message (reported once, never in the stream)."""
_SUMMARY_ROLES = frozenset(("user", "system", "assistant"))


def read_rewritten(rb: RunBuilder, calls: list[Call], models: Counter[str]) -> None:
    """Every call as one request of one stream; each rewrite a compaction event."""
    stream = _Stream(rb)
    prev_prompt: list[Any] = []
    prev_slots: list[int] = []
    prev_ctx: list[int] = []  # stream indices of the previous context, in its order
    prev_out = _BAD  # the previous response's stream index (_BAD: none read)
    for no, rec, resp, prompt, out in calls:
        rb.line = no  # (the issues of this line's counts)
        stream.memo.clear()
        slots = stream.place(no, prompt, prev_prompt, prev_slots, prev_ctx, prev_out)
        used = {s for s in slots if s >= 0}
        if not used.issuperset(prev_ctx):
            _rewrite(stream, prompt, slots, prev_ctx, used)
        for j, s in enumerate(slots):
            if s == _NEW:
                slots[j] = stream.emit(no, prompt[j], f"message {j + 1} of line {no}")
        output = stream.emit(no, out, f"the response of line {no}", fresh=True)
        if output < 0:
            rb.source.coverage.skipped("request (response not read)")
        else:
            rb.source.coverage.modelled("request")
            add_request(rb, resp.get("usage"), resp.get("model"), output, models,
                        record_ts(rec) or record_ts(resp), line=no)
        prev_prompt, prev_slots, prev_out = prompt, slots, output
        prev_ctx = [s for s in slots if s >= 0] + ([output] if output >= 0 else [])


class _Stream:
    """The run's messages so far: where each message key is, and what was reported."""

    def __init__(self, rb: RunBuilder) -> None:
        self.rb = rb
        self.at: dict[str, list[int]] = {}
        """Message key -> the stream indices holding it, ascending."""
        self.key_of: list[str] = []
        """Stream index -> its message key."""
        self.role_of: list[str] = []
        """Stream index -> its role."""
        self.bad: set[str] = set()
        """Malformed messages already reported (as parsed, in JSON)."""
        self.plain: dict[tuple[str, ...], str | None] = {}
        """The keys of plain messages met so far, by their fields (``_plain``): a window sends
        each message many times, and a key costs a ``message_blocks`` and a JSON dump."""
        self.memo: dict[int, str | None] = {}
        """The keys of the request being read, by message object id (cleared a request)."""

    def key(self, m: Any) -> str | None:
        """A message's ``message_key`` (kept for the request being read: a message is keyed
        once, when placed, not again when emitted)."""
        if id(m) in self.memo:
            return self.memo[id(m)]
        plain = _plain(m)
        if plain is not None and plain in self.plain:
            got = self.plain[plain]
        else:
            k = message_key(m)
            got = None if k is None else str(k)
            if plain is not None:
                self.plain[plain] = got
        self.memo[id(m)] = got
        return got

    def place(self, no: int, prompt: list[Any], prev_prompt: list[Any], prev_slots: list[int],
              prev_ctx: list[int], prev_out: int) -> list[int]:
        """Each of ``prompt``'s messages as a stream index, ``_NEW`` or ``_BAD`` (a malformed
        message, reported the first time it is met).

        Where the prompt holds the previous response (the last message with its key), that is
        the previous context's end: the messages after it are the next turn (new), those before
        it are matched against the previous context from its end backwards (a window or a
        summary keeps the latest messages: a message repeated verbatim pairs with the
        occurrence the harness kept), else with any occurrence in the stream not yet matched in
        this prompt, else are new.  A prompt without the previous response (a retry, lines in
        another order) is matched from its start: the previous prompt's messages at the same
        places, then the previous context's from where the last match was, then any
        occurrence not yet matched."""
        n, lim = 0, min(len(prompt), len(prev_prompt))
        while n < lim and prompt[n] == prev_prompt[n]:
            n += 1
        out_key = self.key_of[prev_out] if prev_out >= 0 else None
        if out_key is not None and n == len(prev_prompt) < len(prompt) and \
                self.key(prompt[n]) == out_key:  # the previous context, then the next turn
            return [*prev_slots, prev_out, *self.fresh(no, prompt, n + 1)]
        keys = [self.key(m) for m in prompt]
        end = next((j for j in range(len(keys) - 1, -1, -1) if keys[j] == out_key), None) \
            if out_key is not None else None
        if end is None:
            return self.forward(no, prompt, keys, prev_slots[:n], prev_ctx)
        slots = [_NEW] * (end + 1)
        slots[end] = prev_out
        used = {prev_out}
        ctx = prev_ctx[:-1]
        in_ctx: dict[str, list[int]] = {}
        for q, s in enumerate(ctx):
            in_ctx.setdefault(self.key_of[s], []).append(q)
        ptr = len(ctx)  # (matched backwards: below ptr)
        cursor: dict[str, int] = {}
        for j in range(end - 1, -1, -1):
            k = keys[j]
            if k is None:
                self.malformed(no, prompt[j], f"message {j + 1} of line {no}")
                slots[j] = _BAD
                continue
            found = -1
            places = in_ctx.get(k)
            if places:
                q = bisect.bisect_left(places, ptr) - 1
                while q >= 0 and ctx[places[q]] in used:
                    q -= 1
                if q >= 0:
                    found, ptr = ctx[places[q]], places[q]
            if found < 0:
                found = self.unused(k, used, cursor)
            if found >= 0:
                slots[j] = found
                used.add(found)
        return slots + self.fresh(no, prompt, end + 1)

    def fresh(self, no: int, prompt: list[Any], start: int) -> list[int]:
        """``prompt[start:]``, the next turn: new messages (``_BAD`` for a malformed one)."""
        slots = []
        for j in range(start, len(prompt)):
            if self.key(prompt[j]) is None:
                self.malformed(no, prompt[j], f"message {j + 1} of line {no}")
                slots.append(_BAD)
            else:
                slots.append(_NEW)
        return slots

    def unused(self, k: str, used: set[int], cursor: dict[str, int]) -> int:
        """The first stream index holding key ``k`` not in ``used`` (-1: none); ``cursor`` keeps
        where each key's search got to in this prompt (each occurrence passed over once)."""
        occ = self.at.get(k)
        if not occ:
            return -1
        c = cursor.get(k, 0)
        while c < len(occ) and occ[c] in used:
            c += 1
        cursor[k] = c
        return occ[c] if c < len(occ) else -1

    def forward(self, no: int, prompt: list[Any], keys: list[str | None], slots: list[int],
                prev_ctx: list[int]) -> list[int]:
        """``place`` of a prompt without the previous response: ``slots`` (the previous
        prompt's at the same places) extended from the start."""
        used = {s for s in slots if s >= 0}
        ptr = sum(1 for s in slots if s >= 0)  # (the previous prompt's messages kept in place)
        in_ctx: dict[str, list[int]] = {}
        for q in range(ptr, len(prev_ctx)):
            in_ctx.setdefault(self.key_of[prev_ctx[q]], []).append(q)
        cursor: dict[str, int] = {}
        for j in range(len(slots), len(prompt)):
            k = keys[j]
            if k is None:
                self.malformed(no, prompt[j], f"message {j + 1} of line {no}")
                slots.append(_BAD)
                continue
            found = -1
            places = in_ctx.get(k)
            if places:
                q = bisect.bisect_left(places, ptr)
                while q < len(places) and prev_ctx[places[q]] in used:
                    q += 1
                if q < len(places):
                    found, ptr = prev_ctx[places[q]], places[q] + 1
            if found < 0:
                found = self.unused(k, used, cursor)
            if found < 0:
                slots.append(_NEW)
            else:
                slots.append(found)
                used.add(found)
        return slots

    def malformed(self, no: int, m: Any, label: str) -> None:
        """Report a malformed message the first time it is met (``emit_message`` does)."""
        raw = json.dumps(m, sort_keys=True, default=str)
        if raw not in self.bad:
            self.bad.add(raw)
            emit_message(self.rb, no, m, label)

    def emit(self, no: int, m: Any, label: str, *, fresh: bool = False) -> int:
        """Append a message to the stream; its index, or ``_BAD`` when it is malformed
        (``fresh``: report it even when met before, as a response is a request's own)."""
        k = self.key(m)
        if k is None:
            if fresh:
                emit_message(self.rb, no, m, label)
            else:
                self.malformed(no, m, label)
            return _BAD
        msg = emit_message(self.rb, no, m, label)
        if msg is None:  # (a key is only made of a message that reads)
            return _BAD
        self.add(k, msg)
        return msg

    def add(self, k: str, msg: int) -> None:
        """Message ``msg`` of the stream has key ``k`` (its role read from the key)."""
        self.at.setdefault(k, []).append(msg)
        self.key_of.append(k)
        self.role_of.append(k[2:k.find('"', 2)])  # (a key is '["<role>", [blocks]]')

    def summary(self, m: Any) -> int:
        """Append the message standing for the removed ones as a harness summary row."""
        rb = self.rb
        role, blocks = message_blocks(m)
        msg = rb.message(role, ts=record_ts(m))
        rb.summary("\n".join(b[1] for b in blocks), harness=True, counted=False)
        rb.source.coverage.modelled(f"{message_type(m)} (summary)")
        k = self.key(m)
        self.add(k if k is not None else "", msg)
        return msg


def _rewrite(stream: _Stream, prompt: list[Any], slots: list[int],
             prev_ctx: list[int], used: set[int]) -> None:
    """Record the compaction of a rewrite (before P's new messages are emitted); its summary
    emitted now, its slot set."""
    rb = stream.rb
    old = [s for s in slots if s >= 0]
    at = _summary_slot(stream, prompt, slots, prev_ctx, used)
    event = rb.n_events
    rb.event("compaction", harness_compaction=True, preserved_msgs=sorted(set(old)))
    if at is not None:
        slots[at] = stream.summary(prompt[at])
        rb.set_event(event, summary_msg=slots[at])


def _summary_slot(stream: _Stream, prompt: list[Any], slots: list[int], prev_ctx: list[int],
                  used: set[int]) -> int | None:
    """The slot of the new message standing for the removed ones (module docstring), or None."""
    where = {s: q for q, s in enumerate(prev_ctx)}
    removed = [0, *accumulate(int(s not in used) for s in prev_ctx)]
    body_kept = any(s >= 0 and stream.role_of[s] != "system" for s in slots)
    j, left = 0, -1  # (left: the last kept message before slot j, -1: none yet)
    while j < len(slots):
        if slots[j] != _NEW:
            left = slots[j] if slots[j] >= 0 else left
            j += 1
            continue
        end = j
        while end < len(slots) and slots[end] in (_NEW, _BAD):
            end += 1
        run = [i for i in range(j, end) if slots[i] == _NEW]
        if end == len(slots):  # the next turn
            if not body_kept and len(run) > 1:
                return next((i for i in run if _text_only(prompt[i])), None)
            return None
        pa = where.get(left, -1)
        pb = where.get(slots[end], -1)
        gone = removed[pb] - removed[pa + 1] if pb > pa else 0
        if gone:  # the run stands where messages were removed
            changed = gone == len(run) and [
                stream.role_of[prev_ctx[q]] for q in range(pa + 1, pb)
                if prev_ctx[q] not in used] == [_role(prompt[i]) for i in run]
            found = None if changed else next((i for i in run if _text_only(prompt[i])), None)
            if found is not None:
                return found
        j = end
    return None


def _plain(m: Any) -> tuple[str, ...] | None:
    """A message of string fields only (role and content, and a tool message's call id) as
    a tuple of them; None for any other."""
    if m.__class__ is not dict:
        return None
    role, content = m.get("role"), m.get("content")
    if role.__class__ is not str or content.__class__ is not str:
        return None
    if len(m) == 2:
        return (role, content)
    call = m.get("tool_call_id")
    return (role, content, call) if len(m) == 3 and call.__class__ is str else None


def _role(m: Any) -> str:
    try:
        return message_blocks(m)[0]
    except (KeyError, TypeError, ValueError, AttributeError):
        return ""


def _text_only(m: Any) -> bool:
    """A message of text blocks only, from a role a summary can have."""
    try:
        role, blocks = message_blocks(m)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return role in _SUMMARY_ROLES and all(b[0] == "text" for b in blocks) and \
        any(b[1].strip() for b in blocks)
