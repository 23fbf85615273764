"""Whether a regular pattern from a file runs in linear time: ``linear_pattern``, the test a
log's own action pattern passes before a parser uses it (mini-swe-agent's ``action_regex``: a
crafted ``(a+)+`` could hang the batch on one file).

Not here: the patterns the parsers use (``replay.ingest.parsers.mini_swe_agent``).
"""

from __future__ import annotations

import re
from typing import Any


def linear_pattern(pattern: str) -> bool:
    """Whether no repetition in ``pattern`` repeats another repetition, an alternation or a
    back-reference (the shapes of catastrophic backtracking, such as ``(a+)+`` or ``(a|a)*``).
    """
    import re._constants as c  # the parser's opcodes (sre_constants, deprecated alias)
    import re._parser as sre_parse

    repeats = (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT)

    def risky(items: Any) -> bool:  # holds a repeat, a branch or a back-reference
        for op, av in items:
            if op in repeats or op in (c.BRANCH, c.GROUPREF, c.GROUPREF_EXISTS):
                return True
            if op is c.SUBPATTERN and risky(av[-1]):
                return True
        return False

    def parts(op: Any, av: Any) -> list[Any]:  # the sub-patterns of one item
        if op in repeats:
            return [av[2]]
        if op is c.SUBPATTERN:
            return [av[-1]]
        if op is c.BRANCH:
            return list(av[1])
        return [av[1]] if op in (c.ASSERT, c.ASSERT_NOT) else []

    def ok(items: Any) -> bool:
        for op, av in items:
            if op in repeats and (av[1] is c.MAXREPEAT or av[1] > 1) and risky(av[2]):
                return False
            if not all(ok(sub) for sub in parts(op, av)):
                return False
        return True

    try:
        return ok(sre_parse.parse(pattern, re.DOTALL))
    except (re.error, RecursionError, OverflowError):
        return False
