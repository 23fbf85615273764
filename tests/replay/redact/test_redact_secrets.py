"""The secret scan (``replay.redact.secrets``): a shape's pattern is run only where bytes that
every match of it holds are in the data, so the scan finds what the patterns alone find."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.redact import redact
from replay.redact.secrets import HELD, PATTERNS, scan

_ONE_OF_EACH = {
    "AWS access key id": [b"AKIA" + b"Z" * 16, b"ASIA" + b"7" * 16],
    "GitHub token": [b"gh" + bytes([c]) + b"_" + b"a1" * 18 for c in b"pousr"],
    "GitHub fine-grained token": [b"github_pat_" + b"A_" * 20],
    "private key": [b"-----BEGIN PRIVATE KEY-----", b"-----BEGIN RSA PRIVATE KEY-----"],
    "Slack token": [b"xox" + bytes([c]) + b"-" + b"x1" * 5 for c in b"baprs"],
    "OpenAI/Anthropic key": [b"sk-" + b"a" * 20, b"sk-ant-" + b"b" * 20, b"sk-proj-" + b"c" * 20],
    "e-mail address": [b"a.b@example.com", b"%+-_@x-y.io"],
    "Google API key": [b"AIza" + b"Sy_-0" * 7],
    "Hugging Face token": [b"hf_" + b"Ab1" * 10],
    "GitLab token": [b"glpat-" + b"x_-1" * 5],
    "Stripe key": [b"sk_live_" + b"a1" * 8, b"rk_live_" + b"Z9" * 8],
    "npm token": [b"npm_" + b"n0" * 18],
    "JSON Web Token": [b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"],
}
"""Matches of each shape: each way its pattern can start, from the pattern as written."""


def _alone(data: bytes) -> list[str]:
    """The scan without its look for plain bytes first: every pattern run."""
    return [name for name, pattern in PATTERNS.items() if pattern.search(data)]


@pytest.mark.parametrize("name", list(PATTERNS))
def test_each_way_a_shape_starts_is_found_as_the_pattern_finds_it(name: str) -> None:
    assert HELD.keys() == PATTERNS.keys() == _ONE_OF_EACH.keys()
    for match in _ONE_OF_EACH[name]:
        for data in (b" " + match + b" ", b'{"k": "' + match + b'"}\n', match):
            assert name in _alone(data), data  # a match indeed
            assert scan(data) == _alone(data), data
    assert scan(b"".join(b" " + m for ms in _ONE_OF_EACH.values() for m in ms)) == list(PATTERNS)


@pytest.mark.parametrize("token", [b"hf_" + b"Ab1" * 10, b"AIza" + b"Sy_-0" * 7,
                                   b"glpat-" + b"x_-1" * 5])
def test_a_token_kept_as_an_id_stops_the_copy(tmp_path: Path, token: bytes) -> None:
    """A value under a keep-list key that is one token is kept as written (an id): a Hugging
    Face, Google or GitLab token there went into the archive, as no shape of the scan matched
    it; the scan knows them now and the file is not written."""
    source = tmp_path / "in" / "chat.json"
    source.parent.mkdir()
    source.write_text(json.dumps({"id": token.decode(), "messages": [
        {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}))
    report = redact([source.parent], tmp_path / "out")
    [f] = report.files
    assert not f.written and any("secret-like" in i.reason for i in f.issues), f.issues
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
