"""A Claude Code session file of ``n`` user records on one chain, in file order: the smallest
transcript the parser's memory-saving paths (one chain, texts read again) work on."""

from __future__ import annotations

import json
from pathlib import Path


def write_chain(path: Path, n: int, *, numbered: bool = False) -> None:
    """``u0 <- u1 <- … <- u{n-1}``, each a user prompt "hi" (``numbered``: "hi 0", "hi 1", …)."""
    path.write_text("".join(json.dumps({
        "parentUuid": f"u{i - 1}" if i else None, "sessionId": "s", "type": "user",
        "uuid": f"u{i}", "message": {"role": "user", "content": f"hi {i}" if numbered else "hi"},
    }) + "\n" for i in range(n)))
