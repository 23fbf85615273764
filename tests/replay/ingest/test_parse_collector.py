"""``parse_file`` parses and builds the tables with the cyclic garbage collector off
(``replay.memory.collector_paused``) and leaves it as it found it, whatever happens."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from replay.ingest import parse_file as parse_file_module
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import PARSERS

LOG = ('{"type": "user", "sessionId": "s", "uuid": "u1", "message": {"role": "user", '
       '"content": "hi"}}\n')


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the collector was on, as the Claude Code parser and the table building saw it."""
    states: list[bool] = []
    real_parse, real_tokenize = PARSERS["claude_code"].parse, parse_file_module.tokenize

    def parse(*args: object) -> object:
        states.append(gc.isenabled())
        return real_parse(*args)  # type: ignore[arg-type]

    def tokenize(*args: object, **kwargs: object) -> object:
        states.append(gc.isenabled())
        return real_tokenize(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(PARSERS["claude_code"], "parse", parse)
    monkeypatch.setattr(parse_file_module, "tokenize", tokenize)
    return states


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_off_while_parsing_and_as_it_was_after(tmp_path: Path, seen: list[bool],
                                                          enabled: bool) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text(LOG)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        parsed = parse_file(log, tokenizers=())
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert parsed.tables is not None and parsed.tables.messages.num_rows == 1
    assert seen == [False, False]


def test_collector_back_on_when_the_parser_fails(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> object:
        assert not gc.isenabled()
        raise RuntimeError("parser bug")

    monkeypatch.setattr(PARSERS["claude_code"], "parse", broken)
    log = tmp_path / "s.jsonl"
    log.write_text(LOG)
    assert gc.isenabled()
    parsed = parse_file(log)
    assert gc.isenabled()
    assert parsed.tables is None and "parser bug" in parsed.issues[0].reason
