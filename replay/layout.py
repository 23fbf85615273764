"""Where the ``replay`` commands keep and write things, so that outputs stay.

- **The project cache** (``cache_root``): one folder per project for what can be made again,
  ``.ctxreplay/`` in the current folder unless ``--cache-dir DIR`` or ``$CTXREPLAY_CACHE_DIR``
  says otherwise.  It holds the ingested dataset (``dataset_dir``: every command that reads log
  files ingests into it, unchanged files are reused) and the sweep's computed cells
  (``sweep_cache_dir``).  Never inside an output folder: a report folder holds the report only.
- **Run outputs** (``run_dir``): ``replay run`` writes ``out/<policy name>/`` (traces,
  ``summary.json``, the report with ``--report``), so two policies' outputs sit side by side;
  ``--out DIR`` writes exactly ``DIR``.  The policy name comes from a file: it is the folder's
  name only when it is one safe path segment (``replay.safe_names.is_segment``), else its safe
  slug with a hash (``file_name``), so no name leads outside ``out/``.

Not here: the store inside the dataset folder (``replay.ingest.store``), what a run writes
(``replay.apply_policy``).
"""

from __future__ import annotations

import os
from pathlib import Path

from replay.atomic_files import make_output_dir
from replay.errors import OutputError
from replay.safe_names import file_name, is_segment

CACHE_ENV = "CTXREPLAY_CACHE_DIR"
"""Environment variable naming the project cache when ``--cache-dir`` is not given."""
DEFAULT_CACHE = Path(".ctxreplay")
"""The project cache, relative to the current folder."""
OUT = Path("out")
"""The root of run outputs when ``--out`` is not given."""
SYNTH_OUT = Path("logs")
"""Where ``replay synth`` writes the generated logs when ``--out`` is not given."""


def cache_root(given: Path | None = None, *, writing: bool = True) -> Path:
    """The project cache: ``given``, else ``$CTXREPLAY_CACHE_DIR``, else ``.ctxreplay``
    (``unnamed``: never a symlink when ``writing``; False for a command that only keeps its
    outputs out of the cache, ``redact``).

    Raises:
        OutputError: the default ``.ctxreplay`` is a symlink (and ``writing``).
    """
    if given is not None:
        return given
    env = os.environ.get(CACHE_ENV, "")
    if env:
        return Path(env)
    return unnamed(DEFAULT_CACHE, "--cache-dir (or $CTXREPLAY_CACHE_DIR)") if writing \
        else DEFAULT_CACHE


def unnamed(default: Path, option: str) -> Path:
    """``default``, a folder a command writes though the user did not name it (``.ctxreplay``,
    ``out``, synth's ``logs``), refused when it is a symlink: a repository cloned with ``out``
    or ``.ctxreplay`` a symlink to a folder outside it would have every command write there.  A folder the user
    names may be a symlink (``option``: how to name it).

    Raises:
        OutputError: ``default`` is a symlink (one line saying where it points and ``option``).
    """
    if default.is_symlink():
        raise OutputError(f"{default}: a symlink (to {os.readlink(default)}), and not named by "
                          f"you: not followed, nothing written through it; name it with "
                          f"{option} to write there, or remove it")
    return default


def dataset_dir(cache: Path) -> Path:
    """Where logs are ingested to, in the project cache ``cache``."""
    return cache / "dataset"


def sweep_cache_dir(cache: Path) -> Path:
    """Where a sweep keeps its computed cells, in the project cache ``cache``."""
    return cache / "sweep_cache"


SWEEP = "sweep"
"""The sweep's folder under its output root (``out/sweep``)."""
REPORT_NAMES = ("report.html", "report.md", "report_files")
"""What ``replay report`` writes in its folder, ``out`` by default."""


def policy_folder(name: str) -> str:
    """One safe path segment for a policy name: the name itself when it is one and no other
    output's name under ``out`` (``SWEEP``, ``REPORT_NAMES``), else a slug of it with a hash
    of the whole name — so a policy named ``sweep`` never writes into the sweep's folder."""
    taken = name.casefold() in (SWEEP, *REPORT_NAMES)  # one folder on a case-blind disk too
    return name if is_segment(name) and not taken else file_name(name)


def run_dir(policy_name: str, given: Path | None = None) -> Path:
    """Where ``replay run`` writes: exactly ``given``, else ``out/<policy name>``."""
    return given if given is not None else OUT / policy_folder(policy_name)


def make_run_dir(policy_name: str, given: Path | None = None, *, report: bool = False) -> Path:
    """``run_dir``, created (``replay.atomic_files.make_output_dir``): ``given`` as named, else
    ``out`` as named and the policy's folder below it, never through a symlink (with
    ``report``, its ``report_files`` folder too)."""
    extra = ("report_files",) if report else ()
    if given is not None:
        make_output_dir(given, *extra)
        return given
    make_output_dir(unnamed(OUT, "--out"), policy_folder(policy_name), *extra)
    return run_dir(policy_name)
