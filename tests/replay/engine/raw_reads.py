"""Whether a recorded read call read its whole file, decided here from the raw call (the
engine's rule is ``replay.engine.refetch.reads_part``; the tests check it against this one)."""

from __future__ import annotations

import re
from typing import Any

RANGED = re.compile(r"^\s*(?:\S+/)?(?:head|tail|sed|awk|grep)\b|\|")
"""A shell read of part of a file: printed by a line-range or matching reader, or piped on."""


def read_whole(args: dict[str, Any] | None, text: str) -> bool:
    """Whether a read call read its whole file (arguments or shell line read here)."""
    if args is not None:
        if {"offset", "limit", "view_range", "line_range", "start_line", "end_line"} & args.keys():
            return False
        command = args.get("command", args.get("cmd", args.get("code", "")))
        text = command[-1] if isinstance(command, list) and command else str(command)
    last = text.split("&&")[-1]  # `cd repo && nl -ba f | sed -n ...`
    return not RANGED.search(last)
