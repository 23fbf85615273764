"""``action_blocks`` with the default action pattern finds what ``ACTION.finditer`` finds over
the whole text, on any text of fences, newlines and words, while never reading on past the
last closing fence (an assistant text of thousands of opening fences never closed was read to
its end from each of them: 27 s for a 320 KB trajectory)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.parsers.mini_swe_agent import ACTION, action_blocks

_PIECES = st.sampled_from(["```bash", "```", "```mswea_bash_command", "\n", " ", "ls", "`",
                           "bash", "\n```", "x\n"])


@settings(max_examples=100, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_the_same_blocks_as_the_whole_text(text: str) -> None:
    want = [(m.span(), m.group(1)) for m in ACTION.finditer(text)]
    assert [(m.span(), m.group(1)) for m in action_blocks(ACTION, text)] == want


def test_another_pattern_is_searched_as_given() -> None:
    other = re.compile(r"<cmd>(.*?)</cmd>", re.DOTALL)
    assert [m.group(1) for m in action_blocks(other, "a <cmd>ls</cmd> b <cmd>pwd</cmd>")] == [
        "ls", "pwd"]


def test_unclosed_fences_after_the_last_block() -> None:
    text = "THOUGHT: ```bash\nls -la\n```\n" + "try ```bash\nls " * 20_000
    (block,) = action_blocks(ACTION, text)
    assert block.group(1) == "ls -la"
