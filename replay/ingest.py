"""Ingest: log files → parsed runs → token counts → the Parquet store.

``parse_file`` reads one file (format detected from content unless given) and
returns its runs as Arrow tables with tokens counted once; ``ingest`` does that
for every file under the given paths, in parallel across files, skipping files
whose cache entry already exists, and never losing what the store had for a
file that now fails.  Every problem is an ``Issue`` (``file:line: reason``);
the batch goes on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from replay import store
from replay.parsers import PARSERS, detect_format
from replay.parsers.builder import Issue, RunDraft, Source
from replay.schema import SCHEMAS
from replay.tokens import count_tokens

LOG_SUFFIXES = (".jsonl", ".json", ".traj")
"""File endings ingest looks at inside folders (files named directly are always tried)."""
DEFAULT_TOKENIZERS: tuple[str, ...] = ("o200k_base",)
_TOKEN_COLUMN = {"o200k_base": "tokens_o200k", "cl100k_base": "tokens_cl100k"}
_SKIP_NAMES = ("manifest.json",)


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """One file's runs (as tables) and the problems found in it."""

    source: str
    format: str
    sha256: str
    tables: store.RunTables | None
    issues: tuple[Issue, ...]


@dataclass(slots=True)
class IngestReport:
    """What an ingest did: files parsed, reused from cache, failed, and every issue."""

    parsed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    n_runs: int = 0
    n_tokens: int = 0

    @property
    def ok(self) -> bool:
        """True when no file failed and no issue was reported."""
        return not self.failed and not self.issues


def discover(paths: Iterable[Path]) -> list[tuple[Path, Path]]:
    """Every log file under ``paths`` as (file, root), sorted; roots are the given folders."""
    found: list[tuple[Path, Path]] = []
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.name.endswith(LOG_SUFFIXES) and f.name not in _SKIP_NAMES \
                        and "/data/" not in f.as_posix()[len(p.as_posix()):]:
                    found.append((f, p))
        else:
            found.append((p, p.parent))
    return found


def parse_file(path: Path, root: Path | None = None, *, fmt: str | None = None,
               tokenizers: tuple[str, ...] = DEFAULT_TOKENIZERS) -> ParsedFile:
    """Parse one file into token-counted tables; problems are returned, never raised."""
    rel = _relative(path, root)
    issues: list[Issue] = []
    try:
        data = path.read_bytes()
    except OSError as exc:
        return ParsedFile(rel, "", "", None, (Issue(str(path), 0, f"cannot read: {exc}"),))
    sha = hashlib.sha256(data).hexdigest()
    if not data.strip():
        return ParsedFile(rel, "", sha, None, (Issue(str(path), 0, "empty file"),))
    name = fmt or detect_format(path.name, data[:65536])
    if name is None:
        why = "binary file" if b"\x00" in data[:4096] else "unknown format (no parser recognised it)"
        return ParsedFile(rel, "", sha, None, (Issue(str(path), 0, f"{why}; try --format"),))
    if name not in PARSERS:
        return ParsedFile(rel, "", sha, None,
                          (Issue(str(path), 0, f"unknown --format {name!r}; one of {sorted(PARSERS)}"),))
    src = Source(path=str(path), rel=rel, data=data, sha256=sha)
    try:
        drafts = PARSERS[name].parse(src, issues)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
        issues.append(Issue(str(path), 0, f"{name} parser failed: {type(exc).__name__}: {exc}"))
        drafts = []
    if not drafts:
        if not issues:
            issues.append(Issue(str(path), 0, f"no runs found in this {name} file"))
        return ParsedFile(rel, name, sha, None, tuple(issues))
    return ParsedFile(rel, name, sha, tokenize(drafts, tokenizers), tuple(issues))


def tokenize(drafts: list[RunDraft], tokenizers: tuple[str, ...]) -> store.RunTables:
    """Count tokens once per block and build the schema's tables."""
    messages: dict[str, list[object]] = {n: [] for n in SCHEMAS["messages"].names}
    requests: dict[str, list[object]] = {n: [] for n in SCHEMAS["requests"].names}
    runs: dict[str, list[object]] = {n: [] for n in SCHEMAS["runs"].names}
    for d in drafts:
        n = len(d.messages["msg"])
        for col, values in d.messages.items():
            messages[col].extend(values)
        messages["run_id"].extend([d.run["run_id"]] * n)
        requests["run_id"].extend([d.run["run_id"]] * len(d.requests["request"]))
        for col, values in d.requests.items():
            requests[col].extend(values)
        for col in runs:
            runs[col].append(d.run[col])
    texts: list[str] = messages["text"]  # type: ignore[assignment]
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    messages["n_bytes"] = [len(b) for b in encoded]
    messages["n_chars"] = [len(t) for t in texts]
    messages["n_lines"] = [t.count("\n") + 1 if t else 0 for t in texts]
    threads = min(4, os.cpu_count() or 1)
    for name, col in _TOKEN_COLUMN.items():
        messages[col] = list(count_tokens(texts, name, threads=threads)) if name in tokenizers \
            else [None] * len(texts)
    return store.RunTables(
        runs=pa.Table.from_pydict(runs, schema=SCHEMAS["runs"]),
        messages=pa.Table.from_pydict(messages, schema=SCHEMAS["messages"]),
        requests=pa.Table.from_pydict(requests, schema=SCHEMAS["requests"]),
    )


def ingest(paths: Iterable[Path], out: Path, *, fmt: str | None = None,
           tokenizers: tuple[str, ...] = DEFAULT_TOKENIZERS, jobs: int = 0, strict: bool = False,
           on_file: Callable[[str], None] | None = None) -> IngestReport:
    """Ingest every log file under ``paths`` into the store at ``out``.

    Args:
        paths: files or folders (folders are searched for ``*.jsonl``, ``*.json``, ``*.traj``).
        out: the dataset directory (created if missing).
        fmt: force one parser instead of detecting the format.
        tokenizers: encodings to count with (one column each).
        jobs: worker processes (0: one per core, at most one per file).
        strict: stop at the first file with an issue.
        on_file: called with each file's source path when it is done (progress bars).
    """
    out.mkdir(parents=True, exist_ok=True)
    entries = store.read_manifest(out)
    report = IngestReport()
    todo: list[tuple[Path, Path]] = []
    for path, root in discover(paths):
        rel = _relative(path, root)
        old = entries.get(rel)
        if old is not None and old.key == store.entry_key(_sha256(path), rel, tokenizers) \
                and store.has_entry(out, old.key):
            report.cached.append(rel)
            report.n_runs += old.n_runs
            if on_file:
                on_file(rel)
            continue
        todo.append((path, root))
    for parsed in _parse_all(todo, fmt, tokenizers, jobs):
        report.issues.extend(parsed.issues)
        if parsed.tables is None:
            report.failed.append(parsed.source)
        else:
            key = store.entry_key(parsed.sha256, parsed.source, tokenizers)
            store.write_entry(out, key, parsed.tables)
            entries[parsed.source] = store.Entry(parsed.source, key, parsed.sha256, parsed.format,
                                                 parsed.tables.runs.num_rows)
            report.parsed.append(parsed.source)
            report.n_runs += parsed.tables.runs.num_rows
            report.n_tokens += sum(v or 0 for v in parsed.tables.messages["tokens_o200k"].to_pylist())
        if on_file:
            on_file(parsed.source)
        if strict and parsed.issues:
            break
    store.write_manifest(out, entries)
    return report


def _parse_all(todo: list[tuple[Path, Path]], fmt: str | None, tokenizers: tuple[str, ...],
               jobs: int) -> Iterable[ParsedFile]:
    workers = min(jobs or (os.cpu_count() or 1), len(todo))
    if workers <= 1:
        for path, root in todo:
            yield parse_file(path, root, fmt=fmt, tokenizers=tokenizers)
        return
    with ProcessPoolExecutor(workers) as pool:
        futures = [pool.submit(parse_file, p, r, fmt=fmt, tokenizers=tokenizers) for p, r in todo]
        for f in futures:
            yield f.result()


def _relative(path: Path, root: Path | None) -> str:
    if root is None:
        return path.name
    try:
        return path.relative_to(root).as_posix() if path != root else path.name
    except ValueError:
        return path.name


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
