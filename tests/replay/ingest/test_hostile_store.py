"""A store that trusts nothing it reads back: crafted manifests, entry keys, run ids and dataset
tables never lead to a read, write or delete outside the folders the user named, nor to
figures from rows that break the run model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay.cli import app
from replay.corpus import open_corpus
from replay.errors import StoreError
from replay.ingest import store, store_index
from replay.ingest.batch import ingest
from replay.ingest.entry_write import write_entry
from replay.ingest.store_older import older_store
from replay.safe_names import file_name, is_segment
from tests.replay.ingest.store_helpers import LOG, _edit_manifest, _store, _victim, runner
from tests.replay.stamp import forge, restamp


@pytest.mark.parametrize("key", ["../../victim", "ABSOLUTE", "..", ".", "a/b", "", 7, None])
def test_crafted_entry_key_deletes_nothing(tmp_path: Path, key: object) -> None:
    ds, logs = _store(tmp_path)
    victim = _victim(tmp_path)
    _edit_manifest(ds, key=str(victim.resolve()) if key == "ABSOLUTE" else key)
    manifest = (ds / "manifest.json").read_bytes()
    (logs / "a.jsonl").write_text(LOG.read_text() + "\n")  # changed: its old entry is replaced
    with pytest.raises(StoreError, match="damaged store"):
        ingest([logs], ds, jobs=1)
    assert (victim / "precious.txt").read_text() == "keep me"
    assert (ds / "manifest.json").read_bytes() == manifest  # nothing changed either
    for read in (store.read_store, store_index.runs, lambda d: open_corpus([d])):
        with pytest.raises(StoreError, match="damaged store"):
            read(ds)


def test_crafted_entry_key_cli_says_damaged_and_exits_2(tmp_path: Path) -> None:
    ds, logs = _store(tmp_path)
    victim = _victim(tmp_path)
    _edit_manifest(ds, key="../../victim")
    (logs / "a.jsonl").write_text(LOG.read_text() + "\n")
    result = runner.invoke(app, ["ingest", str(logs), "--out", str(ds), "-q"])
    assert result.exit_code == 2
    assert "damaged store" in result.output
    assert (victim / "precious.txt").exists()


@pytest.mark.parametrize("fields", [{"n_runs": -1}, {"n_runs": True}, {"n_runs": "1"},
                                    {"sha256": "../x"}, {"format": ["x"]}])
def test_other_manifest_fields_are_checked(tmp_path: Path, fields: dict[str, object]) -> None:
    ds, _ = _store(tmp_path)
    _edit_manifest(ds, **fields)
    with pytest.raises(StoreError, match="damaged store"):
        store.read_manifest(ds)


@pytest.mark.parametrize("doc", [[], {"schema_version": "1", "entries": []}, "x"])
def test_manifest_of_the_wrong_shape_is_a_store_error(tmp_path: Path, doc: object) -> None:
    ds, _ = _store(tmp_path)
    doc = {**json.loads((ds / "manifest.json").read_text()), "entries": []} \
        if isinstance(doc, dict) else doc
    (ds / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(StoreError):
        store.read_manifest(ds)


DEEP = "[" * 100_000 + "]" * 100_000
"""JSON nested past Python's recursion limit: json.loads raises RecursionError, not ValueError."""


@pytest.mark.parametrize("name", ["manifest.json", "journal.jsonl"])
def test_a_store_file_nested_too_deeply_is_damaged_not_a_traceback(tmp_path: Path,
                                                                   name: str) -> None:
    ds, logs = _store(tmp_path)
    (ds / name).write_text(DEEP + "\n")
    reads = [["ingest", str(logs), "--out", str(ds)]]  # the journal: only an ingest adopts it
    for args in [["runs", str(ds)], *reads] if name == "manifest.json" else reads:
        result = runner.invoke(app, args)  # read as an input: exit 1; ingest's output: 2
        assert result.exit_code == (1 if args[0] == "runs" else 2), (args, result.output)
        assert isinstance(result.exception, SystemExit), result.exception
        assert f"{ds / name}" in result.output and "maximum recursion depth" in result.output
    if name == "manifest.json":  # older_store reads it too: not an older store, said once
        assert older_store(ds) is None


def test_entry_folder_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    ds, logs = _store(tmp_path)
    victim = _victim(tmp_path)
    (key,) = [e.key for e in store.read_manifest(ds).values()]
    (victim / "entry.parquet").write_bytes(store.entry_file(ds, key).read_bytes())
    store.entry_file(ds, key).unlink()
    (ds / "data" / f"{key}{store.ENTRY_SUFFIX}").symlink_to(victim / "entry.parquet")
    (logs / "a.jsonl").write_text(LOG.read_text() + "\n")
    with pytest.raises(StoreError, match="symlink"):
        store.read_entry(ds, key)
    with pytest.raises(StoreError, match="symlink"):
        ingest([logs], ds, jobs=1)
    assert (victim / "precious.txt").read_text() == "keep me"


def test_a_data_folder_that_is_a_symlink_is_a_damaged_store(tmp_path: Path) -> None:
    """A store's data/ planted as a symlink to a folder holding its very entries was read
    through by every command (runs, run, sql: exit 0), where a planted entry file is refused:
    a dataset is read where it is, as an input that failed (exit 1) when not."""
    ds, _ = _store(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (ds / "data").rename(elsewhere)
    (ds / "data").symlink_to(elsewhere)
    (key,) = [e.key for e in store.read_manifest(ds).values()]
    with pytest.raises(StoreError, match="the entries' folder is a symlink"):
        store.read_entry(ds, key)
    for args in (["runs", str(ds)], ["run", str(ds), "-p", "none", "--out", str(tmp_path / "o")],
                 ["sql", "select count(*) from messages", str(ds)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert "symlink" in result.output, (args, result.output)


# -- file names made from data ---------------------------------------------------------------

@given(st.text(max_size=300))
def test_file_name_is_always_one_safe_segment(text: str) -> None:
    name = file_name(text, ".png")
    assert is_segment(name) and name.endswith(".png") and "/" not in name and ".." not in name
    assert file_name(text, ".png") == name


@given(st.text(max_size=40), st.text(max_size=40))
def test_different_texts_give_different_file_names(a: str, b: str) -> None:
    if a != b:
        assert file_name(a) != file_name(b)


def _craft_run_id(ds: Path, run_id: str) -> None:
    """Rewrite every table of the store's one entry with ``run_id`` for its run."""
    (entry,) = store.read_manifest(ds).values()
    for name in store.TABLES:
        def crafted(table: pa.Table, name: str = name) -> pa.Table:
            col = table.schema.get_field_index("run_id")
            table = table.set_column(col, "run_id",
                                     pa.array([run_id] * table.num_rows, pa.string()))
            return pa.Table.from_arrays(table.columns, schema=store.SCHEMAS[name])
        forge(store.entry_file(ds, entry.key), name, crafted)
    (ds / store_index.INDEX_FILE).unlink()
    restamp(ds)  # a forged entry with a checksum to match: the run id's own checks next


def test_sweep_cache_names_files_safely(tmp_path: Path) -> None:
    from analysis.sweep.cache import ROW_COLUMNS, read_cached, write_cached
    cache = tmp_path / "out" / "sweep_cache"
    rows = pd.DataFrame([{c: 0 for c in ROW_COLUMNS} | {"run_id": "../../escaped"}]).astype(
        {"setting": str, "run_id": str, "policy": str, "truth_source": str})
    path = write_cached(cache, "../../escaped", "k", rows)
    assert path.parent == cache
    assert sorted(p.name for p in tmp_path.rglob("*.parquet")) == [path.name]
    assert len(read_cached(cache, "../../escaped", "k").rows) == 1
    assert len(read_cached(cache, "escaped", "k").rows) == 0


def test_crafted_run_id_writes_nothing_outside_out(tmp_path: Path) -> None:
    ds, _ = _store(tmp_path)
    _craft_run_id(ds, "../../../escaped")
    out = tmp_path / "a" / "b" / "out"
    out.parent.mkdir(parents=True)
    before = {p for p in tmp_path.rglob("*") if "out" not in p.relative_to(tmp_path).parts}
    result = runner.invoke(app, ["report", str(ds), "-p", "two-tier-corrected", "--out",
                                 str(out), "-q", "--max-timelines", "1"])
    assert result.exit_code == 0, result.output
    pngs = list((out / "report_files").glob("timeline_*.png"))
    assert len(pngs) == 1 and "escaped" in pngs[0].name
    result = runner.invoke(app, ["sweep", str(ds), "-p", "two-tier-corrected", "--axis",
                                 "server.window_tokens=100000,200000", "--out", str(out),
                                 "--cache-dir", str(out), "--jobs", "1", "--no-plots", "-q"])
    assert result.exit_code == 0, result.output
    assert len(list((out / "sweep_cache").glob("*.parquet"))) == 1
    after = {p for p in tmp_path.rglob("*") if "out" not in p.relative_to(tmp_path).parts}
    assert after == before
    assert not list(tmp_path.parent.glob("escaped*"))


def _set_column(table, name: str, values: list):  # type: ignore[no-untyped-def]
    """``table`` with column ``name`` replaced, its schema and metadata kept."""
    import pyarrow as pa

    field = table.schema.field(name)
    return table.set_column(table.schema.get_field_index(name), field,
                            pa.array(values, field.type)).replace_schema_metadata(
        table.schema.metadata)


@pytest.mark.parametrize(("table", "change", "rule"), [
    ("messages", lambda t: t.take(list(reversed(range(t.num_rows)))), "messages out of order"),
    ("messages", lambda t: _set_column(t, "msg", [-1] * t.num_rows), "a negative message number"),
    ("messages", lambda t: _set_column(t, "block", [0] * t.num_rows), "blocks not numbered"),
    ("messages", lambda t: _set_column(t, "tokens_o200k", [-10**12] * t.num_rows),
     "a negative tokens_o200k"),
    ("requests", lambda t: _set_column(t, "output_msg", [10**9] * t.num_rows),
     "a request answering a message the run does not have"),
    ("requests", lambda t: _set_column(t, "output_msg", list(reversed(
        t.column("output_msg").to_pylist()))), "requests out of order"),
    ("requests", lambda t: _set_column(t, "input_tokens", [-5] * t.num_rows),
     "a negative recorded input_tokens"),
    # 2^62 tokens a block: the replay's sums left int64, an OverflowError traceback
    ("messages", lambda t: _set_column(t, "tokens_o200k", [2**62] * t.num_rows),
     "a count above 1,099,511,627,776 (2^40) in tokens_o200k"),
    ("messages", lambda t: _set_column(t, "n_chars", [2**40] * t.num_rows),
     "a total above 1,099,511,627,776 of n_chars"),
    ("requests", lambda t: _set_column(t, "output_tokens", [2**62] * t.num_rows),
     "a count above 1,099,511,627,776 (2^40) in recorded output_tokens"),
], ids=["shuffled", "negative-msg", "blocks", "negative-tokens", "output-beyond",
        "requests-reversed", "negative-recorded", "huge-tokens", "huge-total", "huge-recorded"])
def test_a_crafted_dataset_table_is_refused_not_replayed(tmp_path: Path, table: str, change,  # type: ignore[no-untyped-def]
                                                          rule: str) -> None:
    """A dataset's Parquet rows that break the run model (written by hand, not by ingest)
    are refused with the run and the rule, exit 1 (an input that failed), instead of giving
    figures without a word."""

    store = tmp_path / "ds"
    ingest([LOG], store, jobs=1)
    (path,) = (store / "data").iterdir()
    forge(path, table, change)
    restamp(store)  # past the entry's checksum: the run model's rules are the next line
    result = runner.invoke(app, ["run", "--policy", "none", str(store), "--out",
                                 str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert "damaged dataset: run" in result.output and rule in result.output
    assert "Traceback" not in result.output


def test_a_footer_table_with_invalid_utf8_is_refused_by_decode() -> None:
    """The footer's tables are Arrow IPC streams, which a reader takes as written: a crafted
    string that is not UTF-8 (what ``Array.from_buffers`` and the IPC writer both let through)
    makes ``entry_file.decode`` raise a StoreError instead of handing it on."""
    import pyarrow as pa

    from replay.errors import StoreError
    from replay.ingest import entry_file
    from replay.ingest.ipc_stream import ipc_stream
    from replay.ingest.schema import SCHEMAS

    runs = SCHEMAS["runs"]
    column = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(
        (0).to_bytes(4, "little") + (2).to_bytes(4, "little")), pa.py_buffer(b"\xff\xfe")])
    first = runs.empty_table().column(0).type
    assert first == pa.string()
    data = entry_file.encode({"messages": SCHEMAS["messages"].empty_table(),
                              "runs": SCHEMAS["runs"].empty_table()})
    assert entry_file.decode(data, "ok")["runs"].num_rows == 0
    crafted = pa.table([column] + [pa.nulls(1, f.type) for f in list(runs)[1:]],
                       schema=runs.remove_metadata()).replace_schema_metadata(runs.metadata)
    footer = {**entry_file.ENTRY_FOOTER}
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, crafted.schema) as w:
        w.write_table(crafted)
    import pyarrow.parquet as pq
    out = pa.BufferOutputStream()
    with pq.ParquetWriter(out, SCHEMAS["messages"]) as writer:
        writer.write_table(SCHEMAS["messages"].empty_table())
        writer.add_key_value_metadata({footer["runs"]: sink.getvalue().to_pybytes(),
                                       footer["requests"]: ipc_stream(
                                           SCHEMAS["requests"].empty_table(),
                                           SCHEMAS["requests"]),
                                       footer["events"]: ipc_stream(
                                           SCHEMAS["events"].empty_table(),
                                           SCHEMAS["events"])})
    with pytest.raises(StoreError):
        entry_file.decode(out.getvalue().to_pybytes(), "crafted")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_a_store_file_that_is_a_fifo_is_damaged_not_a_hang(tmp_path: Path) -> None:
    """A fifo planted as the manifest or as an entry's file: a plain read of it blocks for
    ever (the ingest hung). Each is read as every input is (opened without blocking, a regular
    file within the limit) and the command ends with the file named. In a child process, so
    that a regression fails here instead of hanging the suite."""
    ds, logs = _store(tmp_path)
    (key,) = [e.key for e in store.read_manifest(ds).values()]
    entry = store.entry_file(ds, key)
    entry.unlink()
    os.mkfifo(entry)
    script = ("import sys\nfrom pathlib import Path\nfrom replay.errors import StoreError\n"
              "from replay.ingest import store\n"
              "try:\n    store.read_entry(Path(sys.argv[1]), sys.argv[2])\n"
              "except StoreError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script, str(ds), key], capture_output=True,
                          text=True, timeout=120, check=True)
    assert str(entry) in done.stdout and "not a regular file" in done.stdout, done.stdout
    (ds / "manifest.json").unlink()
    os.mkfifo(ds / "manifest.json")
    done = subprocess.run([sys.executable, "-m", "replay", "ingest", str(logs), "--out",
                           str(ds)], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "manifest.json" in done.stderr and "not a regular file" in done.stderr, done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_a_journal_that_is_a_fifo_is_damaged_not_a_hang(tmp_path: Path) -> None:
    """A fifo planted as the ingest journal: opening it to write (each finished entry is
    journalled) waited for a reader for ever. Both the ingest's first look at it and a write
    to it end with the file named. In child processes, as above."""
    ds, logs = _store(tmp_path)
    os.mkfifo(ds / "journal.jsonl")
    (logs / "a.jsonl").write_text(LOG.read_text() + "\n")
    done = subprocess.run([sys.executable, "-m", "replay", "ingest", str(logs), "--out",
                           str(ds)], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "journal.jsonl" in done.stderr and "not a regular file" in done.stderr, done.stderr
    script = ("import sys\nfrom pathlib import Path\nfrom replay.errors import StoreError\n"
              "from replay.ingest import store, store_session\n"
              "root = Path(sys.argv[1])\n(entry,) = store.read_manifest(root).values()\n"
              "try:\n    store_session.journal(root, entry)\n"
              "except StoreError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script, str(ds)], capture_output=True,
                          text=True, timeout=120, check=True)
    assert "journal.jsonl" in done.stdout and "not a regular file" in done.stdout, done.stdout


def test_what_lies_at_an_entry_files_names_is_replaced_never_followed(tmp_path: Path) -> None:
    """A symlink at the temporary name a new entry is written under (or a file an ingest killed
    there left) is removed, not written through; a folder at the entry's own name is replaced
    by the file."""
    ds, _ = _store(tmp_path)
    victim = _victim(tmp_path)
    (key,) = [e.key for e in store.read_manifest(ds).values()]
    tables = store.read_entry(ds, key)
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    (out / "data" / f".new.tmp{os.getpid()}").symlink_to(victim / "precious.txt")
    (out / "data" / f"new{store.ENTRY_SUFFIX}" / "inside").mkdir(parents=True)
    (out / "data" / f"old{store.ENTRY_SUFFIX}").mkdir()
    (out / "data" / f".old.tmp{os.getpid()}").write_bytes(b"left by a killed ingest")
    for name in ("new", "old"):
        write_entry(out, name, tables)
        assert store.entry_file(out, name).read_bytes() == store.entry_file(ds, key).read_bytes()
    assert sorted(p.name for p in (out / "data").iterdir()) == [
        f"new{store.ENTRY_SUFFIX}", f"old{store.ENTRY_SUFFIX}"]
    assert (victim / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize("planted", ["symlink to a file", "dangling symlink", "folder", "fifo"])
def test_a_lock_file_that_is_not_a_file_is_said_and_nothing_changes(tmp_path: Path,
                                                                    planted: str) -> None:
    """The store's ``.lock`` replaced by a symlink, a folder or a fifo: filelock, which opens it
    without following a symlink, failed as "Too many levels of symbolic links" or "Is a
    directory", nothing said of what was wrong. Now the ingest refuses the store in one line
    (exit 2, as for any damaged output store) and neither the store nor a victim changes."""
    ds, logs = _store(tmp_path)
    victim = _victim(tmp_path) / "precious.txt"
    lock = ds / ".lock"
    lock.unlink(missing_ok=True)
    if planted == "symlink to a file":
        lock.symlink_to(victim)
    elif planted == "dangling symlink":
        lock.symlink_to(tmp_path / "made-through-the-link")
    elif planted == "folder":
        lock.mkdir()
    else:
        os.mkfifo(lock)
    (logs / "a.jsonl").write_text(LOG.read_text() + "\n")  # changed: would be parsed again
    before = {p.name: p.read_bytes() for p in ds.iterdir() if p.is_file() and not p.is_symlink()
              and p.name != ".lock"}
    result = runner.invoke(app, ["ingest", str(logs), "--out", str(ds), "-q"])
    assert result.exit_code == 2, result.output
    what = {"folder": "a folder", "fifo": "not a regular file"}.get(planted, "a symlink")
    assert f"damaged store: the lock file is {what}" in " ".join(result.output.split())
    assert victim.read_text() == "keep me"
    assert not (tmp_path / "made-through-the-link").exists()
    assert {p.name: p.read_bytes() for p in ds.iterdir() if p.is_file() and not p.is_symlink()
            and p.name != ".lock"} == before


def test_a_stored_count_is_bounded_as_the_parsers_bound_a_count() -> None:
    """The run model's bound on a stored count is the parsers' (one definition,
    ``replay.ingest.names.MAX_COUNT``, which both import)."""
    from replay.ingest import names, run_checks
    from replay.ingest.parsers import builder, counts
    assert run_checks.MAX_COUNT is counts.MAX_COUNT is builder.MAX_COUNT is names.MAX_COUNT
