"""Token counting: the only tiktoken import, working offline.

tiktoken downloads its BPE files on first use, which fails without a network.
The two encodings the model uses (``o200k_base``, ``cl100k_base``) ship with
the package as gzip files whose sha256 is checked against the official files,
and are built into ``tiktoken.Encoding`` objects directly.  Other encodings
are looked up in ``CTXREPLAY_ENCODINGS_DIR`` (``<name>.tiktoken[.gz]``) and
only then through tiktoken itself.

Counts are identical to ``tiktoken.get_encoding(name).encode_ordinary``.
Cheap estimators (chars/N) live in ``replay.estimator``, not here.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import os
from pathlib import Path

import tiktoken

from replay.errors import TokenizerError

_HERE = Path(__file__).parent / "encodings"

# Official sha256 of the uncompressed files (as in tiktoken_ext.openai_public).
_EXPECTED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
_ENDOFTEXT = "<|endoftext|>"
_PATTERNS = {
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k_base": "|".join(
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


def _find_file(name: str) -> Path | None:
    dirs = [Path(d) for d in os.environ.get("CTXREPLAY_ENCODINGS_DIR", "").split(os.pathsep) if d]
    for d in [*dirs, _HERE]:
        for suffix in (".tiktoken.gz", ".tiktoken"):
            p = d / f"{name}{suffix}"
            if p.is_file():
                return p
    return None


def _load_ranks(path: Path, name: str) -> dict[bytes, int]:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    expected = _EXPECTED_SHA256.get(name)
    if expected and hashlib.sha256(raw).hexdigest() != expected:
        raise TokenizerError(f"{path}: sha256 does not match the official {name} file")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.cache
def encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken ``Encoding`` for ``name``, loaded without network access.

    Raises:
        TokenizerError: the encoding is neither shipped nor found locally, with what to do.
    """
    path = _find_file(name)
    if path is not None and name in _PATTERNS:
        return tiktoken.Encoding(
            name=name,
            pat_str=_PATTERNS[name],
            mergeable_ranks=_load_ranks(path, name),
            special_tokens=_SPECIALS[name],
        )
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises ValueError or network errors
        raise TokenizerError(
            f"tokenizer {name!r} is not available offline: put {name}.tiktoken(.gz) in a folder "
            f"named by CTXREPLAY_ENCODINGS_DIR, or use one of {sorted(_PATTERNS)} "
            f"(shipped) ({type(exc).__name__}: {exc})"
        ) from exc


def count_tokens(texts: list[str], name: str = "o200k_base", *, threads: int = 1) -> list[int]:
    """Token counts of ``texts`` under ``name``, as ``len(encode_ordinary(text))``."""
    enc = encoding(name)
    if threads > 1 and len(texts) > 64:
        return [len(t) for t in enc.encode_ordinary_batch(texts, num_threads=threads)]
    return [len(enc.encode_ordinary(t)) for t in texts]


def count_one(text: str, name: str = "o200k_base") -> int:
    """Token count of one text (memoised for the short texts replays create)."""
    if len(text) > 4096:
        return len(encoding(name).encode_ordinary(text))
    return _count_short(text, name)


@functools.lru_cache(maxsize=65536)
def _count_short(text: str, name: str) -> int:
    return len(encoding(name).encode_ordinary(text))
