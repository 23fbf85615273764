"""tiktoken's panic fallback (``token_parts.encode_safely``): where tiktoken's regex engine
panics on a text that holds no long whitespace run (none is known: forced here by an encoder
that panics on the whole text), the text is counted in 64 Ki-character chunks, an estimate.
It was neither flagged nor said, as a forced cut or a whitespace run counted in chunks is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import token_parts
from tests.replay.ingest.test_token_parts import SHORT, tiktoken_counts  # noqa: F401 - a fixture


class PanicException(BaseException):
    """What pyo3 raises for a Rust panic (not an ``Exception``; ``encode_safely`` knows it by
    its name)."""


_WORDS = "alpha beta gamma " * 12_000
"""A text of 204,000 characters (no long whitespace run, no forced cut): 4 chunks' cuts."""


@pytest.fixture
def panicking(monkeypatch: pytest.MonkeyPatch, tiktoken_counts: None  # noqa: F811
              ) -> Iterator[None]:
    """tiktoken panics on a text longer than a chunk holding ``_WORDS``; the texts of the
    panics are forgotten after."""
    encode = tiktoken.Encoding.encode_ordinary

    def encode_ordinary(self: tiktoken.Encoding, text: str) -> list[int]:
        if len(text) > token_parts.CHUNK_CHARS and "alpha beta" in text:
            raise PanicException("thread panicked: StackOverflow")
        return encode(self, text)

    monkeypatch.setattr(tiktoken.Encoding, "encode_ordinary", encode_ordinary)
    monkeypatch.setattr(token_parts, "PANICKED", set(), raising=False)
    yield


def test_a_text_tiktoken_panics_on_is_flagged_and_said_by_ingest(tmp_path: Path,
                                                                 panicking: None) -> None:
    lines = [json.loads(x) for x in SHORT.read_text(encoding="utf-8").splitlines()]
    lines[3]["message"]["content"] = _WORDS
    path = tmp_path / SHORT.name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    runner = CliRunner()
    got = runner.invoke(app, ["ingest", str(path), "--out", str(tmp_path / "ds"), "--json"])
    assert got.exit_code == 0, got.output
    said = [i for i in json.loads(got.stdout)["issues"] if "counted in parts" in i]
    assert len(said) == 1
    assert "1 text counted in parts" in said[0] and "panicked on" in said[0]
    assert "cut 3 time(s)" in said[0] and "estimated" in said[0]
    runs = runner.invoke(app, ["runs", str(tmp_path / "ds"), "--json"])
    assert runs.exit_code == 0, runs.output
    assert [r["estimated_blocks"] for r in json.loads(runs.stdout)] == [1]
