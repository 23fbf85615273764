"""The checkouts an instruction-count benchmark compares, from its command line (shared by
``replay_instructions.py``, ``ingest_instructions.py`` and ``metrics_instructions.py``): one or
two folders holding this repository, and valgrind on the PATH, or a usage error (exit 2)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def usable_checkouts(name: str, checkouts: list[Path], marker: str) -> bool:
    """Whether valgrind is installed and ``checkouts`` are one or two folders holding the file
    ``marker`` (a path inside this repository); else says why on stderr as ``name`` (the
    caller exits 2)."""
    if shutil.which("valgrind") is None:
        print(f"{name}: valgrind is not installed", file=sys.stderr)
        return False
    bad = [str(c) for c in checkouts if not (c / marker).is_file()]
    if bad or len(checkouts) > 2:
        print(f"{name}: give one or two checkouts of this repository: {bad}", file=sys.stderr)
        return False
    return True
