"""A corpus: ingested runs held together, split per run on demand, replayed under policies.

``open_corpus`` takes log files/folders (ingesting them into a store, cached) or
an existing store; ``Corpus.prepared(run_id)`` gives a run ready for the engine
(memoised, so sweeps prepare each run once); ``replay_corpus`` replays every run
under one policy and concatenates the traces.

The library entry points that do a command's whole work (``analysis.sweep.to_files``,
``analysis.check.run``, ``analysis.report.compare``) take their runs as ``Runs``: a corpus, or paths
that an ``Opener`` opens once the other arguments are checked (``project_opener``: as the
commands do, into the project cache; the CLI passes one that also prints).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from replay.engine.calibrate import MIN_POINTS, calibrate, corpus_fit
from replay.engine.calibrate import points as calibration_points
from replay.engine.fold import replay
from replay.engine.prepared import Calibration, PreparedRun, prepare
from replay.engine.trace import Trace
from replay.errors import ReplayInputError, StoreError
from replay.ingest import store, store_index
from replay.ingest.batch import ingest
from replay.ingest.ingest_report import IngestReport
from replay.ingest.names import DEFAULT_TOKENIZERS
from replay.ingest.run_label import run_labels
from replay.ingest.schema import SCHEMAS
from replay.ingest.source_name import STORED_SOURCE
from replay.layout import cache_root, dataset_dir
from replay.policy import Policy

CORPUS_FIT_RUNS = 64
"""Runs pooled at most into a model's corpus-level fit (bounds its cost on an archive)."""


class Corpus:
    """The runs of a store (or part of one), read entry by entry.

    The ``runs`` table is read eagerly (one small row per run); messages and requests
    are read per store entry when a run is prepared, so replaying an archive needs
    memory for the largest entry, not the archive.  ``messages`` / ``requests`` give
    everything at once for analyses of small corpora.
    """

    def __init__(self, root: Path, entries: list[store.Entry],
                 report: IngestReport | None = None, *, keep_prepared: int = 8,
                 failed: dict[str, str] | None = None) -> None:
        self.root, self.entries, self.report = root, entries, report
        self.failed: dict[str, str] = failed or {}
        """A dataset opened as it is: the input files whose last ingest into it failed
        (source -> why: ``replay.ingest.failed_inputs``), not in it or held as ingested before;
        empty otherwise (an ingest's ``report`` lists its own)."""
        runs = store_index.read_runs(root, entries, keep_stored=True)
        self.runs: pa.Table = runs.drop_columns([STORED_SOURCE])
        renamed = runs.filter(pc.not_equal(runs[STORED_SOURCE], runs["source"]))  # (few: none)
        self.stored_sources: dict[str, str] = dict(zip(renamed["run_id"].to_pylist(),
                                                       renamed[STORED_SOURCE].to_pylist()))
        """Run id → the source its file was parsed under, for the runs of an entry renamed in
        the manifest by hand (``self.runs`` names them by the manifest:
        ``replay.ingest.source_name``); ``--run`` and a baseline take the old name too."""
        self._entry_of: dict[str, store.Entry] = dict(zip(
            self.runs["run_id"].to_pylist(),
            (e for e in entries for _ in range(e.n_runs))))
        self._keep = keep_prepared
        self._loaded: tuple[str, store.RunTables, dict[str, tuple[int, int, int, int]]] | None = None
        self._prepared: OrderedDict[str, PreparedRun] = OrderedDict()
        self._calibration: dict[str, Calibration | None] = {}
        self._models: dict[str, str] | None = None
        self._harnesses: dict[str, str] | None = None
        self._windows: dict[str, tuple[int | None, int | None]] | None = None
        self._model_fits: dict[str, Calibration | None] = {}
        self._all: store.RunTables | None = None

    @classmethod
    def from_tables(cls, runs: pa.Table, messages: pa.Table, requests: pa.Table) -> Corpus:
        """An in-memory corpus (tests, notebooks building runs by hand)."""
        corpus = cls.__new__(cls)
        corpus.root, corpus.entries, corpus.report, corpus.failed = Path("."), [], None, {}
        corpus.runs, corpus._keep, corpus._prepared = runs, 8, OrderedDict()
        corpus._calibration, corpus._entry_of, corpus.stored_sources = {}, {}, {}
        corpus._models, corpus._model_fits, corpus._harnesses = None, {}, None
        corpus._windows = None
        corpus._all = store.RunTables(runs, messages, requests)
        msg_spans = store_index.row_spans(messages["run_id"].to_pylist())
        req_spans = store_index.row_spans(requests["run_id"].to_pylist())
        corpus._loaded = ("", corpus._all, {
            rid: (*msg_spans.get(rid, (0, 0)), *req_spans.get(rid, (0, 0)))
            for rid in runs["run_id"].to_pylist()})
        return corpus

    def subset(self, run_ids: Iterable[str]) -> Corpus:
        """The store entries holding ``run_ids`` (in store order) as a corpus of their own:
        what opening just those runs' files gives, so fits pooled over the corpus
        (``calibration``'s corpus-level fit) pool the same runs.  An in-memory corpus is
        returned as it is."""
        if not self.entries:
            return self
        keep = {id(self._entry_of[r]) for r in run_ids if r in self._entry_of}
        return Corpus(self.root, [e for e in self.entries if id(e) in keep], self.report,
                      keep_prepared=self._keep)

    @property
    def run_ids(self) -> list[str]:
        """Run ids in store order."""
        ids: list[str] = self.runs["run_id"].to_pylist()
        return ids

    def entry_of(self, run_id: str) -> store.Entry | None:
        """The store entry holding a run (None for in-memory corpora)."""
        return self._entry_of.get(run_id)

    @property
    def messages(self) -> pa.Table:
        """Every run's message rows (reads the whole store; for small corpora)."""
        return self._everything().messages

    @property
    def requests(self) -> pa.Table:
        """Every run's request rows (reads the whole store; for small corpora)."""
        return self._everything().requests

    def request_values(self, column: str, run_ids: Iterable[str]) -> dict[str, list[Any]]:
        """Run id → the values of request column ``column`` of its requests, in order, for the
        runs ``run_ids`` that have requests (the figure notes' counts: untimed requests,
        requests without usage)."""
        wanted = set(run_ids)
        if not wanted:
            return {}
        rq = self.requests.select(["run_id", column]).to_pydict()
        out: dict[str, list[Any]] = {}
        for rid, value in zip(rq["run_id"], rq[column]):
            if rid in wanted:
                out.setdefault(rid, []).append(value)
        return out

    def run_tables(self, run_id: str) -> tuple[pa.Table, pa.Table]:
        """One run's message and request rows (its store entry is read once and kept)."""
        entry = self._entry_of.get(run_id)
        if entry is not None and (self._loaded is None or self._loaded[0] != entry.key):
            tables = self._read_entry(entry)
            msg_spans = store_index.row_spans(tables.messages["run_id"].to_pylist())
            req_spans = store_index.row_spans(tables.requests["run_id"].to_pylist())
            spans = {rid: (*msg_spans.get(rid, (0, 0)), *req_spans.get(rid, (0, 0)))
                     for rid in tables.runs["run_id"].to_pylist()}
            self._loaded = (entry.key, tables, spans)
        if self._loaded is None:  # a store-backed corpus without this run: nothing read yet
            raise KeyError(run_id)
        key, tables, spans = self._loaded
        if run_id not in spans:  # the index and the entry disagree: never a KeyError
            raise StoreError(f"{self.root}: damaged store: entry {key} does not hold run "
                             f"{run_id} that the index lists for it; `replay ingest` of its "
                             "log repairs it")
        m0, m1, r0, r1 = spans[run_id]
        return tables.messages.slice(m0, m1 - m0), tables.requests.slice(r0, r1 - r0)

    def _read_entry(self, entry: store.Entry) -> store.RunTables:
        """The tables of one store entry (checked against its checksum); damaged, a
        ``StoreError`` that also names the log it holds and its runs (what to re-ingest)."""
        try:
            return store.read_entry(self.root, entry.key, entry.checksum)
        except StoreError as exc:
            raise damaged_entry(exc, entry) from None

    def events(self, run_id: str) -> pa.Table:
        """One run's ``ContextEvent`` rows: its compactions with their recorded facts (trigger,
        tokens before, summary, re-attached messages, first request after), cleared and
        persisted tool results (none for an in-memory corpus)."""
        self.run_tables(run_id)  # reads its entry (once)
        ev = self._loaded[1].events if self._loaded is not None else None
        if ev is None:
            return pa.Table.from_batches([], schema=SCHEMAS["events"])
        return ev.filter(pc.equal(ev["run_id"], run_id))

    def prepared(self, run_id: str) -> PreparedRun:
        """One run ready for replay (memoised, the most recent ``keep_prepared`` runs)."""
        run = self._prepared.get(run_id)
        if run is None:
            run = self._prepared[run_id] = prepare(*self.run_tables(run_id), run_id,
                                                   events=self.events(run_id),
                                                   harness=self._harness_of(run_id),
                                                   model=self._model_of(run_id),
                                                   window_tokens=self._windows_of(run_id)[0],
                                                   compact_limit_tokens=self._windows_of(run_id)[1])
            while len(self._prepared) > self._keep:
                self._prepared.popitem(last=False)
        else:
            self._prepared.move_to_end(run_id)
        return run

    def calibration(self, run_id: str) -> Calibration | None:
        """The run's fit of recorded usage (memoised): its own, or with fewer than
        ``calibrate.MIN_POINTS`` recorded requests the corpus-level fit of its model
        (``source == "corpus"``) when there is one; None without usage."""
        if run_id not in self._calibration:
            own = calibrate(self.prepared(run_id))
            if own is None or "few points" in own.flags:
                pooled = self._model_fit(self._model_of(run_id))
                if pooled is not None and pooled.usable:
                    own = pooled
            self._calibration[run_id] = own
        return self._calibration[run_id]

    def _windows_of(self, run_id: str) -> tuple[int | None, int | None]:
        """The window and auto-compact limit the run's log records (None: not recorded)."""
        if self._windows is None:
            cols = [self.runs[c].to_pylist() if c in self.runs.column_names
                    else [None] * self.runs.num_rows
                    for c in ("recorded_window_tokens", "recorded_compact_limit_tokens")]
            self._windows = dict(zip(self.run_ids, zip(*cols)))
        return self._windows.get(run_id, (None, None))

    def _harness_of(self, run_id: str) -> str:
        if self._harnesses is None:
            self._harnesses = dict(zip(self.run_ids, self.runs["harness"].to_pylist()))
        return self._harnesses.get(run_id) or ""

    def _model_of(self, run_id: str) -> str:
        if self._models is None:
            self._models = dict(zip(self.run_ids, self.runs["model"].to_pylist()))
        return self._models.get(run_id) or ""

    def _model_fit(self, model: str) -> Calibration | None:
        """The corpus-level fit of one model: the pooled points of its first
        ``CORPUS_FIT_RUNS`` runs that have enough points of their own (memoised)."""
        if model not in self._model_fits:
            sets, ids = [], [r for r in self.replayable() if self._model_of(r) == model]
            for rid in ids:
                pts = calibration_points(self.prepared(rid))
                if len(pts) >= MIN_POINTS:
                    sets.append(pts)
                    if len(sets) >= CORPUS_FIT_RUNS:
                        break
            self._model_fits[model] = corpus_fit(sets) if model and sets else None
        return self._model_fits[model]

    def replayable(self) -> list[str]:
        """Runs with at least one request."""
        return [r for r, n in zip(self.run_ids, self.runs["n_requests"].to_pylist()) if n > 0]

    def not_replayable(self) -> list[str]:
        """Runs with no request, in order: no command replays them, every command says so
        (``replay inspect FILE`` says why a file has none)."""
        return [r for r, n in zip(self.run_ids, self.runs["n_requests"].to_pylist()) if n <= 0]

    def _everything(self) -> store.RunTables:
        if self._all is None:
            parts = [self._read_entry(e) for e in self.entries]
            if not parts:
                self._all = store.RunTables(*(SCHEMAS[n].empty_table() for n in store.TABLES))
            else:
                self._all = store.RunTables(*(pa.concat_tables([getattr(p, n) for p in parts])
                                              for n in store.TABLES))
        return self._all


def damaged_entry(exc: StoreError, entry: store.Entry) -> StoreError:
    """``exc`` (an entry of a dataset that cannot be read) naming the log the entry holds and
    its runs: what ``replay ingest`` has to parse again."""
    n = entry.n_runs
    return StoreError(f"{exc}; the entry of {entry.source} ({n} run{'' if n == 1 else 's'})")


NOT_REPLAYED = "not replayed: no request"
"""What a row of a run with no recorded request says of it (``replay run``'s ``note``,
``replay calibrate``'s ``flags``); ``replay inspect FILE`` says why the file has none."""
NOT_REPLAYED_SHOWN = 20
"""Runs the not-replayed note names at most (``not_replayed_note``); the rest are counted."""


def source_issues(corpus: Corpus, run_ids: Iterable[str]) -> list[int | None]:
    """Per run id, the issues stored for its log file (a record skipped, usage dropped: said on
    stderr when the file was read), 0 when none; None for a run of no stored entry (a corpus
    built in memory: not known).  The ``source_issues_n`` column of every list of runs."""
    out: list[int | None] = []
    for rid in run_ids:
        entry = corpus.entry_of(rid)
        out.append(None if entry is None else len(entry.issues))
    return out


def not_replayed(corpus: Corpus) -> list[str]:
    """The labels of a corpus's runs with no recorded request (``Corpus.not_replayable``)."""
    left = corpus.not_replayable()
    labels = run_labels(corpus.runs) if left else {}
    return [labels.get(r, r) for r in left]


def not_replayed_note(labels: list[str]) -> str | None:
    """What every command that replays says of the runs it could not (``not_replayed``): never
    dropped silently; None when there is none."""
    if not labels:
        return None
    more = len(labels) - NOT_REPLAYED_SHOWN
    return (f"{len(labels)} run(s) with no recorded request not replayed: "
            + ", ".join(labels[:NOT_REPLAYED_SHOWN]) + (f" and {more} more" if more > 0 else "")
            + " (`replay inspect FILE` says why)")


def named_dataset(paths: Sequence[Path]) -> Path | None:
    """The dataset ``paths`` name when they are one dataset directory, else None (log files
    and folders).

    Raises:
        ReplayInputError: a dataset among other paths (a folder walk leaves a store's files
            out, so its runs were dropped without a word: ``run ds logs/`` replayed logs/ only).
    """
    if len(paths) == 1:
        return paths[0] if store.is_store(paths[0]) else None
    named = next((p for p in paths if store.is_store(p)), None)
    if named is not None:
        raise ReplayInputError(f"{named}: a dataset is read as it is, alone: give it as the only "
                               f"path, or give the logs it was ingested from beside the others "
                               f"(it was given with {len(paths) - 1} other path(s))")
    return None


def open_corpus(paths: Iterable[Path], *, cache_dir: Path | None = None, fmt: str | None = None,
                tokenizers: tuple[str, ...] = DEFAULT_TOKENIZERS, jobs: int = 0,
                on_file: Callable[[str], None] | None = None, strict: bool = False) -> Corpus:
    """Open a store, or ingest log files/folders (into ``cache_dir``) and open what they gave
    (``strict``: the ingest stops at the first file with a problem, see ``ingest``)."""
    paths = list(paths)
    if (dataset := named_dataset(paths)) is not None:
        manifest = store.read_manifest_whole(dataset)
        return Corpus(dataset, list(manifest.entries.values()), failed=manifest.failed)
    if cache_dir is None:
        raise ReplayInputError("log files need a dataset directory to ingest into (cache_dir)")
    report = ingest(paths, cache_dir, fmt=fmt, tokenizers=tokenizers, jobs=jobs, on_file=on_file,
                    strict=strict, apart_from_inputs=False)
    wanted = set(report.parsed + report.cached)
    entries = [e for s, e in store.read_manifest(cache_dir).items() if s in wanted]
    return Corpus(cache_dir, entries, report)


Opener: TypeAlias = Callable[[list[Path]], Corpus]
"""Opens the runs a library entry point was given as paths (log files or folders, or one
dataset)."""
Runs: TypeAlias = Corpus | Sequence[Path]
"""The runs a library entry point works on: a corpus, or paths its ``Opener`` opens."""


def project_opener(cache: Path | None = None) -> Opener:
    """Open paths as the commands do: one dataset as it is, log files ingested into the project
    cache's dataset (``replay.layout``: ``cache``, else ``$CTXREPLAY_CACHE_DIR``, else
    ``.ctxreplay``)."""
    return lambda paths: open_corpus(paths, cache_dir=dataset_dir(cache_root(cache)))


def corpus_of(runs: Runs, open_runs: Opener | None = None) -> Corpus:
    """``runs`` itself when it is a corpus, else the paths opened by ``open_runs`` (default:
    ``project_opener()``)."""
    if isinstance(runs, Corpus):
        return runs
    return (open_runs or project_opener())(list(runs))


def replay_corpus(corpus: Corpus, policy: Policy, *, allow_python: bool = False,
                  run_ids: list[str] | None = None,
                  on_run: Callable[[str], None] | None = None) -> Trace:
    """Replay every (or the given) run under ``policy``; traces concatenated in run order."""
    return Trace.concat(list(iter_replays(corpus, policy, allow_python=allow_python,
                                          run_ids=run_ids, on_run=on_run)))


def iter_replays(corpus: Corpus, policy: Policy, *, allow_python: bool = False,
                 run_ids: list[str] | None = None,
                 on_run: Callable[[str], None] | None = None) -> Iterator[Trace]:
    """One trace per run, in run order."""
    for rid in run_ids if run_ids is not None else corpus.replayable():
        yield replay(corpus.prepared(rid), policy, calibration=corpus.calibration(rid),
                     allow_python=allow_python)
        if on_run:
            on_run(rid)
