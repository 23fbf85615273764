"""Reading JSON and JSON Lines sources without falling over on bad bytes.

``iter_records`` yields ``(line_no, record)`` for every line that is a JSON
object and reports every other line as an ``Issue`` (malformed JSON, invalid
UTF-8, NUL bytes, a truncated last line) so the rest of the file is still read.
``load_json`` reads a whole-file JSON document with the same reporting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from replay.parsers.builder import Issue, Source

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A single line longer than this is reported and skipped: no model's context holds one record
this big (16 MiB is several million tokens), and decoding and tokenising it would stall the
batch."""
_SEPARATORS = re.compile(r"[\s,]*")


def iter_records(src: Source, issues: list[Issue]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every JSON object line of ``src`` with its 1-based line number; problems go to ``issues``."""
    data = src.data
    lines = data.split(b"\n")
    last = len(lines)
    if lines and lines[-1] == b"":
        lines.pop()
        last = 0  # file ends with a newline: no line is partial
    for no, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if len(raw) > MAX_LINE_BYTES:
            issues.append(Issue(src.path, no, f"line of {len(raw):,} bytes is over the "
                                              f"{MAX_LINE_BYTES:,}-byte limit (skipped)"))
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            issues.append(Issue(src.path, no, f"invalid UTF-8 at byte {exc.start} (line skipped)"))
            continue
        except ValueError as exc:
            what = "incomplete last line (file still being written?)" if no == last else "malformed JSON"
            issues.append(Issue(src.path, no, f"{what}: {exc} (line skipped)"))
            continue
        except RecursionError:
            issues.append(Issue(src.path, no, "JSON nested too deeply (line skipped)"))
            continue
        if not isinstance(record, dict):
            issues.append(Issue(src.path, no, f"expected a JSON object, got {type(record).__name__}"))
            continue
        yield no, record


def load_json(src: Source, issues: list[Issue]) -> Any:
    """The whole file as one JSON document, or None (with an issue) when it is not valid JSON."""
    try:
        return json.loads(src.data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        issues.append(Issue(src.path, 0, f"invalid UTF-8 at byte {exc.start}"))
    except RecursionError:
        issues.append(Issue(src.path, 0, "JSON nested too deeply"))
    except ValueError as exc:
        issues.append(Issue(src.path, getattr(exc, "lineno", 0), f"malformed JSON: {exc}"))
    return None


def first_record(data: bytes) -> dict[str, Any] | None:
    """The first line of a JSON Lines head as an object, or None (for format sniffing)."""
    for raw in data.split(b"\n", 64)[:64]:
        if raw.strip():
            try:
                rec = json.loads(raw)
            except (ValueError, RecursionError):
                return None
            return rec if isinstance(rec, dict) else None
    return None


def as_text(content: Any) -> str:
    """Flatten message content (a string, or a list of text blocks) into one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict):
                if isinstance(item.get("text"), str):
                    parts.append(item["text"])
                elif item.get("type") in ("image", "image_url", "input_image"):
                    parts.append("[image]")
                elif isinstance(item.get("content"), (str, list)):
                    parts.append(as_text(item["content"]))
        return "\n".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return json.dumps(content, ensure_ascii=False)


def array_items(src: Source, key: str | None) -> tuple[list[tuple[int, Any]], int]:
    """The items of one JSON array in ``src``, read one by one, each with its first line.

    This keeps the items before a syntax error of a damaged or truncated file and gives each
    item's line for issues.

    Args:
        src: the source file.
        key: the array's key (its first occurrence in the text); None for a top-level array.

    Returns:
        (line, item) pairs, and the line where reading stopped early (0 when the array closed).
    """
    text = src.data.decode("utf-8", errors="replace")
    start = re.match(r"\s*\[", text) if key is None else \
        re.search(r'"' + re.escape(key) + r'"\s*:\s*\[', text)
    if start is None:
        return [], 0
    decoder, items = json.JSONDecoder(), list[tuple[int, Any]]()
    pos, line, counted = start.end(), 1, 0
    while True:
        pos = _SEPARATORS.match(text, pos).end()  # type: ignore[union-attr]
        line, counted = line + text.count("\n", counted, pos), pos
        if text.startswith("]", pos):
            return items, 0
        try:
            item, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return items, line
        items.append((line, item))
        pos = end
