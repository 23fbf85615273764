"""Offline tokenizer: counts identical to tiktoken's own encoder (the reference: ``conftest.py``
here), the counting encoder's ids, the counter's cache.

Not here: the encoding files (shipped, offline, env dir, corrupted: ``test_tokens_files.py``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import ClassVar

import pytest
import tiktoken
import tiktoken.load
from hypothesis import given
from hypothesis import strategies as st

from replay.ingest import tokens
from replay.ingest.tokens import count_one, count_tokens, encoding
from tests.replay.ingest.conftest import SHIPPED, reference_encodings

TEXTS = [
    "",
    "hello world",
    "def f(x):\n    return x ** 2  # square\n\n\nclass A:\n\tpass\n",
    json.dumps({"file_path": "/src/app.py", "old_string": "a = 1", "new": [1, 2.5, None, True]}),
    "这是一个测试。日本語のテキストも。한국어 문장도 있습니다.",
    "emoji 🎉🚀👩‍👩‍👧‍👦 and flags 🇫🇷🇯🇵, skin tones 👍🏽",
    "   leading\n\n\n\ttabs\t\t and trailing spaces   \r\n\r\n      ",
    " " * 1000 + "\n" * 300 + "x",
    "<|endoftext|> is text here, so are <|fim_prefix|><|fim_middle|><|fim_suffix|><|endofprompt|>",
    "I'm sure they'll say it's 1234567890 o'clock; DON'T SHOUT, it's 3.14159.",
    "Ünïcödé: naïve café, Straße, ﬁ ligature, combining e\u0301 and Zalgo z\u0336\u0347",
    "mixed\u00a0nbsp\u2003em-space\u200bzero-width\ufeffbom",
    "https://example.com/a/b?c=d&e=f#g  /usr/local/bin/python3.11 --version",
    "a lone surrogate \ud800 in the middle",
    "diff --git a/x b/x\n@@ -1,3 +1,4 @@\n-old line\n+new line\n context\n",
]
TEXTS.append("The quick brown fox jumps over the lazy dog. " * 20_000)
TEXTS.append("x" * 20_000)


@pytest.mark.parametrize("name", SHIPPED)
def test_same_vocabulary_pattern_and_specials_as_tiktoken(
        name: str, reference: dict[str, tiktoken.Encoding]) -> None:
    ours, ref = encoding(name), reference[name]
    assert ours.n_vocab == ref.n_vocab
    assert ours._mergeable_ranks == ref._mergeable_ranks
    assert ours._special_tokens == ref._special_tokens
    assert ours._pat_str == ref._pat_str
    assert ours.max_token_value == ref.max_token_value


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("i", range(len(TEXTS)))
def test_token_ids_identical_to_tiktoken(name: str, i: int,
                                         reference: dict[str, tiktoken.Encoding]) -> None:
    text, ours, ref = TEXTS[i], encoding(name), reference[name]
    expected = ref.encode_ordinary(text)
    assert ours.encode_ordinary(text) == expected
    assert count_tokens([text], name) == [len(expected)]
    assert count_one(text, name) == len(expected)
    # special tokens map to the same ids when allowed
    assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")


@pytest.mark.parametrize("name", SHIPPED)
def test_special_token_text_is_ordinary_text(name: str,
                                             reference: dict[str, tiktoken.Encoding]) -> None:
    """Logs quoting ``<|endoftext|>`` are counted as text (several tokens), never as one special."""
    text = "<|endoftext|>"
    assert len(encoding(name).encode_ordinary(text)) > 1
    assert encoding(name).encode(text, allowed_special="all") == [reference[name].eot_token]


@given(st.lists(st.text(max_size=300), min_size=0, max_size=40))
def test_random_text_counts_identical_and_threads_agree(texts: list[str]) -> None:
    ref = reference_encodings()["o200k_base"]
    expected = [len(ref.encode_ordinary(t)) for t in texts]
    assert count_tokens(texts, "o200k_base") == expected
    assert count_tokens(texts, "o200k_base", threads=3) == expected


def test_threaded_counts_keep_order(reference: dict[str, tiktoken.Encoding]) -> None:
    texts = [f"{i} " + "word " * (i % 37) + "中" * (i % 5) for i in range(500)]
    expected = [len(reference["cl100k_base"].encode_ordinary(t)) for t in texts]
    for threads in (1, 2, 3, 8):
        assert count_tokens(texts, "cl100k_base", threads=threads) == expected


def _adversarial() -> list[str]:
    """Strings that break tokenizers: long runs of one kind of character (spaces, digits,
    letters, newlines), megabyte words, scripts without spaces, emoji sequences, combining marks,
    invisible characters, lone surrogates."""
    import random

    rng = random.Random(24)
    letters = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(300_000))
    mixed = "".join(chr(rng.choice([rng.randrange(0x20, 0x7F), rng.randrange(0x300, 0x370),
                                    rng.randrange(0x1F300, 0x1FAFF), rng.randrange(0x4E00, 0x9FFF)]))
                    for _ in range(100_000))
    return [
        *(" " * n for n in (1, 2, 3, 255, 256, 257, 4097, 65_537, 300_000)),
        "\t" * 5000, "\n" * 5000, "\r\n" * 3000, " \n " * 4000, "a" + " " * 50_000 + "b",
        "1" * 1_000_000, "12345 " * 20_000, "1,234,567.89 " * 5000,
        "x" * 1_000_000, letters, "Aa" * 500_000,
        "漢字かなカナ한국어" * 20_000, "这是一个没有空格的很长的句子" * 5000,
        "😀👍🏽👨‍👩‍👧‍👦🇺🇳" * 5000, "🏳️‍🌈" * 3000,
        "e\u0301" * 50_000, "a" + "\u0301" * 10_000, "z\u0336\u0347\u0318" * 5000,
        "\u200b\u200d\ufeff" * 3000, "\u00a0" * 1000 + "b", "Ａｂｃ１２３" * 1000,
        "'s'll'VE'Re" * 1000, "don't I'M HE'LL" * 500, "Straße İstanbul ǅ ﬁ" * 500,
        "𝟘𝟙𝟚" * 1000, "ﷺ" * 1000, mixed, "a\ud800b" * 100, "\udc00", "x\ud83d\ude00",
    ]


@pytest.mark.parametrize("name", SHIPPED)
def test_counting_encoder_ids_identical_on_adversarial_strings(
        name: str, reference: dict[str, tiktoken.Encoding]) -> None:
    """The encoder ingest counts with (splintr, ``tokens.encoder``) gives tiktoken's very ids,
    and the counter ingest calls (``tokens.counter``: splintr's flat ids) their number."""
    fast, count, ref = tokens.encoder(name), tokens.counter(name), reference[name]
    for text in _adversarial():
        expected = ref.encode_ordinary(text)
        assert fast(text) == expected, (len(text), text[:40])
        assert count(text) == len(expected), (len(text), text[:40])


@pytest.mark.parametrize("name", SHIPPED)
def test_counting_encoder_ids_identical_on_every_sample_text(
        name: str, samples: Path, reference: dict[str, tiktoken.Encoding]) -> None:
    """Every block text of the real sample logs, as ingest counts them (the texts parsed once
    for both encodings, each text's reference ids computed once for both checks)."""
    texts = _sample_texts(samples)
    assert len(texts) > 3000
    fast, count, ref = tokens.encoder(name), tokens.counter(name), reference[name]
    expected = [ref.encode_ordinary(t) for t in texts]
    differ = [t[:60] for t, ids in zip(texts, expected) if fast(t) != ids]
    assert differ == []
    miscounted = [t[:60] for t, ids in zip(texts, expected) if count(t) != len(ids)]
    assert miscounted == []


@functools.cache
def _sample_texts(samples: Path) -> tuple[str, ...]:
    """Every block text of the real sample logs, parsed without counting tokens."""
    from replay.ingest.discover import discover, sources
    from replay.ingest.parse_file import parse_file

    found = discover([samples])
    return tuple(t for (path, root), rel in zip(found, sources(found))
                 if (parsed := parse_file(path, root, tokenizers=(), rel=rel)).tables is not None
                 for t in parsed.tables.messages["text"].to_pylist())


def test_distinct_texts_are_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file repeats its system prompt and tool results: each distinct text is encoded once,
    and every copy gets its count."""
    seen: list[str] = []
    real = tokens.encoder("o200k_base")
    real_count = tokens.counter("o200k_base")

    def spy(text: str) -> int:
        seen.append(text)
        return real_count(text)

    monkeypatch.setattr(tokens, "counter", lambda name: spy)
    texts = ["system prompt", "a", "system prompt", "b b", "a", "system prompt"]
    for threads in (1, 2):
        seen.clear()
        assert count_tokens(texts, "o200k_base", threads=threads) == [len(real(t)) for t in texts]
        assert sorted(seen) == ["a", "b b", "system prompt"]


@given(st.lists(st.sampled_from(["", "a", "b", "ab", "ba", "abc", "x y", "中", "中文", "\n"]),
                max_size=30), st.sampled_from([1, 2]))
def test_repeats_and_texts_of_one_length_each_get_their_own_count(texts: list[str],
                                                                  threads: int) -> None:
    """Texts found repeated by their length first: equal lengths, different texts (``ab`` and
    ``ba``, ``中`` and ``a``) keep their own counts, repeats get the one count, in order."""
    count = tokens.counter("o200k_base")
    assert count_tokens(texts, "o200k_base", threads=threads) == [count(t) for t in texts]


class _Hashed(str):
    """A string that records being hashed."""

    hashed: ClassVar[list[str]] = []

    def __hash__(self) -> int:
        _Hashed.hashed.append(str(self))
        return super().__hash__()


def test_a_text_of_a_length_of_its_own_is_not_hashed() -> None:
    """Hashing a long text costs ~4 instructions a byte: only texts whose length another text
    shares are hashed to find repeats."""
    _Hashed.hashed.clear()
    texts: list[str] = [_Hashed("x" * 10_000), _Hashed("y" * 5_000), _Hashed("ab"),
                        _Hashed("ba"), _Hashed("ab")]
    count = tokens.counter("o200k_base")
    assert count_tokens(texts, "o200k_base") == [count(t) for t in texts]
    assert set(_Hashed.hashed) == {"ab", "ba"}


@pytest.mark.parametrize("name", SHIPPED)
def test_forgetting_what_the_counter_learnt_empties_its_cache_and_keeps_its_counts(
        name: str, reference: dict[str, tiktoken.Encoding]) -> None:
    """``forget_learnt`` (the ingest benchmark's fresh start for each round) leaves splintr with
    no piece known, and the counts that follow are still tiktoken's."""
    texts = ["def main():\n    return 0\n", "naïve café " * 50, "中文 and 😀 " * 20]
    count = tokens.counter(name)
    before = [count(t) for t in texts]
    fast = tokens._splintr(name)
    assert fast is not None and fast.cache_len > 0
    tokens.forget_learnt(name)
    assert fast.cache_len == 0
    after = [count(t) for t in texts]
    assert before == after == [len(reference[name].encode_ordinary(t)) for t in texts]
