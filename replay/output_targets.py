"""Which paths a command may write at all: never one of its inputs, its baseline, tolerances or
policies, nor the project cache.  Checked once, before any work (``check_targets``).

A command lists what it creates or replaces (``Target``: a file, or a folder it fills) and what
it reads; a target is refused (``OutputError``, exit 2) when it

- is one of the inputs (the same path after symlinks, or the same file by a hard link);
- lies inside an input folder (the next command would read it as a log: a ``summary.json``);
- is a folder that holds an input (a mirrored copy could replace it);
- is a file the command keeps (the baseline, tolerances, a policy, a grid) — the baseline of
  ``--update-baseline`` is a target, not kept — or is a folder the command fills that holds
  one (a sweep's ``chosen.yaml`` swept again into the same ``--out``);
- lies inside the project cache's dataset or sweep cache (``.ctxreplay/dataset``,
  ``.ctxreplay/sweep_cache``; ``replay.layout``), or is a folder the command fills that holds
  one;
- is named twice (``--junit`` and ``--markdown`` the same file);
- lies below another target (the folder named, or a folder the command fills) and is a
  symlink, or has one on the way there: planted in an output folder, it would be refused at
  the write anyway (``replay.atomic_files``), after the work; refused before it.

A command that fills a folder with files of fixed names replaces such a file only if a
ctxreplay command wrote it (any version): ``foreign_files`` lists the ones it did not, each
recognised by content cheap to check (``png_marked``, ``starts_with``), and ``refuse_foreign``
refuses them (``OutputError``: nothing written).

The project cache's dataset, which every command that reads logs writes, may lie inside an input
folder (``replay run .``) but may not be, or hold, an input (``check_cache_apart``).

Not here: how a target is written (never through a symlink: ``replay.atomic_files``).
"""

from __future__ import annotations

import glob
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from replay.atomic_files import symlink_refused
from replay.errors import OutputError
from replay.layout import dataset_dir, sweep_cache_dir


@dataclass(frozen=True, slots=True)
class Target:
    """A path a command creates or replaces, and how the user named it (``--out``)."""

    path: Path
    option: str
    folder: bool = False
    """A folder the command fills (its files may have any name: redact's mirrored copies)."""


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return path.absolute()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _inside(child: Path, parent: Path) -> bool:
    return child != parent and parent in child.parents


def check_targets(targets: Sequence[Target], *, inputs: Sequence[Path] = (),
                  kept: Sequence[tuple[Path, str]] = (), cache: Path | None = None) -> None:
    """Refuse, in one line, a target that would overwrite or pollute what the command reads.

    Args:
        targets: what the command writes.
        inputs: log files or folders, or a dataset, the command reads.
        kept: files it reads and must leave as they are, with what each is ("the baseline").
        cache: the project cache (``replay.layout.cache_root``), or None when the command
            writes the cache itself (``ingest``).

    Raises:
        OutputError: the first target refused, naming it, the option and what it would hit.
    """
    seen: dict[Path, Target] = {}
    real_inputs = [(p, _real(p)) for p in inputs]
    real_kept = [(p, _real(p), what) for p, what in kept]
    areas = [(a, _real(a)) for a in ((dataset_dir(cache), sweep_cache_dir(cache))
                                     if cache is not None else ())]
    for t in targets:
        real = _real(t.path)
        where = f"{t.option} {t.path}"
        if real in seen:
            raise OutputError(f"{where}: also given as {seen[real].option}; name each output "
                              "once")
        seen[real] = t
        for given, r in real_inputs:
            if real == r or _same_file(t.path, given):
                raise OutputError(f"{where}: is the input {given}; it would be overwritten. "
                                  "Name an output apart from the inputs")
            if _inside(real, r):
                raise OutputError(f"{where}: is inside the input folder {given}; the next "
                                  "command would read it as a log. Name an output apart from "
                                  "the inputs")
            if t.folder and _inside(r, real):
                raise OutputError(f"{where}: holds the input {given}; name an output folder "
                                  "apart from the inputs")
        for given, r, what in real_kept:
            if real == r or _same_file(t.path, given):
                raise OutputError(f"{where}: is {what} ({given}); it would be overwritten")
            if t.folder and _inside(r, real):
                raise OutputError(f"{where}: holds {what} ({given}); its files could replace "
                                  "it. Name an output folder apart from what the command reads")
        for area, r in areas:
            if real == r or _inside(real, r) or (t.folder and _inside(r, real)):
                raise OutputError(f"{where}: is in the project cache ({area}); name an output "
                                  "outside it")
        planted = _planted_link(t, targets)
        if planted is not None:
            raise symlink_refused(planted)


def _planted_link(target: Target, targets: Sequence[Target]) -> Path | None:
    """The first symlink from below another target's folder down to ``target`` (None: none).
    The folder named may itself be a symlink (the user's); what lies below it is ours."""
    for base in targets:
        if base is target or base.path not in target.path.parents:
            continue
        path = base.path
        for part in target.path.relative_to(base.path).parts:
            path = path / part
            if os.path.islink(path):
                return path
    return None


def check_cache_apart(dataset: Path, inputs: Sequence[Path]) -> None:
    """Refuse a project cache whose dataset folder is one of the inputs or holds one: the
    ingest would write its manifest and entries among the logs, and from then on the folder is
    read as a dataset (its logs skipped, new ones never read).  A cache inside an input folder
    is fine (``replay run .`` with ``.ctxreplay`` there: discovery skips a store's files).

    Raises:
        OutputError: naming the dataset folder and the input.
    """
    real = _real(dataset)
    for given in inputs:
        r = _real(given)
        if real == r or _inside(r, real):
            what = "is the input" if real == r else "holds the input"
            raise OutputError(f"the project cache's dataset {dataset}: {what} {given}; the "
                              "logs there would be read as a dataset from now on. Name a "
                              "--cache-dir (or CTXREPLAY_CACHE_DIR) apart from the inputs")


def report_targets(folder: Path, option: str) -> list[Target]:
    """What a report writes in ``folder``: the folder, report.html, report.md, report_files/."""
    return [Target(folder, option), Target(folder / "report.html", option),
            Target(folder / "report.md", option),
            Target(folder / "report_files", option, folder=True)]


def run_targets(folder: Path, option: str, *, report: bool = False) -> list[Target]:
    """What ``replay run`` writes in ``folder``: summary.json, traces/ (and the report)."""
    return [Target(folder, option), Target(folder / "summary.json", option),
            Target(folder / "traces", option, folder=True),
            *(report_targets(folder, option)[1:] if report else [])]


Owned = Callable[[Path], bool]
"""Whether a regular file at one of a command's fixed names is one the command wrote."""

PNG_SOFTWARE = "ctxreplay"
"""The ``Software`` text a figure ctxreplay draws carries (``png_marked``)."""
_PROBE_BYTES = 4096
_SHOWN = 3


def foreign_files(folder: Path, owned: Sequence[tuple[str, Owned]]) -> list[str]:
    """The regular files under ``folder`` at a name a command writes (a glob relative to
    ``folder``: ``report_files/*.png``) that its check does not recognise as its own, and the
    folders at a file's fixed name (``summary.json``: no command makes one, and the write
    would be refused only after the work, the files before it written), sorted per name.  A
    symlink is left to the output's own checks (``check_targets``, ``atomic_files``:
    refused)."""
    foreign = []
    for pattern, ours in owned:
        for path in sorted(folder.glob(pattern)):
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode) and not ours(path) or \
                    stat.S_ISDIR(mode) and not glob.has_magic(pattern):
                foreign.append(path.relative_to(folder).as_posix())
    return foreign


def shown_names(names: Sequence[str]) -> str:
    """Up to three of ``names``, and how many more: the files a refusal names."""
    return ", ".join(names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more"
                                        if len(names) > _SHOWN else "")


def refuse_foreign(folder: Path, option: str, foreign: Sequence[str], command: str) -> None:
    """Refuse, in one line naming ``folder`` and up to three of ``foreign``, a folder holding
    files ``command`` did not write and would overwrite (nothing raised when none).

    Raises:
        OutputError: ``foreign`` is not empty.
    """
    if not foreign:
        return
    raise OutputError(f"{option} {folder}: holds {shown_names(foreign)}, which `{command}` did not write and "
                      f"would overwrite. Nothing was written: name a new or empty folder, or "
                      f"one `{command}` wrote")


def head_bytes(path: Path, n: int = _PROBE_BYTES) -> bytes:
    """The first ``n`` bytes of ``path`` (b'' when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def starts_with(*prefixes: bytes) -> Owned:
    """A check: the file starts with one of ``prefixes``."""
    return lambda path: head_bytes(path).startswith(prefixes)


FOOTER_PROBE_BYTES = 1 << 20
"""Of a Parquet file at an output's name, the footer bytes ``parquet_footer`` reads (a trace's
or a sweep table's footer, its schema and row groups' metadata, is a few KB; a bigger one is
read as foreign)."""


def parquet_footer(path: Path) -> bytes:
    """The footer of the Parquet file ``path`` (b'' when it is not one, or its footer is over
    ``FOOTER_PROBE_BYTES``)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            if size < 12:
                return b""
            f.seek(size - 8)
            tail = f.read(8)
            n = int.from_bytes(tail[:4], "little")
            if tail[4:] != b"PAR1" or n > min(size - 12, FOOTER_PROBE_BYTES):
                return b""
            f.seek(size - 8 - n)
            return f.read(n)
    except OSError:
        return b""


def png_marked(path: Path) -> bool:
    """Whether ``path`` is a PNG whose ``Software`` text is ``PNG_SOFTWARE`` (every figure a
    report or a sweep draws now; written before the image data)."""
    head = head_bytes(path)
    return head.startswith(b"\x89PNG") and \
        b"tEXtSoftware\x00" + PNG_SOFTWARE.encode() in head


REPORT_HTML_HEAD = (b"<!DOCTYPE html>", b'<html lang="en"><head><meta charset="utf-8">',
                    b"<title>ctxreplay report</title>")
"""How every ``report.html`` a report writes begins (``analysis.report.pages.render_html``)."""
REPORT_MD_HEAD = b"# ctxreplay report\n"
"""How every ``report.md`` a report writes begins (``analysis.report.pages.render_markdown``)."""


def _report_html(path: Path) -> bool:
    return head_bytes(path).startswith(b"\n".join(REPORT_HTML_HEAD))


OLD_REPORT_FIGURE = re.compile(
    r"(?:rereads|arg_share|summarisation|cache_invalidation|overshoots|timeline_\d{3}_.+)\.png")
"""The names of the figures a report drew before it marked them (``png_marked``): the analyses'
and the runs' timelines (``analysis.report.figures``; tests/test_folder_out_owned.py checks
that every figure a report draws now has such a name)."""


def report_owned(folder: Path) -> list[tuple[str, Owned]]:
    """What a report writes in ``folder`` (``report_targets``), with how each is known as a
    report's own: report.html and report.md by their first line, a ``report_files/*.png`` (a
    report removes the stale ones) by its ``Software`` text, or — drawn by a report before it
    marked its figures — at a name such a report drew (``OLD_REPORT_FIGURE``) in a folder
    whose report.html or report.md is a report's: a picture of the user's of another name
    there is not taken for a stale figure (and removed), but refused as any foreign file."""
    def old_report() -> bool:
        return _report_html(folder / "report.html") or \
            head_bytes(folder / "report.md").startswith(REPORT_MD_HEAD)

    def figure(path: Path) -> bool:
        return png_marked(path) or (OLD_REPORT_FIGURE.fullmatch(path.name) is not None
                                    and old_report())

    return [("report.html", _report_html), ("report.md", starts_with(REPORT_MD_HEAD)),
            ("report_files/*.png", figure)]
