"""The store's run index (``index.parquet``): the same rows as the entries' own files, in any
order and subset of entries; ignored when damaged, edited or not the file the manifest records
(``index_sha256``), rebuilt by the next ingest."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.corpus import open_corpus
from replay.ingest import store, store_index
from replay.ingest.batch import ingest
from replay.ingest.schema import RUN_INDEX

SMALL = ("claude-code/short.jsonl", "claude-code/tool_heavy.jsonl",
         "openhands/basic_interactions.json",
         "swe-agent/v1fc_gpt4__sweagenttestrepo-1c2844.traj")


def _without_index(root: Path, entries: list[store.Entry], *, with_tokens: bool) -> pa.Table:
    """``read_runs`` from the entries' own files (the index moved aside and back)."""
    index = root / store_index.INDEX_FILE
    aside = root / "index.aside"
    index.rename(aside)
    try:
        assert store_index.read_index(root) is None
        return store_index.read_runs(root, entries, with_tokens=with_tokens)
    finally:
        aside.rename(index)


@pytest.fixture(scope="module")
def sample_store(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("index") / "ds"
    report = ingest([samples], out, jobs=2)
    assert report.failed == [] and report.n_runs > 10
    return out


def test_index_holds_every_entry_with_the_entry_files_rows(sample_store: Path) -> None:
    entries = list(store.read_manifest(sample_store).values())
    index = store_index.read_index(sample_store)
    assert index is not None
    assert index["entry_key"].to_pylist() == [e.key for e in entries for _ in range(e.n_runs)]
    for with_tokens in (False, True):
        got = store_index.read_runs(sample_store, entries, with_tokens=with_tokens)
        want = _without_index(sample_store, entries, with_tokens=with_tokens)
        assert got.equals(want) and got.schema.equals(want.schema, check_metadata=True)
    assert sum(store_index.runs(sample_store)["tokens_o200k"].to_pylist()) > 0


@pytest.fixture(scope="module")
def sample_runs(sample_store: Path) -> dict[str, dict[str, object]]:
    """Each run's row of ``sample_store``, read from the entries' own files (``read_store``,
    not the index), once: the store is only read by the tests."""
    return {r["run_id"]: r for r in store.read_store(sample_store).runs.to_pylist()}


@given(st.data())
def test_any_subset_of_entries_in_any_order(sample_store: Path,
                                            sample_runs: dict[str, dict[str, object]],
                                            data: st.DataObject) -> None:
    """Rows follow the entries asked for, in their order, whether from the index or not."""
    entries = list(store.read_manifest(sample_store).values())
    picked = data.draw(st.lists(st.sampled_from(entries), unique_by=lambda e: e.key))
    got = store_index.read_runs(sample_store, picked, with_tokens=data.draw(st.booleans()))
    assert got["source"].to_pylist() == [e.source for e in picked for _ in range(e.n_runs)]
    want = sample_runs
    for row in got.to_pylist():
        row.pop("tokens_o200k", None)
        row.pop("tokens_cl100k", None)
        row.pop("n_requests_unrecorded", None)
        assert row == want[row["run_id"]]


def test_damaged_index_is_ignored_and_rebuilt(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    ingest([samples / rel for rel in SMALL], out, jobs=1)
    entries = list(store.read_manifest(out).values())
    good = store_index.runs(out)
    (out / store_index.INDEX_FILE).write_bytes(b"PAR1 not really")
    assert store_index.read_index(out) is None
    assert store_index.runs(out).equals(good)  # from the entries' files
    report = ingest([samples / rel for rel in SMALL], out, jobs=1)
    assert report.parsed == [] and len(report.cached) == len(SMALL)  # nothing re-parsed...
    index = store_index.read_index(out)  # ...but the index is whole again
    assert index is not None and index.num_rows == sum(e.n_runs for e in entries)
    assert store_index.runs(out).equals(good)


def test_index_newer_than_its_manifest_is_not_used(samples: Path, tmp_path: Path) -> None:
    """An ingest stopped between writing the index and the manifest: the old manifest's
    entries are read from their own files (the index is not the one the manifest records)."""
    out = tmp_path / "ds"
    ingest([samples / SMALL[0]], out, jobs=1)
    old_manifest = (out / "manifest.json").read_bytes()
    ingest([samples / rel for rel in SMALL], out, jobs=1)
    (out / "manifest.json").write_bytes(old_manifest)
    (entry,) = store.read_manifest(out).values()
    assert store_index.read_index(out) is None
    got = store_index.runs(out)
    assert got["source"].to_pylist() == [entry.source] * entry.n_runs
    assert got.equals(_without_index(out, [entry], with_tokens=True))


def _forge_index(out: Path, **values: object) -> None:
    """Rewrite ``out``'s run index as a hand edit would: valid Parquet of its schema, some
    columns set to ``values`` in every row."""
    index = store_index.read_index(out)
    assert index is not None
    for name, value in values.items():
        i = index.schema.get_field_index(name)
        index = index.set_column(i, index.schema.field(i),
                                 pa.array([value] * index.num_rows, index.schema.field(i).type))
    pq.write_table(index, out / store_index.INDEX_FILE)
    assert pq.read_table(out / store_index.INDEX_FILE).schema.equals(RUN_INDEX,
                                                                      check_metadata=True)


def test_an_index_edited_by_hand_is_not_believed(samples: Path, tmp_path: Path) -> None:
    """Before: ``replay runs`` listed a forged model and request count, and a run whose index
    row said 0 requests was dropped from every replay; the next ingest kept the forged rows."""
    out = tmp_path / "ds"
    ingest([samples / rel for rel in SMALL], out, jobs=1)
    entries = list(store.read_manifest(out).values())
    want = _without_index(out, entries, with_tokens=True)
    replayable = open_corpus([out]).replayable()
    _forge_index(out, model="FORGED", n_requests=0)
    assert store_index.read_index(out) is None
    assert store_index.runs(out).equals(want)
    listed = CliRunner().invoke(app, ["runs", str(out), "--json"])
    assert listed.exit_code == 0 and "FORGED" not in listed.stdout
    assert open_corpus([out]).replayable() == replayable != []
    ingest([samples / rel for rel in SMALL], out, jobs=1)  # rebuilt from the entries
    index = store_index.read_index(out)
    assert index is not None and "FORGED" not in index["model"].to_pylist()
    assert store_index.runs(out).equals(want)


def test_changed_file_replaces_its_index_rows(samples: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for rel in SMALL[:2]:
        (logs / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(samples / rel, logs / rel)
    out = tmp_path / "ds"
    ingest([logs], out, jobs=1)
    changed = logs / SMALL[1]
    lines = changed.read_text().splitlines(keepends=True)
    changed.write_text("".join(lines[: len(lines) // 2]))
    ingest([logs], out, jobs=1)
    entries = list(store.read_manifest(out).values())
    index = store_index.read_index(out)
    assert index is not None
    assert sorted(set(index["entry_key"].to_pylist())) == sorted(e.key for e in entries)
    assert store_index.runs(out).equals(_without_index(out, entries, with_tokens=True))


def test_damaged_runs_file_is_named(samples: Path, tmp_path: Path) -> None:
    """A damaged entry file is named by ``replay runs`` and by opening the store when the rows
    come from the entry's file, and by ``replay run`` (which reads the entry) when they come
    from the index; the store itself is not changed."""
    out = tmp_path / "ds"
    ingest([samples / SMALL[0]], out, jobs=1)
    (entry,) = store.read_manifest(out).values()
    damaged = folder = store.entry_file(out, entry.key)
    damaged.write_bytes(damaged.read_bytes()[:40])
    result = CliRunner().invoke(app, ["run", "--policy", "none", str(out), "--out",
                                      str(tmp_path / "o")])
    assert result.exit_code == 1 and str(folder) in result.output.replace("\n", "")
    (out / store_index.INDEX_FILE).unlink()
    result = CliRunner().invoke(app, ["runs", str(out)])
    assert result.exit_code == 1 and str(folder) in result.output.replace("\n", "")
    with pytest.raises(store.StoreError, match=re.escape(str(folder))):
        open_corpus([out])
    assert damaged.stat().st_size == 40 and store.read_manifest(out) == {entry.source: entry}


def test_runs_command_json_unchanged_by_the_index(sample_store: Path) -> None:
    runner = CliRunner()
    with_index = runner.invoke(app, ["runs", str(sample_store), "--json"])
    aside = sample_store / "index.aside"
    (sample_store / store_index.INDEX_FILE).rename(aside)
    try:
        without = runner.invoke(app, ["runs", str(sample_store), "--json"])
    finally:
        aside.rename(sample_store / store_index.INDEX_FILE)
    assert with_index.exit_code == 0 and without.exit_code == 0
    assert json.loads(with_index.stdout) == json.loads(without.stdout) != []


def test_index_rows_gathered_from_workers_keep_every_row_in_order(sample_store: Path) -> None:
    """What an ingest gathers from its workers (one IPC stream per entry, ``IndexRows``, merged
    every 256 entries) is the index: each entry's rows, in the order added."""
    entries = list(store.read_manifest(sample_store).values())
    index = store_index.read_index(sample_store)
    assert index is not None
    streams = [store_index.index_rows(store.read_entry(sample_store, e.key), e.key) for e in entries]
    gathered = store_index.IndexRows()
    order = [i for _ in range(12) for i in range(len(streams))][::-1]  # > 256 entries, reversed
    for i in order:
        gathered.add(streams[i])
    table = gathered.table()
    assert table.schema.equals(RUN_INDEX, check_metadata=True)
    spans = [(s, t) for s, t in _spans(index["entry_key"].to_pylist())]
    want = pa.concat_tables([index.slice(spans[i][0], spans[i][1] - spans[i][0]) for i in order])
    assert table.equals(want)


def test_index_rows_as_table_are_the_rows_of_the_stream(sample_store: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An ingest in one process keeps each entry's run-index rows as a table
    (``index_rows(stream=False)``: ``RunRows``, made a table with others' later) instead of
    writing a stream and reading it back: gathered in any mix with streams, and more than
    ``_MERGE_EVERY`` of them in a row, the index is the same table."""
    monkeypatch.setattr(store_index, "_MERGE_EVERY", 3)
    entries = list(store.read_manifest(sample_store).values())
    tables = [store.read_entry(sample_store, e.key) for e in entries]
    streamed, kept = store_index.IndexRows(), store_index.IndexRows()
    for k, (tables_k, e) in enumerate(zip(tables, entries)):
        rows = store_index.index_rows(tables_k, e.key, stream=False)
        assert isinstance(rows, store_index.RunRows) and len(rows) == e.n_runs
        streamed.add(store_index.index_rows(tables_k, e.key))
        kept.add(rows if k % 5 else store_index.index_rows(tables_k, e.key))
    index = store_index.read_index(sample_store)
    assert index is not None
    assert kept.table().equals(streamed.table()) and streamed.table().equals(index)


def _spans(keys: list[str]) -> list[tuple[int, int]]:
    out, start = [], 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            out.append((start, i))
            start = i
    return out


def test_run_listing_is_the_index_with_labels_parents_and_coverage(tmp_path: Path) -> None:
    """``replay runs`` is one library call: ``run_listing.run_listing`` (#14 item 5)."""
    from replay.ingest.run_label import label_column, run_key
    from replay.ingest.run_listing import LISTED_COLUMNS, run_listing
    from replay.ingest.store import coverage_lines

    out = tmp_path / "ds"
    ingest([Path(__file__).resolve().parents[3] / "logs" / "compacting-session.jsonl"], out)
    listed, index = run_listing(out), store_index.runs(out)
    assert listed.column_names == [*LISTED_COLUMNS.values(), "coverage", "source_issues_n",
                                   "entry"]
    assert listed["run"].to_pylist() == label_column(index)
    assert listed["requests"].to_pylist() == index["n_requests"].to_pylist()
    keys = {r: run_key(r, s) for r, s in zip(index["run_id"].to_pylist(),
                                              index["source"].to_pylist())}
    assert listed["parent"].to_pylist() == [keys.get(p, p) for p in
                                            index["parent_run_id"].to_pylist()]
    assert listed["coverage"].to_pylist() == [coverage_lines(out)[s] for s in
                                              index["source"].to_pylist()]
    assert listed["entry"].to_pylist() == ["ok"] * len(index)


@given(st.lists(st.tuples(st.sampled_from(["r0", "r1", "r2"]),
                          st.one_of(st.none(), st.integers(0, 2**40))), max_size=40),
       st.integers(1, 8))
def test_the_index_tokens_summed_a_slice_at_a_time_are_the_sums(
        rows: list[tuple[str, int | None]], slice_rows: int) -> None:
    """Each run's o200k tokens in the index: the sum of its blocks' counts (unknown ones left
    out, a run without any 0), however many rows are summed at a time; every run's unknown
    where no block was counted (an entry ingested without o200k_base), as its cl100k tokens
    in an entry not counted with cl100k_base."""
    runs = pa.table({"run_id": ["r0", "r1", "r2", "r3"]})
    messages = pa.table({"run_id": pa.array([r for r, _ in rows], pa.string()),
                         "tokens_o200k": pa.array([n for _, n in rows], pa.int64()),
                         "tokens_cl100k": pa.nulls(len(rows), pa.int64())})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_index, "_INDEX_SLICE_ROWS", slice_rows)
        got = store_index._with_tokens(runs, messages)
    counted = any(n is not None for _, n in rows) or not rows
    assert got["tokens_o200k"].to_pylist() == [
        sum(n for r, n in rows if r == run and n is not None) if counted else None
        for run in ("r0", "r1", "r2", "r3")]
    assert got["tokens_cl100k"].to_pylist() == [0 if not rows else None] * 4


def test_a_big_entrys_index_rows_are_not_made_python_values_at_once() -> None:
    """The run index's token sums of an entry of 200,000 blocks: its rows are read a slice at a
    time, never as 200,000 run ids and counts in Python at once (~100 bytes a row, 20 MB:
    the peak of ingesting a big file of small records, #24 item 3)."""
    import tracemalloc
    n = 200_000
    runs = pa.table({"run_id": ["r" * 64]})
    messages = pa.table({"run_id": pa.array(["r" * 64] * n, pa.string()),
                         "tokens_o200k": pa.array(range(n), pa.int64()),
                         "tokens_cl100k": pa.nulls(n, pa.int64())})
    tracemalloc.start()
    try:
        got = store_index._with_tokens(runs, messages)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got["tokens_o200k"].to_pylist() == [n * (n - 1) // 2]
    assert peak < 12_000_000
