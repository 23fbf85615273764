"""A safe output location: every file and folder a command writes lies inside the folder the
user named, is written so that a reader never sees half of it, and never through a symlink.

The one definition every writer of the project uses (the store and its index, traces and
summaries, reports, sweeps and their cache, baselines, JUnit/Markdown files, redacted copies):

- ``make_output_dir(named, *derived)``: the folder the user named (created with its parents:
  it may itself be a symlink, their choice) and the folders derived below it (a policy's name,
  ``sweep``), each created or opened without following a symlink; checked writable by making
  and removing a temporary file.  A command calls it before its work, so it fails in one line
  first.
- ``atomic_write_bytes(path, data, within=root)`` / ``atomic_write_text``: ``path`` must lie
  below ``root`` (the folder named, or made by ``make_output_dir``); every folder between them
  is opened with ``O_NOFOLLOW`` relative to the previous one (created when missing), the data
  goes to a temporary file created there with ``O_EXCL | O_NOFOLLOW``, and is renamed over the
  final name only when complete.  A symlink on the way, or in place of the file, is refused
  with ``OutputError`` (nothing written, nothing followed); any failure (a full disk:
  ``ENOSPC``) removes the temporary file before the error goes on.
- ``output_folder(path, within=root)``: a folder below ``root`` opened the same way, as a
  descriptor to list or delete in (``remove_files``: a report's stale figures), so a cleanup
  never reaches outside what was named.
- ``no_new_folder_left_on_failure()``: the folders the functions above create inside the block
  are removed again, deepest first and each only when still empty, when the block ends in an
  exception: a command that fails (a damaged dataset met after ``--out`` was made) leaves no
  empty folder of its own behind, as its files (temporary until renamed) are not.

The folder names are checked once per write, by descriptor: a symlink planted after the check
cannot redirect a write (the rename happens in the folder that was opened).

Not here: which paths a command may write at all (apart from its inputs, baseline, cache:
``replay.output_targets``), where outputs go by default (``replay.layout``).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from replay.errors import OutputError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

_made_here: ContextVar[list[_MadeFolder] | None] = ContextVar("_made_here", default=None)
"""The folders created inside the innermost ``no_new_folder_left_on_failure`` block."""


@dataclass(frozen=True, slots=True)
class _MadeFolder:
    """A folder a write created: its path, and the folder the user named that it was created
    below by descriptor (None: created by path, the named folder or one of its parents)."""

    path: Path
    root: Path | None


@contextmanager
def no_new_folder_left_on_failure() -> Iterator[None]:
    """Remove the folders created inside the block (by ``make_output_dir``, ``folder_fd`` and
    the writes) when it ends in an exception: deepest first, each only when it is still empty
    (``rmdir``, which never follows a symlink nor removes a file), so nothing the block did not
    create is touched.  A folder created below the named folder is found again from it one
    folder at a time without following a symlink, as it was made: a folder on the way swapped
    for a symlink meanwhile leaves it in place rather than turning the removal onto another
    folder.  The exception goes on."""
    made: list[_MadeFolder] = []
    token = _made_here.set(made)
    try:
        yield
    except BaseException:
        for folder in sorted(made, key=lambda f: len(f.path.parts), reverse=True):
            with suppress(OSError):  # not empty (a file kept in it), already gone, or a
                _remove_made(folder)  # symlink now on its way
        raise
    finally:
        _made_here.reset(token)
    outer = _made_here.get()
    if outer is not None:  # an enclosing block that fails removes them too
        outer.extend(made)


def _remove_made(folder: _MadeFolder) -> None:
    """``rmdir`` the folder where it was made (``no_new_folder_left_on_failure``)."""
    if folder.root is None:
        os.rmdir(folder.path)
        return
    *parents, name = folder.path.relative_to(folder.root).parts
    fd = _open_dir(str(folder.root), None, folder.root, create=False)
    try:
        for part in parents:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)


def _made(path: Path, root: Path | None = None) -> None:
    """Note ``path`` as a folder just created (for ``no_new_folder_left_on_failure``): below
    the named folder ``root`` by descriptor, or by path (None)."""
    made = _made_here.get()
    if made is not None:
        made.append(_MadeFolder(path.absolute(), None if root is None else root.absolute()))


def _make_named(named: Path) -> None:
    """The folder the user named, created with its parents (its own symlinks are theirs);
    the folders it created noted."""
    missing = []
    for folder in (named, *named.parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    try:
        named.mkdir(parents=True, exist_ok=True)
    finally:  # the parents made before a failure too
        for folder in missing:
            _made(folder)


def symlink_refused(path: Path) -> OutputError:
    """The refusal of a symlink found inside an output folder (at a write, or planned by
    ``replay.output_targets.check_targets`` before any work)."""
    return OutputError(f"{path}: is a symlink inside the output folder; refused, nothing was "
                       "written through it (remove it, or name another folder)")


def _open_dir(name: str, parent_fd: int | None, shown: Path, *, create: bool,
              root: Path | None = None) -> int:
    """A descriptor of the folder ``name`` (relative to ``parent_fd``; None: ``name`` is a path
    the user named, which may be a symlink), created when missing with ``create`` (noted as made
    below ``root``, the folder named, for ``no_new_folder_left_on_failure``)."""
    if parent_fd is None:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    for _ in range(2):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, 0o777, dir_fd=parent_fd)
                _made(shown, root)
            except FileExistsError:
                pass  # made meanwhile by another writer: open it (checked again)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(
                    name, parent_fd):
                raise symlink_refused(shown) from None
            raise
    return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)


def _is_link(name: str, parent_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _parts_below(path: Path, root: Path) -> tuple[str, ...]:
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise OutputError(f"{path}: not inside the output folder {root}; nothing written") from None
    if any(p in ("", ".", "..") for p in parts):
        raise OutputError(f"{path}: leaves the output folder {root}; nothing written")
    return parts


@contextmanager
def folder_fd(root: Path, parts: Iterable[str] = (), *, create: bool = True) -> Iterator[int]:
    """A descriptor of the folder ``root/parts…``: ``root`` as named, each part opened without
    following a symlink (``OutputError``), created when missing with ``create``."""
    fd = open_folder(root, parts, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def open_folder(root: Path, parts: Iterable[str] = (), *, create: bool = True) -> int:
    """``folder_fd``'s descriptor for a caller that closes it itself (``os.close``; a store
    entry's writer holds it from its file's creation to its rename: no generator and exit
    stack an entry)."""
    if create and not os.path.isdir(root):
        _make_named(root)
    fd = _open_dir(str(root), None, root, create=False)
    shown = root
    try:
        for part in parts:
            shown = shown / part
            child = _open_dir(part, fd, shown, create=create, root=root)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_output_dir(named: Path, *derived: str, option: str = "--out") -> Path:
    """The folder ``named`` (created with its parents if needed) and the folders ``derived``
    below it (created without following a symlink), checked writable; returns
    ``named/derived…``.  ``option``: how the user names ``named`` (said when it is a file).

    Raises:
        OutputError: a folder on the way is a file or a symlink below ``named``, cannot be
            created, or cannot be written (a read-only file system); one line naming it.
    """
    if named.exists() and not named.is_dir():
        raise OutputError(f"{named}: exists and is not a folder; give {option} a folder")
    try:
        _make_named(named)
    except OSError as exc:
        raise OutputError(f"{named}: cannot create this folder ({exc.strerror or exc})") from None
    folder = named.joinpath(*derived)
    try:
        with folder_fd(named, derived) as fd:
            probe = f".write-check-{os.getpid()}"
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                             dir_fd=fd))
            os.unlink(probe, dir_fd=fd)
    except OutputError:
        raise
    except NotADirectoryError:
        raise OutputError(f"{folder}: a file is in the way of this folder") from None
    except OSError as exc:
        raise OutputError(f"{folder}: this folder is not writable ({exc.strerror or exc})"
                          ) from None
    return folder


def output_file(path: Path) -> Path:
    """Check a file the user named as an output (``--junit``, ``--markdown``, a baseline
    written): not a folder, its folder created if missing and writable.

    Raises:
        OutputError: one line saying why it cannot be written (before any work).
    """
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; name a file to write")
    if path.exists() and not path.is_file() and not path.is_symlink():
        raise OutputError(f"{path}: is not a regular file (a device, a FIFO); name a file")
    make_output_dir(path.parent)
    return path


@contextmanager
def output_folder(path: Path, *, within: Path) -> Iterator[int]:
    """A descriptor of the existing folder ``path`` below ``within``, opened without following
    a symlink on the way (for listing and removing files in it).

    Raises:
        OutputError: a folder on the way is a symlink.
        FileNotFoundError: the folder does not exist.
    """
    with folder_fd(within, _parts_below(path, within), create=False) as fd:
        yield fd


def remove_files(path: Path, *, within: Path, unwanted: Callable[[str], bool]) -> list[str]:
    """Remove the regular files of the folder ``path`` below ``within`` whose name
    ``unwanted`` picks; the names removed (none when the folder is missing).  A symlink is
    left as it is (and never followed): no command writes one, so it is the user's, as a
    folder is (a report's stale figures are the regular files it drew)."""
    try:
        with output_folder(path, within=within) as fd:
            removed = []
            for name in sorted(os.listdir(fd)):
                if not unwanted(name):
                    continue
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                if stat.S_ISREG(mode):
                    os.unlink(name, dir_fd=fd)
                    removed.append(name)
            return removed
    except FileNotFoundError:
        return []


def atomic_write_bytes(path: Path, data: bytes, *, within: Path) -> None:
    """Write ``data`` to ``path`` (below ``within``) through a temporary file and a rename,
    never through a symlink (``OutputError``); the temporary file is removed on any failure."""
    with atomic_stream(path, within=within) as f:
        f.write(data)


def atomic_write_text(path: Path, chunks: Iterable[str], *, within: Path) -> None:
    """Write text given in pieces (e.g. ``JSONEncoder.iterencode``) to ``path`` below
    ``within``, as ``atomic_write_bytes``; the whole text is never held in memory."""
    with atomic_stream(path, within=within) as f:
        for chunk in chunks:
            f.write(chunk.encode("utf-8", "surrogatepass"))


@contextmanager
def atomic_stream(path: Path, *, within: Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` (below ``within``) in pieces: a temporary file, renamed
    over ``path`` when the block ends without an error (as ``atomic_write_bytes``)."""
    parts = _parts_below(path, within)
    if not parts:
        raise OutputError(f"{path}: is the output folder itself, not a file in it")
    with folder_fd(within, parts[:-1]) as fd, file_in(fd, parts[-1], shown=path) as f:
        yield f


@contextmanager
def file_in(fd: int, name: str, *, shown: Path) -> Iterator[BinaryIO]:
    """The file ``name`` of the folder open as ``fd``, written as a temporary file
    (``O_EXCL | O_NOFOLLOW``) renamed over ``name`` when the block ends, unless ``name`` is a
    symlink or a folder (``OutputError``); the temporary file is removed on any failure (a full
    disk) before the error goes on."""
    tmp = f".{name[:200]}.tmp{os.getpid()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        tfd = os.open(tmp, flags, 0o644, dir_fd=fd)
    except FileExistsError:  # left by a killed writer with this pid: removed, never followed
        os.unlink(tmp, dir_fd=fd)
        tfd = os.open(tmp, flags, 0o644, dir_fd=fd)
    try:
        with os.fdopen(tfd, "wb") as f:
            yield f
        try:
            mode: int | None = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and stat.S_ISLNK(mode):
            raise symlink_refused(shown)
        if mode is not None and stat.S_ISDIR(mode):
            raise OutputError(f"{shown}: is a folder; not replaced")
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        raise
