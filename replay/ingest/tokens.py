"""Token counting: the only tiktoken import, working offline.

tiktoken downloads its BPE files on first use, which fails without a network.
The two encodings the model uses (``o200k_base``, ``cl100k_base``) ship with
the package as gzip files whose sha256 is checked against the official files,
and are built into ``tiktoken.Encoding`` objects directly.  Any encoding is
first looked up in ``CTXREPLAY_ENCODINGS_DIR`` (``<name>.tiktoken[.gz]``, an
``os.pathsep``-separated list of folders): a shipped one is overridden, and any
other encoding tiktoken knows (``r50k_base``, ``p50k_base``, …) is built from
that file with tiktoken's own definition and hash check.  Only then is
tiktoken asked, which downloads.

Counts are identical to ``tiktoken.get_encoding(name).encode_ordinary``.  The shipped
encodings are counted with splintr (``splintr-rs``, a dependency), built from the same
sha256-checked file bytes and the same pattern: its ids are identical to tiktoken's on every
text tests/replay/ingest/test_tokens.py tries (the samples, adversarial strings, unicode edge cases,
random text) and it counts 5-8× faster.  Any other encoding is counted by tiktoken.
Cheap estimators (chars/N) live in ``replay.estimator``, not here.
"""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import os
import re
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import splintr
import tiktoken
import tiktoken.load

from replay.errors import TokenizerError
from replay.ingest import token_parts
from replay.ingest.token_parts import count_in_parts, encode_safely, ids_in_parts

_HERE = Path(__file__).parent / "encodings"
ENV_DIR = "CTXREPLAY_ENCODINGS_DIR"
"""Environment variable naming folders with ``<name>.tiktoken[.gz]`` files."""

# Official sha256 of the uncompressed files (as in tiktoken_ext.openai_public).
_EXPECTED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
_ENDOFTEXT = "<|endoftext|>"
_PATTERNS = {
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k_base": "|".join(  # noqa: FLY002 - one alternative a line, as tiktoken writes it
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}
_SPECIALS = {
    "cl100k_base": {
        _ENDOFTEXT: 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {_ENDOFTEXT: 199999, "<|endofprompt|>": 200018},
}
SHIPPED: tuple[str, ...] = tuple(sorted(_PATTERNS))
"""Encodings that work offline on a fresh install."""
_TIKTOKEN_LOCK = threading.Lock()


def _dirs() -> list[Path]:
    return [Path(d) for d in os.environ.get(ENV_DIR, "").split(os.pathsep) if d]


def _find_file(name: str) -> Path | None:
    for d in [*_dirs(), _HERE]:
        for suffix in (".tiktoken.gz", ".tiktoken"):
            p = d / f"{name}{suffix}"
            if p.is_file():
                return p
    return None


def _read_bpe(path: Path) -> bytes:
    """The uncompressed bytes of a ``.tiktoken`` or ``.tiktoken.gz`` file."""
    try:
        raw = path.read_bytes()
        return gzip.decompress(raw) if path.suffix == ".gz" else raw
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise TokenizerError(f"{path}: cannot read this encoding file ({type(exc).__name__}: "
                             f"{exc}); replace it with the official file or remove it") from exc


def _checked_bpe(path: Path, name: str) -> bytes:
    """The file's uncompressed bytes, checked against the official sha256 of ``name``."""
    raw = _read_bpe(path)
    expected = _EXPECTED_SHA256.get(name)
    if expected and hashlib.sha256(raw).hexdigest() != expected:
        raise TokenizerError(f"{path}: sha256 does not match the official {name} file "
                             f"(expected {expected}); replace it with the official file or "
                             f"remove it")
    return raw


def _load_ranks(path: Path, name: str) -> dict[bytes, int]:
    raw = _checked_bpe(path, name)
    a2b = binascii.a2b_base64
    try:
        return {a2b(token): int(rank) for token, rank in (line.split() for line in raw.splitlines()
                                                            if line)}
    except (ValueError, binascii.Error) as exc:
        raise TokenizerError(f"{path}: not a .tiktoken file ({exc})") from exc


def _constructor(name: str) -> Callable[[], dict[str, Any]] | None:
    """tiktoken's own definition of ``name`` (pattern, specials, file and hash), if it has one."""
    try:
        tiktoken.list_encoding_names()  # fills the registry of constructors
        # lazy, inside the try: a private module, absent from some tiktoken versions
        from tiktoken import registry

        return (registry.ENCODING_CONSTRUCTORS or {}).get(name)
    except Exception:  # noqa: BLE001 - a tiktoken without this (private) registry: no local build
        return None


class _Wanted(Exception):
    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


def _with_file_reader(ctor: Callable[[], dict[str, Any]],
                      read: Callable[[str, str | None], bytes]) -> dict[str, Any]:
    """Run a tiktoken constructor with its file download replaced by ``read``."""
    with _TIKTOKEN_LOCK:
        original = tiktoken.load.read_file_cached
        tiktoken.load.read_file_cached = read  # type: ignore[assignment]
        try:
            return ctor()
        finally:
            tiktoken.load.read_file_cached = original


def _from_local_file(name: str, path: Path,
                     ctor: Callable[[], dict[str, Any]]) -> tiktoken.Encoding:
    data = _read_bpe(path)

    def read(url: str, expected_hash: str | None = None) -> bytes:
        if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
            raise TokenizerError(f"{path}: sha256 does not match the official file for {name} "
                                 f"({url}, expected {expected_hash}); replace it or remove it")
        return data

    try:
        return tiktoken.Encoding(**_with_file_reader(ctor, read))
    except TokenizerError:
        raise
    except Exception as exc:
        raise TokenizerError(f"{path}: cannot build {name} from this file "
                             f"({type(exc).__name__}: {exc})") from exc


def _download_url(ctor: Callable[[], dict[str, Any]]) -> str:
    def read(url: str, expected_hash: str | None = None) -> bytes:
        raise _Wanted(url)

    try:
        _with_file_reader(ctor, read)
    except _Wanted as want:
        return want.url
    except Exception:  # noqa: BLE001, S110 - any failure of the private API: no URL to report
        pass
    return ""


@functools.cache
def encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken ``Encoding`` for ``name``, loaded without network access when possible.

    Raises:
        TokenizerError: the encoding is neither shipped nor found locally (the message says
            how to provide it), or a local file for it is corrupt.
    """
    path = _find_file(name)
    if path is not None and name in _PATTERNS:
        return tiktoken.Encoding(
            name=name,
            pat_str=_PATTERNS[name],
            mergeable_ranks=_load_ranks(path, name),
            special_tokens=_SPECIALS[name],
        )
    ctor = _constructor(name)
    if path is not None and ctor is not None:
        return _from_local_file(name, path, ctor)
    if ctor is None:
        raise TokenizerError(
            f"unknown tokenizer {name!r}: ctxreplay ships {' and '.join(SHIPPED)}, and any "
            f"other encoding tiktoken knows ({', '.join(sorted(tiktoken.list_encoding_names()))}) "
            f"works offline from its <name>.tiktoken file put in a folder named by the "
            f"environment variable {ENV_DIR}")
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises ValueError, OSError or network errors
        url = _download_url(ctor)
        where = f"download {url} " if url else f"get the {name}.tiktoken file "
        raise TokenizerError(
            f"tokenizer {name!r} is not available offline: {where}on a machine with internet "
            f"and put it as {name}.tiktoken (or gzipped, {name}.tiktoken.gz) in a folder named "
            f"by the environment variable {ENV_DIR}; {' and '.join(SHIPPED)} ship with "
            f"ctxreplay and need nothing ({type(exc).__name__}: {exc})"
        ) from exc


def by_tiktoken(names: Iterable[str]) -> tuple[str, ...]:
    """Those of the encodings ``names`` that tiktoken counts (any but the shipped ones, which
    splintr counts): a long whitespace run is counted in chunks (``token_parts.chunk_cuts``)."""
    return tuple(name for name in names if _splintr(name) is None)


_POSSESSIVE = re.compile(r"(\+|\*|\?|\{\d+(?:,\d*)?\})\+")
"""A possessive quantifier (``x++``, ``x?+``, ``x{1,3}+``): splintr's regex engine does not
backtrack, so the plain greedy quantifier matches the same (its own copies of these patterns are
written so; tests/replay/ingest/test_tokens.py checks the ids)."""


@functools.cache
def _splintr(name: str) -> splintr.Tokenizer | None:
    """splintr's tokenizer for a shipped encoding (from the same sha256-checked file and
    pattern), None for any other encoding."""
    path = _find_file(name)
    if path is None or name not in _PATTERNS:
        return None
    raw = _checked_bpe(path, name)
    try:
        return splintr.Tokenizer.from_bytes(raw, _POSSESSIVE.sub(r"\1", _PATTERNS[name]),
                                            _SPECIALS[name])
    except ValueError as exc:
        raise TokenizerError(f"{path}: not a .tiktoken file ({exc})") from exc


def _repaired(text: str) -> str:
    """A lone surrogate replaced by U+FFFD, as tiktoken repairs text before encoding."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@functools.cache
def encoder(name: str) -> Callable[[str], list[int]]:
    """The fastest encoder whose ids are tiktoken's ``encode_ordinary``: splintr for a shipped
    encoding (from the same sha256-checked file and pattern), tiktoken for any other."""
    fast = _splintr(name)
    if fast is None:
        enc = encoding(name)
        limit = token_parts.SPLIT_CHARS
        return lambda text: ids_in_parts(lambda part: encode_safely(enc, part), text, limit)
    encode = fast.encode_ordinary
    limit = token_parts.SPLIT_CHARS

    def encode_valid(text: str) -> list[int]:
        if len(text) > limit:  # in parts: an encoder's memory is bounded by a part's
            return ids_in_parts(encode_valid, text, limit)
        try:
            return encode(text)
        except UnicodeEncodeError:  # a lone surrogate: repaired as tiktoken repairs it
            return encode(_repaired(text))

    return encode_valid


@functools.cache
def counter(name: str) -> Callable[[str], int]:
    """``len(encoder(name)(text))`` without making the list of ids: splintr's ``encode_flat``
    (the same ids as ``encode_ordinary`` for a tokenizer built by ``from_bytes``, which matches
    no special token spelled out in the text and adds no template; 4 bytes an id) takes about
    0.7x the CPU of building a Python list of ints.  tests/replay/ingest/test_tokens.py checks
    the counts against tiktoken's ids.  A text longer than ``token_parts.SPLIT_CHARS`` (as it
    was when the counter was made) is counted in parts, an encoder's memory bounded by a
    part's (``replay.ingest.token_parts``)."""
    fast = _splintr(name)
    if fast is None:
        encode = encoder(name)
        return lambda text: len(encode(text))
    flat = fast.encode_flat
    limit = token_parts.SPLIT_CHARS

    def count_valid(text: str) -> int:
        if len(text) > limit:
            return count_in_parts(count_valid, text, limit)
        try:
            return len(flat(text)) >> 2
        except UnicodeEncodeError:  # a lone surrogate: repaired as tiktoken repairs it
            return len(flat(_repaired(text))) >> 2

    return count_valid


_WARM_TEXT = "ünïcode"
"""A word of non-ASCII letters: splintr's regex builds its Unicode letter classes on the first
one it meets in a process (0.14-0.18 s of CPU here, once), which ``warm`` does up front."""


def warm(name: str) -> None:
    """Load ``name``'s counter and what its first counts load lazily (the encoder's regex
    tables for non-ASCII letters), so that worker processes forked afterwards inherit them
    instead of each paying for them again."""
    counter(name)(_WARM_TEXT)


def forget_learnt(name: str) -> None:
    """Forget the pieces ``name``'s counter has learnt (splintr keeps each piece of text it has
    encoded, and its ids, for the rest of the process): the next counts start as a fresh
    process's do.  For measurements that count the same texts round after round (a later round
    would otherwise find every piece already known: 20-30 % less CPU for the samples' texts).
    The cache is bounded (it stays at ~66,500 pieces however many distinct words pass).
    tiktoken learns nothing between calls: for another encoding this does nothing."""
    fast = _splintr(name)
    if fast is not None:
        fast.clear_cache()


_FEW_TEXTS = 64
"""``count_tokens`` tells texts of lengths all their own by a set of the lengths up to this many
texts (beyond, where lengths repeat more often, by the ``Counter`` it then makes anyway)."""


def count_tokens(texts: list[str], name: str = "o200k_base", *, threads: int = 1) -> list[int]:
    """Token counts of ``texts`` under ``name``, as ``len(encode_ordinary(text))``.

    Each distinct text is counted once.  ``threads`` > 1 splits the distinct texts into that
    many interleaved slices counted in threads (the encoders release the GIL); 1 counts in the
    calling thread only.

    Only texts whose length another text shares are hashed to find repeats (a text of a length
    of its own is distinct): most of a file's characters are in long texts of lengths of their
    own, and hashing a string (siphash) costs ~4 instructions a byte.
    """
    count_one_text = counter(name)
    if len(texts) <= _FEW_TEXTS and len(set(map(len, texts))) == len(texts):
        shared: set[int] = set()  # (no ``Counter`` made, ~3,000 instructions a call: a small
        # file's texts are mostly each of a length of its own)
    else:
        sizes = Counter(map(len, texts))
        shared = {n for n, k in sizes.items() if k > 1} if len(sizes) < len(texts) else set()
    repeats = list(dict.fromkeys(t for t in texts if len(t) in shared)) if shared else []
    distinct = [*repeats, *(t for t in texts if len(t) not in shared)] if shared else texts
    if threads <= 1 or len(distinct) < 2 * threads:
        counts = [count_one_text(t) for t in distinct]
    else:
        def count(part: int) -> list[int]:
            return [count_one_text(t) for t in distinct[part::threads]]

        with ThreadPoolExecutor(threads) as pool:
            parts = list(pool.map(count, range(threads)))
        counts = [0] * len(distinct)
        for part, got in enumerate(parts):
            counts[part::threads] = got
    if not shared:
        return counts
    of = dict(zip(repeats, counts))  # (hashes cached: each string is hashed once)
    own = iter(counts[len(repeats):])  # the others, in ``texts`` order
    return [of[t] if len(t) in shared else next(own) for t in texts]


def count_one(text: str, name: str = "o200k_base") -> int:
    """Token count of one text (memoised for the short texts replays create)."""
    if len(text) > 4096:
        return _count_long(text, name) if len(text) <= 65536 else counter(name)(text)
    return _count_short(text, name)


@functools.lru_cache(maxsize=256)
def _count_long(text: str, name: str) -> int:
    return counter(name)(text)


@functools.lru_cache(maxsize=16384)
def _count_short(text: str, name: str) -> int:
    return counter(name)(text)
