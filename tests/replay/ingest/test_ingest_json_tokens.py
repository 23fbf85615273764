"""``replay ingest --json`` never gives a known figure as unknown nor an uncounted one as 0:
``tokens`` is every stored file's count, a file reused from the cache counted as stored (its
run index, or its own file); ``tokens_parsed`` is what this ingest counted.  Before: a second
ingest of the same logs said ``"runs": 1, "tokens": 0``, then ``"tokens": null`` although
``replay runs`` showed the figure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import store


def _ingest(*args: str) -> dict:
    res = CliRunner().invoke(app, ["ingest", *args, "--json", "-q"])
    assert res.exit_code == 0, res.output
    doc: dict = json.loads(res.stdout)
    return doc


def _stored(out: Path, column: str = "tokens_o200k") -> dict[str, int]:
    """Each stored file's tokens, summed from its entry's messages (not the run index)."""
    return {src: sum(t or 0 for t in store.read_entry(out, e.key).messages[column].to_pylist())
            for src, e in store.read_manifest(out).items()}


def test_tokens_of_files_reused_from_the_cache_are_their_stored_count(samples: Path,
                                                                      tmp_path: Path) -> None:
    log, out = samples / "claude-code" / "short.jsonl", tmp_path / "ds"
    first = _ingest(str(log), "--out", str(out))
    counted = sum(_stored(out).values())
    assert counted > 0 and first["tokens"] == first["tokens_parsed"] == counted
    again = _ingest(str(log), "--out", str(out))
    assert (again["cached"], again["runs"]) == (1, first["runs"])
    assert again["tokens"] == counted and again["tokens_parsed"] == 0
    (out / "index.parquet").unlink()  # the index is a cache: the entry's own file says it
    assert _ingest(str(log), "--out", str(out))["tokens"] == counted


def test_tokens_of_a_mixed_ingest_add_the_parsed_and_the_reused(samples: Path,
                                                               tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "ds"
    logs.mkdir()
    shutil.copy(samples / "claude-code" / "short.jsonl", logs / "a.jsonl")
    _ingest(str(logs), "--out", str(out))
    shutil.copy(samples / "claude-code" / "tool_heavy.jsonl", logs / "b.jsonl")
    mixed = _ingest(str(logs), "--out", str(out))
    stored = _stored(out)
    assert (mixed["parsed"], mixed["cached"]) == (1, 1)
    assert mixed["tokens_parsed"] == stored["b.jsonl"] > 0
    assert mixed["tokens"] == stored["a.jsonl"] + stored["b.jsonl"]


def test_a_reused_file_is_counted_with_the_first_tokenizer(samples: Path, tmp_path: Path) -> None:
    """The run index holds o200k totals only: cl100k first is read from the entry."""
    log, out = samples / "claude-code" / "tool_heavy.jsonl", tmp_path / "ds"
    args = [str(log), "--out", str(out), "--tokenizers", "cl100k_base,o200k_base"]
    first = _ingest(*args)
    cl100k, o200k = _stored(out, "tokens_cl100k"), _stored(out)
    assert cl100k != o200k and first["tokens"] == sum(cl100k.values())
    assert _ingest(*args)["tokens"] == sum(cl100k.values())
