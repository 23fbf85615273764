"""Crashes and exhaustion (#23 items 17-21, 24): hostile file names, sizes and format specs
end as a counted issue or a usage error with one line, never a traceback, a hang or all the
memory.  Each class is checked on inputs from a generator (hypothesis), not on one example."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app

runner = CliRunner()


def _chat_log(path: Path, n_calls: int = 3) -> Path:
    msgs: list[dict[str, object]] = [{"role": "user", "content": f"task {path.name!r}"}]
    for i in range(n_calls):
        msgs.append({"role": "assistant", "content": "ok", "model": "gpt-x", "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"command": f"ls {i}"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 30})
    msgs.append({"role": "assistant", "content": "done", "model": "gpt-x"})
    path.write_text(json.dumps({"messages": msgs}))
    return path


def _no_traceback(result: object, *codes: int) -> None:
    exc = getattr(result, "exception", None)
    assert exc is None or isinstance(exc, SystemExit), getattr(result, "output", "")
    assert getattr(result, "exit_code", None) in codes, getattr(result, "output", "")


_NAME_BYTES = st.binary(min_size=1, max_size=40).map(
    lambda b: b.replace(b"/", b"_").replace(b"\0", b"_"))
"""A file name's stem: any bytes a POSIX file name may hold, UTF-8 or not."""


def _not_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


_NOT_UTF8 = st.tuples(_NAME_BYTES, st.integers(0x80, 0xFF), _NAME_BYTES).map(
    lambda t: t[0] + bytes([t[1]]) + t[2]).filter(_not_utf8)
"""A stem with at least one byte that is not UTF-8."""


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(good=_NOT_UTF8, bad=_NAME_BYTES)
def test_file_names_of_any_bytes_are_read_named_and_printed_by_every_command(
        tmp_path_factory: pytest.TempPathFactory, good: bytes, bad: bytes) -> None:
    tmp = tmp_path_factory.mktemp("names")
    logs = tmp / "logs"
    logs.mkdir()
    _chat_log(Path(os.fsdecode(bytes(logs) + b"/g" + good + b".json")))
    Path(os.fsdecode(bytes(logs) + b"/b" + bad + b".jsonl")).write_bytes(b"not a log\n")
    cache = ["--cache-dir", str(tmp / "c"), "-q"]
    for args in (["ingest", str(logs), "--out", str(tmp / "c")],
                 ["run", "-p", "none", str(logs), "--out", str(tmp / "o"), "--csv", *cache],
                 ["run", "-p", "none", str(logs), "--out", str(tmp / "o"), "--json", *cache],
                 ["diff", "-p", "none", "-p", "two-tier-corrected", str(logs), *cache],
                 ["report", "-p", "none", str(logs), "--out", str(tmp / "r"),
                  "--max-timelines", "1", *cache],
                 ["sweep", str(logs), "-p", "two-tier-corrected", "--axis",
                  "tiers.0.min_chars=200", "--out", str(tmp / "s"), "--no-plots", "--jobs", "1",
                  *cache],
                 ["check", str(logs), "-p", "none", "--baseline", str(tmp / "b.json"),
                  "--update-baseline", *cache],
                 ["check", str(logs), "-p", "none", "--baseline", str(tmp / "b.json"),
                  "--junit", str(tmp / "j.xml"), "--markdown", str(tmp / "m.md"), *cache]):
        result = runner.invoke(app, args)
        _no_traceback(result, 1)  # the unreadable file: exit 1, the other one processed
        assert "inputs: 1 of 2 files failed" in result.stderr, (args, result.output)
        assert not any("\ud800" <= c <= "\udfff" for c in result.output), args
    # the good file's runs were worked on: its name is in the table, as escapes where not UTF-8
    listed = runner.invoke(app, ["runs", str(tmp / "c" / "dataset"), "--json"])
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.stdout)
    assert row["source"] == ("g" + good.decode("utf-8", "backslashreplace") + ".json")


# --- format specs of placeholder templates ---------------------------------------------

_SPEC = st.builds(
    lambda fill, align, zero, width, precision, kind: (
        f"{fill}{align}{zero}{width}{'.' + precision if precision else ''}{kind}"),
    st.sampled_from(["", "*", "0", "x"]), st.sampled_from(["", "<", ">", "^"]),
    st.sampled_from(["", "0"]),
    st.one_of(st.just(""), st.integers(0, 10**12).map(str), st.sampled_from(
        ["{chars}", "{lines}000", "{chars}{chars}"])),
    st.one_of(st.just(""), st.integers(0, 10**9).map(str), st.just("{lines}")),
    st.sampled_from(["", "s"]))


@settings(max_examples=60, deadline=None)
@given(field=st.sampled_from(["tool", "path", "call_id"]), spec=_SPEC)
def test_a_template_format_spec_is_bounded_when_the_policy_is_loaded(field: str,
                                                                     spec: str) -> None:
    """A template's format spec is refused at validation (exit 2) unless what it renders is
    bounded: no field inside a spec, no width or precision above the limit."""
    from replay.errors import PolicyError
    from replay.policy import policy_from_dict
    from replay.policy.check import MAX_TEMPLATE_WIDTH

    template = f"[{{{field}:{spec}}} trimmed]"
    doc = {"tiers": [{"type": "trim", "placeholder": {"template": template}}]}
    numbers = [int(n) for n in re.findall(r"\d+", spec)]
    bounded = "{" not in spec and all(n <= MAX_TEMPLATE_WIDTH for n in numbers)
    try:
        policy = policy_from_dict(doc)
    except PolicyError as exc:
        assert ("not a valid template" if bounded else "the format spec of") in str(exc), exc
        return
    assert bounded, template
    note = policy.tiers[0].placeholder.template.format(  # type: ignore[union-attr]
        tool="x" * 100, path="p" * 100, call_id="c", lines=10**6, chars=10**6)
    assert len(note) <= 2 * MAX_TEMPLATE_WIDTH + len(template) + 100
