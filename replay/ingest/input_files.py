"""Reading one input file without trusting what it is: regular files only, bounded.

A log named on the command line (or found in a folder) may be a FIFO that never ends, a device
such as ``/dev/zero``, a socket, a symlink loop or simply too big.  ``read_input`` opens it
without blocking, checks that it is a regular file *after* opening (no swap between check and
read), and reads at most ``max_file_bytes()`` bytes; anything else is an ``Unreadable`` with
a one-line reason, reported as that file's issue while the rest of the batch goes on.  A folder
is read only when it is an OpenHands V1 conversation: as one document of its files
(``replay.ingest.openhands_v1_folder.bundle``, each file read as here); any other is refused.

The limit is ``DEFAULT_MAX_FILE_BYTES`` (1 GiB), or the environment variable
``CTXREPLAY_MAX_FILE_BYTES`` (bytes; e.g. ``4000000000``).

A file read as one JSON document (SWE-agent, mini-swe-agent, OpenHands, ATIF, OpenCode export,
Inspect ``.json`` and each ``.eval`` sample, chat dumps) is decoded whole, and decoding takes
far more memory than the file: 2.5x for a trajectory, ~9x for an OpenHands document of many
tiny values (``benchmarks/document_memory.py``: 281 MB and 696 MB peak on ~61 MB files, 132 MB
of it an ingest of a one-record file), ~12x where a parser holds the decoded document until its
run is built.  SWE-agent and OpenHands documents of ``jsonl.LAZY_MIN_BYTES`` or more are read
an item of their big arrays at a time instead (188 MB and 382 MB peak on the same files:
0.9x, 3.8x).  Such a document is
read only up to ``max_document_bytes()`` (``DEFAULT_MAX_DOCUMENT_BYTES``, 128 MiB: at most
~2 GB per ingest worker), raised with ``CTXREPLAY_MAX_DOCUMENT_BYTES``.  JSON Lines formats are
decoded line by line, but a file's records are kept until its runs are built (403 MB peak for
61 MB of minimal Claude Code records), so they are bounded by the file limit only.

``input_size`` and ``holds_at_least`` measure inputs before they are read (a folder: the files
in it), for how many workers an ingest starts and in which order they take the inputs.

Not here: which files are read (``replay.ingest.discover``), parsing (``replay.ingest.parsers``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from replay.errors import ConfigError
from replay.ingest.openhands_v1_folder import NOT_FOLLOWED, NotConversation, bundle

DEFAULT_MAX_FILE_BYTES = 1 << 30
"""Files larger than this (1 GiB) are reported and skipped unless the limit is raised."""
ENV_MAX_FILE_BYTES = "CTXREPLAY_MAX_FILE_BYTES"
DEFAULT_MAX_DOCUMENT_BYTES = 128 << 20
"""The largest JSON document decoded whole (128 MiB), unless the limit is raised."""
ENV_MAX_DOCUMENT_BYTES = "CTXREPLAY_MAX_DOCUMENT_BYTES"
BOM = b"\xef\xbb\xbf"
"""A UTF-8 byte order mark: no format's first record (``parse_file`` takes it off)."""
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32"), (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32"),
              (b"\xff\xfe", "utf-16-le", "UTF-16"), (b"\xfe\xff", "utf-16-be", "UTF-16"))
"""Byte order marks of the wider Unicode encodings (UTF-32's first: it begins as UTF-16's),
with the codec that reads the text after it and the encoding's name."""
_MAGIC = ((b"\x1f\x8b", "gzip-compressed"), (b"BZh", "bzip2-compressed"),
          (b"\xfd7zXZ\x00", "xz-compressed"), (b"\x28\xb5\x2f\xfd", "zstd-compressed"))
"""The first bytes of the compressed files a log may be kept in, and what they are (a zip is
not one: an Inspect ``.eval`` log is a zip)."""
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a folder"))


class Unreadable(Exception):
    """A file that is not read: why, in one line."""


class TooBig(Unreadable):
    """A file over the read limit: the limit, not the file, is what to change."""


FILE_LIMIT = ("per file", ENV_MAX_FILE_BYTES)
"""A read limit as an oversized file's line says it: (what it bounds, the environment variable
that raises it, '' for a fixed one).  This one: ``max_file_bytes()``, every log."""
DOCUMENT_LIMIT = ("of a JSON document read whole", ENV_MAX_DOCUMENT_BYTES)
"""``max_document_bytes()``, as ``read_document`` reads with it."""


class _Folder(Unreadable):
    """A folder given to read: one an OpenHands V1 conversation is is read as its bundle."""


def max_file_bytes() -> int:
    """The per-file read limit: ``CTXREPLAY_MAX_FILE_BYTES`` when set (a positive integer),
    else ``DEFAULT_MAX_FILE_BYTES``."""
    return _env_bytes(ENV_MAX_FILE_BYTES, DEFAULT_MAX_FILE_BYTES)


def max_document_bytes() -> int:
    """The largest JSON document decoded whole: ``CTXREPLAY_MAX_DOCUMENT_BYTES`` when set (a
    positive integer), else ``DEFAULT_MAX_DOCUMENT_BYTES``."""
    return _env_bytes(ENV_MAX_DOCUMENT_BYTES, DEFAULT_MAX_DOCUMENT_BYTES)


def document_too_big(size: int) -> str:
    """Why a JSON document of ``size`` bytes is not decoded ('' when it is within the limit)."""
    max_bytes = max_document_bytes()
    if size <= max_bytes:
        return ""
    return (f"a whole-file JSON document of {size:,} bytes is over the {max_bytes:,}-byte limit "
            f"(decoding one takes up to 16x its size in memory); not read (raise it with "
            f"{ENV_MAX_DOCUMENT_BYTES}=BYTES)")


def check_max_bytes() -> None:
    """Refuse a read limit set in the environment that is not a positive whole number of bytes
    (called before any file is read, so the command stops with exit 2 instead of falling back
    to the default without a word).

    Raises:
        ConfigError: naming the variable and its value.
    """
    max_file_bytes()
    max_document_bytes()


def _env_bytes(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigError("environment", name, f"{raw[:40]!r} is not a positive whole number "
                                               "of bytes")
    return value


def _open(path: Path, max_bytes: int, *, follow: bool = True,
          limit: tuple[str, str] = FILE_LIMIT) -> tuple[int, int]:
    """A descriptor of ``path`` when it is a regular file within ``max_bytes`` bytes, and its
    size (``follow``: False for a file whose symlink is never followed, even one made after
    it was looked at)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags if follow else flags | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise Unreadable(NOT_FOLLOWED) from None
        if exc.errno == errno.ELOOP:
            raise Unreadable("cannot read: a symlink loop") from None
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise _Folder("not a regular file (a folder); not read")
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
            raise Unreadable(f"not a regular file ({kind}); not read")
        if st.st_size > max_bytes:
            raise TooBig(_too_big(st.st_size, max_bytes, limit))
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def _too_big(size: int | None, max_bytes: int, limit: tuple[str, str] = FILE_LIMIT) -> str:
    what = f"{size:,} bytes" if size is not None else "more"
    bounds, variable = limit
    raise_it = f" (raise it with {variable}=BYTES)" if variable else ""
    return f"file of {what} is over the {max_bytes:,}-byte limit {bounds}; not read{raise_it}"


def read_document(path: Path) -> bytes:
    """The bytes of a JSON document read whole that a command did not take as a log (a
    dataset's manifest, a baseline, a ``replay run`` summary): ``read_input`` within
    ``max_document_bytes()``, a larger one ``TooBig`` naming ``CTXREPLAY_MAX_DOCUMENT_BYTES``
    (it named ``CTXREPLAY_MAX_FILE_BYTES``, which does not raise this limit)."""
    return read_input(path, max_document_bytes(), limit=DOCUMENT_LIMIT)


def read_input(path: Path, max_bytes: int | None = None, *, follow: bool = True,
               limit: tuple[str, str] = FILE_LIMIT) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` (default ``max_file_bytes()``;
    ``follow``: False to refuse a symlink, ``NOT_FOLLOWED``; ``limit``: what ``max_bytes``
    bounds and the variable that raises it, as an oversized file's line says them,
    ``FILE_LIMIT`` by default: a fixed limit names no variable).

    Raises:
        Unreadable: not a regular file, not readable, or over the limit (``TooBig``; also a
            file that grows past it while being read).
    """
    max_bytes = max_file_bytes() if max_bytes is None else max_bytes
    try:
        fd, size = _open(path, max_bytes, follow=follow, limit=limit)
    except _Folder:
        if not follow:
            raise Unreadable("not a regular file (a folder); not read") from None
        return _conversation(path, max_bytes)
    want = size + 1  # (never read(max_bytes): that allocates it all at once)
    chunks, total = [], 0
    try:  # (straight from the descriptor: a file object costs more than reading a small file)
        while total <= max_bytes:  # to the end: past ``size`` when growing, or a size the
            # file system does not know, 1 MiB at a time
            chunk = os.read(fd, want - total if total < want else
                            min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(data) > max_bytes:
        raise TooBig(_too_big(None, max_bytes, limit))
    return data


def _conversation(path: Path, max_bytes: int) -> bytes:
    """The bytes a folder is read as: an OpenHands V1 conversation's bundle
    (``replay.ingest.openhands_v1_folder``); any other folder is ``Unreadable``."""
    try:
        return bundle(Path(path), max_bytes, _read_in_folder, Unreadable)
    except NotConversation:
        raise Unreadable("not a regular file (a folder); not read") from None
    except OverflowError as exc:
        raise Unreadable(f"{exc}; not read (raise it with {ENV_MAX_FILE_BYTES}=BYTES)") from None
    except OSError as exc:
        raise Unreadable(f"cannot read the conversation folder: {exc.strerror or exc}") from None
    except ValueError as exc:  # (a conversation that cannot be made one document: said as such,
        # not as a folder that is none)
        raise Unreadable(f"cannot read the conversation folder: {exc}") from None


def _read_in_folder(path: Path, max_bytes: int) -> bytes:
    """A file of a conversation folder, never through a symlink (nor a folder's bundle)."""
    return read_input(path, max_bytes, follow=False)


def as_utf8(data: bytes) -> tuple[bytes, str, int]:
    """``data`` as UTF-8, the encoding it was read from ('' when it is already UTF-8, or not
    text at all) and how many bytes at its end were left out: a file that begins with a UTF-16
    or UTF-32 byte order mark (what Windows PowerShell's ``>`` writes, ``opencode export … >
    s.json`` among them) is decoded, its mark left out; a character cut by the file's end (a
    file still being written) is left out, as a cut UTF-8 line is (the caller says so).

    Raises:
        Unreadable: such a file whose bytes are not text of its encoding before its end.
    """
    for mark, codec, name in _WIDE_BOMS:
        if data.startswith(mark):
            body = data[len(mark):]
            try:
                return body.decode(codec).encode("utf-8"), name, 0
            except UnicodeDecodeError as exc:
                cut = exc.reason == "truncated data" and exc.end == len(body)
                if cut:  # (the decoder names the start of the cut character)
                    return body[:exc.start].decode(codec).encode("utf-8"), name, \
                        len(body) - exc.start
                raise Unreadable(f"{name} text (its byte order mark) that does not decode "
                                 f"at byte {exc.start + len(mark):,}; not read") from None
            except UnicodeError as exc:
                raise Unreadable(f"{name} text (its byte order mark) that does not decode "
                                 f"at byte {getattr(exc, 'start', 0) + len(mark):,}; not read") from None
    return data, "", 0


def not_text(data: bytes) -> str:
    """Why a file is no log any parser reads, when its first bytes tell ('' when they do not):
    compressed, or UTF-16 text without a byte order mark (its every other byte NUL)."""
    kind = next((what for magic, what in _MAGIC if data.startswith(magic)), "")
    if kind:
        return f"{kind}; not read (decompress it first)"
    head = data[:512]
    if len(head) >= 4:
        for order, text, nul in (("little", head[0::2], head[1::2]),
                                 ("big", head[1::2], head[0::2])):
            if nul.count(0) == len(nul) and 0 not in text:
                return (f"UTF-16 ({order}-endian) text without a byte order mark; not read "
                        "(convert it to UTF-8 first)")
    return ""


def open_input(path: str | Path) -> BinaryIO:
    """``path`` opened to be read as ``read_input`` reads it (a regular file within
    ``max_file_bytes()``, opened without blocking; else ``Unreadable``): a file read again."""
    fd, _ = _open(Path(path), max_file_bytes())
    return os.fdopen(fd, "rb", closefd=True)


def sha256_of(path: Path, max_bytes: int | None = None) -> str:
    """The sha256 of ``path`` read as ``read_input`` would (in 1 MiB pieces); "" when it would
    not be read."""
    max_bytes = max_file_bytes() if max_bytes is None else max_bytes
    try:
        fd, _ = _open(path, max_bytes)
    except _Folder:
        try:
            return hashlib.sha256(_conversation(path, max_bytes)).hexdigest()
        except Unreadable:
            return ""
    except Unreadable:
        return ""
    h, seen = hashlib.sha256(), 0
    try:
        with os.fdopen(fd, "rb", closefd=True) as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                seen += len(chunk)
                if seen > max_bytes:
                    return ""
                h.update(chunk)
    except OSError:
        return ""
    return h.hexdigest()


def holds_at_least(paths: Iterable[Path], limit: int) -> bool:
    """Whether the inputs hold at least ``limit`` bytes in all: a file its size, a folder read
    as one input (an OpenHands V1 conversation) the files in it and in its subfolders (not
    through a symlink), summed only until the limit is reached."""
    total = 0
    for path in paths:
        total += input_size(path, limit - total)
        if total >= limit:
            return True
    return False


def input_size(path: Path, enough: int = 1 << 62) -> int:
    """``path``'s bytes (a folder's: its files', counted until ``enough``; unreadable: 0)."""
    try:
        st = path.stat()
    except OSError:
        return 0
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size
    total, folders = 0, [str(path)]
    while folders and total < enough:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total
