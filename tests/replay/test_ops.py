"""How tool calls are classified (replay.ops): the parts of a shell line."""

from __future__ import annotations

from replay.ops import _SPLIT, classify


def test_a_command_of_blanks_splits_like_a_short_one() -> None:
    """Separators are found without a \\s* around them (a long run of blanks made the split
    quadratic: 40,000 blanks took 37 s); the parts read the same."""
    blanks = " " * 200_000
    assert classify("Bash", {"command": f"ls{blanks}x"}) == classify("Bash", {"command": "ls x"})
    assert [p.strip() for p in _SPLIT.split(f"a{blanks}&&{blanks}b ; c\nd || e")] == \
        ["a", "b", "c", "d", "e"]
    assert classify("Bash", {"command": "  cd src &&   cat  a.py ; \n rm b.txt  "}) == \
        classify("Bash", {"command": "cd src && cat a.py; rm b.txt"})
