"""The optional compiled engine; everything else about the package is in ``pyproject.toml``.

``pip install .`` and ``pip install -e .`` compile the engine's modules (``replay/engine``, but
its ``__init__`` files and ``trace.py``) with mypyc, the engine about 2x fewer instructions a
request (README "Performance"), the per-run metrics' parts (``analysis/per_run``: the modules
of ``METRIC_MODULES``, a group of their own) and the ingest's hot path (``replay/ingest``: the
parsers' and tables' modules of ``INGEST_MODULES``, a third group), and write each build's
manifest beside its modules: each module and the sha256 of the source compiled
(``replay/compiled_engine.py`` checks it at import and runs the pure-Python modules when a
source changed since).  With ``CTXREPLAY_PURE=1``, or when mypyc or a C compiler fails, the
install goes on with the pure-Python engine only (and removes a compiled engine an earlier
build left in this folder).  ``replay --version`` says which engine runs."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# the manifest's names and hash from their one definition, loaded by path (stdlib only; the
# build environment has none of the package's dependencies)
_spec = importlib.util.spec_from_file_location("_ctxreplay_compiled_engine",
                                               ROOT / "replay" / "compiled_engine.py")
assert _spec is not None and _spec.loader is not None
glue = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = glue  # dataclasses look their module up
_spec.loader.exec_module(glue)

ENGINE = ROOT / "replay" / "engine"
NOT_COMPILED = {"trace.py"}
"""``trace.py`` checks its row types' annotations at import (``get_type_hints``), which a compiled
NamedTuple does not answer; it is not on the per-request path."""
GROUP = "replay.engine._compiled"
"""mypyc's group: one shared library ``replay/engine/_compiled__mypyc*.so`` for every module."""
METRICS = ROOT / "analysis" / "per_run"
METRIC_MODULES = ("stats", "basic", "rereads", "arg_share", "summarisation", "cache_invalidation",
                  "overshoots", "induced")
"""The metric parts compiled (the rest of ``analysis/per_run`` is not on a sweep's per-replay
path, or imports pandas)."""
METRICS_GROUP = "analysis.per_run._compiled"
"""The metrics' group: ``analysis/per_run/_compiled__mypyc*.so`` (apart from the engine's: either
build can be refused at import, the other still used)."""
INGEST = ROOT / "replay" / "ingest"
INGEST_MODULES = (
    "parsers/builder", "parsers/claude_code", "parsers/claude_code_content",
    "parsers/claude_code_emit", "parsers/claude_code_runs",
    "parsers/claude_code_branches", "parsers/claude_code_file", "parsers/codex",
    "parsers/codex_file", "parsers/codex_items", "parsers/codex_sessions", "parsers/codex_usage",
    "parsers/codex_walk",
    "parsers/codex_walk_events", "parsers/codex_walk_items",
    "parsers/codex_walk_state", "parsers/json_text", "parsers/jsonl_batch",
    "parsers/mini_swe_agent", "arrow_columns", "ops", "redaction", "run_tables", "schema_tables",
)
"""The ingest's parts compiled (under ``replay/ingest``): where a warm ingest of the samples
spends its Python time, each family kept for lowering its parse's instructions.  Not here:
``claude_code_records`` (a tuple subclass, msgspec Structs, a dataclass over the uncompiled
``Node``), modules whose functions the tests replace where they are called (``parse_file``,
``tokens``, ``jsonl``, ``claude_code_path``, ``claude_code_order``: a compiled caller calls
straight), and the formats that spend little time in Python."""
INGEST_GROUP = "replay.ingest._compiled"
"""The ingest's group: ``replay/ingest/_compiled__mypyc*.so``."""


def _say(message: str) -> None:
    print(f"ctxreplay: {message}", file=sys.stderr)


def compiled_sources() -> list[Path]:
    """The engine modules to compile."""
    return [p for p in sorted(ENGINE.rglob("*.py"))
            if p.name != "__init__.py" and p.name not in NOT_COMPILED]


def metric_sources() -> list[Path]:
    """The metric parts to compile."""
    return [METRICS / f"{m}.py" for m in METRIC_MODULES]


def ingest_sources() -> list[Path]:
    """The ingest parts to compile."""
    return [INGEST / f"{m}.py" for m in INGEST_MODULES]


BUILDS = ((ENGINE, GROUP, compiled_sources), (METRICS, METRICS_GROUP, metric_sources),
          (INGEST, INGEST_GROUP, ingest_sources))
"""Each compiled group: its folder (extensions and manifest beside its sources), its name, its
modules."""


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _remove_build(*folders: Path) -> None:
    """A compiled build under each of ``folders`` (default: every group's): one an earlier
    (editable) build left beside the sources, or a part of this one that failed."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for folder in folders or tuple(b[0] for b in BUILDS):
        removed = [p for p in folder.rglob("*")
                   if p.name.endswith(suffixes) or p.name == glue.MANIFEST]
        for p in removed:
            p.unlink()
        if removed:
            _say(f"removed a compiled build from {folder} ({len(removed)} files)")


_MADE: list[tuple[list[Any], dict[Path, dict[str, Any]]]] = []


class BuildEngine(build_ext):
    """``build_ext`` that compiles the engine (mypyc runs when the build needs it, once, not at
    every ``setup.py`` call: metadata alone does not) and writes the manifest beside it, or goes
    on without it."""

    def finalize_options(self) -> None:
        if not _MADE:
            _MADE.append(_mypyc_extensions())
        self.distribution.ext_modules = list(_MADE[0][0])
        super().finalize_options()

    def build_extensions(self) -> None:
        # mypyc writes one C file a module (multi_file): compile them on every core (gcc runs
        # in a subprocess, so threads suffice); distutils compiles an extension's sources one
        # after the other
        compile_serially = self.compiler.compile
        jobs = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                   else os.cpu_count() or 1)

        def compile_in_parallel(sources: list[str], *args: Any, **kwargs: Any) -> list[str]:
            if jobs == 1 or len(sources) < 2:
                return list(compile_serially(sources, *args, **kwargs))
            with ThreadPoolExecutor(jobs) as pool:
                parts = list(pool.map(lambda s: compile_serially([s], *args, **kwargs), sources))
            return [obj for part in parts for obj in part]

        self.compiler.compile = compile_in_parallel  # type: ignore[method-assign]
        super().build_extensions()

    def run(self) -> None:
        if not self.extensions:
            return
        manifests = _MADE[0][1]
        built = [Path(self.build_lib) / folder.relative_to(ROOT) for folder in manifests]
        try:
            super().run()
        except Exception as e:  # noqa: BLE001  # any compiler failure: install pure Python
            _say(f"the compiled engine did not build ({e!r}); installing the pure-Python engine")
            _remove_build(*built)
            _remove_build()
            self.extensions = []
            return
        for (folder, manifest), out in zip(manifests.items(), built):
            for target in [out, *([folder] if self.inplace else [])]:
                target.mkdir(parents=True, exist_ok=True)
                (target / glue.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n",
                                                    encoding="utf-8")
            _say(f"compiled {folder.relative_to(ROOT)} built: "
                 f"{len(manifest['modules'])} modules")

    def get_outputs(self) -> list[str]:
        made = [str(Path(self.build_lib) / folder.relative_to(ROOT) / glue.MANIFEST)
                for folder in (_MADE[0][1] if _MADE else {})]
        return [*super().get_outputs(), *(made if self.extensions else [])]


def _mypyc_extensions() -> tuple[list[Any], dict[Path, dict[str, Any]]]:
    """mypyc's extensions for the engine and the metric parts and each group's manifest (by
    its folder), or none (and why)."""
    if os.environ.get(glue.PURE_ENV) == "1":
        _say(f"{glue.PURE_ENV}=1: installing the pure-Python engine")
        _remove_build()
        return [], {}
    try:
        from mypy.version import __version__ as mypy_version
        from mypyc.build import mypycify

        extensions: list[Any] = []
        manifests: dict[Path, dict[str, Any]] = {}
        for folder, group, sources_of in BUILDS:
            sources = sources_of()
            manifests[folder] = {"built_with": f"mypyc {mypy_version}",
                                 "modules": {_module(p): glue.source_sha256(p) for p in sources}}
            # no config file: the project's [tool.mypy] is strict and checks what the tests
            # check; the build only needs the types.  Extensions: e.g. replay/engine/*.so and
            # one shared library replay/engine/_compiled__mypyc*.so (a group name inside the
            # package, not a top-level module named by a hash)
            made = list(mypycify([str(p.relative_to(ROOT)) for p in sources]
                                 + ["--config-file=", "--python-version=3.11",
                                    "--ignore-missing-imports"],
                                 group_name=group, multi_file=True))
            # multi_file: a C file a module (compiled in parallel,
            # BuildEngine.build_extensions), which include the group's header mypyc writes
            # under the group's package folder
            for ext in made:
                ext.include_dirs.append(os.path.join("build", *group.split(".")[:-1]))
                if group == METRICS_GROUP:
                    # a product and a sum stay two roundings (no fused multiply-add on a
                    # machine that has one): the metrics' floats are NumPy's to the bit
                    ext.extra_compile_args.append("-ffp-contract=off")
            extensions += made
        return extensions, manifests
    except (Exception, SystemExit) as e:  # noqa: BLE001  # no mypyc, a type error: pure Python
        _say(f"mypyc cannot compile the engine ({e!r}); installing the pure-Python engine")
        _remove_build()
        return [], {}


# one placeholder extension, so that setuptools runs build_ext (which makes the real ones)
setup(ext_modules=[Extension("replay.engine._compiled__mypyc", sources=[])],
      cmdclass={"build_ext": BuildEngine})
