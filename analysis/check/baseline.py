"""The committed baseline of ``replay check``: every metric of every run under each policy.

A baseline is a JSON file, written with sorted keys and one value per line so that an
update reads well in a diff.  Floats are rounded to ``SIGNIFICANT_DIGITS`` significant
digits, so the file does not change with the last bits of a sum.  It holds:

- ``trace_version`` / ``schema_version``: the engine and run model that measured it, so a
  changed engine is reported as such rather than as a metric regression;
- ``runs``: per *run key* (the source path relative to the ingest root, with ``#i`` for the
  i-th run of a file when i > 0) its ``source`` and the source file's ``sha256``, so a
  changed log is reported as such;
- ``metrics``: the metric names, in the order ``analysis.metrics.metrics`` gives them (the
  per-run functions of ``analysis.per_run``, as ``replay run`` and sweeps compute them);
- ``policies``: per policy name its ``digest`` and, per run key, every metric value
  (``null`` where a statistic is undefined).

``load_baseline`` trusts nothing in the file: a value of the wrong type, a sha256 that is not
one, a run holding other metrics than ``metrics`` lists (one missing would never be compared),
a value its metric cannot take (``MetricSpec.refuses``: a negative count, a share above 1, a
fraction of a request), a key given twice in one object (JSON keeps the last: a merge that kept both sides' copies of a
policy or a run) is refused with its key.  A baseline older than a metric lacks it in the list and in every run:
that is consistent, and the check notes the metric as new.

``measure`` replays policies over a corpus into a ``Baseline``; ``load_baseline`` and
``write_baseline`` read and write the file; what an update changes is listed by
``analysis.check.baseline_changes``.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import numbers
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.metrics import metrics_of_replays
from analysis.per_run import SPECS
from analysis.run_facts import runs_facts
from analysis.truth_notes import trace_sources
from replay.atomic_files import atomic_write_bytes
from replay.corpus import Corpus, iter_replays
from replay.engine.trace import TRACE_VERSION, Trace
from replay.errors import DamagedInputError, ReplayError
from replay.ingest.input_files import TooBig, Unreadable, read_document
from replay.ingest.run_label import run_key
from replay.ingest.schema import SCHEMA_VERSION
from replay.policy import Policy, refuse_shared_names
from replay.safe_text import readable_json

BASELINE_FORMAT = 1
"""Version of the file layout itself (not of the engine)."""
MAX_TRUTH_CHARS = 64
"""The longest truth source a baseline may name (the engine's are ~30 characters): a crafted
file's text is refused, not carried into the check's notes."""
SHA256 = re.compile(r"[0-9a-f]{64}")
"""A log's sha256 as the baseline stores it (``hashlib``'s ``hexdigest``): another value never
equals the log's, so its run would be "changed log", not compared."""

SIGNIFICANT_DIGITS = 10
"""Floats are stored rounded to this many significant digits…"""
DECIMALS = 12
"""…and to this many decimals (a sum that should be 0 but is 1e-18 is stored as 0)."""
MAX_VALUE = 2.0**53
"""The largest magnitude of a metric value a baseline holds: every value ``stored_value``
writes is a count or a float far below it; a larger one (or NaN, ±inf) was put there by hand."""

Value = int | float | None
"""A metric value as stored: a whole number, a float, or None (undefined)."""


class CheckError(ReplayError):
    """A baseline or tolerances file is missing or invalid, or does not fit the check asked for
    (a usage or configuration error: exit 2)."""


class BaselineError(CheckError, DamagedInputError):
    """A baseline file that is there but is not a valid baseline (not JSON, not its layout, a
    value no replay measures): an input that failed (exit 1), not a usage error."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunInfo:
    """Where a run came from, as recorded in the baseline."""

    source: str
    """Path of the source file relative to the ingest root."""
    sha256: str
    """sha256 of the whole source file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyValues:
    """One policy's metric values over the runs."""

    digest: str
    """``Policy.digest()`` of the policy that was measured."""
    values: dict[str, dict[str, Value]]
    """Run key → metric name → value."""
    truth: dict[str, str] = field(default_factory=dict)
    """Run key → the truth that judged the run (``replay.engine.truth.TRUTH_SOURCES``): a
    change says the figures rest on another basis (a log that lost its usage is judged by the
    tokenizer count: ``analysis.truth_notes``).  Empty in a baseline written before it was
    stored (nothing to compare)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    """Every metric of every run under each policy, with what measured it."""

    trace_version: str
    schema_version: str
    metrics: tuple[str, ...]
    runs: dict[str, RunInfo]
    policies: dict[str, PolicyValues]


def measure(corpus: Corpus, policies: Sequence[Policy], *, allow_python: bool = False,
            on_run: Callable[[str], None] | None = None) -> Baseline:
    """Replay each policy over every replayable run of ``corpus`` and collect every metric.

    Raises:
        ReplayInputError: two policies share a name (``refuse_shared_names``).
        CheckError: the corpus has no run to replay.
    """
    refuse_shared_names(policies)  # (the baseline keeps each policy's values by its name)
    ids = corpus.replayable()
    if not ids:
        raise CheckError("no run with requests to replay in the given paths")
    keys, runs = _run_keys(corpus, ids)
    order: tuple[str, ...] = ()
    out: dict[str, PolicyValues] = {}
    facts = runs_facts(corpus, ids)  # once for every policy
    for policy in policies:
        judged: dict[str, str] = {}

        def noted(traces: Iterable[Trace], judged: dict[str, str] = judged) -> Iterator[Trace]:
            for trace in traces:
                judged.update((keys[rid], src) for rid, src in trace_sources(trace))
                yield trace

        frame = metrics_of_replays(corpus, noted(iter_replays(
            corpus, policy, allow_python=allow_python, run_ids=ids, on_run=on_run)), policy,
                                   facts=facts)
        order = tuple(c for c in frame.columns if c not in ("run_id", "policy"))
        out[policy.name] = dataclasses.replace(policy_values(policy, frame, keys),
                                               truth=dict(sorted(judged.items())))
    return Baseline(trace_version=TRACE_VERSION, schema_version=SCHEMA_VERSION, metrics=order,
                    runs=runs, policies=out)


def policy_values(policy: Policy, frame: pd.DataFrame, keys: dict[str, str]) -> PolicyValues:
    """What ``check`` stores and compares for one policy: its ``metrics()`` rows by run key.

    Args:
        policy: the measured policy.
        frame: ``metrics()`` of its replay.
        keys: run id → run key (``replay.ingest.run_label.run_key``).
    """
    order = [c for c in frame.columns if c not in ("run_id", "policy")]
    values = {keys[row["run_id"]]: {m: stored_value(row[m]) for m in order}
              for row in frame.to_dict("records")}
    return PolicyValues(digest=policy.digest(), values=values)


def stored_value(v: Any) -> Value:
    """A metric value as the baseline stores it (ints exact, floats rounded, NaN → None)."""
    if v is None:
        return None
    if isinstance(v, numbers.Integral):
        return int(v)
    f = float(v)
    if math.isnan(f):
        return None
    return float(f"{round(f, DECIMALS):.{SIGNIFICANT_DIGITS}g}") + 0.0  # + 0.0: no -0.0


def load_baseline(path: Path) -> Baseline:
    """Read and validate a baseline file.

    A baseline is read as any input file (``replay.ingest.input_files.read_document``): a FIFO,
    a device (``/dev/zero``) or a file over the document bound is refused, never read.

    Raises:
        CheckError: the file is missing (a usage error: create it with --update-baseline), a
            folder, or over ``CTXREPLAY_MAX_DOCUMENT_BYTES`` (a limit set too low).
        BaselineError: it is not a regular file within the bound, is not JSON, or does not
            have the baseline layout (the message names the offending key).
    """
    if not os.path.lexists(path):
        raise CheckError(f"{path}: no such baseline; create it with `replay check ... "
                         f"--baseline {path} --update-baseline`")
    if path.is_dir():  # named by mistake (as a tolerances folder is): a usage error, not damage
        raise CheckError(f"{path}: a folder, not a baseline file")
    try:
        doc = json.loads(read_document(path).decode("utf-8"),
                         object_pairs_hook=_once_each)
    except _KeyTwice as twice:
        raise BaselineError(f"{path}: not a valid baseline ({twice})") from None
    except TooBig as why:  # the limit is set too low, nothing is wrong with the file: exit 2
        raise CheckError(f"{path}: the baseline: {why}") from None
    except Unreadable as why:
        raise BaselineError(f"{path}: not a baseline file: {why}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f"line {exc.lineno} column {exc.colno}: {exc.msg}" if isinstance(
            exc, json.JSONDecodeError) else str(exc)
        raise BaselineError(f"{path}: not a valid baseline (invalid JSON at {where})") from None
    except (ValueError, RecursionError) as exc:  # json's bound on an int's digits; nesting
        raise BaselineError(f"{path}: not a valid baseline ({str(exc).splitlines()[0]})") from None
    return _from_doc(doc, str(path))


class _KeyTwice(ValueError):
    """A JSON object of the baseline names a key twice."""


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, refusing a key given twice: ``json`` keeps the last silently,
    so of two copies of a policy (or a run) left by a merge, one was compared and the other,
    perhaps the one that fails, never read."""
    doc = dict(pairs)
    if len(doc) < len(pairs):
        key = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise _KeyTwice(f"the key {_shown(key)} is given twice in one object; JSON keeps only "
                        "the last, so the other would never be compared. Keep one")
    return doc


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Write ``baseline`` as pretty, key-sorted JSON (atomically)."""
    text = readable_json(json.dumps(_to_doc(baseline), indent=1, sort_keys=True,
                                    ensure_ascii=False, allow_nan=False))
    atomic_write_bytes(path, (text + "\n").encode(), within=path.parent)


def same_value(a: Value, b: Value) -> bool:
    """Equal as stored (both undefined, or equal up to float noise below the stored digits)."""
    if a is None or b is None:
        return a is None and b is None
    return a == b or abs(a - b) <= max(10.0 ** -SIGNIFICANT_DIGITS * max(abs(a), abs(b)),
                                       10.0 ** -DECIMALS)


def _run_keys(corpus: Corpus, ids: list[str]) -> tuple[dict[str, str], dict[str, RunInfo]]:
    """Run id → run key, and run key → RunInfo, for the given runs."""
    wanted = set(ids)
    keys: dict[str, str] = {}
    runs: dict[str, RunInfo] = {}
    cols = corpus.runs.select(["run_id", "source", "sha256"]).to_pylist()
    for row in cols:
        if row["run_id"] not in wanted:
            continue
        key = run_key(row["run_id"], row["source"])
        keys[row["run_id"]] = key
        runs[key] = RunInfo(source=row["source"], sha256=row["sha256"])
    return keys, runs


def _to_doc(b: Baseline) -> dict[str, Any]:
    return {
        "format": BASELINE_FORMAT,
        "trace_version": b.trace_version,
        "schema_version": b.schema_version,
        "metrics": list(b.metrics),
        "runs": {k: {"source": r.source, "sha256": r.sha256} for k, r in b.runs.items()},
        "policies": {n: {"digest": p.digest, "runs": p.values, **({"truth": p.truth} if p.truth
                                                                  else {})}
                     for n, p in b.policies.items()},
    }


def _from_doc(doc: Any, where: str) -> Baseline:
    """Validate the parsed JSON, naming the first key that is wrong."""
    top = _mapping(doc, where, "(top)", {"format", "trace_version", "schema_version", "metrics",
                                         "runs", "policies"})
    if top["format"] != BASELINE_FORMAT:
        raise BaselineError(f"{where}: format: this ctxreplay reads baseline format "
                         f"{BASELINE_FORMAT}, the file has {top['format']!r}")
    for key in ("trace_version", "schema_version"):
        if not isinstance(top[key], str):
            raise BaselineError(f"{where}: {key}: expected text, got {top[key]!r}")
    names = top["metrics"]
    if not isinstance(names, list) or not all(isinstance(m, str) for m in names):
        raise BaselineError(f"{where}: metrics: expected a list of metric names")
    if twice := [m for m, n in Counter(names).items() if n > 1]:
        raise BaselineError(f"{where}: metrics: {_shown(twice[0])} is listed twice")
    listed = set(names)
    runs = {key: _run_info(info, where, key)
            for key, info in _mapping(top["runs"], where, "runs").items()}
    policies: dict[str, PolicyValues] = {}
    for name, pol in _mapping(top["policies"], where, "policies").items():
        pol = _mapping(pol, where, f"policies.{name}", {"digest", "runs"})
        if not isinstance(pol["digest"], str):
            raise BaselineError(f"{where}: policies.{name}.digest: expected text, got "
                             f"{_shown(pol['digest'])}")
        values: dict[str, dict[str, Value]] = {}
        for run, vals in _mapping(pol["runs"], where, f"policies.{name}.runs").items():
            if run not in runs:
                raise BaselineError(f"{where}: policies.{name}.runs.{run}: run not listed in `runs`")
            vals = _mapping(vals, where, f"policies.{name}.runs.{run}")
            if vals.keys() != listed:
                _unlike_metrics(names, vals, where, f"policies.{name}.runs.{run}")
            for m, v in vals.items():
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise BaselineError(f"{where}: policies.{name}.runs.{run}.{m}: expected a number "
                                     f"or null, got {v!r}")
                if v is not None and not abs(v) <= MAX_VALUE:  # NaN compares false too
                    # json reads NaN, Infinity and 1e999; NaN or ±inf would compare equal or
                    # "improved" to any value (a regression passed), a huge int overflowed
                    got = v if isinstance(v, float) else \
                        f"a whole number of {len(str(abs(v)))} digits"
                    raise BaselineError(f"{where}: policies.{name}.runs.{run}.{m}: expected a "
                                     f"finite number of at most {MAX_VALUE:.0e} or null, got {got}")
                if v is not None and m in SPECS and (why := SPECS[m].refuses(v)) is not None:
                    # a negative count, a share above 1: no replay measures it, and compared it
                    # made a run pass or regress by a move no policy can make
                    raise BaselineError(f"{where}: policies.{name}.runs.{run}.{m}: {why}: no run "
                                     "measures that (edited by hand?); `--update-baseline` "
                                     "writes it again")
            values[run] = vals
        truth = _mapping(pol.get("truth", {}), where, f"policies.{name}.truth")
        for run, source in truth.items():
            if run not in runs:
                raise BaselineError(f"{where}: policies.{name}.truth.{run}: run not listed in `runs`")
            if not isinstance(source, str) or len(source) > MAX_TRUTH_CHARS:
                raise BaselineError(f"{where}: policies.{name}.truth.{run}: expected a truth source "
                                 f"(text of at most {MAX_TRUTH_CHARS} characters)")
        policies[name] = PolicyValues(digest=pol["digest"], values=values, truth=truth)
    return Baseline(trace_version=top["trace_version"], schema_version=top["schema_version"],
                    metrics=tuple(names), runs=runs, policies=policies)


def _run_info(info: Any, where: str, key: str) -> RunInfo:
    """``runs.KEY`` validated: its ``source`` is text, its ``sha256`` 64 lowercase hex digits
    (``SHA256``).  A value of another type was taken as its ``str()``: a sha256 that never
    equalled the log's made the run a "changed log", not compared, and the check passed."""
    info = _mapping(info, where, f"runs.{key}", {"source", "sha256"})
    source, sha = info["source"], info["sha256"]
    if not isinstance(source, str):
        raise BaselineError(f"{where}: runs.{key}.source: expected text, got {_shown(source)}")
    if not isinstance(sha, str) or not SHA256.fullmatch(sha):
        raise BaselineError(f"{where}: runs.{key}.sha256: expected the log's sha256 (64 lowercase "
                         f"hex digits), got {_shown(sha)}")
    return RunInfo(source=source, sha256=sha)


def _unlike_metrics(names: list[str], vals: dict[str, Any], where: str, key: str) -> None:
    """Refuse a run whose metrics are not those ``metrics`` lists (``measure`` writes every
    metric of every run).  A run missing one had it judged a "new metric" with no note, never
    compared; a value the list omits was compared yet noted as a new metric.  A baseline older
    than a metric lacks it in the list and in every run: consistent (``gate`` notes it)."""
    listed = set(names)
    if missing := [m for m in names if m not in vals]:
        raise BaselineError(f"{where}: {key}.{missing[0]}: missing, but `metrics` lists it (every "
                         f"run holds every listed metric; {len(missing)} missing in this run)")
    if unlisted := [m for m in vals if m not in listed]:
        raise BaselineError(f"{where}: {key}.{unlisted[0]}: not a metric `metrics` lists (every "
                         f"metric a run holds is listed; {len(unlisted)} unlisted in this run)")


def _shown(v: Any) -> str:
    """A crafted value for a message: its ``repr`` (control characters escaped), shortened."""
    text = repr(v)
    return text if len(text) <= 40 else text[:39] + "…"


def _mapping(v: Any, where: str, key: str, required: set[str] | None = None) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise BaselineError(f"{where}: {key}: expected a mapping, got {type(v).__name__}")
    for name in sorted((required or set()) - v.keys()):
        close = difflib.get_close_matches(name, [str(k) for k in v], n=1)
        hint = f" (found {close[0]!r})" if close else ""
        raise BaselineError(f"{where}: {key}: missing key {name!r}{hint}")
    return v
