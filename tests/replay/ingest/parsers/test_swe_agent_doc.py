"""A SWE-agent trajectory read with its steps' prompts undecoded (``swe_agent_doc.document``)
parses as the document decoded whole does (``jsonl.load_or_salvage``): the same tables, issues
and coverage, for the samples and for variants of one whose steps hold what msgspec and
``json`` read apart (duplicate keys, ``NaN``, a lone surrogate, bytes that are no UTF-8, a
step that is no object, an unknown top-level key)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import replay.ingest.parsers.swe_agent_doc as swe_doc
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import jsonl
from tests.conftest import SAMPLES

SAMPLE_PATHS = sorted((SAMPLES / "swe-agent").glob("*.traj"))
_WITH_QUERIES = SAMPLES / "swe-agent" / "claude-4-sonnet-20250514__sympy__sympy-13372.traj"
"""A sample whose steps hold their prompts (``query``) and one step without an action."""


def _read(path: Path) -> tuple[Any, ...]:
    parsed = parse_file(path, path.parent, fmt="swe_agent", tokenizers=())
    tables = parsed.tables
    rows = None if tables is None else tuple(
        getattr(tables, name).to_pylist() for name in ("runs", "messages", "requests", "events"))
    return rows, [str(i) for i in parsed.issues], parsed.coverage


def _both_ways(path: Path) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    typed = _read(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(swe_doc, "document", lambda data: None)
        whole = _read(path)
    return typed, whole


@pytest.mark.parametrize("path", SAMPLE_PATHS, ids=lambda p: p.name)
def test_samples_read_with_prompts_undecoded_parse_the_same(path: Path) -> None:
    assert swe_doc.document(path.read_bytes()) is not None  # (the typed way is taken)
    typed, whole = _both_ways(path)
    assert typed == whole
    assert typed[0] is not None


def _variant(tmp_path: Path, edit: Any) -> Path:
    doc = json.loads(_WITH_QUERIES.read_text())
    text = edit(doc) if callable(edit) else edit
    out = tmp_path / "t.traj"
    out.write_bytes(text if isinstance(text, bytes) else json.dumps(doc).encode())
    return out


def _with_step_text(old: str, new: str) -> Any:
    def edit(doc: dict[str, Any]) -> bytes:
        text = json.dumps(doc)
        assert old in text
        return text.replace(old, new, 1).encode()
    return edit


_QUERY = '"query": ['
_VARIANTS: dict[str, Any] = {
    "a step's action twice (the last kept)": _with_step_text('"action": ', '"action": "ls", '
                                                             '"action": '),
    "NaN in a step's query": _with_step_text(_QUERY, '"query": [NaN, '),
    "a lone surrogate in a step's query": _with_step_text(_QUERY, '"query": ["\\ud800", '),
    "a number out of msgspec's range in a step's query": _with_step_text(_QUERY,
                                                                         '"query": [1e999, '),
    "bytes that are no UTF-8 in a step's query": lambda doc: json.dumps(doc).replace(
        _QUERY, '"query": ["\udcff", ', 1).encode("utf-8", "surrogateescape"),
    "a step that is no object": lambda doc: doc["trajectory"].insert(1, [1, 2]),
    "a first step whose query is a string": lambda doc: doc["trajectory"][0].update(
        query="q"),
    "a first step's query null, its messages a list": lambda doc: doc["trajectory"][0].update(
        query=None, messages=[{"role": "system", "content": "s"}]),
    "a step without a query": lambda doc: [s.pop("query", None) for s in doc["trajectory"]],
    "an unknown top-level key": lambda doc: doc.update(other=1),
    "no history": lambda doc: doc.pop("history"),
    "a trajectory that is no list": lambda doc: doc.update(trajectory={"a": 1}),
    "no trajectory": lambda doc: doc.pop("trajectory"),
}


_READ_TYPED = {
    "a step's action twice (the last kept)",
    "a number out of msgspec's range in a step's query",
    "a first step whose query is a string",
    "a first step's query null, its messages a list",
    "a step without a query",
    "no history",
}
"""The variants read with the prompts undecoded (the rest are read whole: same path twice)."""


@pytest.mark.parametrize("name", list(_VARIANTS))
def test_variants_parse_the_same_either_way(tmp_path: Path, name: str) -> None:
    path = _variant(tmp_path, _VARIANTS[name])
    assert (swe_doc.document(path.read_bytes()) is not None) == (name in _READ_TYPED)
    typed, whole = _both_ways(path)
    assert typed == whole


def test_a_step_without_an_action_takes_the_next_steps_query_the_same_way(
        tmp_path: Path) -> None:
    """The requery prompt is read from the next step's raw query, decoded when needed."""
    def edit(doc: dict[str, Any]) -> None:
        doc["trajectory"][0]["action"] = ""
        doc["trajectory"][0]["observation"] = ""
        doc["trajectory"][1]["query"] = [{"role": "user", "content": "format error: retry"}]
    path = _variant(tmp_path, edit)
    assert swe_doc.document(path.read_bytes()) is not None
    typed, whole = _both_ways(path)
    assert typed == whole
    assert any(m["text"] == "format error: retry" for m in typed[0][1])


def test_a_document_read_lazily_is_not_read_this_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """A document of ``jsonl.LAZY_MIN_BYTES`` or more is left to the lazy read (a step decoded
    at a time and let go: this way would hold every step's fields and the history at once)."""
    data = _WITH_QUERIES.read_bytes()
    assert swe_doc.document(data) is not None
    monkeypatch.setattr(jsonl, "LAZY_MIN_BYTES", len(data))
    assert swe_doc.document(data) is None
