"""What one file's ingest holds in memory at once (#24 item 3: a one-file ingest peaks at no
more than twice the file; ``benchmarks/document_memory.py`` measures the peaks).

Checked without timing or measuring memory: which objects are alive at a given step.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest

from replay.ingest import parse_file as parse_file_module
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers.builder import Source
from tests.conftest import SAMPLES


@pytest.mark.parametrize("sample", [
    "swe-agent/claude-4-sonnet-20250514__sympy__sympy-13372.traj",  # one JSON document
    "mini-swe-agent/sympy__sympy-14248.traj.json",
    "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",  # JSON Lines
])
def test_file_bytes_are_released_before_counting(sample: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The file's bytes (the parsers' ``Source``) are let go once the parser is done: counting
    tokens and building the tables (the step where an ingest peaks) does not hold them too."""
    path = SAMPLES / sample
    alive: list[int] = []
    real = parse_file_module.tokenize

    def spy(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive.append(sum(isinstance(o, Source) and o.path == str(path)
                         for o in gc.get_objects()))
        return real(*args, **kwargs)

    monkeypatch.setattr(parse_file_module, "tokenize", spy)
    parsed = parse_file(path, path.parent)
    assert parsed.tables is not None and parsed.tables.messages.num_rows > 0
    assert alive == [0]
