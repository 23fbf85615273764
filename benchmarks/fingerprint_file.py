"""A fingerprint file's use by ``trace_fingerprint.py`` and ``store_fingerprint.py``: the total
printed, the fingerprints written (``--out``) and compared with an earlier file (``--against``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def total_out_against(got: dict[str, Any], what: str, out: Path | None, against: Path | None,
                      changed: Callable[[dict[str, Any], dict[str, Any]], list[str]]) -> int:
    """Print ``got``'s count (as ``what``) and total sha256, write it to ``out``, compare it with
    the file ``against`` (``changed(ref, got)``: the keys that differ, as printed); the exit
    code: 1 when anything changed, else 0."""
    total = hashlib.sha256(json.dumps(got, sort_keys=True).encode()).hexdigest()
    print(f"{len(got)} {what}, total sha256 {total}")
    if out:
        out.write_text(json.dumps(got, sort_keys=True, indent=0))
    if against:
        keys = changed(json.loads(against.read_text()), got)
        print("SAME" if not keys else f"CHANGED ({len(keys)}):\n  " + "\n  ".join(keys))
        return 1 if keys else 0
    return 0
