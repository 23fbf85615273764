"""The manifest's bytes: ``store.manifest_bytes`` writes exactly what ``json.dumps(doc,
indent=1)`` writes (msgspec where the two agree, the standard library where they do not)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.store import manifest_bytes

_TEXT = st.text(st.one_of(st.characters(max_codepoint=0x7F),  # mostly ASCII, controls and DEL
                          st.characters(blacklist_categories=())))  # any: lone surrogates too
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-2**70, 2**70), _TEXT)
_DOCS = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)), max_leaves=20)


# 20 examples, not the profile's 60: each of the 5 bugs planted in manifest_bytes that 60 finds
# is found at 20 (the commit setting this comment names them); generating the documents is most
# of the test's time
@settings(max_examples=20)
@given(st.dictionaries(_TEXT, _DOCS, max_size=5))
def test_manifest_bytes_are_json_dumps_indent_1(doc: dict[str, Any]) -> None:
    assert manifest_bytes(doc) == json.dumps(doc, indent=1).encode()


def test_a_manifest_of_entries_is_written_by_msgspec_and_the_same() -> None:
    entry = {"key": "k", "sha256": "0" * 64, "format": "codex", "n_runs": 2,
             "coverage": {"message": {"modelled": 3}, "x": {}}, "issues": [[3, "bad \"line\""]]}
    doc = {"schema_version": "6", "index_sha256": "f" * 64, "entries": {"a/b.jsonl": entry}}
    assert manifest_bytes(doc) == json.dumps(doc, indent=1).encode()
    for odd in ("caf\u00e9.jsonl", "del\x7f.jsonl", "lone\udc80.jsonl"):  # json.dumps's own
        doc["entries"] = {odd: entry}
        assert manifest_bytes(doc) == json.dumps(doc, indent=1).encode()
