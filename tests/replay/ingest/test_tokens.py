"""Offline tokenizer: counts identical to tiktoken's own encoder, no network, clear errors.

The reference encoder is built by tiktoken itself from its own definitions
(``tiktoken_ext.openai_public``: pattern, special tokens, official URL and sha256), with only its
download (``tiktoken.load.read_file``) answered from a plain decompressed copy of the shipped file.
tiktoken checks that copy against the official sha256, so the reference shares nothing with
``replay.ingest.tokens`` but the file bytes, and those are proven official.
"""

from __future__ import annotations

import fnmatch
import functools
import gzip
import json
import socket
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import tiktoken
import tiktoken.load
from hypothesis import given
from hypothesis import strategies as st
from tiktoken_ext import openai_public

from replay.errors import TokenizerError
from replay.ingest import tokens
from replay.ingest.tokens import count_one, count_tokens, encoding

REPO = Path(__file__).resolve().parents[3]
SHIPPED_DIR = REPO / "replay" / "ingest" / "encodings"
SHIPPED = ("o200k_base", "cl100k_base")

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


def _official_bytes(name: str) -> bytes:
    return gzip.decompress((SHIPPED_DIR / f"{name}.tiktoken.gz").read_bytes())


@functools.cache
def _reference() -> dict[str, tiktoken.Encoding]:
    """tiktoken's own o200k_base and cl100k_base, built offline from the official file bytes."""
    url = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
    served = {url.format(n): _official_bytes(n) for n in SHIPPED}
    asked: list[str] = []

    def read_file(blobpath: str) -> bytes:
        asked.append(blobpath)
        return served[blobpath]

    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as cache:
        mp.setattr(tiktoken.load, "read_file", read_file)
        # an empty cache dir: tiktoken fetches (our read_file) and checks the official sha256
        mp.setenv("TIKTOKEN_CACHE_DIR", cache)
        refs = {"o200k_base": tiktoken.Encoding(**openai_public.o200k_base()),
                "cl100k_base": tiktoken.Encoding(**openai_public.cl100k_base())}
    assert sorted(asked) == sorted(served)  # the reference really came through tiktoken's loader
    return refs


@pytest.fixture
def reference() -> dict[str, tiktoken.Encoding]:
    return _reference()


@pytest.fixture
def fresh_encodings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No memoised encodings before or after; no CTXREPLAY_ENCODINGS_DIR from outside."""
    monkeypatch.delenv("CTXREPLAY_ENCODINGS_DIR", raising=False)
    for memo in (encoding, tokens.encoder, tokens.counter, tokens._splintr):
        memo.cache_clear()
    yield
    for memo in (encoding, tokens.encoder, tokens.counter, tokens._splintr):
        memo.cache_clear()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Every way out is closed: sockets, and tiktoken's downloader; returns what was attempted."""
    attempts: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(repr(args[:2]))
        raise OSError("network is blocked in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-tiktoken-cache"))
    return attempts


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
    ref = _reference()["o200k_base"]
    expected = [len(ref.encode_ordinary(t)) for t in texts]
    assert count_tokens(texts, "o200k_base") == expected
    assert count_tokens(texts, "o200k_base", threads=3) == expected


def test_threaded_counts_keep_order(reference: dict[str, tiktoken.Encoding]) -> None:
    texts = [f"{i} " + "word " * (i % 37) + "中" * (i % 5) for i in range(500)]
    expected = [len(reference["cl100k_base"].encode_ordinary(t)) for t in texts]
    for threads in (1, 2, 3, 8):
        assert count_tokens(texts, "cl100k_base", threads=threads) == expected


def test_shipped_encodings_work_with_the_network_blocked(fresh_encodings: None,
                                                         no_network: list[str],
                                                         reference: dict[str, tiktoken.Encoding]
                                                         ) -> None:
    for name in SHIPPED:
        enc = encoding(name)
        text = "offline: no download needed 🚫🌐"
        assert enc.encode_ordinary(text) == reference[name].encode_ordinary(text)
    assert no_network == []  # nothing even tried to go out


def test_encodings_ship_with_the_package() -> None:
    """A fresh install has both files: they exist and the package-data globs include them."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["replay"]
    for name in SHIPPED:
        rel = f"ingest/encodings/{name}.tiktoken.gz"
        assert (REPO / "replay" / rel).is_file()
        assert any(fnmatch.fnmatch(rel, g) for g in globs), (rel, globs)


def test_unknown_encoding_name_says_how_to_provide_one(fresh_encodings: None,
                                                       no_network: list[str]) -> None:
    with pytest.raises(TokenizerError) as err:
        encoding("no_such_encoding")
    msg = str(err.value)
    assert "no_such_encoding" in msg and "CTXREPLAY_ENCODINGS_DIR" in msg
    assert "o200k_base" in msg and "cl100k_base" in msg


def test_missing_tiktoken_encoding_says_where_to_put_it(fresh_encodings: None,
                                                        no_network: list[str]) -> None:
    """r50k_base is known to tiktoken but not shipped: offline, the error names the file to get,
    where it comes from and where to put it."""
    with pytest.raises(TokenizerError) as err:
        encoding("r50k_base")
    msg = str(err.value)
    assert "r50k_base.tiktoken" in msg and "CTXREPLAY_ENCODINGS_DIR" in msg
    assert "https://" in msg  # the official location, so the file can be fetched elsewhere
    assert no_network  # tiktoken did try to download (and was refused)


def test_encoding_provided_in_env_dir_is_used_offline(fresh_encodings: None, no_network: list[str],
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Following the error's advice works: o200k_harmony (not shipped; tiktoken builds it from the
    o200k_base file) is built from a file in CTXREPLAY_ENCODINGS_DIR with tiktoken's definition."""
    folder = tmp_path / "encs"
    folder.mkdir()
    (folder / "o200k_harmony.tiktoken").write_bytes(_official_bytes("o200k_base"))
    monkeypatch.setenv("CTXREPLAY_ENCODINGS_DIR", str(folder))
    enc = encoding("o200k_harmony")
    assert enc.name == "o200k_harmony"
    assert "<|start|>" in enc.special_tokens_set  # harmony's own specials: tiktoken's definition
    text = "harmony <|start|> works offline"
    assert enc.encode_ordinary(text) == encoding("o200k_base").encode_ordinary(text)
    assert no_network == []


def test_env_dir_file_overrides_shipped_one(fresh_encodings: None, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            reference: dict[str, tiktoken.Encoding]) -> None:
    folder = tmp_path / "encs"
    folder.mkdir()
    (folder / "cl100k_base.tiktoken").write_bytes(_official_bytes("cl100k_base"))
    monkeypatch.setenv("CTXREPLAY_ENCODINGS_DIR", str(folder))
    assert tokens._find_file("cl100k_base") == folder / "cl100k_base.tiktoken"
    assert encoding("cl100k_base").encode_ordinary("abc def") == \
        reference["cl100k_base"].encode_ordinary("abc def")


def _corrupt(raw: bytes) -> bytes:
    """The official file with one rank changed: still a well-formed .tiktoken file."""
    lines = raw.splitlines()
    token, rank = lines[1000].split()
    lines[1000] = token + b" " + str(int(rank) + 1).encode()
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("name", SHIPPED)
def test_corrupted_file_fails_the_sha256_check(name: str, fresh_encodings: None, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "encs"
    folder.mkdir()
    bad = folder / f"{name}.tiktoken"
    bad.write_bytes(_corrupt(_official_bytes(name)))
    monkeypatch.setenv("CTXREPLAY_ENCODINGS_DIR", str(folder))
    with pytest.raises(TokenizerError) as err:
        encoding(name)
    msg = str(err.value)
    assert str(bad) in msg and "sha256" in msg and name in msg


def test_corrupted_gzip_file_is_a_clear_error(fresh_encodings: None, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "encs"
    folder.mkdir()
    bad = folder / "o200k_base.tiktoken.gz"
    bad.write_bytes((SHIPPED_DIR / "o200k_base.tiktoken.gz").read_bytes()[:5000])  # truncated
    monkeypatch.setenv("CTXREPLAY_ENCODINGS_DIR", str(folder))
    with pytest.raises(TokenizerError) as err:
        encoding("o200k_base")
    assert str(bad) in str(err.value)


def test_corrupted_file_for_a_tiktoken_encoding_fails_its_hash(fresh_encodings: None,
                                                                no_network: list[str],
                                                                tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    folder = tmp_path / "encs"
    folder.mkdir()
    (folder / "o200k_harmony.tiktoken").write_bytes(_corrupt(_official_bytes("o200k_base")))
    monkeypatch.setenv("CTXREPLAY_ENCODINGS_DIR", str(folder))
    with pytest.raises(TokenizerError) as err:
        encoding("o200k_harmony")
    assert "sha256" in str(err.value) and "o200k_harmony" in str(err.value)


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
