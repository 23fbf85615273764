"""The encoding files: shipped with the package, used with the network blocked, taken from
``CTXREPLAY_ENCODINGS_DIR`` (over a shipped one), and refused with a clear error when unknown,
missing or corrupted (the sha256 check).

Not here: the counts themselves against tiktoken's (``test_tokens.py``).
"""

from __future__ import annotations

import fnmatch
import socket
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load

from replay.errors import TokenizerError
from replay.ingest import tokens
from replay.ingest.tokens import encoding
from tests.conftest import REPO
from tests.replay.ingest.conftest import SHIPPED, SHIPPED_DIR, official_bytes


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
    (folder / "o200k_harmony.tiktoken").write_bytes(official_bytes("o200k_base"))
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
    (folder / "cl100k_base.tiktoken").write_bytes(official_bytes("cl100k_base"))
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
    bad.write_bytes(_corrupt(official_bytes(name)))
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
    (folder / "o200k_harmony.tiktoken").write_bytes(_corrupt(official_bytes("o200k_base")))
    monkeypatch.setenv("CTXREPLAY_ENCODINGS_DIR", str(folder))
    with pytest.raises(TokenizerError) as err:
        encoding("o200k_harmony")
    assert "sha256" in str(err.value) and "o200k_harmony" in str(err.value)
