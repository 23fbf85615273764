"""One unit of a sweep's work: one run and a batch of settings → one metric row per setting.

``sweep_unit(unit, blob)`` is the pure function every executor runs (this process, local
workers, Dask).  It opens that run's store entry only (``replay.ingest.store``), prepares the run
and its policy-independent facts (``analysis.run_facts``), replays each setting of the batch and
computes their metrics, several replays at a time (``analysis.per_run.fast_metrics``,
``fast_metrics_many``), and returns a row per replay made and which is each setting's; so a
worker's memory is bounded by the runs it keeps, not the archive.

Settings share replays: a setting whose replay is certain to repeat one already made in the unit
(the tiers it changes never opened their gate there, and stay shut at every level compared;
or its trim tier's token protection gives every pass the protected range's start it gave there:
``replay.engine.share``) takes that replay's metric row instead of replaying (the metrics read
the trace and the policy's fields outside its tiers, equal for both).  A replay made that
comes out the same as the unit's previous one anyway (every trace column equal, the policy's
fields outside its tiers too: a change that made no difference in a way no rule of ``share``
foresees) takes that replay's row instead of computing its metrics again.

A process keeps the runs it loaded, prepared with their facts, between units and sweeps, the
most recently used first, up to ``KEEP_LOADED_REQUESTS`` requests' worth (at least the last
two): a worker given a run it had before does not read and prepare it again.  A run is kept
under its store entry (key and checksum), so a run ingested again is loaded again.

Not here: planning units and running them (``analysis.sweep.execute``), the table
(``analysis.sweep.core``).
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import io
import operator
import os
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from analysis.metric_spec import RunFacts
from analysis.per_run.fast_metrics import fast_metrics_many
from analysis.run_facts import run_facts
from analysis.truth_notes import truth_of
from replay.corpus import Corpus
from replay.engine.fold import replay
from replay.engine.prepared import Calibration, PreparedRun
from replay.engine.probe import Probe
from replay.engine.share import Shapes, same_trace
from replay.engine.trace import TRACE_SCHEMAS, Trace
from replay.errors import ReplayError, ReplayInputError
from replay.ingest.store import Entry
from replay.memory import collector_paused
from replay.policy import Policy

SHARED_SOURCES = 16
"""Replays of a unit kept to stand for later settings (``sweep_unit``)."""
METRICS_BATCH = 32
"""Replays of a unit whose metrics are computed together at most (``fast_metrics_many``: their
request columns converted to NumPy, and each operation made, once for all of them)."""
METRICS_BATCH_REQUESTS = 10_000
"""Requests' worth of replays whose traces a unit keeps for computing their metrics together."""
KEEP_LOADED_REQUESTS = 4_000
"""Requests' worth of loaded runs a process keeps between units and sweeps (a prepared run with
its memo tables takes about 30-40 KB a request: some 150 MB)."""

Loaded = tuple[PreparedRun, Calibration | None, RunFacts]
"""A run ready for a unit: prepared, its calibration and its facts."""


@dataclass(frozen=True, slots=True)
class SweepUnit:
    """One run and the indices of the settings to replay over it."""

    run_id: str
    indices: tuple[int, ...]
    root: str
    entry: Entry | None
    """The run's store entry (None: ``tables`` carries the run)."""
    tables: tuple[pa.Table, pa.Table, pa.Table] | None
    """runs, messages, requests of the run, for corpora that are not a store."""
    allow_python: bool


@dataclass(frozen=True, slots=True)
class UnitRows:
    """What a unit gives back: a row of values per replay made, which is each setting's, and
    whether the run was loaded."""

    run_id: str
    indices: tuple[int, ...]
    """The unit's settings, by index (as it was given them)."""
    rows: list[int]
    """For each of them, its row in ``values``: the row of the replay that made it, or that
    stands for its own."""
    values: list[tuple[Any, ...]]
    """One row per replay made, ``VALUE_COLUMNS`` each (the policy's name, the truth source,
    the metrics)."""
    loaded: bool
    """The run was read and prepared for this unit (False: its process had kept it)."""
    n_repeated: int = 0
    """Replays made whose trace came out the same as the previous one's: they took its row."""

    @property
    def n_replays(self) -> int:
        """Replays made (the other settings took the row of a replay that stands for theirs)."""
        return len(self.values) + self.n_repeated


def sweep_unit(unit: SweepUnit, blob: bytes) -> UnitRows:
    """Replay a unit's settings over its run: one row per setting, as columns.

    The work function every executor runs; pure (same unit and settings, same rows).
    A row travels once however many settings it stands for; the caller makes one table of
    every unit's (``analysis.sweep.table``).

    Args:
        unit: the run and the settings' indices.
        blob: every setting of the sweep, pickled once as ``[(id, policy), ...]``.

    Returns:
        The rows, which is each setting's and whether the run was loaded.
    """
    (run, calibration, facts), loaded = (_store_run(unit.root, unit.entry, unit.run_id)
                                         if unit.entry is not None else (_table_run(unit), True))
    everything, shapes = _settings_of(blob)
    values: list[tuple[Any, ...]] = []
    rows = []
    sources: list[tuple[Policy, Probe, int]] = []
    """Replays made so far, newest used first, with their row in ``values``: a setting one of
    them stands for is not replayed, and its metrics are that replay's (they read the trace and
    the policy's fields outside its tiers, which are the same: ``analysis.per_run``)."""
    pending: list[tuple[Trace, Policy]] = []
    """Replays made whose metrics are not computed yet (computed together: ``_batch``)."""
    last: _Made | None = None
    repeated = 0
    batch = _batch(run.n_requests)
    for i in unit.indices:
        sid, policy = everything[i]
        row = _shared(sources, policy, shapes)
        if row is None:
            probe = Probe()
            try:
                trace = replay(run, policy, calibration=calibration,
                               allow_python=unit.allow_python, probe=probe)
            except ReplayError as exc:  # re-raised as a plain-message error that pickles
                raise ReplayInputError(f"run {unit.run_id}, setting {sid}: {exc}") from None
            rest = _rest(policy, shapes)
            row = _repeats(last, trace, rest)
            if row is None:
                row = len(values) + len(pending)
                pending.append((trace, policy))
                if len(pending) >= batch:
                    values += _values(facts, pending)
                    pending = []
            else:
                repeated += 1
            last = _Made(trace, rest, row)
            sources.insert(0, (policy, probe, row))
            del sources[SHARED_SOURCES:]
        rows.append(row)
    values += _values(facts, pending)
    return UnitRows(unit.run_id, unit.indices, rows, values, loaded, repeated)


@dataclass(frozen=True, slots=True)
class _Made:
    """A replay a unit made, and its row of values."""

    trace: Trace
    rest: int | None
    """The number of its policy's fields outside the tiers (``Shapes``; None: not numbered)."""
    row: int


def _rest(policy: Policy, shapes: Shapes) -> int | None:
    """The number ``shapes`` gives the policy's fields outside its tiers (None: none)."""
    shape = shapes.of(policy)
    return None if shape is None else shape[0]


def _repeats(last: _Made | None, trace: Trace, rest: int | None) -> int | None:
    """The row of the unit's previous replay when ``trace`` repeats it: every column of the
    two traces equal, and the policies' fields outside their tiers (numbered ``rest``), all the
    metrics read besides the run's facts (``analysis.per_run``), so the two rows are equal;
    None otherwise.  Values compare as lists compare them: a NaN matches only itself (at worst
    a row is not shared), and a -0.0 would pass for 0.0, but the traces' only float columns
    are costs, of prices checked to be >= 0 (``replay.policy.check``)."""
    if last is None or rest is None or last.rest != rest:
        return None
    a, b = last.trace, trace
    if (a.columns("requests")["est_tokens"][-1:] != b.columns("requests")["est_tokens"][-1:]
            or len(a.columns("actions")["action"]) != len(b.columns("actions")["action"])):
        return None  # where two settings' replays mostly differ, told before the whole traces
    return last.row if all(a.columns(t) == b.columns(t) for t in TRACE_SCHEMAS) else None


def _batch(n_requests: int) -> int:
    """Replays of a run whose metrics are computed together: up to ``METRICS_BATCH``, and
    ``METRICS_BATCH_REQUESTS`` requests' worth (their traces are kept until then)."""
    return max(1, min(METRICS_BATCH, METRICS_BATCH_REQUESTS // max(1, n_requests)))


def _values(facts: RunFacts, replays: list[tuple[Trace, Policy]]) -> list[tuple[Any, ...]]:
    """The value rows of replays of the unit's run (``VALUE_COLUMNS``: the policy's name, the
    truth that judged the run, the metrics)."""
    if not replays:
        return []
    return [(name, truth_of(trace) or "", *values) for (trace, _), (_, name, *values) in zip(
        replays, (row.values() for row in fast_metrics_many(facts, replays)))]


def sweep_units(units: tuple[SweepUnit, ...], blob: bytes, *,
                worker: bool = False) -> list[UnitRows]:
    """``sweep_unit`` of each unit in turn (a task of several units: one trip to a worker),
    with Python's cyclic collector paused (``replay.memory.collector_paused``, as each replay
    is): a unit keeps up to ``METRICS_BATCH`` traces, lists of thousands of values, whose
    metrics are still to compute, and the collector's young-generation scans walked each of
    them again and again (34 scans, ~20 ms of a 100-setting sweep's ~0.5 s); what the task
    leaves is scanned once, at its end.

    ``worker``: this is a worker process of the sweep's own pool, which keeps the runs it
    loads (``keep_loaded``)."""
    with collector_paused():
        rows = [sweep_unit(unit, blob) for unit in units]
        if worker and any(r.loaded for r in rows):
            keep_loaded()
    return rows


def keep_loaded() -> None:
    """Move every object of this worker process, the runs it keeps among them, out of the
    cyclic collector's reach (``gc.freeze``): they live as long as the worker (the runs until
    evicted, which reference counting frees: a prepared run and its facts hold no reference
    cycles), and each full collection walked all of them (~60 ms on the samples' 25 runs, at
    random points of a sweep: a 10-setting sweep's whole figure is ~90 ms).  Only for the
    pool's own workers, never a caller's process (``jobs=1``) or a Dask worker, whose other
    objects are not ours to freeze."""
    gc.freeze()


def _shared(sources: list[tuple[Policy, Probe, int]], policy: Policy,
            shapes: Shapes) -> int | None:
    """The row of a replay made for another setting that ``policy``'s replay would repeat
    exactly (``replay.engine.share.same_trace``), moved to the front; None when none."""
    for k, (source, probe, row) in enumerate(sources):
        if same_trace(source, probe, policy, shapes):
            if k:
                sources.insert(0, sources.pop(k))
            return row
    return None


_loaded: OrderedDict[tuple[str, Entry, str], Loaded] = OrderedDict()
"""The runs this process keeps (``_store_run``), least recently used first."""
_loaded_lock = threading.Lock()
"""Held while ``_loaded`` changes (a Dask worker runs units in threads)."""


def _store_run(root: str, entry: Entry, run_id: str) -> tuple[Loaded, bool]:
    """A run of a store, prepared, with its calibration and facts, and whether it was loaded now
    (False: kept from an earlier unit; loaded once per process while it stays kept)."""
    key = (root, entry, run_id)
    with _loaded_lock:
        got = _loaded.get(key)
        if got is not None:
            _loaded.move_to_end(key)
            return got, False
    corpus = Corpus(Path(root), [entry], keep_prepared=1)
    got = (corpus.prepared(run_id), corpus.calibration(run_id), run_facts(corpus, run_id))
    with _loaded_lock:
        _loaded[key] = got
        kept = sum(run.n_requests for run, _, _ in _loaded.values())
        while len(_loaded) > 2 and kept > KEEP_LOADED_REQUESTS:
            _, (old, _, _) = _loaded.popitem(last=False)
            kept -= old.n_requests
    return got, True


def keep_runs(root: str, runs: tuple[tuple[str, Entry], ...], *,
              worker: bool = False) -> tuple[int, int]:
    """Load and keep these runs of a store in this process, as a unit of them would
    (``analysis.sweep.execute.warm``): this process's id and how many it loaded now (the others
    it had kept).  ``worker``: as for ``sweep_units``."""
    loads = sum(_store_run(root, entry, rid)[1] for rid, entry in runs)
    if worker and loads:
        keep_loaded()
    return os.getpid(), loads


def _table_run(unit: SweepUnit) -> Loaded:
    assert unit.tables is not None
    corpus = Corpus.from_tables(*unit.tables)
    return (corpus.prepared(unit.run_id), corpus.calibration(unit.run_id),
            run_facts(corpus, unit.run_id))


def settings_blob(settings: list[tuple[str, Policy]]) -> bytes:
    """Every setting of a sweep, ``[(id, policy), ...]``, pickled once for its units
    (``_settings_of`` reads it back): a frozen, slotted dataclass (a policy and each of its
    parts) goes as its class and its fields' values, rebuilt by ``_made``, not through the
    ``__getstate__`` and ``__setstate__`` that ``dataclasses`` generates, which look the fields
    up again at every object (a 100-setting grid holds some 1,600 of them).  The same state
    either way: the fields, nothing else."""
    buf = io.BytesIO()
    _SettingsPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(settings)
    return buf.getvalue()


class _SettingsPickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        try:
            values = _VALUES[cls]
        except KeyError:
            names = _slotted_fields(cls)
            values = _VALUES[cls] = None if names is None else _reader(names)
        if values is None:
            return NotImplemented
        return _made, (cls, values(obj))


def _slotted_fields(cls: type) -> tuple[str, ...] | None:
    """The fields of a frozen dataclass with slots whose pickled state is its fields' values
    (the generated ``__getstate__``); None for any other class (pickled as ever)."""
    try:
        return _FIELDS[cls]
    except KeyError:
        pass
    params = getattr(cls, "__dataclass_params__", None)
    getstate = cls.__dict__.get("__getstate__")
    _FIELDS[cls] = (None if (params is None or not params.frozen
                             or "__slots__" not in cls.__dict__
                             or getattr(getstate, "__name__", "") != "_dataclass_getstate")
                    else tuple(f.name for f in dataclasses.fields(cls)))
    return _FIELDS[cls]


_FIELDS: dict[type, tuple[str, ...] | None] = {}
"""Class → ``_slotted_fields`` (None: not such a dataclass)."""
_VALUES: dict[type, Callable[[Any], tuple[Any, ...]] | None] = {}
"""Class → what reads its fields' values, in order, as a tuple (in C: ``operator.attrgetter``);
None: not such a dataclass."""


def _reader(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """What reads the fields ``names`` of an object as a tuple, in C for two fields or more
    (``operator.attrgetter``, one call; ~1,600 objects at 100 settings)."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    return lambda obj: tuple([getattr(obj, n) for n in names])


def _made(cls: type, values: tuple[Any, ...]) -> Any:
    """An object of a frozen, slotted dataclass from its fields' values, as its generated
    ``__setstate__`` makes it (``settings_blob``)."""
    names = _slotted_fields(cls)
    assert names is not None and len(names) == len(values)
    obj: Any = object.__new__(cls)
    for name, value in zip(names, values):
        object.__setattr__(obj, name, value)
    return obj


@functools.lru_cache(maxsize=2)
def _settings_of(blob: bytes) -> tuple[list[tuple[str, Any]], Shapes]:
    """The sweep's settings, unpickled once per process and sweep, and where their parts are
    numbered for ``same_trace``."""
    return pickle.loads(blob), Shapes()


def run_tables(corpus: Corpus, run_id: str) -> tuple[pa.Table, pa.Table, pa.Table]:
    """runs, messages and requests of one run, for a unit of a corpus that is not a store."""
    messages, requests = corpus.run_tables(run_id)
    runs = corpus.runs.filter(pc.equal(corpus.runs["run_id"], run_id))
    return runs, messages, requests
