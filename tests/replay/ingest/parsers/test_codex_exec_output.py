"""A 0.5x Codex exec output's error flag (``codex_items.result`` of a JSON string output): a
document whose top-level ``metadata.exit_code`` is set and not 0, as ``json`` reads it, however
the output ends (the usual success ending is recognised without decoding)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.parsers.codex_items import result
from tests.conftest import SAMPLES

_OK = '"metadata":{"exit_code":0,"duration_seconds":0.5}'


def _reference(output: str) -> bool:
    """The error flag read with ``json`` alone."""
    try:
        doc: Any = json.loads(output)
    except (ValueError, RecursionError):
        return False
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return isinstance(meta, dict) and meta.get("exit_code") not in (0, None)


def _failed(output: str) -> bool:
    return result("function_call_output", {"output": output})[1]


_CASES = [
    '{"output":"x",' + _OK + "}",
    '{"output":"x","metadata":{"exit_code":1,"duration_seconds":0.5}}',
    "{" + _OK + "}",
    '{"metadata":{"exit_code":3},' + _OK + "}",  # (the last of a repeated key)
    '{"a":{' + _OK + '},"metadata":{"exit_code":4}}',  # (an inner metadata, then the outer)
    '{"a":{"output":"x",' + _OK + "}}",  # (the success ending inside an inner object)
    '{"output":"x",' + _OK + "}}",  # (no JSON)
    '{"output":"x\\",' + _OK + "}",  # (an escaped quote: the ending inside the string)
    '{"output":"x\\\\",' + _OK + "}",  # (an escaped backslash, then the ending)
    '{"output":"x","metadata":{"exit_code":0,"duration_seconds":"1"}}',
    '{"output":"x","metadata":{"exit_code":0,"duration_seconds":1e400}}',
    '{"output":"x","metadata":{"exit_code":0,"duration_seconds":0.5,"exit_code":7}}',
    '{"output":"' + "y" * 100 + '",' + _OK + "}",
    '{"x":[' + "[" * 50 + "]" * 50 + '],"metadata":{"exit_code":2,"duration_seconds":0}}',
]


@pytest.mark.parametrize("output", _CASES)
def test_error_flag_as_json_reads_it(output: str) -> None:
    assert _failed(output) == _reference(output)


_PIECES = st.sampled_from(['{"', '"', "}", "{", ",", ":", "\\", "\\\\", '\\"', "0", "1", "x",
                           '"metadata"', '"exit_code"', _OK, "[", "]", "NaN"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=14))
def test_error_flag_of_pieces_put_together(pieces: list[str]) -> None:
    output = '{"' + "".join(pieces)
    assert _failed(output) == _reference(output)


def test_legacy_sample_flags_its_failures() -> None:
    """The legacy sample's 183 JSON outputs: one failed (exit code 2), as ``json`` reads them."""
    path = SAMPLES / "codex" / "example-legacy-2025-09-10.jsonl"
    outputs = [rec["output"] for rec in map(json.loads, Path(path).read_text().splitlines())
               if rec.get("type") == "function_call_output"
               and isinstance(rec.get("output"), str) and rec["output"].startswith('{"')]
    assert len(outputs) == 183
    assert [_failed(o) for o in outputs] == [_reference(o) for o in outputs]
    assert sum(map(_failed, outputs)) == 1
