"""A store that trusts nothing it reads back: crafted manifests, run ids and journals never lead
to a read, write or delete outside the folders the user named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.corpus import open_corpus
from replay.errors import StoreError
from replay.ingest import store, store_index
from replay.ingest.batch import ingest
from replay.safe_names import file_name, is_segment
from tests.replay.stamp import restamp

REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "logs" / "explore-rereads.jsonl"
runner = CliRunner()


def _store(tmp_path: Path) -> tuple[Path, Path]:
    """A store with one entry, and the folder of the log it was ingested from."""
    logs, ds = tmp_path / "logs", tmp_path / "ds"
    logs.mkdir()
    shutil.copy(LOG, logs / "a.jsonl")
    report = ingest([logs], ds, jobs=1)
    assert report.parsed == ["a.jsonl"]
    return ds, logs


def _edit_manifest(ds: Path, **fields: object) -> None:
    doc = json.loads((ds / "manifest.json").read_text())
    for entry in doc["entries"].values():
        entry.update(fields)
    (ds / "manifest.json").write_text(json.dumps(doc))


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    return victim


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


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


def test_entry_folder_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    ds, logs = _store(tmp_path)
    victim = _victim(tmp_path)
    (key,) = [e.key for e in store.read_manifest(ds).values()]
    shutil.rmtree(ds / "data" / key)
    (ds / "data" / key).symlink_to(victim, target_is_directory=True)
    (logs / "a.jsonl").write_text(LOG.read_text() + "\n")
    with pytest.raises(StoreError, match="symlink"):
        store.read_entry(ds, key)
    with pytest.raises(StoreError, match="symlink"):
        ingest([logs], ds, jobs=1)
    assert (victim / "precious.txt").read_text() == "keep me"


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
    folder = ds / "data" / entry.key
    for name in store.TABLES:
        table = pq.read_table(folder / f"{name}.parquet")
        col = table.schema.get_field_index("run_id")
        table = table.set_column(col, "run_id", pa.array([run_id] * table.num_rows, pa.string()))
        schema = store.SCHEMAS[name]
        pq.write_table(pa.Table.from_arrays(table.columns, schema=schema),
                       folder / f"{name}.parquet")
    (ds / store_index.INDEX_FILE).unlink()
    restamp(ds)  # a forged entry with a checksum to match: the run id's own checks next


def test_sweep_cache_names_files_safely(tmp_path: Path) -> None:
    from analysis.sweep.cache import ROW_COLUMNS, read_cached, write_cached
    cache = tmp_path / "out" / "sweep_cache"
    rows = pd.DataFrame([{c: 0 for c in ROW_COLUMNS} | {"run_id": "../../escaped"}]).astype(
        {"setting": str, "run_id": str, "policy": str})
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


# -- issues, the lock, the journal -------------------------------------------------------------

def _damaged_log(folder: Path) -> Path:
    folder.mkdir()
    path = folder / "damaged.jsonl"
    path.write_text(LOG.read_text() + "{not json\n")
    return path


def test_cached_entries_keep_their_issues(tmp_path: Path) -> None:
    logs, ds = tmp_path / "logs", tmp_path / "ds"
    _damaged_log(logs)
    first = ingest([logs], ds, jobs=1)
    assert first.parsed == ["damaged.jsonl"] and first.issues
    again = ingest([logs], ds, jobs=1)
    assert again.cached == ["damaged.jsonl"]
    assert [str(i) for i in again.issues] == [str(i) for i in first.issues]
    result = runner.invoke(app, ["ingest", str(logs), "--out", str(ds), "-q", "--strict"])
    assert result.exit_code == 1


def test_crafted_journal_line_touches_nothing(tmp_path: Path) -> None:
    ds, logs = _store(tmp_path)
    victim = _victim(tmp_path)
    (entry,) = store.read_manifest(ds).values()
    line = {"source": "a.jsonl", **store.entry_doc(entry), "key": "../../victim"}
    (ds / "journal.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(StoreError, match="damaged store"):
        ingest([logs], ds, jobs=1)
    assert (victim / "precious.txt").exists()


def test_a_second_ingest_waits_for_the_lock_and_says_so(tmp_path: Path) -> None:
    import filelock
    ds, _logs = _store(tmp_path)
    more = tmp_path / "more"
    more.mkdir()
    shutil.copy(REPO / "logs" / "write-heavy.jsonl", more / "b.jsonl")
    said: list[str] = []
    lock = filelock.FileLock(str(ds / ".lock"))
    lock.acquire()

    def waiting(message: str) -> None:
        said.append(message)
        lock.release()  # the other ingest finishes now

    report = ingest([more], ds, jobs=1, on_wait=waiting)
    assert len(said) == 1 and "waiting" in said[0]
    assert report.parsed == ["b.jsonl"]
    assert set(store.read_manifest(ds)) == {"a.jsonl", "b.jsonl"}


def test_two_concurrent_ingests_keep_both_batches(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    import filelock
    ds = tmp_path / "ds"
    ds.mkdir()
    batches = []
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        for i in range(3):
            (folder / f"{name}{i}.jsonl").write_text(LOG.read_text() + "\n" * (i + 1))
        batches.append(folder)
    lock = filelock.FileLock(str(ds / ".lock"))
    lock.acquire()  # both start while the store is busy: both must wait, then both finish
    errs = [tmp_path / f"err{i}.txt" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-c", "from replay.cli import app; app()", "ingest",
                               str(b), "--out", str(ds), "-q", "--jobs", "1"],
                              stdout=subprocess.DEVNULL, stderr=err.open("w"))
             for b, err in zip(batches, errs)]
    deadline = time.monotonic() + 120  # a bound on a hang, not a timing assertion
    while not all("waiting" in e.read_text() for e in errs):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
            [e.read_text() for e in errs]
        time.sleep(0.1)
    lock.release()
    assert [p.wait(timeout=300) for p in procs] == [0, 0], [e.read_text() for e in errs]
    assert len(store.read_manifest(ds)) == 6


# -- filesystem limits -------------------------------------------------------------------------

def test_fifo_device_and_symlink_loop_are_reported_and_the_rest_ingested(tmp_path: Path) -> None:
    import os
    good = tmp_path / "good.jsonl"
    shutil.copy(LOG, good)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)  # opened blocking, this would hang forever
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    folder = tmp_path / "folder"
    folder.mkdir()
    os.mkfifo(folder / "inner.jsonl")
    paths = [fifo, Path("/dev/zero"), loop, good, folder]
    report = ingest(paths, tmp_path / "ds", jobs=1)
    assert report.parsed == ["good.jsonl"]
    reasons = {Path(i.path).name: i.reason for i in report.issues}
    assert "FIFO" in reasons["fifo.jsonl"] and "FIFO" in reasons["inner.jsonl"]
    assert "character device" in reasons["zero"]
    assert "symlink loop" in reasons["loop.jsonl"]
    assert len(report.failed) == 4
    result = runner.invoke(app, ["ingest", *map(str, paths), "--out", str(tmp_path / "ds2"),
                                 "-q"])
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_files_over_the_size_limit_are_reported(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOG, logs / "big.jsonl")
    (logs / "small.jsonl").write_text(LOG.read_text().splitlines()[0] + "\n")
    limit = (logs / "small.jsonl").stat().st_size + 10
    monkeypatch.setenv("CTXREPLAY_MAX_FILE_BYTES", str(limit))
    report = ingest([logs], tmp_path / "ds", jobs=1)
    assert "big.jsonl" in report.failed
    (issue,) = [i for i in report.issues if "limit" in i.reason]
    assert issue.path.endswith("big.jsonl")
    assert f"{limit:,}-byte limit" in issue.reason and "CTXREPLAY_MAX_FILE_BYTES" in issue.reason


def test_out_that_is_a_file_is_one_clear_line(tmp_path: Path) -> None:
    from replay.errors import OutputError
    target = tmp_path / "taken"
    target.write_text("a file")
    with pytest.raises(OutputError, match="not a folder"):
        ingest([LOG], target, jobs=1)
    for out in (target, target / "below"):
        result = runner.invoke(app, ["ingest", str(LOG), "--out", str(out), "-q"])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert target.read_text() == "a file"


@pytest.mark.parametrize("sample", ["openhands/basic_interactions.json", "LOG"])
def test_a_utf8_bom_changes_nothing(tmp_path: Path, sample: str) -> None:
    from replay.ingest.parse_file import parse_file
    from tests.conftest import SAMPLES
    source = LOG if sample == "LOG" else SAMPLES / sample
    plain, bom = tmp_path / "plain" / source.name, tmp_path / "bom" / source.name
    for path, head in ((plain, b""), (bom, b"\xef\xbb\xbf")):
        path.parent.mkdir()
        path.write_bytes(head + source.read_bytes())
    a, b = parse_file(plain), parse_file(bom)
    assert b.format == a.format and a.tables is not None and b.tables is not None
    assert b.tables.messages["text"].to_pylist() == a.tables.messages["text"].to_pylist()
    assert [str(i) for i in b.issues] == [str(i).replace("/plain/", "/bom/") for i in a.issues]


WHOLE_DOCUMENTS = ["swe-agent/lm_32b__sympy__sympy-21930.traj",
                   "mini-swe-agent/django__django-11095.traj.json", "openhands/basic.json",
                   "atif/terminus2-linear-history.trajectory.json",
                   "opencode/cart-discount.export.json", "gemini_cli/session-2025-09-03T16-40-8c1d2e3f.json",
                   "inspect_ai/2025-05-12T20-27-36-04-00_browser.json",
                   "inspect_ai/log_message_deduplication.eval"]


@pytest.mark.parametrize("name", WHOLE_DOCUMENTS)
def test_a_whole_file_document_over_the_limit_is_said_and_never_decoded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """#13 item 10: decoding a whole-file JSON document takes up to 16x its size, so one over
    CTXREPLAY_MAX_DOCUMENT_BYTES is one issue naming the limit and its variable, and no
    JSON value that large is ever decoded (JSON Lines stay bounded per line)."""
    from replay.ingest.parse_file import parse_file
    from replay.ingest.parsers import jsonl
    from tests.conftest import SAMPLES

    fixtures = Path(__file__).parents[2] / "fixtures"
    source = SAMPLES / name if (SAMPLES / name).exists() else fixtures / name
    path = tmp_path / source.name
    shutil.copy(source, path)
    size = path.stat().st_size
    baseline = parse_file(path, tmp_path)
    assert baseline.tables is not None and not any("limit" in i.reason for i in baseline.issues)
    limit = size // 2 if not name.endswith(".eval") else 1000  # .eval: each entry is one
    monkeypatch.setenv("CTXREPLAY_MAX_DOCUMENT_BYTES", str(limit))
    decoded: list[int] = []
    real = jsonl._decode
    monkeypatch.setattr(jsonl, "_decode", lambda data: decoded.append(len(data)) or real(data))
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is None
    assert any(f"{limit:,}" in i.reason and "CTXREPLAY_MAX_DOCUMENT_BYTES" in i.reason
               for i in parsed.issues), parsed.issues
    assert all(n <= limit for n in decoded), (decoded, limit)


@pytest.fixture
def read_only_dir(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A folder nobody may write: mode 0555, and for root (whom modes do not stop) the
    immutable attribute; skipped with the reason when neither holds here."""
    import os
    import subprocess

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    immutable = False
    if os.geteuid() == 0:
        immutable = subprocess.run(["chattr", "+i", str(ro)], capture_output=True,
                                   check=False).returncode == 0
        if not immutable:
            pytest.skip("running as root and chattr +i is not available: no read-only folder")
    try:
        yield ro
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(ro)], check=False)
        ro.chmod(0o755)


@pytest.mark.parametrize("command", ["ingest", "run", "report", "sweep"])
def test_a_read_only_out_is_one_clear_line_with_exit_2(read_only_dir: Path, command: str) -> None:
    """#13 item 9: an --out (or a folder under it) that cannot be written ends in one
    'error: PATH: reason' line and exit 2, not a traceback; nothing is written."""
    options = {"ingest": [], "run": ["--policy", "none"], "report": ["--policy", "none"],
               "sweep": ["--policy", "two-tier-corrected", "--axis",
                         "tiers.1.trigger.at_tokens=60000,80000", "--no-plots"]}[command]
    for out in (read_only_dir, read_only_dir / "below"):
        result = runner.invoke(app, [command, *options, str(LOG), "--out", str(out)])
        assert result.exit_code == 2, (command, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), result.output
        assert any(w in lines[0] for w in ("ermission", "not permitted", "not writable"))
        assert "Traceback" not in result.output
    assert list(read_only_dir.iterdir()) == []


@pytest.mark.parametrize("var", ["CTXREPLAY_MAX_FILE_BYTES", "CTXREPLAY_MAX_DOCUMENT_BYTES"])
@pytest.mark.parametrize("value", ["abc", "-5", "0", "1e9"])
@pytest.mark.parametrize("command", ["ingest", "inspect", "run"])
def test_a_read_limit_that_is_not_a_number_is_a_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, var: str, value: str,
        command: str) -> None:
    """A limit set in the environment is used or refused (exit 2 naming it), never replaced
    by the default without a word."""
    monkeypatch.setenv(var, value)
    args = {"ingest": ["--out", str(tmp_path / "ds")], "inspect": [],
            "run": ["--policy", "none", "--out", str(tmp_path / "o")]}[command]
    result = runner.invoke(app, [command, str(LOG), *args])
    assert result.exit_code == 2, result.output
    assert f"{var}: '{value}' is not a positive whole number of bytes" in result.output
    assert not (tmp_path / "ds").exists() and not (tmp_path / "o" / "dataset").exists()


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
], ids=["shuffled", "negative-msg", "blocks", "negative-tokens", "output-beyond",
        "requests-reversed", "negative-recorded"])
def test_a_crafted_dataset_table_is_refused_not_replayed(tmp_path: Path, table: str, change,  # type: ignore[no-untyped-def]
                                                          rule: str) -> None:
    """A dataset's Parquet rows that break the run model (written by hand, not by ingest)
    are refused with the run and the rule, exit 2, instead of giving figures without a word."""
    import pyarrow.parquet as pq

    store = tmp_path / "ds"
    ingest([LOG], store, jobs=1)
    (entry,) = (store / "data").iterdir()
    path = entry / f"{table}.parquet"
    pq.write_table(change(pq.read_table(path)), path)
    restamp(store)  # past the entry's checksum: the run model's rules are the next line
    result = runner.invoke(app, ["run", "--policy", "none", str(store), "--out",
                                 str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "damaged dataset: run" in result.output and rule in result.output
    assert "Traceback" not in result.output
