"""Determinism of ingest: random Claude-like transcripts (with orphan results and junk lines) give
byte-identical stores, every result paired or reported; the generated transcripts are sniffed
like the real ones.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.ingest import store
from replay.ingest.batch import ingest
from replay.ingest.parsers import claude_code
from tests.replay.ingest.ingest_helpers import _claude, _pairing_violations, _store_bytes, _write

_WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@st.composite
def _transcripts(draw: Any) -> tuple[list[str], int | None]:
    n = draw(st.integers(0, 6))
    orphan = draw(st.none() | st.integers(0, max(n - 1, 0))) if n else None
    texts = draw(st.lists(_WORDS, min_size=1, max_size=4))
    tag = draw(st.sampled_from(["a", "b"]))
    return _claude(n, tag=tag, orphan_step=orphan, texts=texts), orphan


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_transcripts(), st.lists(st.integers(0, 10_000), max_size=2))
def test_random_transcripts_deterministic_and_paired(transcript: tuple[list[str], int | None],
                                                     junk_at: list[int]) -> None:
    """Random Claude-like inputs (with orphans and junk lines): two fresh stores are
    byte-identical, every result pairs with one earlier call or is counted and reported as an
    orphan, with its line."""
    lines, orphan = transcript
    lines = list(lines)
    for k in junk_at:  # malformed lines anywhere but first (the format is sniffed there)
        lines.insert(1 + k % len(lines), "{broken")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = _write(root / "logs" / "t.jsonl", lines)
        r1 = ingest([src], root / "one", jobs=1)
        r2 = ingest([src], root / "two", jobs=1)
        assert _store_bytes(root / "one") == _store_bytes(root / "two")
        assert [str(i) for i in r1.issues] == [str(i) for i in r2.issues]
        tables = store.read_store(root / "one")
        (run,) = tables.runs.to_pylist()
        bad = _pairing_violations(tables.messages.to_pylist())
        assert sum(bad.values()) == run["n_orphan_results"] == (orphan is not None)
        orphan_issues = [i for i in r1.issues if "no earlier call" in i.reason]
        assert len(orphan_issues) == run["n_orphan_results"]
        for i in orphan_issues:
            assert '"toolu_' in lines[i.line - 1] and "never_called" in lines[i.line - 1]
        assert len([i for i in r1.issues if "malformed JSON" in i.reason]) == len(junk_at)


def test_sniffer_sees_claude_samples(samples: Path) -> None:
    """Guard for the generated transcripts (``ingest_helpers._claude``): they are sniffed like
    the real ones."""
    head = _write(Path(tempfile.mkdtemp()) / "t.jsonl", _claude(1)).read_bytes()[:65536]
    assert claude_code.sniff("t.jsonl", head)
    real = (samples / "claude-code" / "short.jsonl").read_bytes()[:65536]
    assert claude_code.sniff("short.jsonl", real)
