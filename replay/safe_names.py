"""Names that come from data, made safe to use as one path segment.

Everything a store, a log or a trace holds may have been crafted: a run id of
``../../x`` or an entry key of ``/home`` must never reach a path join.  Two tools:

- ``is_segment(name)``: whether a name *read back* from something ctxreplay wrote (a manifest
  key, a journal line) is one plain path segment as ctxreplay writes them; a reader that gets
  ``False`` reports the store as damaged and touches nothing.
- ``file_name(text, suffix)``: the one way a file name is *made* from data (a run id, a
  source): a readable slug of ``text`` plus a short hash of it, so two different texts never
  share a file and no text can leave the folder it is joined to.

Not here: what is damaged about a store (``replay.ingest.store``), reading input files
(``replay.ingest.input_files``).
"""

from __future__ import annotations

import hashlib
import re

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")
"""A name ctxreplay writes itself: letters, digits, ``._+-``, not starting with a dot."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
SLUG_CHARS = 48
"""The readable part of a ``file_name`` is at most this long."""


def is_segment(name: object) -> bool:
    """Whether ``name`` is one safe path segment: a string of letters, digits and ``._+-``
    that does not start with a dot (so never ``.`` or ``..``), at most 200 characters."""
    return isinstance(name, str) and _SEGMENT.fullmatch(name) is not None and ".." not in name


def file_name(text: str, suffix: str = "") -> str:
    """A file name for ``text`` (any string from data): a slug of its safe characters, ``-``,
    the first 10 hex digits of its sha256, then ``suffix`` (e.g. ``".png"``).

    The same text always gives the same name, different texts different names (the hash), and
    the result is always one path segment (``is_segment``) whatever ``text`` holds.
    """
    slug = _UNSAFE.sub("_", text).replace("..", "_").strip("._+-")[:SLUG_CHARS].strip("._+-")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug}-{digest}{suffix}" if slug else f"h-{digest}{suffix}"
