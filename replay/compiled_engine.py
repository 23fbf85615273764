"""Which engine runs: the optional compiled build of ``replay/engine`` (mypyc) or its pure-Python
modules, and why.

``setup.py`` compiles the engine's modules with mypyc when it can, and writes a manifest beside
them (``replay/engine/_compiled.json``: every compiled module and the sha256 of its source at the
build).  Python imports an extension module before a ``.py`` of the same name, so ``choose`` runs
from ``replay/engine/__init__.py``, before any engine module loads, and decides:

- compiled: the manifest names modules, each has its extension for this interpreter and each
  source still hashes to its value at the build;
- pure: ``CTXREPLAY_PURE=1``, or no build at all; or anything else, with a warning saying what:
  a source edited since the build (an editable install keeps its extensions beside the sources),
  an extension missing or built for another Python, extensions without a manifest, a manifest
  that cannot be read.  Then an import hook loads every module that has an extension from its
  ``.py``: never a stale or half build, never a mix of the two.

``choose()`` is the decision (made once), shown by ``replay --version`` and
``benchmarks/replay_speed.py``.

The same build compiles the per-run metrics' parts (``analysis/per_run``, a group of their own
with its own manifest there): ``choose_build(folder, package)`` makes the same decision for any
such package, once; ``analysis/per_run/_build.py`` calls it before any of its modules loads, and
``replay/ingest/_build.py`` for the ingest's parts (``replay/ingest``, a third group).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ENGINE_DIR = Path(__file__).resolve().parent / "engine"
MANIFEST = "_compiled.json"
"""The build's manifest, in the engine folder (written by ``setup.py``)."""
PURE_ENV = "CTXREPLAY_PURE"
"""Set to 1: build nothing (``pip install``) and run the pure-Python engine (at import)."""
ENGINE_PACKAGE = "replay.engine"
METRICS_PACKAGE = "analysis.per_run"
"""The metric parts' package, the second build (``analysis/per_run/_build.py``)."""
METRICS_WHAT = "metric parts"
"""How a warning and ``replay --version`` name it."""
INGEST_PACKAGE = "replay.ingest"
"""The ingest's hot path (parsers, tables), the third build (``replay/ingest/_build.py``)."""
INGEST_WHAT = "ingest parts"
"""How a warning and ``replay --version`` name it."""


def _module_pattern(package: str) -> re.Pattern[str]:
    """A module name inside ``package`` (no ``..``, no path)."""
    return re.compile(re.escape(package) + r"(?:\.[a-z_][a-z0-9_]*)+")


class CompiledEngineWarning(UserWarning):
    """A compiled engine is on disk but cannot be trusted: the pure-Python engine runs instead."""


@dataclass(frozen=True, slots=True)
class EngineBuild:
    """The engine this process runs."""

    compiled: bool
    reason: str
    """Why: ``mypyc 2.4.1, 30 modules`` or why not."""
    n_modules: int
    """Modules compiled (``compiled``) or loaded from their ``.py`` by the hook (pure)."""
    warn: bool
    """A build is on disk and was refused (the user did not ask for pure Python)."""

    def describe(self) -> str:
        """One line for a user."""
        return f"{'compiled' if self.compiled else 'pure Python'} ({self.reason})"


def source_sha256(path: Path) -> str:
    """The hash a manifest records for a module's source."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def module_source(engine_dir: Path, name: str, package: str = ENGINE_PACKAGE) -> Path:
    """The ``.py`` of module ``name`` (``replay.engine.tiers.trim``) of ``package`` under its
    folder ``engine_dir``."""
    return engine_dir.joinpath(*name.split(".")[package.count(".") + 1:]).with_suffix(".py")


def _extension(source: Path) -> Path | None:
    """The extension module beside ``source`` that this interpreter would import, if any."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_name(source.stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def _extensions(engine_dir: Path, package: str) -> dict[str, Path]:
    """Module name -> source, for every module of ``package`` with an extension beside its
    ``.py``."""
    out = {}
    for source in sorted(engine_dir.rglob("*.py")):
        if _extension(source) is not None:
            rel = source.relative_to(engine_dir).with_suffix("").parts
            out[".".join((package, *rel))] = source
    return out


def decide(engine_dir: Path, env: dict[str, str],
           package: str = ENGINE_PACKAGE) -> tuple[EngineBuild, dict[str, Path]]:
    """The build of ``package`` (in its folder ``engine_dir``) to run, and the modules to load
    from their ``.py`` (empty when compiled)."""
    found = _extensions(engine_dir, package)
    pattern = _module_pattern(package)
    manifest = engine_dir / MANIFEST
    if env.get(PURE_ENV) == "1":
        return EngineBuild(False, f"{PURE_ENV}=1", len(found), False), found
    if not manifest.exists():
        if found:
            return _refused(f"{len(found)} extension modules without a build manifest", found)
        return EngineBuild(False, "no compiled build", 0, False), found
    try:
        data: Any = json.loads(manifest.read_text(encoding="utf-8"))
        built: dict[str, str] = data["modules"]
        tool = str(data["built_with"])
        if not isinstance(built, dict) or not built:
            raise ValueError("no modules")
        for name, digest in built.items():
            if not (isinstance(name, str) and pattern.fullmatch(name) and isinstance(digest, str)):
                raise ValueError(f"bad entry {name!r}")
    except (OSError, ValueError, KeyError, TypeError) as e:
        return _refused(f"unreadable build manifest {manifest}: {e!r}", found)
    sources = {name: module_source(engine_dir, name, package) for name in built}
    pure = {**found, **{n: s for n, s in sources.items() if s.is_file()}}
    for name, source in sorted(sources.items()):
        if not source.is_file():
            return _refused(f"{name}: compiled, but its source is gone", pure)
        if _extension(source) is None:
            return _refused(f"{name}: no extension module for this Python "
                            f"({sys.implementation.cache_tag})", pure)
        if source_sha256(source) != built[name]:
            return _refused(f"stale build: {source} changed since it was compiled "
                            "(rebuild: pip install -e .)", pure)
    extra = sorted(set(found) - set(built))
    if extra:
        return _refused(f"{extra[0]}: an extension module the build manifest does not name", pure)
    return EngineBuild(True, f"{tool}, {len(built)} modules", len(built), False), {}


def _refused(why: str, pure: dict[str, Path]) -> tuple[EngineBuild, dict[str, Path]]:
    return EngineBuild(False, why, len(pure), True), pure


class _PureSources(importlib.abc.MetaPathFinder):
    """Loads the named engine modules from their ``.py``, ahead of the extension modules."""

    def __init__(self, sources: dict[str, Path]) -> None:
        self.sources = sources

    def find_spec(self, fullname: str, path: Any = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        source = self.sources.get(fullname)
        return None if source is None else importlib.util.spec_from_file_location(fullname, source)


_CHOSEN: dict[str, EngineBuild] = {}


def choose() -> EngineBuild:
    """Decide once per process (before any engine module is imported): install the hook for a
    pure engine, warn when a build on disk was refused."""
    return choose_build(ENGINE_DIR, ENGINE_PACKAGE, "engine")


def choose_build(folder: Path, package: str, what: str = "") -> EngineBuild:
    """``choose`` for the compiled modules of ``package`` (its folder ``folder``): decided once
    per process, before any of them is imported; ``what`` names it in a warning."""
    if package not in _CHOSEN:
        build, pure = decide(folder, dict(os.environ), package)
        if pure:
            sys.meta_path.insert(0, _PureSources(pure))
        if build.warn:
            said = (f"the compiled {what} is not used, the pure-Python {what} runs instead"
                    if what else f"the compiled build of {package} is not used, its "
                    "pure-Python modules run instead")
            warnings.warn(f"ctxreplay: {said}: {build.reason}", CompiledEngineWarning,
                          stacklevel=2)
        _CHOSEN[package] = build
    return _CHOSEN[package]
