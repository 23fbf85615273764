"""The Parquet store: a dataset directory of ingested runs, written atomically.

Layout::

    DIR/manifest.json                       source → entry key, format, counts, coverage;
                                            the inputs whose last ingest failed
    DIR/data/<key>.parquet                  one entry: its messages table (the file's rows);
                                            its runs, requests and events tables in the
                                            file's footer (``ENTRY_FOOTER``)
    DIR/index.parquet                       every entry's runs rows + token totals (a cache,
                                            checked against the manifest's index_sha256)

An entry key is derived from the source's sha256, its relative path, the
tokenizers and the schema version, so re-ingesting an unchanged file finds its
entry and does nothing.  Every file is written under a temporary name and
renamed; the manifest is replaced last, so an interrupted ingest leaves the
previous good state readable.  A source that fails to parse keeps its old entry.

One file per entry (schema version 6; up to 5, a folder of four Parquet files): the three small
tables ride in the footer of the messages file, each as an Arrow IPC stream, because Parquet's
fixed cost per column chunk (about 10 µs, whatever the rows) made a one-row ``runs`` table and
an empty ``events`` table cost more to write than most entries' messages, and each file
created is a file-system operation more.

Not here: parsing (``replay.ingest.parsers``), tokenising (``replay.ingest.batch``), the run index and
reading every run's rows (``replay.ingest.store_index``), atomic writes (``replay.atomic_files``),
writing an entry (``replay.ingest.entry_write``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from replay.atomic_files import atomic_write_bytes, folder_fd
from replay.errors import ConfigError, StoreError
from replay.ingest.entry_file import decode, decode_footer, decode_runs
from replay.ingest.failed_inputs import checked_failed
from replay.ingest.input_files import TooBig, Unreadable, open_input, read_document, read_input
from replay.ingest.parsers.coverage import FATES, summary_line
from replay.ingest.schema import SCHEMA_VERSION, SCHEMAS
from replay.safe_names import is_segment

TABLES = ("runs", "messages", "requests", "events")
ENTRY_SUFFIX = ".parquet"
"""An entry's file name: its key and this (``replay.ingest.entry_file``)."""
KEY = re.compile(r"[0-9a-f]{24}-[0-9a-f]{8}-[A-Za-z0-9_.+-]*-v\d+")
"""The shape of every key ``entry_key`` gives (and gave: the same since the first store)."""


@dataclass(frozen=True, slots=True)
class RunTables:
    """The tables of one or more runs."""

    runs: pa.Table
    messages: pa.Table
    requests: pa.Table
    events: pa.Table | None = None
    """The runs' ``ContextEvent`` rows (None where a reader did not load them)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One ingested source file in the store."""

    source: str
    key: str
    sha256: str
    format: str
    n_runs: int
    coverage: dict[str, dict[str, int]] = field(default_factory=dict, hash=False)
    """Record type -> {fate: records} as the parser counted them (``replay.ingest.parsers.coverage``);
    kept with the entry, so a file reused from the cache shows the same coverage.  Not part of
    the hash (a dict is not hashable; entries are hashed as cache keys, e.g. by ``sweep``)."""
    issues: tuple[tuple[int, str], ...] = ()
    """(line, reason) of every problem found when the file was parsed: part of the entry, so
    an ingest that reuses it reports them again (and ``--strict`` fails every time)."""
    checksum: str = ""
    """``entry_checksum`` of the entry's files as written: checked whenever the entry is read
    (``read_entry``) or reused (``intact``); '' for an entry written before there was one."""


def entry_key(sha256: str, source: str, tokenizers: tuple[str, ...], parsers_version: str = "",
              forced: str | None = None) -> str:
    """The cache key of a source: content, location, tokenizers, parser and schema versions,
    and the parser ``--format`` forced (``forced``), so that a file read under a forced format
    is never answered by its entry as detected, nor the other way round."""
    where = hashlib.sha1(source.encode()).hexdigest()[:8]
    toks = "+".join(t.split("_")[0] for t in tokenizers) or "none"
    parsers = f"-p{parsers_version}" if parsers_version else ""
    as_format = f"-f{forced}" if forced else ""
    return f"{sha256[:24]}-{where}-{toks}{parsers}{as_format}-v{SCHEMA_VERSION}"


def entry_file(root: Path, key: str) -> Path:
    """The file of entry ``key`` in the store at ``root``, after checking that the key is one
    plain path segment (``safe_names.is_segment``) and neither ``data/`` nor the file is a
    symlink: a key read from a crafted manifest never leads outside ``root/data``.

    Raises:
        StoreError: the key or the file is not one ctxreplay writes (nothing is touched).
    """
    if not is_segment(key):
        raise StoreError(f"{root}: damaged store: entry key {key!r} is not a plain file name; "
                         "nothing was read or changed (re-ingest into a new directory)")
    if (root / "data").is_symlink():  # (followed by every reader, exit 0, where a planted
        # entry file was refused: the store's files are checked where they are, not elsewhere)
        raise StoreError(f"{root / 'data'}: damaged store: the entries' folder is a symlink; "
                         "nothing was read or changed (re-ingest into a new directory)")
    path = root / "data" / f"{key}{ENTRY_SUFFIX}"
    if path.is_symlink():
        raise StoreError(f"{path}: damaged store: an entry file is a symlink; nothing was "
                         "read or changed (re-ingest into a new directory)")
    return path


def entry_checksum(key: str, digests: list[str]) -> str:
    """The checksum of an entry: its key and the sha256 of its file, so an entry answers for
    its own key only (a file copied or swapped under another key fails)."""
    return hashlib.sha256("\n".join((key, *digests)).encode()).hexdigest()


def remove_name(name: str, folder: int) -> None:
    """Delete ``name`` in ``folder`` (a descriptor) if it is there: a file or a symlink is
    unlinked, a folder removed with what it holds."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(name, ignore_errors=True, dir_fd=folder)
    else:
        os.unlink(name, dir_fd=folder)


def remove_entry(root: Path, key: str) -> None:
    """Delete entry ``key``'s file, or the folder an older ctxreplay kept an entry in (a
    checked key, ``entry_file``: never anything outside ``root/data``; a symlinked folder is
    unlinked, not followed)."""
    entry_file(root, key)  # raises: the key is no plain file name, or its file is a symlink
    folder = root / "data"
    if not folder.is_dir() or folder.is_symlink():
        return
    with folder_fd(root, ("data",)) as data:
        for name in (f"{key}{ENTRY_SUFFIX}", key):
            remove_name(name, data)


@dataclass(frozen=True, slots=True)
class Manifest:
    """What a store's manifest holds: its entries by source, and the input files whose last
    ingest failed (source -> why: ``replay.ingest.failed_inputs``)."""

    entries: dict[str, Entry]
    failed: dict[str, str]


def read_manifest(root: Path) -> dict[str, Entry]:
    """The entries of a store (empty for a new directory)."""
    return read_manifest_whole(root).entries


def read_manifest_whole(root: Path) -> Manifest:
    """The manifest of a store (empty for a new directory), read once."""
    path = root / "manifest.json"
    if path.is_symlink():
        raise StoreError(f"{path}: damaged store: the manifest is a symlink; nothing was read "
                         "or changed (remove it, or re-ingest into a new directory)")
    if not path.exists():
        return Manifest({}, {})
    try:
        data = read_document(path)
    except TooBig as exc:  # the limit is set too low, nothing is wrong with the store: exit 2
        raise ConfigError(str(path), "", f"the manifest: {exc}; nothing was changed") from None
    except Unreadable as exc:  # a fifo would block the read for ever; a huge file fill memory
        raise StoreError(f"{path}: damaged store: the manifest: {exc}; nothing was changed "
                         "(remove it, or re-ingest into a new directory)") from None
    try:
        doc = json.loads(data)
        if doc.get("schema_version") != SCHEMA_VERSION:
            raise StoreError(f"{path}: schema version {doc.get('schema_version')!r}, this ctxreplay "
                             f"reads {SCHEMA_VERSION!r}; re-ingest into a new directory")
        entries = {s: entry_from_doc(s, e, path) for s, e in doc["entries"].items()}
        failed = checked_failed(doc.get("failed", {}))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise StoreError(f"{path}: corrupt manifest ({exc})") from exc
    return Manifest(entries, failed)


def entry_from_doc(source: str, doc: dict[str, Any], where: Path) -> Entry:
    """An entry as the manifest (or the ingest journal) stores it, checked (``check_entry``).

    Raises:
        TypeError, KeyError: a field is missing, unknown or of the wrong shape.
        StoreError: a field would lead outside the store or is not what ctxreplay writes.
    """
    entry = _checked(Entry(source=source, **{**doc, "issues": _issues(doc.get("issues", []))}))
    check_entry(entry, where)
    return entry


def entry_doc(e: Entry) -> dict[str, Any]:
    """What the manifest (and the ingest journal) stores of an entry."""
    return {"key": e.key, "sha256": e.sha256, "format": e.format, "n_runs": e.n_runs,
            **({"coverage": e.coverage} if e.coverage else {}),
            **({"issues": [list(i) for i in e.issues]} if e.issues else {}),
            **({"checksum": e.checksum} if e.checksum else {})}


def check_entry(entry: Entry, where: Path) -> None:
    """Raise ``StoreError`` (naming ``where``) unless every field of ``entry`` is of the type
    and shape ctxreplay writes: the key one plain path segment, the sha256 hex, the run count
    a non-negative integer.  A store is trusted no further than this."""
    problem = None
    if not isinstance(entry.source, str) or not entry.source:
        problem = f"source {entry.source!r} is not a file name"
    elif not is_segment(entry.key):
        problem = f"entry key {entry.key!r} is not a plain folder name"
    elif not isinstance(entry.sha256, str) or re.fullmatch(r"[0-9a-f]{64}", entry.sha256) is None:
        problem = f"sha256 {entry.sha256!r} is not a sha256"
    elif not isinstance(entry.format, str):
        problem = f"format {entry.format!r} is not a name"
    elif type(entry.n_runs) is not int or entry.n_runs < 0:
        problem = f"n_runs {entry.n_runs!r} is not a count"
    elif not isinstance(entry.checksum, str) or (
            entry.checksum and re.fullmatch(r"[0-9a-f]{64}", entry.checksum) is None):
        problem = f"checksum {entry.checksum!r} is not a sha256"
    if problem is not None:
        raise StoreError(f"{where}: damaged store: {problem} (entry {str(entry.source)[:200]!r}); "
                         "nothing was read or changed (re-ingest into a new directory)")


def _issues(stored: Any) -> tuple[tuple[int, str], ...]:
    """A manifest's ``issues`` list of an entry, checked: ``[[line, reason], ...]``."""
    if not isinstance(stored, list) or not all(
            isinstance(i, list) and len(i) == 2 and type(i[0]) is int and isinstance(i[1], str)
            for i in stored):
        raise TypeError("issues is not a list of [line, reason]")
    return tuple((line, reason) for line, reason in stored)


def _checked(entry: Entry) -> Entry:
    """``entry`` when its coverage is ``{str: {fate: count}}`` (it is shown to the user and
    summed): each fate one of ``FATES``, each count a whole number from 0 to 2^63 - 1 (an
    edited ``-5`` was shown as "-3 skipped", a fate of another name counted in the records
    read but under no fate)."""
    cov = entry.coverage
    if not isinstance(cov, dict) or not all(
            isinstance(t, str) and isinstance(f, dict) and all(
                k in FATES and type(n) is int and 0 <= n < 1 << 63 for k, n in f.items())
            for t, f in cov.items()):
        raise TypeError(f"entry {entry.source!r}: coverage is not {{type: {{fate: count}}}}")
    return entry


def write_manifest(root: Path, entries: dict[str, Entry], index_sha256: str = "",
                   failed: dict[str, str] | None = None) -> None:
    """Replace the manifest atomically; ``index_sha256``: the sha256 of the run index written
    just before (``replay.ingest.store_index.write_index``), which readers check it against;
    ``failed``: the input files whose last ingest failed (kept only when there is one)."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
    if index_sha256:  # before the entries: read from the manifest's head (``_INDEX_SHA256``)
        doc["index_sha256"] = index_sha256
    doc["entries"] = {s: entry_doc(e) for s, e in sorted(entries.items())}
    if failed:
        doc["failed"] = dict(sorted(failed.items()))
    atomic_write_bytes(root / "manifest.json", manifest_bytes(doc), within=root)


def manifest_bytes(doc: dict[str, Any]) -> bytes:
    """``json.dumps(doc, indent=1).encode()`` byte for byte, for a document of strings,
    integers, booleans, None, lists and dicts (a manifest's: no floats, which the two write
    differently), made by msgspec's encoder and formatter (C) where they agree: with ``indent``
    the standard library encodes in Python (~1 ms for the samples' 25 entries, 30x msgspec's;
    a store of thousands of entries rewrites its manifest at every ingest).  What msgspec
    writes otherwise (a character past "~", which ``json.dumps`` escapes, a lone surrogate)
    is written by ``json.dumps`` itself."""
    try:
        data = msgspec.json.format(msgspec.json.encode(doc), indent=1)
    except (msgspec.EncodeError, OverflowError, UnicodeEncodeError, TypeError):
        data = b""
    if not data or not data.isascii() or b"\x7f" in data:
        data = json.dumps(doc, indent=1).encode()
    return data


_INDEX_SHA256 = re.compile(rb'\A\{\s*"schema_version":\s*"[^"\\]*",\s*"index_sha256":\s*"([0-9a-f]{64})",')
"""How ``write_manifest`` begins a manifest that records the run index's sha256."""


def manifest_index_sha256(root: Path) -> str:
    """The sha256 the manifest records for the run index, read from its first bytes (the whole
    manifest of a big store takes milliseconds to parse); '' when it records none or cannot be
    read: the index is then not used."""
    try:
        with open_input(root / "manifest.json") as f:
            head = f.read(256)
    except (OSError, Unreadable):
        return ""
    m = _INDEX_SHA256.match(head)
    return m[1].decode() if m else ""


def coverage_lines(root: Path) -> dict[str, str]:
    """source -> its coverage as one short line (records read, modelled, skipped, unknown:
    ``replay inspect`` lists the types), for every entry of the store that recorded one."""
    return {s: line for s, e in read_manifest(root).items()
            if (line := summary_line(e.coverage, types_shown=0))}


def is_store(path: Path) -> bool:
    """Whether ``path`` is a dataset directory written by ``replay ingest``."""
    return (path / "manifest.json").is_file()


def require_store(root: Path) -> None:
    """Refuse ``root`` when it is no dataset (``is_store``).

    Raises:
        StoreError: no manifest.json there.
    """
    if not is_store(root):
        raise StoreError(f"{root}: not a ctxreplay dataset (no manifest.json); run `replay ingest`")


def read_entry(root: Path, key: str, checksum: str = "") -> RunTables:
    """One entry's tables, checked against the schema and, when ``checksum`` is given, against
    the entry's checksum (the sha256 of what is read: no second read).

    Raises:
        StoreError: the file is missing or unreadable, not of this schema, or does not match
            ``checksum`` (truncated, swapped or edited; ``replay ingest`` repairs it).
    """
    path = entry_file(root, key)
    raw = _read(path)
    _check_sum(raw, key, checksum, path)
    return RunTables(**decode(raw, str(path)))


def _check_sum(raw: bytes, key: str, checksum: str, path: Path) -> None:
    """Raise ``StoreError`` unless entry ``key``'s bytes ``raw`` match ``checksum`` ('': not
    checked)."""
    if checksum and entry_checksum(key, [hashlib.sha256(raw).hexdigest()]) != checksum:
        raise StoreError(f"{path}: damaged store entry: its file does not match the checksum "
                         "the manifest keeps (truncated, swapped or edited); nothing was "
                         "read from it (`replay ingest` of its log repairs it)")


def read_entry_runs(root: Path, key: str) -> tuple[pa.Table, pa.Table, pa.Table]:
    """One entry's runs table, its messages' ``run_id`` and token columns and its
    requests table (``entry_file.decode_runs``; not checked against the entry's checksum).

    Raises:
        StoreError: the file is missing, unreadable or not of this schema.
    """
    path = entry_file(root, key)
    return decode_runs(_read(path), str(path))


def read_footer(root: Path, key: str, checksum: str = "") -> dict[str, pa.Table]:
    """One entry's ``runs``, ``requests`` and ``events`` tables, without its messages
    (``entry_file.decode_footer``), checked against ``checksum`` when given, as ``read_entry``
    checks an entry (the file is read whole either way).

    Raises:
        StoreError: the file is missing, unreadable, not of this schema, or does not match
            ``checksum``.
    """
    path = entry_file(root, key)
    raw = _read(path)
    _check_sum(raw, key, checksum, path)
    return decode_footer(raw, str(path))


def _read(path: Path) -> bytes:
    try:
        return read_input(path)
    except Unreadable as exc:
        raise StoreError(f"{path}: unreadable ({exc}); `replay ingest` of its log repairs the "
                         "entry") from None


def iter_entries(root: Path) -> Iterator[RunTables]:
    """The store's entries one at a time, in source order (memory bounded by one entry)."""
    for entry in read_manifest(root).values():
        yield read_entry(root, entry.key, entry.checksum)


def read_store(root: Path) -> RunTables:
    """All runs of a store as three tables."""
    require_store(root)
    parts = list(iter_entries(root))
    if not parts:
        return RunTables(*(SCHEMAS[n].empty_table() for n in TABLES))
    return RunTables(*(pa.concat_tables([getattr(p, n) for p in parts]) for n in TABLES))
