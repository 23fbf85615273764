"""``ops.shell_split`` is ``shlex.split(line, comments=False)``: the same words, and a ValueError
exactly where shlex raises one (unclosed quotes, a backslash at the end)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from replay.ingest.ops import classify_shell, shell_split

_SHELLY = st.text(alphabet=st.sampled_from(list("ab./-=|;&>'\"\\ \t\r\n\x0b\xa0#$`*中")),
                  max_size=40)
"""Command-like text dense in what shell splitting treats specially."""


def _shlex(line: str) -> list[str] | None:
    try:
        return shlex.split(line, comments=False)
    except ValueError:
        return None


def _ours(line: str) -> list[str] | None:
    try:
        return shell_split(line)
    except ValueError:
        return None


@settings(max_examples=3000)
@given(st.one_of(_SHELLY, st.text(max_size=40)))
@example("a '' b")
@example("''")
@example('"a\\"b" \'c\\\' d')  # a backslash in single quotes is literal: c\ then an open quote
@example('"x\\y\\\\z\\$"')
@example("a\\\nb \\")
@example("echo \"it's\" 'say \"hi\"' \\'q")
def test_same_words_and_errors_as_shlex(line: str) -> None:
    assert _ours(line) == _shlex(line)


@pytest.mark.parametrize(("command", "expected"), [
    ("cat 'my file.py'", ("read", "my file.py")),
    ('sed -n "1,20p" "src/a b.py"', ("read", "src/a b.py")),
    ("grep -rn \"def x\" .", ("search", "")),
    ("echo 'unclosed > out.txt", ("write", "out.txt")),  # shlex fails: split on blanks
])
def test_commands_with_quotes_are_classified_on_their_words(command: str,
                                                            expected: tuple[str, str]) -> None:
    assert tuple(classify_shell(command)) == expected
