"""``replay runs`` says how many requests recorded no usage: per run (``unrecorded_requests``,
table and ``--json``) and in total (the sentence under the table), and a run none of whose
requests recorded usage has an unknown recorded input, not 0.  The count is a run-index column;
an index written before it existed is not read (counts from the entries' own files) and the
next ingest rewrites it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import store_index
from replay.ingest.batch import ingest
from replay.ingest.schema import RUN_INDEX
from tests.replay.ingest.index_helpers import write_older_index

SAMPLE = "claude-code/tool_heavy.jsonl"
_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _records(samples: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (samples / SAMPLE).read_text().splitlines() if line]


def _prompts(records: list[dict[str, Any]]) -> dict[str, int | None]:
    """Each response's prompt as its raw usage gives it (a response's last record; None when
    its input_tokens is null or all three parts are 0): independent of the parser."""
    out: dict[str, int | None] = {}
    for r in records:
        m = r.get("message")
        if r.get("type") == "assistant" and isinstance(m, dict) and "usage" in m:
            u = m["usage"]
            total = None if u["input_tokens"] is None else sum(u.get(k) or 0 for k in _KEYS)
            out[m["id"]] = total or None
    return out


def _write(path: Path, records: list[dict[str, Any]], usage: dict[str, Any] | None = None,
           ids: set[str] | None = None) -> dict[str, int | None]:
    """``records`` to ``path``, with ``usage`` set in the responses of ``ids`` (all: None)."""
    for r in records:
        m = r.get("message")
        if usage and isinstance(m, dict) and "usage" in m and (ids is None or m["id"] in ids):
            m["usage"].update(usage)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return _prompts(records)


def _listed(out: Path) -> tuple[dict[str, dict[str, Any]], str]:
    result = CliRunner().invoke(app, ["runs", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return {Path(r["source"]).name: r for r in json.loads(result.stdout)}, result.stderr


def test_runs_count_the_requests_without_usage(samples: Path, tmp_path: Path) -> None:
    """Before: the run with one response's usage nulled listed 80,180 recorded input tokens
    and nothing said a request was left out; the run whose responses all recorded 0 listed 0."""
    logs = tmp_path / "logs"
    logs.mkdir()
    first = next(iter(_prompts(_records(samples))))
    want = {"intact.jsonl": _write(logs / "intact.jsonl", _records(samples)),
            "partial.jsonl": _write(logs / "partial.jsonl", _records(samples),
                                    {"input_tokens": None}, {first}),
            "none.jsonl": _write(logs / "none.jsonl", _records(samples), {"input_tokens": None}),
            "zero.jsonl": _write(logs / "zero.jsonl", _records(samples), dict.fromkeys(_KEYS, 0))}
    out = tmp_path / "ds"
    assert ingest([logs], out, jobs=1).failed == []
    rows, note = _listed(out)
    for name, prompts in want.items():
        known = [v for v in prompts.values() if v is not None]
        assert rows[name]["requests"] == len(prompts)
        assert rows[name]["unrecorded_requests"] == len(prompts) - len(known)
        assert rows[name]["recorded_input_tokens"] == (sum(known) if known else None)
    assert rows["partial.jsonl"]["unrecorded_requests"] == 1
    n = sum(len(p) - sum(1 for v in p.values() if v) for p in want.values())
    total = sum(len(p) for p in want.values())
    assert f"{n} of {total} requests in 3 run(s) recorded no usage" in note
    assert "1 run(s) recorded some" in note and "2 run(s) recorded none" in note
    table = CliRunner().invoke(app, ["runs", str(out), "--columns",
                                     "run,recorded_input_tokens,unrecorded_requests"])
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    (zero_line,) = [ln for ln in lines if "zero.jsonl" in ln]
    assert "unknown" in zero_line and f"{len(want['zero.jsonl'])} " in zero_line
    (total_line,) = [ln for ln in lines if "total (4)" in ln]
    assert total_line.rstrip(" │").endswith(str(n))


def test_an_index_without_the_count_is_not_read_and_is_rewritten(samples: Path,
                                                                 tmp_path: Path) -> None:
    """A store whose run index was written before the count existed: ``replay runs`` counts
    from the entries' own files (never a guess), and the next ingest, re-parsing nothing,
    writes the index with the count."""
    logs = tmp_path / "logs"
    logs.mkdir()
    _write(logs / "partial.jsonl", _records(samples), {"input_tokens": None},
           {next(iter(_prompts(_records(samples))))})
    out = tmp_path / "ds"
    ingest([logs], out, jobs=1)
    want, _ = _listed(out)
    index = store_index.read_index(out)
    assert index is not None
    older = index.drop_columns(["n_requests_unrecorded"])
    write_older_index(out, older)
    assert store_index.read_index(out) is None
    got, _ = _listed(out)
    assert got == want and got["partial.jsonl"]["unrecorded_requests"] == 1
    report = ingest([logs], out, jobs=1)
    assert report.parsed == [] and len(report.cached) == 1
    rebuilt = store_index.read_index(out)
    assert rebuilt is not None and rebuilt.schema.equals(RUN_INDEX, check_metadata=True)
    assert rebuilt["n_requests_unrecorded"].to_pylist() == [1]
