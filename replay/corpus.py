"""A corpus: ingested runs held together, split per run on demand, replayed under policies.

``open_corpus`` takes log files/folders (ingesting them into a store, cached) or
an existing store; ``Corpus.prepared(run_id)`` gives a run ready for the engine
(memoised, so sweeps prepare each run once); ``replay_corpus`` replays every run
under one policy and concatenates the traces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from replay import store
from replay.calibrate import calibrate
from replay.engine import replay
from replay.errors import ReplayInputError
from replay.ingest import DEFAULT_TOKENIZERS, IngestReport, ingest
from replay.policy import Policy
from replay.prepared import Calibration, PreparedRun, prepare
from replay.trace import Trace


@dataclass(slots=True)
class Corpus:
    """Runs, messages and requests of many runs, with per-run views."""

    runs: pa.Table
    messages: pa.Table
    requests: pa.Table
    report: IngestReport | None = None
    """What the ingest behind this corpus did (None when opened from a store)."""
    _spans: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    _prepared: dict[str, PreparedRun] = field(default_factory=dict)
    _calibration: dict[str, Calibration | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        msg_spans = _spans(self.messages["run_id"].to_pylist())
        req_spans = _spans(self.requests["run_id"].to_pylist())
        for rid in self.run_ids:
            m, r = msg_spans.get(rid, (0, 0)), req_spans.get(rid, (0, 0))
            self._spans[rid] = (m[0], m[1], r[0], r[1])

    @property
    def run_ids(self) -> list[str]:
        """Run ids in store order."""
        return self.runs["run_id"].to_pylist()

    def run_tables(self, run_id: str) -> tuple[pa.Table, pa.Table]:
        """One run's message and request rows."""
        m0, m1, r0, r1 = self._spans[run_id]
        return self.messages.slice(m0, m1 - m0), self.requests.slice(r0, r1 - r0)

    def prepared(self, run_id: str) -> PreparedRun:
        """One run ready for replay (memoised)."""
        if run_id not in self._prepared:
            self._prepared[run_id] = prepare(*self.run_tables(run_id), run_id)
        return self._prepared[run_id]

    def calibration(self, run_id: str) -> Calibration | None:
        """The run's fit of recorded usage (None without usage; memoised)."""
        if run_id not in self._calibration:
            self._calibration[run_id] = calibrate(self.prepared(run_id))
        return self._calibration[run_id]

    def replayable(self) -> list[str]:
        """Runs with at least one request."""
        return [r for r, n in zip(self.run_ids, self.runs["n_requests"].to_pylist()) if n > 0]


def open_corpus(paths: Iterable[Path], *, cache_dir: Path | None = None, fmt: str | None = None,
                tokenizers: tuple[str, ...] = DEFAULT_TOKENIZERS, jobs: int = 0,
                on_file: Callable[[str], None] | None = None) -> Corpus:
    """Open a store, or ingest log files/folders (into ``cache_dir``) and open the result."""
    paths = list(paths)
    if len(paths) == 1 and store.is_store(paths[0]):
        return Corpus(*_tables(store.read_store(paths[0])))
    if cache_dir is None:
        raise ReplayInputError("log files need a dataset directory to ingest into (cache_dir)")
    report = ingest(paths, cache_dir, fmt=fmt, tokenizers=tokenizers, jobs=jobs, on_file=on_file)
    wanted = {s for s in report.parsed + report.cached}
    tables = store.read_store(cache_dir)
    keep = pa.array([s in wanted for s in tables.runs["source"].to_pylist()])
    runs = tables.runs.filter(keep)
    ids = set(runs["run_id"].to_pylist())
    msgs = tables.messages.filter(pa.array([r in ids for r in tables.messages["run_id"].to_pylist()]))
    reqs = tables.requests.filter(pa.array([r in ids for r in tables.requests["run_id"].to_pylist()]))
    return Corpus(runs, msgs, reqs, report=report)


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


def _tables(t: store.RunTables) -> tuple[pa.Table, pa.Table, pa.Table]:
    return t.runs, t.messages, t.requests


def _spans(ids: list[str]) -> dict[str, tuple[int, int]]:
    spans: dict[str, tuple[int, int]] = {}
    start = 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[start]:
            spans[ids[start]] = (start, i)
            start = i
    return spans
