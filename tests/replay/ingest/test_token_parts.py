"""A long text counted in parts (``replay.ingest.token_parts``): the same ids as tiktoken's of
the whole text wherever a part ends at a place the module calls exact, the estimate flagged and
said where a part has to end inside a piece, and the encoder's memory bounded by a part's."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest import token_parts, tokens
from replay.ingest.batch import ingest
from replay.ingest.parse_file import ParsedFile, parse_file
from replay.ingest.token_parts import cuts
from replay.ingest.tokens import counter, encoder
from tests.replay.ingest.conftest import SHIPPED, reference_encodings

ALPHABET = [*"aZq", *"09", " ", "\n", "\r", "\t", *"'./=-_", "é", "ß", "Ж", "日", "\u0301",
            "😀", "\u00a0", "\u2028", "\x1c", "’"]
"""Characters around which the encodings' pattern splits or joins pieces: ASCII letters of
both cases, digits, whitespace of several kinds (Python's and Unicode's differ on \\x1c),
punctuation that begins a word's piece or ends a line's, non-ASCII letters, a combining mark,
an emoji."""
WORDS = ["a", "Zq", "09", "1a", " ", "  ", "\n", "\r\n", "'s", "'T", "./", "=\n/", "é", "日本",
         "\u0301", "😀", " x", "\n\nB", "7 q", "--", "\t "]


def _texts() -> st.SearchStrategy[str]:
    chars = st.text(alphabet=st.sampled_from(ALPHABET), max_size=160)
    words = st.lists(st.sampled_from(WORDS), max_size=60).map("".join)
    return st.one_of(chars, words)


@pytest.fixture
def parts_of(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """Set ``SPLIT_CHARS`` for a test, the encoders made anew with it (they read it when made),
    and again with the real one after."""

    def set_size(size: int) -> None:
        monkeypatch.setattr(token_parts, "SPLIT_CHARS", size)
        counter.cache_clear()
        encoder.cache_clear()

    yield set_size
    monkeypatch.undo()
    counter.cache_clear()
    encoder.cache_clear()


_REFERENCE: dict[str, tiktoken.Encoding] = {}
"""tiktoken's encodings, made at the first example that needs them."""


@settings(max_examples=400, deadline=None)
@given(text=_texts(), size=st.integers(2, 40))
def test_parts_cut_exactly_give_the_whole_texts_ids(text: str, size: int) -> None:
    reference = _REFERENCE or _REFERENCE.update(reference_encodings()) or _REFERENCE
    starts, forced = cuts(text, size)
    parts = list(token_parts.parts(text, size))
    assert "".join(parts) == text
    assert all(0 < len(p) <= size for p in parts) or not text
    assert starts == sorted(set(starts))
    if forced:
        return
    for name in SHIPPED:
        enc = reference[name]
        whole = enc.encode_ordinary(text)
        assert [i for p in parts for i in enc.encode_ordinary(p)] == whole, (name, parts)


@pytest.mark.parametrize("text", [
    "word " * 40, "x \nabc" * 30, "12ab" * 40, "a.b c/d\n\ne f " * 20, "It's 3 o'clock. " * 20,
    "=\n/abc def " * 20, "x  y z" * 30, "\r\nab" * 40, "日本 語 ab x" * 30, "e\u0301 f " * 40,
    " ~" * 60, "~\t" * 60, "日 ~\t=" * 30, "\u00a0 ~ 1 ." * 30])
@pytest.mark.parametrize("name", SHIPPED)
def test_counter_in_parts_counts_as_tiktoken_counts_the_whole(
        text: str, name: str, reference: dict[str, tiktoken.Encoding],
        parts_of: Callable[[int], None]) -> None:
    parts_of(24)
    assert token_parts.forced_cuts(text) == 0
    assert counter(name)(text) == len(reference[name].encode_ordinary(text))
    assert encoder(name)(text) == reference[name].encode_ordinary(text)


@pytest.mark.parametrize("text", ["a" * 100, "=" * 100, " " * 100, "é" * 100, "Ab" * 50])
def test_a_run_with_no_place_to_cut_is_cut_inside_and_counted_forced(
        text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_parts, "SPLIT_CHARS", 16)
    starts, forced = cuts(text)
    assert forced == len(starts) > 0
    assert token_parts.forced_cuts(text) == forced


def test_ingest_flags_and_says_a_text_cut_inside_a_run_only(
        tmp_path: Path, parts_of: Callable[[int], None],
        reference: dict[str, tiktoken.Encoding]) -> None:
    parts_of(2_000)
    prose = " ".join(["alpha", "beta7", "x.y", "日本", "ok\n"] * 1_000)
    word = "q" * 5_000
    doc = {"messages": [{"role": "user", "content": "task"},
                        {"role": "assistant", "content": prose},
                        {"role": "user", "content": word},
                        {"role": "assistant", "content": "done"},
                        {"role": "user", "content": "next"}]}
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "chat.json").write_text(json.dumps(doc), encoding="utf-8")
    report = ingest([tmp_path / "logs"], tmp_path / "ds", jobs=1,
                    tokenizers=("o200k_base", "cl100k_base"))
    said = [i.reason for i in report.issues if "counted in parts" in i.reason]
    assert len(said) == 1 and said[0].startswith("1 text longer than 2,000 characters")
    rows = pq.read_table(next((tmp_path / "ds" / "data").glob("*.parquet"))).to_pylist()
    by_text = {r["text"]: r for r in rows}
    assert by_text[word]["tokens_estimated"] is True
    assert by_text[prose]["tokens_estimated"] is False
    for name, col in (("o200k_base", "tokens_o200k"), ("cl100k_base", "tokens_cl100k")):
        assert by_text[prose][col] == len(reference[name].encode_ordinary(prose))


def test_counting_one_unbroken_word_holds_a_parts_worth_of_memory() -> None:
    """8 M characters of one letter counted whole held ~620 MB (an encoder holds 70-130 bytes
    a character of the piece it merges); in parts of 1 Mi characters 82 MB, and in parts of
    ``FORCED_CHARS`` (a run with no place to cut) 20 MB, the text's 8 MB among them."""
    code = ("import resource; from replay.ingest.tokens import counter; "
            "c = counter('o200k_base'); c('warm up'); "
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
            "n = c('a' * 8_000_000); "
            "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
            "print(n, (after - before) // 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    tokens, grew_mb = int(out[0]), int(out[1])
    assert tokens == 1_000_000  # (8 letters a token, cut at multiples of 8 characters)
    assert grew_mb < 50, f"counting grew the process by {grew_mb} MB"


@pytest.mark.parametrize("text", [
    "a" * 1_000, "word " * 30 + "q" * 1_000 + " tail" * 30, "x y " * 100 + "=" * 997,
    ("ab " * 40 + "z" * 300) * 5])
def test_a_run_with_no_place_to_cut_is_cut_every_forced_chars_after_the_last_exact_place(
        text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``SPLIT_CHARS`` 128 and ``FORCED_CHARS`` 16: a run with no place to cut begins a part
    at the last exact place before it, and is cut every 16 characters to its end (the text's
    tail too), each such cut counted forced; every other cut is at an exact place."""
    monkeypatch.setattr(token_parts, "SPLIT_CHARS", 128)
    monkeypatch.setattr(token_parts, "FORCED_CHARS", 16)
    starts, forced = cuts(text)
    exact = {m.start() for m in token_parts._CUT.finditer(text)}
    assert forced == sum(1 for c in starts if c not in exact) > 0
    bounds = [0, *starts, len(text)]
    sizes = [b - a for a, b in pairwise(bounds)]
    assert max(sizes) <= 128
    for a, b in pairwise(bounds):  # a part of a run: 16 characters, or its last ones
        if b not in exact and b != len(text):
            assert b - a == 16 or a in exact or a == 0
    long_parts = [text[a:b] for a, b in pairwise(bounds) if b - a > 32]
    assert all(token_parts.first_cut(p, 1, len(p)) is not None for p in long_parts)


@settings(max_examples=300, deadline=None)
@given(text=_texts(), size=st.integers(8, 40), step=st.integers(1, 8))
def test_parts_cut_in_forced_steps_still_cover_the_text_and_count_exactly_unforced(
        text: str, size: int, step: int) -> None:
    """With ``FORCED_CHARS`` below ``size``: the parts are the text, each at most ``size``;
    a text with no forced cut gives tiktoken's ids of the whole text."""
    reference = _REFERENCE or _REFERENCE.update(reference_encodings()) or _REFERENCE
    text = text * 3 + "a" * (2 * size)  # (a run, and again a text to cut exactly)
    saved = token_parts.FORCED_CHARS
    token_parts.FORCED_CHARS = step
    try:
        starts, forced = cuts(text, size)
        parts = list(token_parts.parts(text, size))
    finally:
        token_parts.FORCED_CHARS = saved
    assert "".join(parts) == text
    assert all(0 < len(p) <= size for p in parts)
    assert starts == sorted(set(starts))
    exact = {m.start() for m in token_parts._CUT.finditer(text)}
    assert forced == sum(1 for c in starts if c not in exact)
    if forced:
        return
    for name in SHIPPED:
        enc = reference[name]
        assert [i for p in parts for i in enc.encode_ordinary(p)] == enc.encode_ordinary(text)


@settings(max_examples=500, deadline=None)
@given(text=_texts(), data=st.data())
def test_first_cut_finds_what_the_cut_pattern_finds(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text) + 1))
    stop = data.draw(st.integers(0, len(text) + 1))
    found = token_parts._CUT.search(text, start, stop)
    assert token_parts.first_cut(text, start, stop) == (None if found is None else found.start())
    every = [m.start() for m in token_parts._CUT.finditer(text, start, stop)]
    assert token_parts._last_cut(text, start, stop) == (every[-1] if every else None)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_sample_text_cut_where_the_module_says_keeps_tiktokens_ids(
        name: str, samples: Path, reference: dict[str, tiktoken.Encoding]) -> None:
    """The real sample logs' block texts longer than 512 characters, each cut into parts of at
    most 512: nearly all are cut only at the places the module calls exact, and each of those
    encodes, part by part, to tiktoken's ids of the whole text."""
    from tests.replay.ingest.test_tokens import _sample_texts

    texts = [t for t in _sample_texts(samples) if len(t) > 512]
    enc = reference[name]
    exact = [t for t in texts if cuts(t, 512)[1] == 0]
    assert len(texts) > 500 and len(exact) > 0.9 * len(texts)
    differ = [t[:60] for t in exact
              if [i for p in token_parts.parts(t, 512) for i in enc.encode_ordinary(p)]
              != enc.encode_ordinary(t)]
    assert differ == []


SHORT = Path(__file__).resolve().parents[3].parent / "shared" / "logs-sample" / "claude-code" / \
    "short.jsonl"
"""A real Claude Code session (its first prompt at line 4)."""


@pytest.fixture
def tiktoken_counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """o200k_base counted by tiktoken, as an encoding ctxreplay does not count with splintr is
    (``tokens.encoder``), the encoders made anew, and again after."""
    monkeypatch.setattr(tokens, "_splintr", lambda name: None)
    counter.cache_clear()
    encoder.cache_clear()
    yield
    monkeypatch.undo()
    counter.cache_clear()
    encoder.cache_clear()


def _spaced_prompt(tmp_path: Path) -> tuple[ParsedFile, str]:
    """``SHORT`` with its first prompt 500,000 spaces between two letters, parsed."""
    lines = [json.loads(x) for x in SHORT.read_text(encoding="utf-8").splitlines()]
    prompt = lines[3]["message"]["content"] = "x" + " " * 500_000 + "y"
    path = tmp_path / SHORT.name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return parse_file(path, tmp_path), prompt


def _estimated(parsed: ParsedFile, text: str) -> list[tuple[int, bool]]:
    assert parsed.tables is not None
    m = parsed.tables.messages
    return [(n, e) for t, n, e in zip(m["text"].to_pylist(), m["tokens_o200k"].to_pylist(),
                                      m["tokens_estimated"].to_pylist(), strict=True)
            if t == text]


def test_a_whitespace_run_tiktoken_counts_in_chunks_is_flagged_and_said(
        tmp_path: Path, tiktoken_counts: None) -> None:
    """tiktoken counts a run of 500,000 whitespace characters in 64 Ki-character chunks (its
    regex engine's stack): 3,910 tokens here against 3,909 whole.  That estimate was neither
    flagged nor said, as a cut inside a piece of a text counted in parts is."""
    parsed, prompt = _spaced_prompt(tmp_path)
    assert token_parts.chunk_cuts(prompt) == 7
    assert _estimated(parsed, prompt) == [(3_910, True)]
    said = [i.reason for i in parsed.issues if "counted in parts" in i.reason]
    assert said == [
        ("1 text counted in parts (longer than 1,048,576 characters with an unbroken run of "
        "524,288 or more (one word, punctuation or whitespace), or, under o200k_base, which "
        "tiktoken counts, with a run of 500,000 whitespace characters or more, or that its "
        "regex engine panicked on: counted in 65,536-character chunks), cut 7 time(s) inside "
        "such a run or a chunked text: its tokens are estimated "
        "(a few tokens a cut) and flagged (replay runs: estimated_blocks)")]
    assert parsed.tables is not None
    assert sum(parsed.tables.messages["tokens_estimated"].to_pylist()) == 1


def test_splintr_counts_the_same_run_whole_unflagged(tmp_path: Path) -> None:
    parsed, prompt = _spaced_prompt(tmp_path)
    assert _estimated(parsed, prompt) == [(3_909, False)]
    assert not [i for i in parsed.issues if "counted in parts" in i.reason]
