"""Hostile variants of real logs, made deterministically from a seed, and what ingest stores
of them, digested entry by entry.

    python -m tests.replay.ingest.hostile_logs FOLDER OUT.json [METRICS.pkl]

ingests the folder ``write_variants`` filled and writes ``describe``'s JSON (and the sweep
table of that store, ``metrics``).
``test_compiled_hostile.py`` runs it under the pure-Python ingest parts (``CTXREPLAY_PURE=1``)
and compares it with the same folder ingested in the test's process by the compiled parts.

Each variant is a real file of one format (``../shared/logs-sample/<format>``,
``tests/fixtures``) cut short (the first line and a window of lines of a JSONL log; the long
lists of a JSON document cut to ``LIST_CAP`` items) and then damaged a few times over: lines
dropped, repeated, swapped, cut mid-line, made not JSON; values replaced by ones of a wrong
type (null, a number for a string, a list for an object, huge ints, deep nesting, odd
unicode), keys removed, ids copied from another record (repeated uuids, ids, call ids).  No
Hypothesis: a seeded ``random.Random`` gives the same files on every run and on both sides,
and a fixed, small number of them (the test's CPU budget)."""

from __future__ import annotations

import hashlib
import json
import pickle
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from replay.ingest import store
from replay.ingest.batch import ingest
from replay.ingest.entry_file import decode
from tests.conftest import REPO, SAMPLES

SOURCES = (
    [SAMPLES / "claude-code" / n for n in ("short.jsonl", "tool_heavy.jsonl", "subagent.jsonl",
                                           "258c7280-ae70-4798-800f-63464d01a85d.jsonl")]
    + [SAMPLES / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d" / "subagents"
       / "agent-acompact-fffbd0.jsonl"]
    + sorted((SAMPLES / "codex").glob("*.jsonl"))
    + sorted((SAMPLES / "mini-swe-agent").glob("*.json"))
    + sorted((SAMPLES / "openhands").glob("*.json"))
    + sorted((SAMPLES / "swe-agent").glob("*.traj"))[:3]
    + sorted(p for p in (REPO / "tests" / "fixtures").rglob("*")
             if p.suffix in (".jsonl", ".json") and "openhands_v1" not in p.parts)
)
"""The originals: every format of the samples and of the fixtures (an OpenHands V1 folder and
the zipped inspect logs apart: ``write_variants`` adds those whole)."""
VARIANTS = 5
"""Damaged copies of each original."""
WINDOW_LINES = 40
"""Lines of a JSONL original kept (its first and a window of the rest)."""
LIST_CAP = 25
"""Items of a JSON document's list kept."""
ID_KEYS = ("uuid", "parentUuid", "id", "call_id", "callId", "tool_use_id", "session_id",
           "sessionId", "message_id", "turn_id", "leafUuid", "logicalParentUuid")
"""Keys whose values a mutation copies from one record to another (repeated ids)."""


def _deep(depth: int) -> Any:
    out: Any = "x"
    for i in range(depth):
        out = [out] if i % 2 else {"k": out}
    return out


ODD_VALUES: tuple[Any, ...] = (
    None, 0, -1, 1.5, True, 2**64 + 7, -(2**63) - 1, 10**30, "", "x", [], {}, [None], {"": None},
    "\u202e\u0000\ufeff\ud83d\ude00\u0301", "\udc80", "1e999", "NaN", _deep(40), _deep(300),
    ["a", 1, None], {"type": None, "text": 3},
)
"""What a value is replaced with: a wrong type, an edge number, odd unicode (a lone
surrogate, a NUL, an RTL override), deep nesting (past ``json_depth``'s limit too)."""


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value`` (keys and indexes), its own ``()`` excepted."""
    out: list[tuple[Any, ...]] = []
    items = (value.items() if isinstance(value, dict)
             else enumerate(value) if isinstance(value, list) else ())
    for k, v in items:
        out.append((*prefix, k))
        out.extend(_paths(v, (*prefix, k)))
    return out


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        value = value[k]
    return value


def _damage_value(rng: random.Random, doc: Any, others: list[Any]) -> Any:
    """``doc`` with one value replaced, one key removed or one id copied from ``others``."""
    paths = _paths(doc)
    if not paths:
        return rng.choice(ODD_VALUES)
    kind = rng.random()
    if kind < 0.25 and others:
        ids = [(p, _at(o, p)) for o in others for p in _paths(o)
               if p and p[-1] in ID_KEYS and not isinstance(_at(o, p), dict | list)]
        mine = [p for p in paths if p[-1] in ID_KEYS]
        if ids and mine:
            target = rng.choice(mine)
            _at(doc, target[:-1])[target[-1]] = rng.choice(ids)[1]
            return doc
    path = rng.choice(paths)
    parent = _at(doc, path[:-1])
    if kind < 0.45 and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = rng.choice(ODD_VALUES)
    return doc


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=True)
    except RecursionError:
        return "[" * 5000


def _damage_lines(rng: random.Random, lines: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(rng.randint(2, 6)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.randrange(9)
        if op == 0 and len(lines) > 1:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2 and len(lines) > 1:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] = lines[i][:rng.randrange(max(1, len(lines[i])))]
        elif op == 4:
            lines.insert(i, rng.choice(("", "not json", "{}", "[]", "null", "42", '"s"',
                                        "\ufeff{}", "{\"type\": null}", "\udcff{}")))
        else:  # a value damaged: the likeliest path to a parser's odd branches
            try:
                doc = json.loads(lines[i])
            except ValueError:
                continue
            others = []
            for line in rng.sample(lines, min(4, len(lines))):
                try:
                    others.append(json.loads(line))
                except ValueError:
                    pass
            lines[i] = _dump(_damage_value(rng, doc, others))
    return lines


def _cap(value: Any) -> Any:
    if isinstance(value, list):
        return [_cap(v) for v in value[:LIST_CAP]]
    if isinstance(value, dict):
        return {k: _cap(v) for k, v in value.items()}
    return value


def _damage_document(rng: random.Random, text: str) -> str:
    doc = _cap(json.loads(text))
    for _ in range(rng.randint(2, 6)):
        doc = _damage_value(rng, doc, [doc])
    out = _dump(doc)
    if rng.random() < 0.15:  # cut short
        out = out[:rng.randrange(len(out))]
    return out


def _variant(rng: random.Random, source: Path) -> str:
    text = source.read_text(encoding="utf-8", errors="surrogateescape")
    if source.suffix == ".jsonl":
        lines = text.splitlines()
        start = rng.randrange(1, max(2, len(lines) - WINDOW_LINES))
        lines = lines[:1] + lines[start:start + WINDOW_LINES]
        lines = _damage_lines(rng, lines)
        return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")
    return _damage_document(rng, text)


def write_variants(folder: Path, seed: int = 0) -> int:
    """``VARIANTS`` damaged copies of each of ``SOURCES`` into ``folder`` (``v<n>/<name>``:
    the original's name, for the formats told by name), an OpenHands V1 conversation with a
    damaged event and a cut-short zipped inspect log; the number of inputs written."""
    n = 0
    for i, source in enumerate(SOURCES):
        for v in range(VARIANTS):
            rng = random.Random(f"{seed}/{source.name}/{v}")
            out = folder / f"v{i}-{v}" / source.name
            out.parent.mkdir(parents=True)
            out.write_text(_variant(rng, source), encoding="utf-8", errors="surrogatepass")
            n += 1
    conversation = next((REPO / "tests" / "fixtures" / "openhands_v1").iterdir())
    for v in range(VARIANTS):
        rng = random.Random(f"{seed}/openhands_v1/{v}")
        copy = folder / f"oh{v}" / conversation.name
        shutil.copytree(conversation, copy)
        events = sorted((copy / "events").glob("event-*.json"))
        for event in rng.sample(events, 2):
            event.write_text(_damage_document(rng, event.read_text()), encoding="utf-8",
                             errors="surrogatepass")
        n += 1
    for v, zipped in enumerate(sorted((REPO / "tests" / "fixtures" / "inspect_ai").glob("*.eval"))):
        data = zipped.read_bytes()
        out = folder / f"ev{v}" / zipped.name
        out.parent.mkdir()
        out.write_bytes(data[:random.Random(f"{seed}/{zipped.name}").randrange(len(data))])
        n += 1
    return n


def describe(folder: Path, work: Path) -> dict[str, Any]:
    """One jobs=1 ingest of ``folder``: ``(report)`` -> what it told (files parsed and failed,
    runs, tokens, issues), and per entry its format, runs, coverage, issues and a digest of
    its tables' values."""
    dataset = work / "dataset"
    report = ingest([folder], dataset, jobs=1)
    out: dict[str, Any] = {"(report)": repr(
        (sorted(report.parsed), sorted(report.failed), report.n_runs, report.n_tokens,
         sorted((i.path, i.line, i.reason) for i in report.issues)))}
    for key, entry in store.read_manifest(dataset).items():
        h = hashlib.sha256()
        tables = decode((dataset / "data" / f"{entry.key}.parquet").read_bytes(), key)
        for table in sorted(tables):
            h.update(table.encode())
            h.update(repr(tables[table].to_pydict()).encode())
        out[key] = {"format": entry.format, "runs": entry.n_runs,
                    "coverage": repr(sorted(entry.coverage.items())),
                    "issues": repr(entry.issues), "tables": h.hexdigest()}
    return out


def metrics(dataset: Path) -> bytes:
    """The sweep table of the store ingest wrote in ``dataset`` (``tests.analysis.pure_metrics``'s
    grid: the metric parts and the engine over the damaged logs' runs), pickled."""
    from replay.corpus import open_corpus
    from tests.analysis.pure_metrics import tables  # (pandas: only when asked)

    return pickle.dumps(tables([open_corpus([dataset])]))


def main(folder: Path, out: Path, metrics_out: Path | None) -> None:
    with tempfile.TemporaryDirectory() as work:
        out.write_text(json.dumps(describe(folder, Path(work)), indent=0, sort_keys=True))
        if metrics_out is not None:
            metrics_out.write_bytes(metrics(Path(work) / "dataset"))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else None)
