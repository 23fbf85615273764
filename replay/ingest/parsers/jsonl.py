"""Reading JSON and JSON Lines sources without falling over on bad bytes.

``iter_records`` yields ``(line_no, record)`` for every line that is a JSON
object and reports every other line as an ``Issue`` (malformed JSON, invalid
UTF-8, NUL bytes, a truncated last line) so the rest of the file is still read.
``load_json`` reads a whole-file JSON document with the same reporting, optionally with its
big arrays left undecoded (``lazy``: each item decoded by ``item`` when the parser reaches it).
The JSON decoder every parser uses is ``replay.ingest.parsers.json_decode`` (``loads``,
``item``, ``JSON_REFUSED``): parsers import it from there.
"""

from __future__ import annotations

import functools
import json
import re
from array import array
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any, TypeVar

import msgspec
import pyarrow as pa

from replay.ingest.input_files import document_too_big
from replay.ingest.parsers.coverage import LINE_NOT_READ
from replay.ingest.parsers.json_decode import JSON_REFUSED, _decode, _loads_checked, item, loads
from replay.ingest.parsers.json_depth import MAX_DEPTH, check_each, decoded, too_deep
from replay.ingest.parsers.json_document import document
from replay.ingest.parsers.jsonl_batch import plain_lines
from replay.ingest.parsers.jsonl_reread import LineIndex, reread
from replay.ingest.parsers.source import Issue, Source

__all__ = ["LAZY_MIN_BYTES", "MAX_LINE_BYTES", "ItemLines", "array_items", "as_obj", "as_str",
           "first_record", "iter_records", "iter_typed", "load_json", "load_or_salvage"]

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A single line longer than this is reported and skipped: no model's context holds one record
this big (16 MiB is several million tokens), and decoding and tokenising it would stall the
batch."""
T = TypeVar("T")
_TOO_DEEP = f"JSON nested too deeply (over {MAX_DEPTH:,} levels)"
_SEPARATORS = re.compile(r"[\s,]*")
_decode_top = msgspec.json.Decoder(list[msgspec.Raw] | dict[str, msgspec.Raw]).decode
_decode_items = msgspec.json.Decoder(list[msgspec.Raw]).decode
LAZY_MIN_BYTES = 4 << 20
"""A document smaller than this (4 MiB) is decoded whole even when ``load_json`` is given
``lazy``: the lazy read passes over the array twice (finding its end, then its items) and
decodes item by item, 1.8x the time of the whole decode (2.6 against 1.5 ms on the 1.3 MB
SWE-agent sample), while what the whole decode holds of a small document is small (tens of MB
at most)."""


def iter_records(src: Source, issues: list[Issue]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every JSON object line of ``src`` with its 1-based line number; problems go to ``issues``."""
    return _records(src, issues, None, None)


def iter_typed(src: Source, issues: list[Issue], typed: Callable[[bytes], T],
               of_dict: Callable[[dict[str, Any]], T], *,
               lines: Callable[[memoryview], list[T]] | None = None, stream: bool = False,
               index: LineIndex | None = None) -> Iterator[tuple[int, T]]:
    """``iter_records`` with each line decoded by ``typed`` (a msgspec decoder into a Struct
    of the fields a parser reads: the rest of the line is skipped, not built), the same
    lines, values and issues: a line ``typed`` refuses (not an object, not JSON as msgspec
    reads it, a field of a type the Struct does not take) is decoded as ``iter_records``
    decodes it, then made a Struct by ``of_dict``.  msgspec passes over a skipped field's
    bytes unchecked, so a line that is not ASCII is checked to be UTF-8 first (one that is
    not is skipped with its issue, as ``iter_records`` does).  ``lines``: the same decoder's
    ``decode_lines``, to decode lines a batch at a time where that gives what a line at a
    time gives (``jsonl_batch``: in a file that is UTF-8, read from memory).

    ``stream``: a file of ``jsonl_reread.STREAM_MIN_BYTES`` or more that ``src`` read from
    disk (``Source.on_disk``) is read again from there a piece at a time, ``src``'s bytes let
    go first (``jsonl_reread.pieces``); the same lines, values and issues, but for a file that
    changed in between: ``jsonl_reread.SourceChanged`` once it is read.  ``index``: told
    whether the file is so read, and each line as it is read then (``LineIndex``: the parser
    keeps those it reads again)."""
    pieces = reread(src, issues, MAX_LINE_BYTES, _too_long) if stream else None
    if pieces is not None and index is not None:
        index.start(src)
    if lines is None or pieces is not None or check_each():  # (a line at a time)
        return _records(src, issues, typed, of_dict, pieces, index)
    batches = _records(src, issues, typed, of_dict, None, None, lines)
    return chain.from_iterable(enumerate(values, no) for no, values in batches)  # (each
    # line handed on in C, not by resuming the reader: ~1% of a Claude Code parse)


def _records(src: Source, issues: list[Issue], typed: Callable[[bytes], Any] | None,
             of_dict: Callable[[dict[str, Any]], Any] | None,
             pieces: Iterator[tuple[bytes, int, int]] | None = None,
             index: LineIndex | None = None,
             lines: Callable[[memoryview], list[Any]] | None = None
             ) -> Iterator[tuple[int, Any]]:
    """Each object line's number and record; with ``lines`` (``iter_typed``, no ``pieces``),
    each run of consecutive lines' first number and values (a batch, or one line) instead."""
    batched = lines is not None
    generic = _loads_checked
    fast: Callable[[bytes], Any] | None = _decode
    if check_each():  # a decoder could go past MAX_DEPTH here: each line is measured first
        generic, fast, lines = loads, None, None
        typed = None if typed is None else functools.partial(decoded, typed)
    note = index if pieces is not None else None  # (each line noted: the parser may keep it)
    for data, no, at in pieces or ((src.data, 0, 0),):
        checked = typed is not None and _is_utf8(data)  # (every line UTF-8: none checked
        # again; else each line that is not ASCII is, and one that is not UTF-8 is reported)
        size, pos = len(data), 0
        batch, view, single = lines if checked else None, memoryview(data), -1
        while pos < size:  # a line at a time: never every line's bytes at once beside the file's
            if batch is not None and pos > single:  # (past the batch last read line by line)
                values, stop = plain_lines(batch, data, view, pos, MAX_LINE_BYTES)
                if values is None:
                    single = stop  # (its lines one at a time)
                else:
                    yield no + 1, values
                    no += len(values)
                    pos = stop + 1
                    continue
            end = data.find(b"\n", pos)
            partial = end < 0  # the last line, with no newline after it
            end = size if partial else end
            raw, pos, no = data[pos:end], end + 1, no + 1
            if not raw or raw.isspace():  # (not raw.strip(): a copy of every line)
                continue
            if len(raw) > MAX_LINE_BYTES:
                issues.append(_too_long(src, no, len(raw)))
                src.coverage.unknown(LINE_NOT_READ)
                continue
            if note is not None:
                note.no, note.at, note.raw = no, at + end - len(raw), raw
            if typed is not None:
                try:
                    if not checked and not raw.isascii():  # (most lines are ASCII)
                        raw.decode()  # (UnicodeDecodeError: the generic way reports it)
                    line = typed(raw)
                except Exception:  # noqa: BLE001, S110 - decoded the generic way just below
                    pass
                else:
                    yield no, (line,) if batched else line
                    continue
            try:
                if fast is None:
                    record = generic(raw)
                else:
                    try:  # (``_loads_checked``'s first step without its call: most lines)
                        record = fast(raw)
                    except Exception:  # noqa: BLE001 - whatever msgspec refuses, as generic
                        record = generic(raw)
            except UnicodeDecodeError as exc:
                issues.append(Issue(src.path, no,
                                    f"invalid UTF-8 at byte {exc.start} (line skipped)"))
                src.coverage.unknown(LINE_NOT_READ)
                continue
            except ValueError as exc:
                what = "incomplete last line (file still being written?)" if partial \
                    else "malformed JSON"
                issues.append(Issue(src.path, no, f"{what}: {exc} (line skipped)"))
                src.coverage.unknown(LINE_NOT_READ)
                continue
            except RecursionError:
                issues.append(Issue(src.path, no, _TOO_DEEP + " (line skipped)"))
                src.coverage.unknown(LINE_NOT_READ)
                continue
            if not isinstance(record, dict):
                issues.append(Issue(src.path, no, "expected a JSON object, got "
                                                  f"{type(record).__name__}"))
                src.coverage.unknown(LINE_NOT_READ)
                continue
            yield no, record if of_dict is None else (of_dict(record),) if batched \
                else of_dict(record)


def _too_long(src: Source, no: int, size: int) -> Issue:
    return Issue(src.path, no, f"line of {size:,} bytes is over the {MAX_LINE_BYTES:,}-byte "
                               "limit (skipped)")


def load_json(src: Source, issues: list[Issue], lazy: tuple[str | None, ...] = ()) -> Any:
    """The whole file as one JSON document, or None (with an issue) when it is not valid JSON
    or too big to decode whole (``input_files.document_too_big``).  Bytes after a complete
    document and bytes that are not UTF-8 inside it are read by ``json_document``'s rule (the
    one every document parser follows): ignored, read as U+FFFD, each said.  A document broken
    inside (cut short, a syntax error: the caller may salvage its items) is decoded once, its
    error said as ``json`` gives it: the rule would decode the same text again to fail the same.

    ``lazy`` names the arrays to leave undecoded in a document of ``LAZY_MIN_BYTES`` or more:
    None the document itself when it is an array, a key the array under that key of a document
    that is an object.  Such an array is a list of ``msgspec.Raw`` (each item's text, a slice
    of the file's bytes: 48 bytes an item, where the decoded items of a document of tiny values
    take ~6x the file), the parser decoding each item with ``item`` when it reaches it and
    letting it go after.  The rest of the document is decoded as it would be whole, and the
    values and issues are the same as without ``lazy``: a document the lazy read does not take
    as it is (not UTF-8, not JSON as msgspec reads it: ``NaN``, an escaped lone surrogate,
    nesting too deep) is decoded whole instead.
    """
    if why := document_too_big(len(src.data)):
        issues.append(Issue(src.path, 0, why))
        return None
    if lazy and len(src.data) >= LAZY_MIN_BYTES and \
            (doc := _lazy_document(src.data, lazy)) is not None:
        return doc
    try:
        return loads(src.data)
    except json.JSONDecodeError as exc:  # (``json`` read the text: it is UTF-8)
        if exc.msg != "Extra data":  # the document itself is broken: the rule would decode
            # it again only to fail the same way (a damaged 20 MB trajectory: 0.6 -> 0.4 s)
            issues.append(Issue(src.path, exc.lineno, f"malformed JSON: {exc}"))
            return None
    except (ValueError, RecursionError):  # bytes not UTF-8, too deep: the rule for them
        pass
    try:
        return document(src.data, src.path, issues,
                        lambda body: _decoded(body, lazy))
    except RecursionError:
        issues.append(Issue(src.path, 0, _TOO_DEEP))
    except ValueError as exc:
        issues.append(Issue(src.path, getattr(exc, "lineno", 0), f"malformed JSON: {exc}"))
    return None


def _decoded(body: bytes | str, lazy: tuple[str | None, ...]) -> Any:
    """``body`` (a document that was read without its bytes after it, or a text with U+FFFD:
    ``json_document.document``) decoded as ``load_json`` decodes a document."""
    if lazy and isinstance(body, bytes) and len(body) >= LAZY_MIN_BYTES and \
            (doc := _lazy_document(body, lazy)) is not None:
        return doc
    return loads(body)


def _lazy_document(data: bytes, lazy: tuple[str | None, ...]) -> Any:
    """``data`` decoded with the arrays ``lazy`` names left as lists of ``msgspec.Raw``
    (``load_json``), or None when it cannot be read so (then it is decoded whole)."""
    if not _is_utf8(data):  # msgspec passes over the bytes of an undecoded item unchecked
        return None
    if check_each() and too_deep(data):  # (its items are decoded later, each by itself)
        return None
    try:
        top = _decode_top(data)
        if isinstance(top, list):
            return top if None in lazy else None
        return {key: _decode_items(raw) if key in lazy and _is_array(raw) else item(raw)
                for key, raw in top.items()}
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, ValueError):
        return None


def _is_array(raw: msgspec.Raw) -> bool:
    return memoryview(raw)[:1].tobytes() == b"["


def _is_utf8(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 as ``bytes.decode`` reads it (refusing what it refuses:
    surrogates, overlong forms, code points past U+10FFFF, a cut-off sequence), by Arrow's
    validation of a string array over the bytes: one pass in C that makes nothing (no string
    of the data's size; 0.45 ms for the samples' 6 MB of Claude Code lines, where decoding
    each line that is not ASCII and dropping the string took 1.2 ms)."""
    if data.isascii():
        return True
    whole = pa.Array.from_buffers(pa.large_utf8(), 1, [
        None, pa.py_buffer(array("q", (0, len(data)))), pa.py_buffer(data)])
    try:
        whole.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def first_record(data: bytes) -> dict[str, Any] | None:
    """The first line of a JSON Lines head as an object, or None (for format sniffing)."""
    for raw in data.split(b"\n", 64)[:64]:
        if raw.strip():
            try:  # (json.loads: a head in UTF-16 or with a BOM is read as before)
                rec = decoded(json.loads, raw)
            except JSON_REFUSED:
                return None
            return rec if isinstance(rec, dict) else None
    return None


def array_items(src: Source, key: str | None) -> tuple[list[tuple[int, Any]], int]:
    """The items of one JSON array in ``src``, read one by one, each with its first line.

    This keeps the items before a syntax error of a damaged or truncated file and gives each
    item's line for issues.

    Args:
        src: the source file.
        key: the array's key (its first occurrence in the text); None for a top-level array.

    Returns:
        (line, item) pairs, and the line where reading stopped early (0 when the array closed);
        nothing for a document over the size limit (``load_json`` says so): its items would
        take the memory of the whole document.
    """
    if document_too_big(len(src.data)):
        return [], 0
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
        except JSON_REFUSED:
            return items, line
        items.append((line, item))
        pos = end


def load_or_salvage(src: Source, issues: list[Issue], key: str, noun: str, lost: str,
                    lazy: tuple[str | None, ...] = ()) -> tuple[Any, list[tuple[int, Any]] | None]:
    """The file's JSON document (``load_json``, with the arrays ``lazy`` names undecoded), or
    for a damaged file ``{key: [readable items]}`` (decoded: ``item`` takes both).

    A file that does not parse as a whole keeps the items of its ``key`` array read one by
    one before the break (``array_items``), with one issue saying how many ``noun`` were kept
    and what was ``lost``.

    Returns:
        (document or None, the salvaged (line, item) pairs or None when the file parsed).
    """
    doc = load_json(src, issues, lazy)
    if doc is not None:
        return doc, None
    found, stop = array_items(src, key)
    if not found:
        return None, None
    issues.append(Issue(src.path, stop, f"damaged file: kept the {len(found)} readable "
                                        f"{noun} ({lost})"))
    return {key: [item for _, item in found]}, found


class ItemLines:
    """The first line of each of the ``count`` items of one JSON array in ``src`` (0 for every
    item when ``array_items`` finds another number of them), found only when first asked: a
    document that decoded whole needs them for issues only, and finding them decodes the file
    a second time."""

    def __init__(self, src: Source, key: str | None, count: int,
                 found: list[tuple[int, Any]] | None = None) -> None:
        self._src, self._key, self._count = src, key, count
        self._lines = None if found is None else self._of(found)

    def __getitem__(self, i: int) -> int:
        if self._lines is None:
            self._lines = self._of(array_items(self._src, self._key)[0])
        return self._lines[i]

    def at(self, i: int) -> Callable[[], int]:
        """Item ``i``'s line, as a function (for ``RunBuilder.tool_result``)."""
        return lambda: self[i]

    def _of(self, found: list[tuple[int, Any]]) -> list[int]:
        return [line for line, _ in found] if len(found) == self._count else [0] * self._count


def as_obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str:
    """``value`` when it is a JSON string, else an empty one."""
    return value if isinstance(value, str) else ""
