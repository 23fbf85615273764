"""Recorded token counts that cannot be counts (#13 item 13): kept as unknown, said, file kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.ingest.names import MAX_COUNT
from replay.ingest.parse_file import parse_file
from tests.conftest import SAMPLES

SHORT = SAMPLES / "claude-code" / "tool_heavy.jsonl"


def _rewrite(tmp_path: Path, change) -> Path:
    lines = []
    for line in SHORT.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "assistant" and isinstance(rec["message"].get("usage"), dict):
            change(rec["message"]["usage"])
        lines.append(json.dumps(rec))
    out = tmp_path / "short.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def test_a_negative_count_is_unknown_and_said(tmp_path: Path) -> None:
    path = _rewrite(tmp_path, lambda u: u.update(input_tokens=-799_982_304_000))
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None  # the rest of the file is kept
    inputs = parsed.tables.requests.column("input_tokens").to_pylist()
    assert inputs and all(v is None for v in inputs)
    assert parsed.tables.runs.column("recorded_input_tokens").to_pylist() == [None]
    assert any("not a token count" in str(i) and "input_tokens" in str(i) for i in parsed.issues)


def test_a_negative_part_of_a_summed_input_is_not_absorbed(tmp_path: Path) -> None:
    """Claude Code's input is uncached + cache read + cache write: a negative uncached part
    beside positive others summed to a plausible count, kept and unsaid."""
    def change(u: dict[str, int]) -> None:
        u.update(input_tokens=-5, cache_read_input_tokens=100, cache_creation_input_tokens=10)

    parsed = parse_file(_rewrite(tmp_path, change), tmp_path)
    assert parsed.tables is not None
    inputs = parsed.tables.requests.column("input_tokens").to_pylist()
    assert inputs and all(v is None for v in inputs)
    assert parsed.tables.requests.column("cache_read_tokens").to_pylist()[0] == 100
    assert any("input_tokens -5 is not a token count" in str(i) for i in parsed.issues)


def test_a_huge_count_is_said_in_a_short_line(tmp_path: Path) -> None:
    """1e300 decodes to a float whose int has 301 digits: the warning shows its head and its
    length, not a line of digits."""
    path = _rewrite(tmp_path, lambda u: u.update(input_tokens=1e300))
    parsed = parse_file(path, tmp_path)
    said = [str(i) for i in parsed.issues if "not a token count" in str(i)]
    assert said and all("… (301 digits)" in line and len(line) < 400 for line in said)


def test_a_count_beyond_max_count_keeps_the_file(tmp_path: Path) -> None:
    """2**62 fits 64 bits but no prompt (MAX_COUNT, 2**40): each such count is unknown with an
    issue (it was kept, and a run of two such requests summed past 64 bits), the file kept; a
    count at MAX_COUNT is one, and the run's total is their sum."""
    path = _rewrite(tmp_path, lambda u: u.update(output_tokens=2**62))
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None
    outputs = parsed.tables.requests.column("output_tokens").to_pylist()
    assert len(outputs) > 1 and outputs == [None] * len(outputs)
    assert parsed.tables.runs.column("recorded_output_tokens").to_pylist() == [None]
    assert sum("output_tokens 4611686018427387904 is not a token count" in str(i)
               for i in parsed.issues) == len(outputs)
    path = _rewrite(tmp_path, lambda u: u.update(output_tokens=MAX_COUNT))
    parsed = parse_file(path, tmp_path)
    assert parsed.tables is not None and not parsed.issues
    assert parsed.tables.runs.column("recorded_output_tokens").to_pylist() == [
        MAX_COUNT * len(outputs)]


COUNT_KEYS = {"input_tokens", "prompt_tokens", "output_tokens", "completion_tokens",
              "cache_read_input_tokens", "cached_tokens", "cache_creation_input_tokens"}
"""Usage fields of the formats' token records (OpenAI, Anthropic and Codex spellings)."""
FILES = [SAMPLES / "claude-code" / "tool_heavy.jsonl",
         SAMPLES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
         SAMPLES / "mini-swe-agent" / "django__django-11095.traj.json",
         SAMPLES / "openhands" / "basic.json",
         Path(__file__).parents[2] / "fixtures" / "atif" / "terminus2-linear-history.trajectory.json"]


def _spoil_first_count(node: object, bad: object) -> bool:
    """Replace the first positive whole count under a usage key (depth first) with ``bad``."""
    if isinstance(node, dict):
        if "last_token_usage" in node:  # Codex: the request's own usage (totals only de-dup)
            return _spoil_first_count(node["last_token_usage"], bad)
        for key, value in node.items():
            if key in COUNT_KEYS and type(value) is int and value > 0:
                node[key] = bad
                return True
            if _spoil_first_count(value, bad):
                return True
    elif isinstance(node, list):
        return any(_spoil_first_count(item, bad) for item in node)
    return False


@pytest.mark.parametrize("bad", ["many", True, 1.5, {"n": 3}], ids=["str", "bool", "frac", "obj"])
@pytest.mark.parametrize("path", FILES, ids=[p.parent.name for p in FILES])
def test_a_count_that_is_not_a_number_is_said_and_unknown(tmp_path: Path, path: Path,
                                                          bad: object) -> None:
    """A usage field holding a string, a boolean, a fraction or an object is one issue naming
    the value, that field is unknown, and every request of the file is kept."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        lines = text.splitlines()
        for i, line in enumerate(lines):
            rec = json.loads(line)
            if _spoil_first_count(rec, bad):
                lines[i], spoiled_line = json.dumps(rec), i + 1
                break
        spoiled = "\n".join(lines) + "\n"
    else:
        doc = json.loads(text)
        assert _spoil_first_count(doc, bad)
        spoiled, spoiled_line = json.dumps(doc), None
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    clean = parse_file(_copy(path, tmp_path / "a" / path.name), tmp_path / "a")
    target = tmp_path / "b" / path.name
    target.write_text(spoiled, encoding="utf-8")
    parsed = parse_file(target, tmp_path / "b")
    assert clean.tables is not None and parsed.tables is not None
    said = [i for i in parsed.issues if "is not a token count" in i.reason
            and repr(bad)[:20] in i.reason]
    assert len(said) == 1, parsed.issues
    if spoiled_line is not None:
        assert said[0].line == spoiled_line
    assert parsed.tables.requests.num_rows == clean.tables.requests.num_rows
    cols = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    nulls = sum(parsed.tables.requests.column(c).null_count for c in cols)
    assert nulls > sum(clean.tables.requests.column(c).null_count for c in cols)


def _copy(src: Path, dst: Path) -> Path:
    dst.write_bytes(src.read_bytes())
    return dst


def test_cache_parts_larger_than_the_prompt_are_said_and_unknown(tmp_path: Path) -> None:
    """input_tokens is the full prompt, its cache read and write parts of it (``schema.Request``):
    a Codex rollout whose cached_input_tokens exceed its input_tokens was stored as it was, with
    no word, and `replay run` showed a cached share of 100 % and a cost priced from the
    impossible split.  Now each such request is one issue and its cache parts are unknown (which
    figure is wrong is not known); input_tokens is kept."""
    sample = SAMPLES / "codex" / ("rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-"
                                  "7738fc5ab61a.jsonl")
    text = sample.read_text()
    assert text.count('"cached_input_tokens":') > 0
    path = tmp_path / sample.name
    path.write_text(text.replace('"cached_input_tokens":', '"cached_input_tokens":9000000 ,"x":'))
    original = parse_file(sample, tmp_path / "a")
    parsed = parse_file(path, tmp_path / "b")
    assert original.tables is not None and parsed.tables is not None
    before = original.tables.requests.to_pydict()
    after = parsed.tables.requests.to_pydict()
    assert after["input_tokens"] == before["input_tokens"]  # the full prompt kept
    recorded = [i for i, v in enumerate(before["input_tokens"]) if v]
    assert recorded and all(after["cache_read_tokens"][i] is None for i in recorded)
    said = [str(i) for i in parsed.issues if "exceed input_tokens" in str(i)]
    assert len(said) == len(recorded), said[:3]
    assert "cache_read_tokens 9,000,000 exceed input_tokens" in said[0]
    assert not [i for i in original.issues if "exceed input_tokens" in str(i)]


def test_a_recorded_window_out_of_range_is_said_and_unknown_not_the_file_lost(
        tmp_path: Path) -> None:
    """A Codex rollout whose every model_context_window was 10^30 lost the whole file ('values
    the schema cannot hold': the run's int64 column); the window is a count like the others:
    one issue, unknown, the runs kept (``RunBuilder._run_count``, for every parser)."""
    sample = SAMPLES / "codex" / ("rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-"
                                  "7738fc5ab61a.jsonl")
    text = sample.read_text()
    assert '"model_context_window":258400' in text
    path = tmp_path / sample.name
    path.write_text(text.replace('"model_context_window":258400',
                                 '"model_context_window":' + "1" + "0" * 30))
    original = parse_file(sample, tmp_path / "a")
    parsed = parse_file(path, tmp_path / "b")
    assert original.tables is not None and parsed.tables is not None
    assert original.tables.runs.column("recorded_window_tokens").to_pylist() == [258_400]
    assert parsed.tables.runs.column("recorded_window_tokens").to_pylist() == [None]
    assert parsed.tables.requests.num_rows == original.tables.requests.num_rows
    assert any("recorded_window_tokens 100000000000… (31 digits) is not a token count"
               in str(i) for i in parsed.issues), parsed.issues
