"""The secret scan (``replay.redact.secrets``): a shape's pattern is run only where bytes that
every match of it holds are in the data, so the scan finds what the patterns alone find."""

from __future__ import annotations

import pytest

from replay.redact.secrets import HELD, PATTERNS, scan

_ONE_OF_EACH = {
    "AWS access key id": [b"AKIA" + b"Z" * 16, b"ASIA" + b"7" * 16],
    "GitHub token": [b"gh" + bytes([c]) + b"_" + b"a1" * 18 for c in b"pousr"],
    "GitHub fine-grained token": [b"github_pat_" + b"A_" * 20],
    "private key": [b"-----BEGIN PRIVATE KEY-----", b"-----BEGIN RSA PRIVATE KEY-----"],
    "Slack token": [b"xox" + bytes([c]) + b"-" + b"x1" * 5 for c in b"baprs"],
    "OpenAI/Anthropic key": [b"sk-" + b"a" * 20, b"sk-ant-" + b"b" * 20, b"sk-proj-" + b"c" * 20],
    "e-mail address": [b"a.b@example.com", b"%+-_@x-y.io"],
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
