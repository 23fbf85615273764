"""Any string field may hold a JSON text nested deeper than ``MAX_DEPTH``, or just as deep:
a tool call's ``arguments``, an output, a config.  The parsers that try a string field as JSON
keep a deeper one as text (``json_decode.JSON_REFUSED``), as they keep a string that is not JSON at
all, and decode and write back one as deep (``json_text``) whatever the caller's stack; the
file is read as it would be with any other text there.  Before, a 1 MB ``[[[…`` in a chat tool call's
``arguments`` (found by the long fuzz run: ``test_huge_strings``, ``chat_object``) raised
``RecursionError`` out of the parser and the whole file was lost; so did arguments nested
995 levels, decoded but not written back (``json_text`` on the parser's stack)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_source
from replay.ingest.parsers.json_depth import MAX_DEPTH
from replay.ingest.parsers.source import Source
from tests.fuzz.harness import EXAMPLES, LIMIT, parse_direct
from tests.fuzz.mutations import join_lines, json_object, nodes, serialise_with, split_lines
from tests.fuzz.seeds import NEW_FORMAT_SEEDS, SEEDS_AT_IMPORT, Seed
from tests.replay.ingest.parsers.test_parse_mini_swe_agent import V2_DOC

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NEW_SEEDS = {name: seed for name, seed in NEW_FORMAT_SEEDS.items() if not seed[1].endswith(".eval")}
"""The new formats' JSON seeds (the zip is no JSON text)."""


def _deep(kind: str) -> str:
    """A JSON text nested one level past ``MAX_DEPTH``, starting as an object's text starts
    (``{"``: what the Codex parser's prefix checks look for) or as an array's."""
    n = MAX_DEPTH + 1
    return '{"a":' * n + "1" + "}" * n if kind == "{" else "[" * n + "]" * n


def _within(kind: str) -> str:
    """A JSON text nested ``MAX_DEPTH`` levels: decoded, whatever the caller's stack, into a
    value the parser then writes back (``json_text``: its arguments as the model saw them)."""
    n = MAX_DEPTH
    return '{"a":' * n + "1" + "}" * n if kind == "{" else "[" * n + "]" * n


WITHIN = [json.dumps(_within(kind)).encode() for kind in ("{", "[")[:1 + (EXAMPLES >= 1000)]]
DEEP = [json.dumps(_deep(kind)).encode() for kind in ("{", "[")[:1 + (EXAMPLES >= 1000)]] + WITHIN
PLAIN = json.dumps("x" + _deep("{")[1:]).encode()
"""The same characters but the first: a text no parser takes for JSON."""


def _field(doc: Any, path: tuple[Any, ...]) -> tuple[Any, ...]:
    """The field a node is an instance of: its path's keys (list positions left out), each
    object on the way named by what kind of record it is (its ``type``, ``role``, ``event``
    or ``kind``): a tool message's ``content`` is another field than a user message's."""
    out: list[Any] = []
    node = doc
    for key in (*path, None):
        if isinstance(node, dict):
            out.extend(v for k in _KIND_KEYS if isinstance(v := node.get(k), str))
        if key is None:
            break
        if isinstance(key, str):
            out.append(key)
        node = node[key]
    return tuple(out)


_KIND_KEYS = ("type", "role", "event", "kind")


def _variants(data: bytes, jsonl: bool) -> list[tuple[tuple[Any, ...], bytes, bytes | None]]:
    """The seed's nodes replaced, one at a time: (where, the file with it, the file with
    ``PLAIN`` there instead, or None).  Each string by each of ``DEEP`` (the text nested
    ``MAX_DEPTH`` levels only where the string was a JSON text, unless
    ``CTXREPLAY_FUZZ_EXAMPLES`` >= 1000); any node by arrays nested so that its line (its
    document) nests ``MAX_DEPTH`` levels, as deep as ingest reads.  Every node with
    ``CTXREPLAY_FUZZ_EXAMPLES`` >= 1000; else the first string of each field (``_field``) and
    the first other node under each key."""
    out: list[tuple[tuple[Any, ...], bytes, bytes | None]] = []
    texts: set[tuple[Any, ...]] = set()
    keys: set[Any] = set()
    every = EXAMPLES >= 1000
    lines = split_lines(data) if jsonl else [data]
    docs = [(at, json_object(raw)) for at, raw in enumerate(lines)] if jsonl \
        else [(0, json.loads(data))]
    for at, doc in docs:
        for path, value in nodes(doc):
            if not path:
                continue

            def file_with(raw: bytes, path: tuple[Any, ...] = path, doc: Any = doc,
                          at: int = at) -> bytes:
                new = serialise_with(doc, path, raw, True)  # (a document on one line too)
                return join_lines([*lines[:at], new, *lines[at + 1:]], data) if jsonl else new

            key = next((k for k in reversed(path) if isinstance(k, str)), None)
            if every or key not in keys:
                keys.add(key)
                k = MAX_DEPTH - len(path)
                out.append(((at, *path), file_with(b"[" * k + b"]" * k), None))
            if isinstance(value, str) and (every or _field(doc, path) not in texts):
                texts.add(_field(doc, path))
                plain = file_with(PLAIN)
                json_text = value.lstrip()[:1] in ("{", "[")
                out += [((at, *path), file_with(deep), plain) for deep in DEEP
                        if deep not in WITHIN or json_text or every]
    return out


def _shape(fmt: str, filename: str, data: bytes) -> list[tuple[int, int]]:
    """The runs the format's parser reads from ``data``: (blocks, requests) each."""
    src = Source(path=f"/fuzz/{filename}", rel=filename, data=data,
                 sha256=hashlib.sha256(data).hexdigest())
    return [(d.run["n_blocks"], d.run["n_requests"]) for d in parse_source(fmt, src, [])[0]]


def _check(name: str, fmt: str, filename: str, data: bytes, jsonl: bool) -> int:
    """Each variant parses (``parse_direct``'s checks: nothing escapes the parser), a string's
    into the runs the same file gives with a plain text in that field."""
    variants = _variants(data, jsonl)
    for where, new, plain in variants:
        try:
            drafts, _issues = parse_direct(fmt, filename, new, LIMIT)
        except Exception as exc:
            raise AssertionError(f"{name}: {where}") from exc
        if plain is not None:
            got = [(d.run["n_blocks"], d.run["n_requests"]) for d in drafts]
            assert got == _shape(fmt, filename, plain), (name, where)
    return len(variants)


@pytest.mark.parametrize("name", SEEDS_AT_IMPORT)
def test_a_deep_json_text_in_any_string_field_is_text(seeds: dict[str, Seed], name: str) -> None:
    seed = seeds[name]
    assert _check(name, seed.fmt, seed.filename, seed.data, seed.jsonl) > 0


@pytest.mark.parametrize("name", NEW_SEEDS)
def test_a_deep_json_text_in_any_string_field_of_the_new_formats_is_text(name: str) -> None:
    fmt, filename = NEW_SEEDS[name]
    data = (FIXTURES / fmt / filename).read_bytes()
    assert _check(name, fmt, filename, data, filename.endswith(".jsonl")) > 0


def test_a_deep_json_text_in_mini_swe_agent_2_s_tool_calls_is_text() -> None:
    data = json.dumps(V2_DOC).encode()  # 2.x's structured calls: not in the seeds
    assert _check("mini_v2", "mini_swe_agent", "v2.traj.json", data, False) > 0
