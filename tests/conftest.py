"""Shared test fixtures: where the real sample logs are, hypothesis profiles, Agg plots."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import matplotlib
import pytest
import typer.main
import typer.testing
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO.parent / "shared" / "logs-sample"
"""The real recorded runs beside the checkout (``../shared/logs-sample``), in CI too."""

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The suite runs in parallel by default (pytest-xdist, one worker per core): a plain
    ``python -m pytest`` gets ``-n auto --dist worksteal`` (an idle worker takes tests queued
    for a busy one, so a few long tests do not leave a core idle at the end). Not in addopts,
    so that ``-p no:xdist`` (or a missing xdist) still runs the suite serially; ``-n N``,
    ``-n 0`` or ``--dist`` on the command line win. Every test is independent of the others
    and of their order: session fixtures are built once per worker, and nothing is written
    outside pytest's temporary folders (``project_cache`` below)."""
    if not config.pluginmanager.hasplugin("xdist") or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    opt = config.option
    if opt.numprocesses is None and opt.dist == "no" and not opt.collectonly and not opt.usepdb:
        opt.numprocesses, opt.dist = "auto", "worksteal"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """In xdist's controller, before it starts the workers: the test modules' rewritten code
    is written once (``tests/rewrite_cache.py``), so that in a fresh clone the two workers do
    not each rewrite every module.  With bytecode writing off, each worker instead writes its
    share of that code into the session's shared folder before it collects, and reads the
    rest from there."""
    config = session.config
    if config.pluginmanager.has_plugin("dsession"):
        from tests.rewrite_cache import warm

        warm(config)
    elif hasattr(config, "workerinput") and hasattr(config, "_tmp_path_factory"):
        from tests.rewrite_cache import share
        from tests.shared_results import session_folder

        share(config, session_folder(config._tmp_path_factory.getbasetemp()) / "rewritten")


SLOW_FIRST = (
    "test_redacted_archive_replays_like_the_original",
    "test_compiled_and_pure_traces_are_byte_identical",
    "test_notebook_runs_top_to_bottom",
    "test_mypy_strict_passes",
    "test_no_command_leaves_native_threads_running",
    "test_local_processes_and_a_dask_cluster_give_identical_tables",
    "test_file_names_of_any_bytes_are_read_named_and_printed_by_every_command",
    "test_the_walk_without_the_map_finds_the_same_path",
    "test_killed_sweep_keeps_the_previous_table",
    "test_combine_gives_the_bits_of_one_group_by_per_column",
    "test_killed_ingest_keeps_the_previous_store_readable",
    "test_a_batch_gives_each_replay_its_own_values",
    "test_typed_lines_parse_as_generic_ones",
    "test_the_table_of_shared_and_cached_rows_is_every_cells_own_row_sorted",
    "test_logs_hold_their_committed_baseline",
    "test_interrupted_ingest_lists_every_finished_entry",
    "test_killed_ingest_journal_reuses_every_finished_entry",
    "test_cli_report_and_run_report_write_the_same_files",
    "test_settings_that_share_a_replay_get_the_rows_of_their_own_replays",
    "test_killed_run_keeps_the_previous_outputs",
    "test_the_schedule_makes_the_trace_of_checking_every_need",
    "test_extending_a_grid_computes_only_the_new_cells",
    "test_a_report_folder_holds_the_report_only",
    "test_real_no_overshoots_with_before_send_check",
)
"""Tests that take 1-26 s each, slowest first (compiled engine, one process, load ~2.7:
``CI=true python -m pytest -n 0 -p no:randomly --durations=30 -k "<these names>" tests``).  They run
before the others, so that xdist's workers end on short tests: with ``--dist worksteal`` a
worker that runs out of tests takes half of the other's queue from its end, and a long test
started last would leave the other core idle meanwhile.  A name that no longer exists is no
error; the order of the rest is kept."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the ``SLOW_FIRST`` tests to the front, slowest first (the same order on every
    xdist worker: each collects, and the collections must agree)."""
    rank = {name: k for k, name in enumerate(SLOW_FIRST)}
    slow = len(rank)
    items.sort(key=lambda item: rank.get(getattr(item, "originalname", item.name), slow))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Once every test module and what it imports is loaded (~230,000 objects that live until
    the end), they are moved out of the garbage collector's generations (``gc.freeze``), so
    its full passes during the tests do not walk them again: the collector's CPU in
    tests/analysis/report + the engine properties, 5.4 -> 3.0 s of ~75 s (one run each, its
    time summed by ``gc.callbacks``).  Objects the tests make are collected as before."""
    import gc

    gc.collect()
    gc.freeze()


def _command_once(app: Any) -> Any:
    """``typer.main.get_command(app)``, built once per app for the session: typer's
    ``CliRunner.invoke`` builds the click command of the whole app (every command's signature
    and annotations read anew) at each call, ~20 ms, 20 s of the suite's CPU over its ~1,000
    invocations; a click command is built to be invoked many times (each call makes its own
    context).  tests/test_process_state.py checks that typer still calls it."""
    built = _COMMANDS.get(id(app))
    if built is None or built[0] is not app:
        built = _COMMANDS[id(app)] = (app, _build_command(app))
    return built[1]


_COMMANDS: dict[int, tuple[Any, Any]] = {}
_build_command = typer.main.get_command
typer.testing._get_command = _command_once  # type: ignore[attr-defined]  # (its private name)


RECURSION_LIMIT = sys.getrecursionlimit()
"""The process's recursion limit when the session starts (conftest is imported first)."""


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """After each test, the recursion limit is the session's again: a library may raise it for
    the whole process when first imported (jedi sets 3,000, and nbclient's test imports it
    through IPython), and the parsers measure each JSON text first when the limit is above
    ``json_depth.MAX_DEPTH`` (``check_each``): a test after it on the same worker took the
    other path (``test_ingest_streamed_deep`` failed after the notebook test in one process)."""
    if sys.getrecursionlimit() != RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--update-golden`` rewrites the golden trace files instead of comparing with them."""
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/*/expected.json")


@pytest.fixture(scope="session", autouse=True)
def project_cache(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The commands' project cache for the session (``$CTXREPLAY_CACHE_DIR``), so that no test
    writes ``.ctxreplay/`` into the folder pytest runs in; a test of the default unsets it."""
    from replay.layout import CACHE_ENV

    old = os.environ.get(CACHE_ENV)
    path = tmp_path_factory.mktemp("project-cache")
    os.environ[CACHE_ENV] = str(path)
    yield path
    if old is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = old


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """Whether this run rewrites golden files."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(scope="session")
def samples() -> Path:
    """The real sample logs folder; the suite needs it (CI has it beside the clone)."""
    assert SAMPLES.is_dir(), f"real sample logs expected at {SAMPLES}"
    return SAMPLES


@pytest.fixture(scope="session")
def sample_corpus(samples: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Every real sample log ingested once for the session (a ``replay.corpus.Corpus`` that
    keeps every run prepared: ``corpus_kept_prepared``)."""
    return corpus_kept_prepared(samples, tmp_path_factory.mktemp("samples") / "dataset")


@pytest.fixture(scope="session")
def shared_results(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Results computed once for the session by whichever xdist worker asks first, and read by
    the others (``tests/shared_results.py``): for deterministic results that tests on every
    worker need."""
    from tests.shared_results import SharedResults, session_folder

    return SharedResults(session_folder(tmp_path_factory.getbasetemp()) / "shared-results")


@pytest.fixture(scope="session")
def preset_run(logs_corpus, sample_corpus, shared_results):  # type: ignore[no-untyped-def]
    """``preset_run("logs" | "samples", policy)``: replayed and measured once per session, by
    one xdist worker for all (``tests/preset_runs.py``).  The tests' replays of ``logs/`` or
    the samples whole under a preset come from here."""
    from tests.preset_runs import preset_runner

    return preset_runner(logs_corpus, sample_corpus, shared_results)


@pytest.fixture(scope="session")
def logs_corpus(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The embedded corpus (``logs/``: long generated runs and the failure scenarios; every
    run kept prepared: ``corpus_kept_prepared``)."""
    return corpus_kept_prepared(REPO / "logs", tmp_path_factory.mktemp("logs") / "dataset")


def corpus_kept_prepared(folder: Path, dataset: Path):  # type: ignore[no-untyped-def]
    """``folder`` ingested into ``dataset`` and opened as a corpus that keeps every run's
    ``PreparedRun`` (with its memos: token sums, need plan) for the session, not the last 8:
    the tests replay each of the samples' 25 runs under many policies, mostly a policy over
    every run in turn, which with 8 kept prepared and planned every run again for each
    policy (~0.1 s a run).  ~55 MB a worker.  Replays on a run whose memos other policies
    filled equal replays on a cold copy (test_engine_samples checks it)."""
    from replay.corpus import Corpus, open_corpus

    opened = open_corpus([folder], cache_dir=dataset)
    return Corpus(opened.root, opened.entries, opened.report,
                  keep_prepared=len(opened.run_ids))


@pytest.fixture
def read_only_dir(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A folder nobody may write: mode 0555, and for root (whom modes do not stop) the
    immutable attribute; skipped with the reason when neither holds here."""
    import os
    import subprocess

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    immutable = False
    if os.geteuid() == 0:
        immutable = subprocess.run(["chattr", "+i", str(ro)], capture_output=True,
                                   check=False).returncode == 0
        if not immutable:
            pytest.skip("running as root and chattr +i is not available: no read-only folder")
    try:
        yield ro
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(ro)], check=False)
        ro.chmod(0o755)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current folder with two logs under ``logs/`` and no cache in the environment:
    the output-trust tests' project (``tests/outputs_project.py``); a module may define its own."""
    import shutil

    from replay.layout import CACHE_ENV
    from tests.outputs_project import SMALL  # lazy: it loads the CLI, for these tests only

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CACHE_ENV, raising=False)
    (tmp_path / "logs").mkdir()
    for log in SMALL:
        shutil.copy(log, tmp_path / "logs" / log.name)
    return tmp_path
