"""Inside a data subtree (a tool's result object, Inspect's metadata) only the keys a parser reads
survive (``READ_IN_DATA``), and of their string values only the enums a parser reads (a
compaction's ``trigger``): a one-word string under ``summary`` or ``exit_code`` there is the
user's data, replaced like any other text."""

from __future__ import annotations

import json

from replay.redact.leaves import Redactor


def _copy(rec: object) -> str:
    return json.dumps(Redactor(salt="s").record(rec))


def test_a_word_under_a_read_key_in_data_is_replaced() -> None:
    for key in ("summary", "exit_code"):
        copy = _copy({"toolUseResult": {key: "Hunter2Secret"}})
        assert "Hunter2Secret" not in copy, copy
        assert f'"{key}"' in copy  # the key a parser reads is kept


def test_what_a_parser_reads_in_data_is_kept() -> None:
    rec = {"metadata": {"trigger": "auto", "summary": True, "exit_code": 1}}
    assert json.loads(_copy(rec)) == rec
