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

The project cache's dataset, which every command that reads logs writes, may lie inside an input
folder (``replay run .``) but may not be, or hold, an input (``check_cache_apart``).

Not here: how a target is written (never through a symlink: ``replay.atomic_files``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
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
