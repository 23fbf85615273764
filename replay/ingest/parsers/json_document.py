"""A whole-file JSON document that did not decode as it is, read as every document parser
reads it (``jsonl.load_json``): the one rule for bytes after the document and for bytes that are
not UTF-8 inside it.

* Bytes after a complete document (the NULs or spaces a crashed or preallocating writer leaves,
  any other garbage) are ignored, and one issue says how many and of what kind (NUL, JSON
  whitespace, other): the document itself was written whole, so nothing of it is lost.  It
  was the whole file failed (chat) or salvaged item by item, its other keys lost ("damaged
  file: kept N steps (history and info lost)").
* A byte sequence that is not UTF-8 inside the document is read as U+FFFD, as Python's
  ``errors="replace"`` reads it (one U+FFFD a maximal invalid subpart), and one issue says
  where the first is and how many there are.  JSON Lines skip such a line (its record): a
  document's records are its parser's to name, and skipping the document was the whole file
  lost for a byte (chat), where each other parser read it with U+FFFD already, some of it
  (a damaged file's items, ``jsonl.array_items``) or all of it (mini-swe-agent's bare list).

Not here: decoding a text (``replay.ingest.parsers.json_decode``), reading a file's lines or a
damaged document's items (``replay.ingest.parsers.jsonl``).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from typing import Any

from replay.ingest.parsers.json_decode import loads
from replay.ingest.parsers.source import Issue

_WHITESPACE = b" \t\r\n"
"""JSON's whitespace (RFC 8259), the only bytes a document may end with."""


def utf8_text(data: bytes) -> tuple[str, list[tuple[int, int, int]]]:
    """``data.decode("utf-8", "replace")`` and, for each U+FFFD put in, (its index in the text,
    the offset and the length of the bytes it stands for); one pass over ``data`` (each
    stretch up to an invalid sequence decoded from a view: no copy of the rest)."""
    view, size = memoryview(data), len(data)
    parts: list[str] = []
    bad: list[tuple[int, int, int]] = []
    pos, chars = 0, 0
    while pos < size:
        try:
            text, _ = codecs.utf_8_decode(view[pos:], "strict", True)
        except UnicodeDecodeError as exc:
            text, _ = codecs.utf_8_decode(view[pos:pos + exc.start], "strict", True)
            parts.append(text)
            chars += len(text)
            bad.append((chars, pos + exc.start, exc.end - exc.start))
            parts.append("\ufffd")
            chars += 1
            pos += exc.end
            continue
        parts.append(text)
        break
    return "".join(parts), bad


def document(data: bytes, path: str, issues: list[Issue],
             decode: Callable[[bytes | str], Any] = loads) -> Any:
    """The document of ``data`` (which ``loads`` refused), its bytes after it and its bytes
    that are not UTF-8 said in ``issues`` (see the module); ``decode`` decodes what is read
    (``data`` without its trailing bytes, or the text with U+FFFD where ``data`` is not
    UTF-8).

    Raises:
        ValueError, RecursionError: the document itself is not read (not JSON, nested too
            deep: ``loads``'s error, the invalid UTF-8 said first).
    """
    text, bad = utf8_text(data)
    try:
        value = loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            _say_bad(data, bad, path, issues)
            raise
        end = exc.pos
    except (ValueError, RecursionError):
        _say_bad(data, bad, path, issues)
        raise
    else:  # (what ``loads`` refused was the bytes that are not UTF-8 only)
        _say_bad(data, bad, path, issues)
        return value
    inside = [b for b in bad if b[0] < end]
    _say_bad(data, inside, path, issues)
    stop = len(text[:end].encode("utf-8", "surrogatepass")) \
        - sum(3 - n for _, _, n in inside)  # (a U+FFFD is 3 bytes, what it stands for n)
    if stop < len(data):
        issues.append(Issue(path, data.count(b"\n", 0, stop) + 1, _trailing(data[stop:])))
    return decode(text[:end] if inside else data[:stop])


def _say_bad(data: bytes, bad: list[tuple[int, int, int]], path: str,
             issues: list[Issue]) -> None:
    if not bad:
        return
    at = bad[0][1]
    more = f"; {len(bad):,} such sequences in all" if len(bad) > 1 else ""
    issues.append(Issue(path, data.count(b"\n", 0, at) + 1,
                        f"invalid UTF-8 at byte {at:,}, read as U+FFFD (the document kept{more})"))


def _trailing(rest: bytes) -> str:
    """What an issue says of the bytes after a complete document."""
    nul = rest.count(0)
    space = sum(rest.count(c) for c in _WHITESPACE)
    other = len(rest) - nul - space
    kinds = ", ".join(f"{n:,} {kind}" for n, kind in
                      ((nul, "NUL"), (space, "whitespace"), (other, "other")) if n)
    n = len(rest)
    return (f"{n:,} byte{'s' if n != 1 else ''} after the complete JSON document ignored "
            f"({kinds}: a writer's padding or garbage); the document read")
