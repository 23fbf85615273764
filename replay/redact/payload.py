"""A log file as ``replay redact`` walks and writes it: its JSON values (one record a line, one
document, or the JSON members of an Inspect ``.eval`` zip), what the redactor must know of its
format, and the redacted values written back in the same shape.

One record a line for the JSON Lines formats (a blank line stays blank); one document, written
indented, for the others (Gemini CLI and OpenCode have both, as the file is); a ``.eval`` zip's
members each redacted as one document, written compact into a new zip
(``replay.redact.eval_zip``).  Per format, the redactor is told what its parser reads in text
(``configure``): mini-swe-agent's action fence, SWE-agent's tool names, OpenHands' event kinds,
ATIF's compaction words, the tags Codex's own user messages begin with, and the needles a parser looks for inside other texts (Codex's legacy
``instructions`` repeated in a user message; Inspect's summarisation answers inside the
summary: ``inspect_needles``).

Not here: which leaves are redacted (``replay.redact.leaves``), checking the copy
(``replay.redact.readback``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from replay.errors import ReplayError
from replay.ingest.parsers.atif import COMPACTION_WORDS
from replay.ingest.parsers.codex_items import CONTEXTUAL
from replay.ingest.parsers.inspect_eval_zip import ZIP_MAGIC
from replay.ingest.parsers.json_decode import JSON_REFUSED, loads
from replay.ingest.parsers.mini_swe_agent import ACTION
from replay.redact.eval_zip import Refused, member_name, read_members, write_members
from replay.redact.keep_list import data_keys, enum_keys
from replay.redact.leaves import Redactor

JSON_LINES: tuple[str, ...] = ("claude_code", "codex", "gemini_cli", "opencode", "chat")
"""Formats ``redact`` writes one record a line."""
WHOLE_FILE: tuple[str, ...] = ("mini_swe_agent", "swe_agent", "openhands", "atif",
                                "gemini_cli", "inspect_ai", "opencode", "chat")
"""Formats ``redact`` writes as one JSON document (Inspect: also a ``.eval`` zip of them)."""
SUPPORTED: tuple[str, ...] = tuple(dict.fromkeys((*JSON_LINES, *WHOLE_FILE)))


class Unredactable(ReplayError):
    """The file cannot be redacted (the reason, and the line when one is to blame)."""

    def __init__(self, reason: str, line: int = 0) -> None:
        super().__init__(reason)
        self.line = line


@dataclass(frozen=True, slots=True)
class Payload:
    """One file's JSON values and how they are written back."""

    values: list[Any]
    """Records (None: a blank line), one document, or the zip's member documents."""
    names: tuple[str, ...] | None = None
    """The copy's member names (a ``.eval`` zip), else None."""
    document: bool = False
    """One document (written indented) rather than one record a line."""

    def render(self, redactor: Redactor) -> list[str]:
        """Each value redacted, as text with draft markers."""
        redactor.start_file()
        if self.document:
            return [json.dumps(redactor.record(self.values[0]), ensure_ascii=False, indent=1)]
        return ["" if v is None and self.names is None else
                json.dumps(redactor.record(v), ensure_ascii=False, separators=(",", ":"))
                for v in self.values]

    def pack(self, texts: list[str]) -> bytes:
        """The file's bytes from its rendered texts."""
        if self.names is not None:
            return write_members(list(zip(self.names, texts)))
        return "\n".join(texts).encode("utf-8", "surrogatepass")

    def plain(self, texts: list[str]) -> bytes:
        """What the secret check reads: every text, and the member names, uncompressed."""
        return "\n".join([*(self.names or ()), *texts]).encode("utf-8", "surrogatepass")


def read_payload(data: bytes, fmt: str, suffix: str, redactor: Redactor) -> Payload:
    """``data`` (a file of format ``fmt``, its name ending in ``suffix``) as values, the
    redactor set for the format.

    Raises:
        Unredactable: a line or member that is not JSON, a zip breaking a rule
            (``replay.redact.eval_zip``), a mini-swe-agent file with its own action pattern.
    """
    if data.startswith(ZIP_MAGIC):
        try:
            members = read_members(data)
        except Refused as why:
            raise Unredactable(f"not redacted: {why}") from None
        payload = Payload([v for _, v in members],
                          tuple(member_name(n, redactor) for n, _ in members))
        configure(redactor, fmt, payload.values)
        return payload
    whole = fmt in WHOLE_FILE and (fmt not in JSON_LINES or suffix != ".jsonl")
    try:  # one JSON document, or JSON Lines (Gemini CLI and OpenCode have both)
        document = loads(data) if whole else None
    except JSON_REFUSED:
        document = None
    if document is not None:
        if fmt == "mini_swe_agent" and b'"action_regex"' in data:
            raise Unredactable("not redacted: a custom action_regex (only the default fence is "
                               "rewritten)")
        payload = Payload([document], document=True)
    else:
        records: list[Any] = []
        for no, raw in enumerate(data.split(b"\n"), 1):
            try:
                records.append(loads(raw) if raw.strip() else None)
            except JSON_REFUSED:
                raise Unredactable("not JSON: a line redact cannot read is never copied; not "
                                   "written", no) from None
        payload = Payload(records)
    configure(redactor, fmt, payload.values)
    return payload


def configure(redactor: Redactor, fmt: str, values: list[Any]) -> None:
    """Tell the redactor what ``fmt``'s parser reads in text of this file."""
    redactor.data_keys = data_keys(fmt)
    redactor.fenced = ACTION if fmt == "mini_swe_agent" else None
    redactor.swe_tools = _tool_names(values[0]) if fmt == "swe_agent" and values else None
    redactor.keep = enum_keys(fmt)
    redactor.flags = COMPACTION_WORDS if fmt == "atif" else None
    redactor.prefixes = CONTEXTUAL if fmt == "codex" else ()
    redactor.needles = codex_needles(values) if fmt == "codex" else \
        inspect_needles(values) if fmt == "inspect_ai" else []


def _tool_names(document: Any) -> frozenset[str]:
    """The tool names a SWE-agent trajectory's history calls."""
    history = document.get("history") if isinstance(document, dict) else None
    return frozenset(tc["function"]["name"] for m in history or [] if isinstance(m, dict)
                     for tc in m.get("tool_calls") or [] if isinstance(tc, dict)
                     and isinstance(tc.get("function"), dict)
                     and isinstance(tc["function"].get("name"), str))


def codex_needles(records: list[Any]) -> list[str]:
    """A Codex file's legacy ``instructions`` (its parser skips them when a user message
    repeats them: ``replay.ingest.parsers.codex_file.repeated``)."""
    out: list[str] = []
    for rec in records:
        p = rec.get("payload", rec) if isinstance(rec, dict) else None
        text = p.get("instructions") if isinstance(p, dict) else None
        if isinstance(text, str) and text.strip() and text.strip() not in out:
            out.append(text.strip())
    return out


def inspect_needles(documents: list[Any]) -> list[str]:
    """The answers of the model calls just before an Inspect summary compaction (the parser
    finds the summarisation call by its answer inside the summary:
    ``replay.ingest.parsers.inspect_ai``), when the answer is one text."""
    out: list[str] = []
    for doc in documents:
        samples = doc.get("samples") if isinstance(doc, dict) and "samples" in doc else [doc]
        for sample in samples if isinstance(samples, list) else []:
            events = sample.get("events") if isinstance(sample, dict) else None
            last: Any = None
            for e in events if isinstance(events, list) else []:
                if not isinstance(e, dict):
                    continue
                if e.get("event") == "model":
                    last = e
                elif e.get("event") == "compaction" and e.get("type") in (None, "summary") \
                        and (answer := _answer(last)) and answer not in out:
                    out.append(answer)
    return out


def _answer(event: Any) -> str:
    """A model event's answer when it is one text ('' otherwise), stripped."""
    output = event.get("output") if isinstance(event, dict) else None
    choices = output.get("choices") if isinstance(output, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
            and content[0].get("type") == "text":
        content = content[0].get("text")
    return content.strip() if isinstance(content, str) else ""
