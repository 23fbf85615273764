"""Results computed once for the whole test session, across pytest-xdist's workers.

Each xdist worker is its own process and builds its own session fixtures, so a result that
tests on both workers need (a preset replayed over the samples and measured, ~1.4 s of CPU)
was computed once per worker.  ``SharedResults`` keeps each result as a pickle in the folder
that every worker of the session shares (pytest-xdist's recipe: the parent of a worker's base
temporary folder; without xdist, the session's own), written under a file lock by the first
worker that asks and read by the others.  Within a worker a result is loaded once and the same
object is handed to every test, as a session fixture's value is.

A result must be deterministic (equal in whichever worker computes it) and picklable; the
files are pytest's own temporary files of this session, written and read by this code only.
"""

from __future__ import annotations

import os
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock

T = TypeVar("T")

_KEY = re.compile(r"[A-Za-z0-9_.+-]{1,120}")
"""A result's name is its file's name: a short plain word, never a path."""


def session_folder(basetemp: Path) -> Path:
    """The folder all workers of this session share: the parent of a worker's ``basetemp``
    under xdist (``pytest-N/popen-gw0`` -> ``pytest-N``), else ``basetemp`` itself."""
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


class SharedResults:
    """``results.get(key, compute)``: ``compute()``'s value, computed by one worker of the
    session and read from its pickle by the others."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self._loaded: dict[str, Any] = {}
        self.computed: list[str] = []
        """The keys this worker computed itself (the others it read)."""

    def get(self, key: str, compute: Callable[[], T]) -> T:
        _check(key)
        if key not in self._loaded:
            path = self.folder / f"{key}.pickle"
            # one lock per key: a worker computing one result never waits on another key
            with FileLock(self.folder / f"{key}.lock"):
                if path.is_file():
                    self._loaded[key] = pickle.loads(path.read_bytes())
                else:
                    value = compute()
                    part = path.with_name(f"{key}.part")
                    part.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
                    part.replace(path)
                    self._loaded[key] = value
                    self.computed.append(key)
        return self._loaded[key]  # type: ignore[no-any-return]

    def files(self, key: str) -> Path:
        """A folder for the files of the result ``key`` (its ``compute`` writes them there;
        the tests that get the result only read them)."""
        _check(key)
        return self.folder / f"{key}.files"


def _check(key: str) -> None:
    if not _KEY.fullmatch(key):
        raise ValueError(f"a shared result's key must be a plain file name: {key!r}")
