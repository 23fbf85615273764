"""What the tokenizer tests share: the shipped encodings (``SHIPPED``), their official bytes, and
tiktoken's own encoders built from them (the ``reference`` fixture).

The reference encoder is built by tiktoken itself from its own definitions
(``tiktoken_ext.openai_public``: pattern, special tokens, official URL and sha256), with only its
download (``tiktoken.load.read_file``) answered from a plain decompressed copy of the shipped file.
tiktoken checks that copy against the official sha256, so the reference shares nothing with
``replay.ingest.tokens`` but the file bytes, and those are proven official.

Not here: the tests (``test_tokens.py``: counts; ``test_tokens_files.py``: the encoding files).
"""

from __future__ import annotations

import functools
import gzip
import tempfile

import pytest
import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public

from tests.conftest import REPO

SHIPPED_DIR = REPO / "replay" / "ingest" / "encodings"
SHIPPED = ("o200k_base", "cl100k_base")


def official_bytes(name: str) -> bytes:
    return gzip.decompress((SHIPPED_DIR / f"{name}.tiktoken.gz").read_bytes())


@functools.cache
def reference_encodings() -> dict[str, tiktoken.Encoding]:
    """tiktoken's own o200k_base and cl100k_base, built offline from the official file bytes."""
    url = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
    served = {url.format(n): official_bytes(n) for n in SHIPPED}
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
    return reference_encodings()
