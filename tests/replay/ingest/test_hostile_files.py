"""Hostile files and folders: a FIFO, a device or a symlink loop among the inputs, files and
whole documents over the size limits, a UTF-8 BOM, an --out that is a file or read-only, and
read limits in the environment that are not numbers.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from replay.cli import app
from replay.ingest.batch import ingest
from replay.ingest.input_files import Unreadable, read_input
from tests.replay.ingest.store_helpers import LOG, runner


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


def test_a_symlink_to_a_folder_is_not_followed_and_said(tmp_path: Path) -> None:
    """A linked folder may lead anywhere (``/``, or back up: a loop), so it is not walked; it
    was skipped silently, its logs missing from every figure with exit 0."""
    logs, elsewhere = tmp_path / "logs", tmp_path / "elsewhere"
    logs.mkdir()
    elsewhere.mkdir()
    shutil.copy(LOG, logs / "here.jsonl")
    shutil.copy(LOG, elsewhere / "there.jsonl")
    (logs / "project").symlink_to(elsewhere)
    (logs / "up").symlink_to(tmp_path)
    result = runner.invoke(app, ["ingest", str(logs), "--out", str(tmp_path / "ds"), "-q"])
    assert result.exit_code == 0, result.output
    assert f"note: 2 symlinks to a folder not followed ({logs / 'project'}, {logs / 'up'}); " \
           "name them to read the logs there" in " ".join(result.stderr.split())
    assert "1 runs from 1 files parsed" in result.output
    as_json = runner.invoke(app, ["ingest", str(logs), "--out", str(tmp_path / "ds"), "--json"])
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout)["not_followed"] == [str(logs / "project"), str(logs / "up")]
    named = runner.invoke(app, ["ingest", str(logs / "project"), "--out", str(tmp_path / "d2")])
    assert named.exit_code == 0 and "1 runs from 1 files parsed" in named.output
    assert "not followed" not in named.stderr


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
    from replay.ingest.parsers import json_decode, jsonl
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
    real = json_decode._decode
    spy = lambda data: decoded.append(len(data)) or real(data)
    monkeypatch.setattr(json_decode, "_decode", spy)  # (``loads``: whole documents)
    monkeypatch.setattr(jsonl, "_decode", spy)  # (``iter_records``: lines)
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is None
    assert any(f"{limit:,}" in i.reason and "CTXREPLAY_MAX_DOCUMENT_BYTES" in i.reason
               for i in parsed.issues), parsed.issues
    assert all(n <= limit for n in decoded), (decoded, limit)


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


@pytest.mark.skipif(not Path("/proc/self/cmdline").is_file(), reason="no /proc")
def test_a_file_of_no_stated_size_is_read_to_its_end_within_the_limit() -> None:
    """A regular file whose size the file system does not know (0: /proc) is read past it, to
    its end, and refused once it is over the limit."""
    path = Path("/proc/self/cmdline")
    whole = path.read_bytes()
    assert os.stat(path).st_size == 0 and len(whole) > 2
    assert read_input(path) == whole
    assert read_input(path, max_bytes=len(whole)) == whole
    with pytest.raises(Unreadable, match="limit"):
        read_input(path, max_bytes=len(whole) - 1)


def test_a_compressed_log_in_a_folder_is_named_not_skipped_silently(tmp_path: Path) -> None:
    """A session kept as `session.jsonl.gz` beside the others was passed over with nothing
    said: its runs were missing from every figure, exit 0.  Now it is named; named directly,
    it is read and refused as compressed (exit 1)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOG, logs / "here.jsonl")
    packed = [logs / "old.jsonl.gz", logs / "older.json.zst"]
    packed[0].write_bytes(gzip.compress(LOG.read_bytes()))
    packed[1].write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 16)
    (logs / "notes.txt.gz").write_bytes(gzip.compress(b"not a log"))  # (no log's name)
    result = runner.invoke(app, ["ingest", str(logs), "--out", str(tmp_path / "ds"), "-q"])
    assert result.exit_code == 0, result.output
    assert f"note: 2 compressed log files not read ({packed[0]}, {packed[1]}); decompress them " \
           "to read them" in " ".join(result.stderr.split())
    assert "1 runs from 1 files parsed" in result.output
    as_json = runner.invoke(app, ["ingest", str(logs), "--out", str(tmp_path / "ds"), "--json"])
    assert json.loads(as_json.stdout)["compressed_not_read"] == [str(p) for p in packed]
    direct = runner.invoke(app, ["ingest", str(packed[0]), "--out", str(tmp_path / "d2")])
    assert direct.exit_code == 1 and "gzip-compressed" in direct.output, direct.output
