"""``replay runs`` lists each run's tokens by the tokenizers its dataset was counted with: a
dataset ingested without o200k_base (``--tokenizers cl100k_base``) lists its ``tokens``
(o200k_base) as unknown, not 0, with its cl100k_base counts beside them (``tokens_cl100k``) and
a note; the run index holds both totals, null where not counted.  An index written before
(``tokens_o200k`` never null, no ``tokens_cl100k``) is not read, and the next ingest rewrites
it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import store_index
from replay.ingest.batch import ingest
from replay.ingest.schema import RUN_INDEX
from replay.ingest.tokens import encoding
from tests.replay.ingest.index_helpers import write_older_index

SAMPLE = "claude-code"


def _counted(out: Path, name: str) -> dict[str, int]:
    """Each run's tokens, counted here by tiktoken's own encoder over the texts the dataset's
    entry files hold (not the index's sums, nor the ingest's counter), by run id."""
    enc = encoding(name)
    total: dict[str, int] = {}
    for path in sorted((out / "data").glob("*.parquet")):
        rows = pq.read_table(path, columns=["run_id", "text", "tokens_estimated"]).to_pylist()
        assert not any(r["tokens_estimated"] for r in rows)  # (no redaction marker: exact)
        for r in rows:
            total[r["run_id"]] = total.get(r["run_id"], 0) + len(enc.encode_ordinary(r["text"]))
    return total


def _listed(out: Path) -> tuple[list[dict[str, Any]], str]:
    result = CliRunner().invoke(app, ["runs", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_a_dataset_without_o200k_lists_its_tokens_unknown_and_its_cl100k_counts(
        samples: Path, tmp_path: Path) -> None:
    """Before: every run of the sample ingested with cl100k_base only listed 0 tokens (the
    total 0), and nothing said so."""
    out = tmp_path / "cl"
    assert ingest([samples / SAMPLE], out, tokenizers=("cl100k_base",), jobs=1).failed == []
    want = _counted(out, "cl100k_base")
    rows, note = _listed(out)
    assert len(rows) == len(want) > 1
    for row in rows:
        assert row["tokens"] is None
        assert row["tokens_cl100k"] == want[row["run_id"]] > 0
    assert f"{len(rows)} of {len(rows)} run(s) were ingested without o200k_base" in note
    table = CliRunner().invoke(app, ["runs", str(out), "--columns", "run,tokens,tokens_cl100k"],
                               env={"COLUMNS": "200"})
    assert table.exit_code == 0
    (total,) = [ln for ln in table.stdout.splitlines() if f"total ({len(rows)})" in ln]
    assert "unknown" in total and f"{sum(want.values()):,}" in total
    body = [ln for ln in table.stdout.splitlines() if ".jsonl" in ln]
    assert len(body) == len(rows) and all("unknown" in ln for ln in body)
    default = CliRunner().invoke(app, ["runs", str(out)], env={"COLUMNS": "300"})
    assert "tokens_cl100k" in default.stdout  # (shown by default where the dataset holds it)


def test_with_o200k_the_figures_are_the_counts_and_cl100k_is_not_shown(
        samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert ingest([samples / SAMPLE], out, jobs=1).failed == []
    want = _counted(out, "o200k_base")
    rows, note = _listed(out)
    assert {r["run_id"]: r["tokens"] for r in rows} == want
    assert all(r["tokens_cl100k"] is None for r in rows)
    assert "without o200k_base" not in note
    default = CliRunner().invoke(app, ["runs", str(out)], env={"COLUMNS": "300"})
    assert default.exit_code == 0 and "tokens_cl100k" not in default.stdout
    both = tmp_path / "both"
    ingest([samples / SAMPLE], both, tokenizers=("o200k_base", "cl100k_base"), jobs=1)
    rows, _ = _listed(both)
    cl100k = _counted(both, "cl100k_base")
    assert {r["run_id"]: (r["tokens"], r["tokens_cl100k"]) for r in rows} == \
        {k: (v, cl100k[k]) for k, v in want.items()}


def test_an_index_of_the_older_token_column_is_not_read_and_is_rewritten(
        samples: Path, tmp_path: Path) -> None:
    """A store whose run index was written before: ``tokens_o200k`` 0 where not counted (as the
    older ingest wrote it), no ``tokens_cl100k``.  ``replay runs`` reads the entries' own
    files (unknown, never that 0), and the next ingest, re-parsing nothing, rewrites it."""
    logs = samples / SAMPLE / "tool_heavy.jsonl"
    out = tmp_path / "cl"
    ingest([logs], out, tokenizers=("cl100k_base",), jobs=1)
    want, _ = _listed(out)
    index = store_index.read_index(out)
    assert index is not None
    at = index.schema.get_field_index("tokens_o200k")
    older = index.drop_columns(["tokens_cl100k"]).set_column(
        at, pa.field("tokens_o200k", pa.int64(), nullable=False),
        pa.array([0] * index.num_rows, pa.int64()))
    write_older_index(out, older)
    assert store_index.read_index(out) is None
    got, _ = _listed(out)
    assert got == want and got[0]["tokens"] is None and got[0]["tokens_cl100k"]
    report = ingest([logs], out, tokenizers=("cl100k_base",), jobs=1)
    assert report.parsed == [] and len(report.cached) == 1
    assert report.n_tokens_cached == got[0]["tokens_cl100k"]
    rebuilt = store_index.read_index(out)
    assert rebuilt is not None and rebuilt.schema.equals(RUN_INDEX, check_metadata=True)
    assert rebuilt["tokens_o200k"].to_pylist() == [None]
    assert rebuilt["tokens_cl100k"].to_pylist() == [got[0]["tokens_cl100k"]]
