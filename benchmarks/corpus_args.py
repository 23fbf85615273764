"""The log paths a corpus benchmark reads, from its command line (shared by the benchmarks that
take ``[PATH ...]``): ``--help`` prints the script's docstring, a path that does not exist is a
usage error (exit 2), and no path means the script's defaults."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def corpus_paths(doc: str | None, default: list[Path]) -> list[Path]:
    """The paths named on the command line, else ``default``; exits 2 naming a missing one."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_paths(ap, default)
    return existing_paths(ap, ap.parse_args())


def add_paths(ap: argparse.ArgumentParser, default: list[Path]) -> None:
    """The ``[PATH ...]`` argument of a benchmark with options of its own."""
    ap.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                    help="log files or folders (default: " + ", ".join(map(str, default)) + ")")
    ap.set_defaults(default_paths=default)


def existing_paths(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list[Path]:
    """The parsed paths (else the default ``add_paths`` was given); exits 2 naming a missing
    one."""
    paths: list[Path] = args.paths or args.default_paths
    missing = [p for p in paths if not p.exists()]
    if missing:
        ap.error(f"no such file or folder: {missing[0]}")
    return paths


def no_runs(paths: list[Path]) -> None:
    """Exit 1 saying the paths held no replayable run (a benchmark of nothing prints nothing)."""
    print(f"no replayable run in {', '.join(map(str, paths))}", file=sys.stderr)
    sys.exit(1)
