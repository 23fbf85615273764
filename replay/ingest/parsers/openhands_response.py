"""OpenHands V0 model responses: the chat-completions response an event carries, its message,
a tool call's arguments, and the request (usage) it records, once per response id.

Usage comes from ``model_response.usage`` (cache reads from ``prompt_tokens_details`` or
Anthropic's ``cache_read_input_tokens``), else from the last entry of
``llm_metrics.token_usages`` when its response id is new.

Not here: the event stream and which actions make one assistant message
(``replay.ingest.parsers.openhands``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.jsonl import as_obj as _obj
from replay.ingest.parsers.typed_text import text_field


def tool_call_metadata(ev: Any) -> dict[str, Any] | None:
    """An event's ``tool_call_metadata`` (None when it has none, or not an object)."""
    meta = ev.get("tool_call_metadata") if isinstance(ev, dict) else None
    return meta if isinstance(meta, dict) else None


def model_response(ev: dict[str, Any]) -> dict[str, Any] | None:
    """The chat-completions response behind an event (its metadata's, else its own)."""
    meta = tool_call_metadata(ev)
    resp = meta.get("model_response") if meta else ev.get("model_response")
    return resp if isinstance(resp, dict) else None


def choice_message(resp: dict[str, Any] | None) -> dict[str, Any] | None:
    """The message of a response's first choice (None when there is none)."""
    choices = resp.get("choices") if resp else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message")
        return msg if isinstance(msg, dict) else None
    return None


def call_args(msg: dict[str, Any] | None, call_id: str) -> Any:
    """The parsed arguments of tool call ``call_id`` in a response message (None if absent)."""
    for tc in (msg or {}).get("tool_calls") or []:
        fn = tc.get("function") if isinstance(tc, dict) else None
        if isinstance(fn, dict) and tc.get("id") == call_id:
            raw = fn.get("arguments")
            if isinstance(raw, str):
                try:
                    return loads(raw) if raw.strip() else {}
                except JSON_REFUSED:
                    return raw
            return raw if isinstance(raw, dict) else None
    return None


def request(rb: RunBuilder, responses: set[str], models: Counter[str], ev: dict[str, Any],
            ts: str, line: int = 0) -> None:
    """Record the model call behind ``ev`` unless it has no usage record or was seen already
    (``line``: the event's, where a model of another type is said)."""
    resp = model_response(ev)
    if resp is not None:
        rid = resp.get("id")
        if isinstance(rid, str) and rid:
            if rid in responses:
                return
            responses.add(rid)
        usage = _obj(resp.get("usage"))
        details = _obj(usage.get("prompt_tokens_details"))
        out_details = _obj(usage.get("completion_tokens_details"))
        cache_read = rb.count(details.get("cached_tokens"), "prompt_tokens_details.cached_tokens")
        anthropic_read = rb.count(usage.get("cache_read_input_tokens"), "cache_read_input_tokens")
        if not cache_read and anthropic_read is not None:
            cache_read = anthropic_read
        model = text_field(rb, resp.get("model"), "model_response.model", line=line)
        _add_request(rb, models, model, ts, rb.count(usage.get("prompt_tokens"), "prompt_tokens"),
                     cache_read, rb.count(usage.get("cache_creation_input_tokens"),
                                          "cache_creation_input_tokens"),
                     rb.count(usage.get("completion_tokens"), "completion_tokens"),
                     rb.count(out_details.get("reasoning_tokens"),
                              "completion_tokens_details.reasoning_tokens"))
        return
    metrics = ev.get("llm_metrics")
    usages = metrics.get("token_usages") if isinstance(metrics, dict) else None
    last = usages[-1] if isinstance(usages, list) and usages else None
    rid = last.get("response_id") if isinstance(last, dict) else None
    if isinstance(last, dict) and isinstance(rid, str) and rid and rid not in responses:
        responses.add(rid)
        model = text_field(rb, last.get("model"), "llm_metrics.token_usages[-1].model",
                           line=line)
        n = {k: rb.count(last.get(k), k) for k in ("prompt_tokens", "cache_read_tokens",
                                                   "cache_write_tokens", "completion_tokens")}
        _add_request(rb, models, model, ts, n["prompt_tokens"], n["cache_read_tokens"],
                     n["cache_write_tokens"], n["completion_tokens"], None)


def _add_request(rb: RunBuilder, models: Counter[str], model: str, ts: str, inp: int | None,
                 cache_read: int | None, cache_write: int | None, out: int | None,
                 reasoning: int | None) -> None:
    if model:
        models[model] += 1
    rb.request(input_tokens=inp, cache_read_tokens=cache_read, cache_write_tokens=cache_write,
               output_tokens=out, reasoning_tokens=reasoning, model=model, ts=ts)
