"""Byte and JSON mutations for the fuzz tests: bytes whose repr shows only where they differ
from the seed, lines split and joined as the JSON Lines readers see them, and any JSON node
replaced, deleted, or written as raw bytes (values too deep or too big to build).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.fuzz.seeds import dump_doc, dump_line

SENTINEL = "\x00ctxreplay-fuzz\x00"
"""Stands in for a replaced JSON value while its container is serialised."""


class Mutated(bytes):
    """Mutated input bytes whose repr shows only where they differ from the seed."""

    seed: bytes = b""

    def __repr__(self) -> str:
        a, b = self.seed, bytes(self)
        i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        j = 0
        while j < min(len(a), len(b)) - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
            j += 1
        changed = b[i:len(b) - j]
        shown = changed if len(changed) <= 300 else changed[:150] + b"..." + changed[-150:]
        return (f"<{len(b):,} bytes; seed bytes {i:,}..{len(a) - j:,} (of {len(a):,}) "
                f"replaced by {len(changed):,} bytes {shown!r}; before: {b[max(0, i - 60):i]!r}>")


def mutated(seed: bytes, data: bytes) -> Mutated:
    out = Mutated(data)
    out.seed = seed
    return out


def split_lines(data: bytes) -> list[bytes]:
    """The lines of ``data`` without their newlines (a final newline ends the last line)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def join_lines(lines: list[bytes], data: bytes) -> bytes:
    """``lines`` joined, ending with a newline when ``data`` did."""
    return b"\n".join(lines) + (b"\n" if data.endswith(b"\n") else b"")


def json_object(raw: bytes) -> dict[str, Any] | None:
    """The line as a JSON object the way ``iter_records`` reads it, else None."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (path, value) inside a JSON value, the value itself first."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from nodes(v, (*path, i))


def replace_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``value`` with the node at ``path`` replaced (``path`` empty: ``new``)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: replace_at(v, rest, new) if k == head else v for k, v in value.items()}
    return [replace_at(v, rest, new) if i == head else v for i, v in enumerate(value)]


def delete_at(value: Any, path: tuple[Any, ...]) -> Any:
    """A copy of ``value`` without the dict key (or list item) at ``path`` (non-empty)."""
    head, rest = path[0], path[1:]
    if rest:
        if isinstance(value, dict):
            return {k: delete_at(v, rest) if k == head else v for k, v in value.items()}
        return [delete_at(v, rest) if i == head else v for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != head}
    return [v for i, v in enumerate(value) if i != head]


def serialise_with(doc: Any, path: tuple[Any, ...], replacement: bytes, jsonl: bool) -> bytes:
    """``doc`` serialised in the seed layout with the node at ``path`` written as raw bytes
    (for values too deep or too big to build as Python objects)."""
    dump = dump_line if jsonl else dump_doc
    text = dump(replace_at(doc, path, SENTINEL))
    token = dump_line(SENTINEL)
    assert text.count(token) == 1
    return text.replace(token, replacement)


def deep_list(inner: bytes, depth: int) -> bytes:
    """``inner`` wrapped in ``depth`` JSON lists."""
    return b"[" * depth + inner + b"]" * depth
