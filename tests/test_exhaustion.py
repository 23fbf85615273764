"""Crashes and exhaustion (#23 items 17-21, 24): hostile file names, sizes and format specs
end as a counted issue or a usage error with one line, never a traceback, a hang or all the
memory.  Each class is checked on inputs from a generator (hypothesis), not on one example."""

from __future__ import annotations

import json
import os
import random
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


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(good=st.lists(_NOT_UTF8, min_size=3, max_size=3, unique=True),
       bad=st.lists(_NAME_BYTES, min_size=3, max_size=3, unique=True))
def test_file_names_of_any_bytes_are_read_named_and_printed_by_every_command(
        tmp_path_factory: pytest.TempPathFactory, good: list[bytes], bad: list[bytes]) -> None:
    """Three logs and three unreadable files in one folder, each named by any bytes: each
    command runs once over the six names (its fixed cost, ~0.1-1.8 s of CPU, paid once an
    example, not once a name)."""
    tmp = tmp_path_factory.mktemp("names")
    logs = tmp / "logs"
    logs.mkdir()
    for stem in good:
        _chat_log(Path(os.fsdecode(bytes(logs) + b"/g" + stem + b".json")))
    for stem in bad:
        Path(os.fsdecode(bytes(logs) + b"/b" + stem + b".jsonl")).write_bytes(b"not a log\n")
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
        _no_traceback(result, 1)  # the unreadable files: exit 1, the others processed
        assert "inputs: 3 of 6 files failed" in result.stderr, (args, result.output)
        assert not any("\ud800" <= c <= "\udfff" for c in result.output), args
    # the good files' runs were worked on: their names are in the table, as escapes where not
    # UTF-8
    listed = runner.invoke(app, ["runs", str(tmp / "c" / "dataset"), "--json"])
    assert listed.exit_code == 0, listed.output
    assert sorted(row["source"] for row in json.loads(listed.stdout)) == sorted(
        "g" + stem.decode("utf-8", "backslashreplace") + ".json" for stem in good)


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


# --- .eval zips: a bound on all the entries of a file together ---------------------------

@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")  # (the crafted zip's own)
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 6000), min_size=1, max_size=12),
       dup=st.booleans(), escape=st.booleans())
def test_an_eval_zip_decompresses_to_at_most_the_document_bound_in_all(
        monkeypatch: pytest.MonkeyPatch, sizes: list[int], dup: bool, escape: bool) -> None:
    """Samples of padding, with the bound set low: the samples read decompress to at most the
    bound together (the per-entry bound alone let 60 × 120 MB through), the ones left out
    are said; a duplicate entry and a name leaving samples/ are skipped with a word."""
    import hashlib
    import io
    import zipfile

    from replay.ingest.input_files import ENV_MAX_DOCUMENT_BYTES
    from replay.ingest.parsers import inspect_eval_zip
    from replay.ingest.parsers.source import Issue, Source

    limit = 20_000
    monkeypatch.setenv(ENV_MAX_DOCUMENT_BYTES, str(limit))
    header = json.dumps({"eval": {"model": "m", "task": "t"}}).encode()
    entries = [("header.json", header)]
    for i, n in enumerate(sizes):
        entries.append((f"samples/{i}_epoch_1.json",
                        json.dumps({"id": i, "epoch": 1, "pad": "x" * n}).encode()))
    if dup:
        entries.append(entries[-1])
    if escape:
        entries.append(("samples/../x.json", entries[-1][1]))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)
    data = buf.getvalue()
    issues: list[Issue] = []
    src = Source(path="p.eval", rel="p.eval", data=data, sha256=hashlib.sha256(data).hexdigest())
    got_header, samples = inspect_eval_zip.read_eval_zip(src, issues)
    assert got_header["eval"]["model"] == "m"  # the header is read first, within the bound
    # independently: entries in zip order while the running total stays within the limit
    expected, total = [], 0
    for name, payload in entries[:1 + len(sizes)]:
        if total + len(payload) <= limit:
            total += len(payload)
            if name != "header.json":
                expected.append(json.loads(payload)["id"])
    assert sorted(s["id"] for s in samples) == sorted(expected)
    assert sum(len(json.dumps(s)) for s in samples) <= limit
    reasons = " ".join(i.reason for i in issues)
    assert ("decompress to more than" in reasons) == (len(expected) < len(sizes))
    assert ("appears again" in reasons) == dup
    assert ("is not a sample" in reasons) == escape


# --- a baseline that is not a file -------------------------------------------------------

@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(["fifo", "/dev/zero", "/dev/urandom", "folder", "big"]),
       size=st.integers(1, 4000))
def test_a_baseline_that_is_not_a_regular_file_within_the_bound_is_refused(
        tmp_path_factory: pytest.TempPathFactory, kind: str, size: int) -> None:
    """``check --baseline`` on a FIFO, a device, a folder or a file over the document bound:
    one line, at once (before: a FIFO hung, /dev/zero ran out of memory); exit 1 for a FIFO or
    a device (an input that failed), 2 for a folder named by mistake or a bound set too low."""
    import signal

    from replay.ingest.input_files import ENV_MAX_DOCUMENT_BYTES

    tmp = tmp_path_factory.mktemp("base")
    log = _chat_log(tmp / "a.json")
    baseline = {"fifo": tmp / "b.fifo", "folder": tmp / "dir", "big": tmp / "b.json"}.get(
        kind, Path(kind))
    if kind == "fifo":
        os.mkfifo(baseline)
    elif kind == "folder":
        baseline.mkdir()
    elif kind == "big":
        baseline.write_text(" " * (size + 1) + "{}")
    env = {ENV_MAX_DOCUMENT_BYTES: str(size)} if kind == "big" else {}
    signal.alarm(120)  # a read that blocks fails the test instead of hanging it
    try:
        result = runner.invoke(app, ["check", str(log), "-p", "none", "--baseline",
                                     str(baseline), "--cache-dir", str(tmp / "c"), "-q"], env=env)
    finally:
        signal.alarm(0)
    _no_traceback(result, 2 if kind in ("folder", "big") else 1)
    assert str(baseline) in result.stderr
    assert ("over the" if kind == "big" else "not a baseline file") in result.stderr


# --- a huge whitespace run never reaches tiktoken's regex engine whole --------------------

@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(run=st.integers(900_000, 1_300_000), space=st.sampled_from([" ", "\n", "\t", " \n"]),
       before=st.text("ab c", max_size=20))
def test_a_million_spaces_are_counted_without_a_rust_panic(
        capfd: pytest.CaptureFixture[str], run: int, space: str, before: str) -> None:
    from replay.ingest.tokens import count_tokens

    text = before + (space * run)[:run] + "end"
    capfd.readouterr()
    [n] = count_tokens([text])
    err = capfd.readouterr().err
    assert "panicked" not in err and "StackOverflow" not in err, err[:300]
    assert 0 < n <= len(text)


# --- messages that name what the user wrote ----------------------------------------------

def test_every_usage_line_names_its_arguments_as_written_in_help() -> None:
    """Every command's usage line (the list comes from the app): PATHS..., never {paths}."""
    from replay.cli import app as the_app

    names = [c.name or c.callback.__name__.replace("_", "-")  # type: ignore[union-attr]
             for c in the_app.registered_commands]
    assert len(names) >= 15
    for name in names:
        result = runner.invoke(the_app, [name, "--help"])
        usage = next(line for line in result.output.splitlines() if line.startswith("Usage:"))
        assert "{" not in usage and "}" not in usage, usage
        assert re.fullmatch(r"Usage: \S+ \S+ \[OPTIONS\]( \[?[A-Z]+\]?(\.\.\.)?)*", usage), usage


def test_a_custom_tier_without_allow_python_names_its_policy_and_the_option(
        tmp_path: Path) -> None:
    name = "p" + "".join(random.SystemRandom().choice("abcdefgh") for _ in range(8))
    policy = tmp_path / f"{name}.yaml"
    policy.write_text("extends: none\ntiers:\n  - type: custom\n    name: mine\n"
                      "    class: 'tests.replay.engine.test_tier_custom:TrimEverything'\n")
    log = _chat_log(tmp_path / "a.json")
    ran = runner.invoke(app, ["run", "-p", str(policy), str(log), "--out", str(tmp_path / "o"),
                              "--cache-dir", str(tmp_path / "c"), "-q"])
    _no_traceback(ran, 2)
    assert f"policy {name}" in ran.stderr and "<policy>" not in ran.stderr
    assert "--allow-python" in ran.stderr
    swept = runner.invoke(app, ["sweep", str(log), "-p", str(policy), "--axis",
                                "server.window_tokens=100000,120000", "--out",
                                str(tmp_path / "s"), "--cache-dir", str(tmp_path / "c"), "-q"])
    _no_traceback(swept, 2)
    assert "--allow-python" in swept.stderr and "pass allow_python" not in swept.stderr
