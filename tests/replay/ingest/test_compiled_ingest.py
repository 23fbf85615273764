"""The ingest's parts compiled with mypyc (``setup.py``'s ``INGEST_MODULES``,
``replay/ingest/_build.py``): the stores ingest writes with them are those of the pure-Python
parts, table for table, with the same issues and coverage; the compiled modules are the ones
running when built; ``replay --version`` names their build."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replay.compiled_engine import MANIFEST, PURE_ENV
from replay.ingest._build import BUILD
from tests.replay.ingest.pure_stores import digests

REPO = Path(__file__).resolve().parents[3]


def _setup() -> object:
    """``setup.py``'s module (its ``setup()`` call not run: ``INGEST_MODULES``, ``BUILDS``)."""
    text = (REPO / "setup.py").read_text().split("\n# one placeholder extension")[0]
    namespace: dict[str, object] = {"__file__": str(REPO / "setup.py"), "__name__": "setup_"}
    exec(compile(text, "setup.py", "exec"), namespace)  # noqa: S102  # the repository's own file
    return type("Setup", (), namespace)


@pytest.mark.skipif(not BUILD.compiled, reason=f"no compiled ingest parts: {BUILD.describe()}")
def test_compiled_and_pure_ingests_store_the_same(tmp_path: Path) -> None:
    """The samples, ``logs/`` and the fixtures ingested with the pure parts
    (``CTXREPLAY_PURE=1``, ``tests/replay/ingest/pure_stores.py`` in a process of its own) and
    with the compiled ones (here): every entry's digest equal."""
    out = tmp_path / "pure.json"
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    pure = subprocess.run([sys.executable, "-m", "tests.replay.ingest.pure_stores", str(out)],
                          capture_output=True, text=True, env={**env, PURE_ENV: "1"}, cwd=REPO,
                          check=False)
    assert pure.returncode == 0, pure.stderr
    want = json.loads(out.read_text())
    got = digests(tmp_path / "compiled")
    assert len(got) > 60 and sorted(got) == sorted(want)
    assert [k for k in sorted(got) if got[k] != want[k]] == []


def test_the_compiled_parts_are_the_ones_running_when_built() -> None:
    from replay.ingest import ops
    from replay.ingest.parsers import builder, claude_code

    for module in (ops, builder, claude_code):
        assert module.__file__ is not None
        assert module.__file__.endswith(".py") != BUILD.compiled, (module.__file__,
                                                                   BUILD.describe())


def test_the_build_compiles_the_modules_it_names() -> None:
    """``INGEST_MODULES`` are modules of ``replay/ingest``, the third group of ``BUILDS``; built,
    the manifest names exactly them."""
    setup = _setup()
    folder, group, sources_of = setup.BUILDS[2]  # type: ignore[attr-defined]
    assert (folder, group) == (REPO / "replay" / "ingest", "replay.ingest._compiled")
    sources = sources_of()
    assert len(sources) == len(setup.INGEST_MODULES) > 10  # type: ignore[attr-defined]
    assert all(p.is_file() and p.is_relative_to(folder) for p in sources)
    manifest = folder / MANIFEST
    if BUILD.compiled:
        named = json.loads(manifest.read_text())["modules"]
        assert sorted(named) == sorted(
            ".".join(p.relative_to(REPO).with_suffix("").parts) for p in sources)
        for name in named:
            spec = importlib.util.find_spec(name)
            assert spec is not None and spec.origin is not None
            assert not spec.origin.endswith(".py"), name


@pytest.mark.parametrize("pure", [False, True])
def test_version_says_which_ingest_parts_run(pure: bool) -> None:
    """``replay --version`` names the ingest parts' build on a line of its own: the build this
    process chose (``BUILD``), or pure Python under ``CTXREPLAY_PURE=1``."""
    env = {**os.environ, PURE_ENV: "1"} if pure else dict(os.environ)  # (else as this process:
    # its BUILD is the one expected)
    probe = ("from replay.cli import app; from typer.testing import CliRunner;"
             "print(CliRunner().invoke(app, ['--version']).output)")
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, check=True, cwd=REPO).stdout.splitlines()
    said = [line for line in got if line.startswith("ingest parts: ")]
    assert said == [f"ingest parts: {'pure Python (CTXREPLAY_PURE=1)' if pure else BUILD.describe()}"]
