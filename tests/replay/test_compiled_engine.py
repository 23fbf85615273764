"""The optional compiled engine (``setup.py``, ``replay/compiled_engine.py``): which engine runs
and why; a stale or half build never runs; the compiled build's traces are the pure engine's."""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from replay.compiled_engine import MANIFEST, PURE_ENV, choose, decide, source_sha256
from replay.corpus import Corpus
from replay.engine.trace import TRACE_SCHEMAS
from replay.policy import Policy, load_policy, presets
from tests.preset_runs import PresetRun
from tests.replay.pure_traces import CORPORA, digests, key

REPO = Path(__file__).resolve().parents[2]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
MODULES = ("fold", "tiers/trim")


def _tree(root: Path, manifest: bool = True, extensions: tuple[str, ...] = MODULES) -> Path:
    """A fake engine folder: two modules, their (fake) extensions and the build's manifest."""
    engine = root / "engine"
    (engine / "tiers").mkdir(parents=True)
    built = {}
    for rel in MODULES:
        source = engine / f"{rel}.py"
        source.write_text(f"X = {rel!r}\n")
        built["replay.engine." + rel.replace("/", ".")] = source_sha256(source)
    for rel in extensions:
        (engine / f"{rel}{SUFFIX}").write_bytes(b"not a real extension")
    if manifest:
        (engine / MANIFEST).write_text(json.dumps({"built_with": "mypyc 0", "modules": built}))
    return engine


def test_a_consistent_build_runs_compiled(tmp_path: Path) -> None:
    build, pure = decide(_tree(tmp_path), {})
    assert (build.compiled, build.reason, build.warn, pure) == (True, "mypyc 0, 2 modules",
                                                                False, {})


def test_no_build_is_pure_without_a_warning(tmp_path: Path) -> None:
    build, pure = decide(_tree(tmp_path, manifest=False, extensions=()), {})
    assert (build.compiled, build.reason, build.warn, pure) == (False, "no compiled build",
                                                                False, {})


def test_asked_for_pure_loads_every_module_from_its_source(tmp_path: Path) -> None:
    engine = _tree(tmp_path)
    build, pure = decide(engine, {PURE_ENV: "1"})
    assert (build.compiled, build.warn) == (False, False)
    assert pure == {"replay.engine.fold": engine / "fold.py",
                    "replay.engine.tiers.trim": engine / "tiers" / "trim.py"}


@pytest.mark.parametrize("case", ["edited", "extension missing", "no manifest", "bad manifest",
                                  "unknown extension"])
def test_a_doubtful_build_is_refused_with_a_warning(tmp_path: Path, case: str) -> None:
    engine = _tree(tmp_path, manifest=case != "no manifest",
                   extensions=MODULES[:1] if case == "extension missing" else MODULES)
    if case == "edited":
        (engine / "tiers" / "trim.py").write_text("X = 'edited after the build'\n")
    if case == "bad manifest":  # a crafted module name reaching outside the package
        (engine / MANIFEST).write_text(json.dumps({"built_with": "x",
                                                   "modules": {"replay.engine.../x": "0"}}))
    if case == "unknown extension":
        (engine / "extra.py").write_text("")
        (engine / f"extra{SUFFIX}").write_bytes(b"")
    build, pure = decide(engine, {})
    assert (build.compiled, build.warn) == (False, True), build
    assert {"replay.engine.fold", "replay.engine.tiers.trim"} <= set(pure)
    assert {"edited": "stale build", "extension missing": "replay.engine.tiers.trim: no extension",
            "no manifest": "without a build manifest", "bad manifest": "unreadable",
            "unknown extension": "replay.engine.extra"}[case] in build.reason


def _copy_package(tmp_path: Path) -> Path:
    """This checkout's ``replay`` package (with any build in it) under ``tmp_path``."""
    shutil.copytree(REPO / "replay", tmp_path / "replay",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


_PROBE = ("import replay.engine.fold as f, replay.engine.fenwick as k;"
          "from replay.compiled_engine import choose;"
          "print(f.__file__); print(k.__file__); print(choose().describe())")


def _probe(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    run_env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    return subprocess.run([sys.executable, "-c", _PROBE], cwd=root, capture_output=True,
                          text=True, env={**run_env, "PYTHONPATH": str(root), **env}, check=False)


def test_a_stale_extension_is_never_imported(tmp_path: Path) -> None:
    """Extensions beside the sources whose sources changed since (an editable install, then an
    edit): the modules load from their ``.py``, with a warning.  The extensions here are not
    loadable at all (garbage bytes), so the import fails if the hook lets one through."""
    root = _copy_package(tmp_path)
    engine = root / "replay" / "engine"
    for p in engine.rglob(f"*{SUFFIX}"):
        p.unlink()
    names = ("fold", "fenwick")
    for name in names:
        (engine / f"{name}{SUFFIX}").write_bytes(b"garbage, not an ELF file")
    built = {f"replay.engine.{n}": source_sha256(engine / f"{n}.py") for n in names}
    (engine / MANIFEST).write_text(json.dumps({"built_with": "mypyc 0", "modules": built}))
    with (engine / "fenwick.py").open("a") as f:
        f.write("# edited after the build\n")
    got = _probe(root)
    assert got.returncode == 0, got.stderr
    fold, fenwick, described = got.stdout.splitlines()
    assert fold.endswith("fold.py") and fenwick.endswith("fenwick.py")
    assert described.startswith("pure Python (stale build: ") and "fenwick.py changed" in described
    assert "CompiledEngineWarning" in got.stderr and "stale build" in got.stderr
    (engine / "fenwick.py").write_text((REPO / "replay/engine/fenwick.py").read_text())
    loads = _probe(root)  # the same build, sources as built: the (garbage) extension is loaded
    assert loads.returncode != 0 and "ImportError" in loads.stderr


BUILT = choose()


@pytest.mark.skipif(not BUILT.compiled, reason=f"no compiled engine in use: {BUILT.describe()}")
def test_compiled_and_pure_traces_are_byte_identical(
        tmp_path: Path, preset_run: Callable[[str, Policy], PresetRun], logs_corpus: Corpus,
        sample_corpus: Corpus) -> None:
    """Every preset over ``logs/`` and the samples: the sha256 of every trace table, pure
    (``CTXREPLAY_PURE=1``, ``tests/replay/pure_traces.py`` in a process of its own, over the
    session's datasets of both) against compiled (this process's: the session's
    ``preset_run`` replays, which the redact and analysis tests make too)."""
    out = tmp_path / "pure.json"
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    datasets = [f"logs={logs_corpus.root}", f"samples={sample_corpus.root}"]
    pure = subprocess.run([sys.executable, "-m", "tests.replay.pure_traces", str(out), *datasets],
                          capture_output=True, text=True, env={**env, PURE_ENV: "1"}, cwd=REPO,
                          check=False)
    assert pure.returncode == 0, pure.stderr
    want = json.loads(out.read_text())
    got = {key(which, name): digests(preset_run(which, load_policy(name)).result.trace)
           for which in CORPORA for name in presets()}
    assert len(got) == len(CORPORA) * len(presets()) > 2
    changed = [f"{k} {table}" for k in sorted(set(want) | set(got)) for table in TRACE_SCHEMAS
               if want.get(k, {}).get(table) != got.get(k, {}).get(table)]
    assert not changed, changed


@pytest.mark.skipif(not BUILT.compiled, reason=f"no compiled engine in use: {BUILT.describe()}")
def test_the_compiled_modules_are_the_ones_running() -> None:
    from replay.engine import fold

    assert fold.__file__ is not None and fold.__file__.endswith(SUFFIX)


@pytest.mark.parametrize(("package", "module"), [("analysis.per_run", "stats"),
                                                  ("replay.ingest", "parsers/builder")])
def test_another_packages_build_is_decided_alike(tmp_path: Path, package: str,
                                                 module: str) -> None:
    """The metric parts' build (``analysis/per_run``) and the ingest parts' (``replay/ingest``,
    modules in a subfolder too), ``choose_build``: named by its package, refused when stale, and
    a manifest naming a module of another package is unreadable."""
    folder = tmp_path / package.rsplit(".", 1)[-1]
    source = folder / f"{module}.py"
    source.parent.mkdir(parents=True)
    source.write_text("X = 1\n")
    source.with_name(f"{source.stem}{SUFFIX}").write_bytes(b"not a real extension")
    name = f"{package}.{module.replace('/', '.')}"
    (folder / MANIFEST).write_text(json.dumps({"built_with": "mypyc 0", "modules": {
        name: source_sha256(source)}}))
    build, pure = decide(folder, {}, package)
    assert (build.compiled, build.reason, pure) == (True, "mypyc 0, 1 modules", {})
    assert decide(folder, {}, "replay.engine")[0].warn  # (its modules are not this package's)
    source.write_text("X = 2\n")
    build, pure = decide(folder, {}, package)
    assert (build.compiled, build.warn) == (False, True) and "stale build" in build.reason
    assert pure == {name: source}
