"""A JSON text nested deeper than ``MAX_DEPTH`` in a field redact reads as JSON (a tool call's
``arguments``, an ``output``, SWE-agent's ``replay_config``) is text to it, as to the parsers
(``json_decode.JSON_REFUSED``): replaced by its size marker, the file written, the copy re-ingested
with the original's figures.  One nested just ``MAX_DEPTH`` levels, or a file that nests as
deep, is redacted as JSON (each file's redaction has room: ``json_depth.ROOM``).  Before,
``RecursionError`` escaped ``redact`` in both cases (the command stopped with a traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import parse_file
from replay.ingest.parsers.json_depth import MAX_DEPTH, ROOM, nesting, on_own_stack
from replay.redact import redact
from tests.conftest import SAMPLES
from tests.fuzz.mutations import join_lines, nodes, serialise_with, split_lines
from tests.fuzz.seeds import build_seeds

_N = MAX_DEPTH + 1
DEEP_TEXT = '{"a":' * _N + "1" + "}" * _N
WITHIN_TEXT = '{"a":' * MAX_DEPTH + '"v"' + "}" * MAX_DEPTH
KEYS = ("arguments", "output", "replay_config")


def _inputs(text: str) -> list[tuple[str, str, bytes]]:
    """(name, file name, the seed with its first string of each of ``KEYS`` ``text``):
    chat, Codex (both rollout shapes) and SWE-agent (a ``replay_config`` added)."""
    seeds = build_seeds(SAMPLES)
    out = []
    for name in ("chat_object", "codex_2025", "codex_legacy", "swe_fc"):
        seed = seeds[name]
        lines = split_lines(seed.data) if seed.jsonl else [seed.data]
        docs: list[Any] = [json.loads(raw) for raw in lines]
        if name == "swe_fc":
            docs[0]["replay_config"] = json.dumps({"agent": {"model": {"name": "m"}}})
        done: set[str] = set()
        for at, doc in enumerate(docs):
            for path, value in list(nodes(doc)):
                if path and path[-1] in KEYS and path[-1] not in done and isinstance(value, str):
                    done.add(path[-1])
                    lines[at] = serialise_with(doc, path, json.dumps(text).encode(),
                                               seed.jsonl)
                    docs[at] = json.loads(lines[at])
        assert done, name
        data = join_lines(lines, seed.data) if seed.jsonl else lines[0]
        out.append((name, seed.filename, data))
    return out


def _redacted(name: str, filename: str, data: bytes, tmp_path: Path) -> bytes:
    """The redacted copy of ``data``, checked: written, re-ingested with the same blocks."""
    source = tmp_path / "in" / filename
    source.parent.mkdir()
    source.write_bytes(data)
    report = redact([source.parent], tmp_path / "out")
    assert report.ok, [str(i) for i in report.issues]
    (written,) = report.files
    a, b = parse_file(source).tables, parse_file(tmp_path / "out" / written.archived_as).tables
    assert a is not None and b is not None, name
    for col in ("kind", "role", "n_chars", "n_bytes"):
        assert b.messages[col].to_pylist() == a.messages[col].to_pylist(), (name, col)
    return (tmp_path / "out" / written.archived_as).read_bytes()


@pytest.mark.parametrize("case", _inputs(DEEP_TEXT), ids=lambda c: c[0])
def test_a_json_text_nested_too_deep_is_redacted_as_text(case: tuple[str, str, bytes],
                                                         tmp_path: Path) -> None:
    copy = _redacted(*case, tmp_path)
    assert DEEP_TEXT[:200].encode() not in copy and json.dumps(DEEP_TEXT)[:200].encode() not in copy


@pytest.mark.parametrize("case", _inputs(WITHIN_TEXT), ids=lambda c: c[0])
def test_a_json_text_nested_as_deep_as_ingest_reads_is_redacted_as_json(
        case: tuple[str, str, bytes], tmp_path: Path) -> None:
    """Its value ``"v"`` is replaced by a marker; its keys ``a`` are kept (names)."""
    copy = _redacted(*case, tmp_path)
    assert b'\\"v\\"' not in copy and b'{\\"a\\": {\\"a\\":' in copy


def test_a_file_nested_as_deep_as_ingest_reads_is_redacted(tmp_path: Path) -> None:
    """A chat file whose first message holds a field nested so that the file nests
    ``MAX_DEPTH`` levels."""
    doc = json.loads(build_seeds(SAMPLES)["chat_object"].data)
    value: Any = "secret value"
    for _ in range(MAX_DEPTH - 3):  # the document, its messages, the message
        value = [value]
    doc["messages"][0]["meta"] = value
    data = on_own_stack(lambda d: json.dumps(d).encode(), doc, ROOM)
    copy = _redacted("chat_object", "chat.json", data, tmp_path)
    assert b"secret value" not in copy and nesting(copy) == MAX_DEPTH
