"""Inspect ``.eval`` logs (a zip of JSON files) for ``replay redact``: the members read and
checked (``read_members``) and the redacted members written as a new zip (``write_members``).

Checked before anything is redacted, the file refused (``Refused``) otherwise: at most
``MAX_ENTRIES`` members; each name relative, ``/``-separated, without an empty, ``.`` or ``..``
part or a backslash, and met once; no symlink, directory or encrypted member; each member at
most ``input_files.max_document_bytes()`` bytes uncompressed (its recorded size checked first,
and no more than that ever decompressed), and all of them together no more (the bounds the
ingest applies, ``replay.ingest.parsers.inspect_eval_zip``); each one JSON document.  The ingest
skips a bad member and reads the rest; redact refuses the file instead: a member it cannot
read is never copied, and a log missing one would not re-ingest as the original.

Member names: Inspect's layout (``header.json``, ``_journal/start.json``, ``summaries.json``,
``reductions.json``, ``_journal/summaries/<n>.json``) is kept; a sample's
``samples/<id>_epoch_<n>.json`` keeps its id exactly when the sample's ``id`` is kept (one
token, not of a user's shape: ``replay.redact.keep_list.keeps``, the one rule), and gets the id's
stand-in otherwise; any other name is
redacted like a file name.  The new zip is deflated, its members dated 1980-01-01 (the
original's times are not copied) and readable by their owner.

Not here: reading samples for a run (``replay.ingest.parsers.inspect_eval_zip``).
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
from typing import Any

from replay.errors import ReplayError
from replay.ingest.input_files import ENV_MAX_DOCUMENT_BYTES, max_document_bytes
from replay.ingest.parsers.inspect_eval_zip import MAX_ENTRIES, ZIP_ERRORS, read_entry
from replay.ingest.parsers.json_decode import loads
from replay.redact.keep_list import keeps
from replay.redact.leaves import Redactor

_LAYOUT = re.compile(r"header\.json|_journal/start\.json|summaries\.json|reductions\.json"
                     r"|_journal/summaries/\d{1,9}\.json")
_SAMPLE = re.compile(r"samples/([^/\\]+)_epoch_(\d{1,9})\.json")
"""A sample member, one file directly inside ``samples/`` (the ingest reads no other)."""
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


class Refused(ReplayError):
    """The zip is not one redact copies (the reason says why)."""


def read_members(data: bytes) -> list[tuple[str, Any]]:
    """Every member of a ``.eval`` zip as (name, JSON value), in the zip's order.

    Raises:
        Refused: the zip is damaged, or a member breaks a rule of the module's docstring.
    """
    max_bytes = max_document_bytes()
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
        infos = z.infolist()
    except ZIP_ERRORS as exc:
        raise Refused(f"a damaged .eval zip ({exc})") from None
    if len(infos) > MAX_ENTRIES:
        raise Refused(f"{len(infos):,} zip members, over {MAX_ENTRIES:,}")
    out: list[tuple[str, Any]] = []
    seen: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        shown = repr(name[:120])
        parts = name.split("/")
        if name.startswith("/") or "\\" in name or any(p in ("", ".", "..") for p in parts) \
                or ":" in parts[0]:
            raise Refused(f"zip member {shown}: not a relative path inside the zip")
        if name in seen:
            raise Refused(f"zip member {shown} appears twice")
        seen.add(name)
        mode = info.external_attr >> 16
        if info.is_dir() or stat.S_ISLNK(mode):
            raise Refused(f"zip member {shown} is a {'folder' if info.is_dir() else 'symlink'}")
        if info.flag_bits & 0x1:
            raise Refused(f"zip member {shown} is encrypted")
        budget = max_bytes - total
        if info.file_size > budget:
            raise Refused(f"zip member {shown} is {info.file_size:,} bytes uncompressed, over "
                          f"the {budget:,} left of {max_bytes:,} for the file (raise it with "
                          f"{ENV_MAX_DOCUMENT_BYTES}=BYTES)")
        try:
            raw = read_entry(z, info, budget, max_bytes)
            value = loads(raw)
        except (*ZIP_ERRORS, RecursionError) as exc:
            raise Refused(f"zip member {shown}: not a JSON document redact can read "
                          f"({exc})") from None
        total += len(raw)
        out.append((name, value))
    return out


def member_name(name: str, redactor: Redactor) -> str:
    """The copy's name of member ``name`` (the module's docstring)."""
    if _LAYOUT.fullmatch(name):
        return name
    if m := _SAMPLE.fullmatch(name):
        ident = m.group(1)
        kept = redactor.kept_id(ident) if keeps("id", ident) else redactor.ident(ident)
        return f"samples/{kept}_epoch_{m.group(2)}.json"
    return redactor.file_path(name)


def write_members(members: list[tuple[str, str]]) -> bytes:
    """A zip of ``members`` (name, text), deflated, dated ``_FIXED_TIME``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in members:
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (stat.S_IFREG | 0o600) << 16
            z.writestr(info, text.encode("utf-8", "surrogatepass"))
    return buffer.getvalue()
