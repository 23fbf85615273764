"""A number where a log has text (``"text": 12345``), planted in a real file of each format whose
parser used to read it as empty without a word: it is now one issue naming the message and the
field, and every other block of the file is as before; the real files give no such issue."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parse_file import ParsedFile, parse_file

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT.parent / "shared" / "logs-sample"
WORDING = "is int, not a string (read as empty)"
PLANTED = 12345

Match = Callable[[dict[str, Any]], bool]


def _plant(doc: Any, match: Match, key: str, value: Any = PLANTED) -> bool:
    """Set ``key`` of the first object (depth first, in file order) ``match`` takes to
    ``value``, and of every copy of it (equal, or taken with the same ``id``: an Inspect log
    repeats a message in each call's input); whether one was found."""
    stack, first = [doc], None
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if match(node) and (first is None or node == first or
                                "id" in first and node.get("id") == first["id"]):
                first = first or dict(node)
                node[key] = value
                continue
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return first is not None


def _planted_copy(path: Path, match: Match, key: str, value: Any, out: Path) -> None:
    """``path`` with one text replaced by ``PLANTED`` (a JSON Lines file: in one line, the
    others as they were), written to ``out``."""
    if path.suffix == ".jsonl":
        lines = path.read_bytes().split(b"\n")
        for k, line in enumerate(lines):
            if line.strip() and _plant(rec := json.loads(line), match, key, value):
                lines[k] = json.dumps(rec).encode()
                out.write_bytes(b"\n".join(lines))
                return
        raise AssertionError(f"nothing to plant in {path}")
    doc = json.loads(path.read_bytes())
    assert _plant(doc, match, key, value), f"nothing to plant in {path}"
    out.write_text(json.dumps(doc), encoding="utf-8")


def _text(key: str = "text") -> Match:
    return lambda d: isinstance(d.get(key), str) and bool(d[key].strip())


def _typed(kind: str, key: str = "text") -> Match:
    return lambda d: d.get("type") == kind and isinstance(d.get(key), str) and bool(d[key])


CODEX_COMPACTIONS = FIXTURES / "codex" / ("rollout-2026-09-01T08-00-00-01a02f10-aaaa-7bbb-8ccc-"
                                          "0123456789ab.jsonl")
"""Compacted lines (a summary read from the replacement history) and a remote compaction."""
PART = [{"type": "text", "text": PLANTED}]
"""A list of one text part (ATIF v1.6's content form) whose text is a number."""
CASES: dict[str, tuple[Path, Match, str, Any, str]] = {
    # format: (file, the object planted in, its key, the value planted, the field said)
    "gemini_cli": (FIXTURES / "gemini_cli" / "session-2026-08-20T09-14-3f2b9c1e.jsonl",
                   _text(), "text", PLANTED, "text"),
    "gemini_cli (json)": (FIXTURES / "gemini_cli" / "session-2025-09-03T16-40-8c1d2e3f.json",
                          lambda d: d.get("type") == "user" and _text("content")(d), "content",
                          PLANTED, "content"),
    "atif": (FIXTURES / "atif" / "terminus2-timeout.trajectory.json",
             lambda d: set(d) <= {"content", "source_call_id"} and _text("content")(d), "content",
             PART, "text"),
    "opencode": (FIXTURES / "opencode" / "agentlogs-all-tools.export.json", _typed("text"),
                 "text", PLANTED, "text"),
    "openhands": (SAMPLES / "openhands" / "basic.json", _text("thought"), "thought", PLANTED,
                  "'thought'"),
    "inspect_ai": (FIXTURES / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json",
                   lambda d: d.get("role") == "user" and _text("content")(d), "content",
                   PLANTED, "content"),
    "codex": (FIXTURES / "codex" /
              "rollout-2026-03-21T10-05-38-01a7c9e4-6d12-7b3a-9f42-8c6d5e1a0b73.jsonl",
              _typed("output_text"), "text", PLANTED, "text"),
    "codex (reasoning)": (FIXTURES / "codex" /
                          "rollout-2026-08-09T20-25-45-019fe7c6-10ee-75f2-aeb2-e17e16a59b29.jsonl",
                          _typed("summary_text"), "text", PLANTED, "text"),
    "opencode (reasoning)": (FIXTURES / "opencode" / "cart-discount.export.json",
                             _typed("reasoning"), "text", PLANTED, "text"),
    "inspect_ai (reasoning)": (FIXTURES / "inspect_ai" / "hand-made-compaction.json",
                               _typed("reasoning", "reasoning"), "reasoning", PLANTED,
                               "reasoning"),
    "codex (compaction summary)": (
        CODEX_COMPACTIONS, lambda d: d.get("type") == "input_text" and str(d.get("text", ""))
        .startswith("Another language model started"), "text", PLANTED,
        "replacement_history item 1: content part 0: text"),
    "codex (remote compaction summary)": (
        CODEX_COMPACTIONS, lambda d: d.get("type") == "compaction", "summary", PLANTED,
        "summary"),
    "mini_swe_agent": (FIXTURES / "mini_swe_agent" / "astropy__astropy-12907.traj.json",
                       lambda d: d.get("role") == "tool" and _text("content")(d), "content",
                       PART, "content item 0: text"),
    "swe_agent": (SAMPLES / "swe-agent" / "v1fc_gpt4__sweagenttestrepo-1c2844.traj",
                  lambda d: "action" in d and _text("observation")(d), "observation", PART,
                  "observation: content item 0: text"),
}
NO_BLOCK_CHANGES = {"openhands", "codex (remote compaction summary)"}
"""Cases whose planted value stood for no text of the run: a thought (the response's text is
the text), an absent summary (the encrypted content sizes the summary)."""


def _blocks(parsed: ParsedFile) -> list[tuple[Any, ...]]:
    assert parsed.tables is not None, [str(i) for i in parsed.issues]
    return list(zip(*(parsed.tables.messages.column(c).to_pylist()
                      for c in ("msg", "block", "role", "kind", "call_id", "text"))))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_number_planted_where_text_belongs_is_said(case: str, tmp_path: Path) -> None:
    path, match, key, value, field = CASES[case]
    if not path.is_file():
        pytest.skip(f"{path} not here")
    fmt = case.split(" ")[0]
    original = tmp_path / f"original{path.suffix}"
    doc_or_lines = path.read_bytes()
    if path.suffix == ".jsonl":  # (as read: the planted copy differs by one line)
        original.write_bytes(doc_or_lines)
    else:  # (re-written as the planted copy is, so both differ only by the planted value)
        original.write_text(json.dumps(json.loads(doc_or_lines)), encoding="utf-8")
    planted = tmp_path / f"planted{path.suffix}"
    _planted_copy(path, match, key, value, planted)
    before = parse_file(original, tmp_path, fmt=fmt)
    after = parse_file(planted, tmp_path, fmt=fmt)
    assert before.format == after.format == fmt

    new = sorted({i.reason for i in after.issues} - {i.reason for i in before.issues})
    assert len(new) == 1, new
    assert f"{field} {WORDING}" in new[0], new[0]
    assert new[0].startswith(("message ", "step ")), new[0]

    old_rows, new_rows = _blocks(before), _blocks(after)
    assert len(old_rows) == len(new_rows)
    changed = [(o, n) for o, n in zip(old_rows, new_rows) if o != n]
    # the planted text's block lost it (read as empty; a thought another text stands for: no
    # block changed), nothing else
    assert len(changed) <= 1, changed[:3]
    for o, n in changed:
        assert o[:5] == n[:5] and len(n[5]) < len(o[5]) and n[5] in o[5], (o, n)
    if case not in NO_BLOCK_CHANGES:
        assert len(changed) == 1
    if planted.suffix == ".jsonl":  # said at the planted record's line
        at = next(k for k, (o, n) in enumerate(zip(original.read_bytes().split(b"\n"),
                                                   planted.read_bytes().split(b"\n")), 1)
                  if o != n)
        assert [i.line for i in after.issues if i.reason == new[0]] == [at]


@pytest.mark.parametrize(("match", "emptied", "key", "text", "field"), [
    (lambda d: d.get("id") == "m-t3", "content", "error", "command failed: exit 2",
     "error.message"),
    (_typed("reasoning", "reasoning"), "reasoning", "summary", "a summary of the step",
     "reasoning summary"),
], ids=["tool error.message", "reasoning summary"])
def test_an_inspect_text_read_instead_of_an_empty_one_is_said(
        tmp_path: Path, match: Match, emptied: str, key: str, text: str, field: str) -> None:
    """A tool message with no content shows its ``error.message``, a reasoning part with no
    reasoning its ``summary``: a number there is said, as a number in any text is, and read as
    empty."""
    path = FIXTURES / "inspect_ai" / "hand-made-compaction.json"
    runs = []
    for name, value in (("string", text), ("number", PLANTED)):
        doc = json.loads(path.read_bytes())
        assert _plant(doc, match, emptied, "")
        assert _plant(doc, lambda d: d.get(emptied) == "" and match(
            {**d, emptied: "x"}), key, {"type": "unknown", "message": value}
            if key == "error" else value)
        out = tmp_path / f"{name}.json"
        out.write_text(json.dumps(doc), encoding="utf-8")
        runs.append(parse_file(out, tmp_path, fmt="inspect_ai"))
    unsaid, said = runs
    new = sorted({i.reason for i in said.issues} - {i.reason for i in unsaid.issues})
    assert len(new) == 1 and f"{field} {WORDING}" in new[0], new
    changed = [(o, n) for o, n in zip(_blocks(unsaid), _blocks(said)) if o != n]
    assert [(o[5], n[5]) for o, n in changed] == [(text, "")]


@pytest.mark.parametrize("folder", [FIXTURES, SAMPLES])
def test_real_files_say_no_text_is_no_string(folder: Path) -> None:
    formats = {"gemini_cli", "atif", "opencode", "openhands", "inspect_ai", "codex",
               "mini_swe_agent", "swe_agent", "openhands_v1"}
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix in
             (".json", ".jsonl", ".eval")]
    seen = set()
    for path in files:
        parsed = parse_file(path, folder)
        if parsed.format in formats:
            seen.add(parsed.format)
            assert not [str(i) for i in parsed.issues if "not a string (read as empty)" in
                        i.reason], path
    assert seen, folder


@pytest.mark.parametrize(("kind", "where", "field"), [
    ("ObservationEvent", ("observation", "content", 0, "text"), "content item 0: text"),
    ("MessageEvent", ("llm_message", "content", 0, "text"), "content item 0: text"),
    ("MessageEvent", ("llm_message", "reasoning_content"), "reasoning_content"),
])
def test_openhands_v1_text_that_is_no_string_is_said(tmp_path: Path, kind: str,
                                                     where: tuple[Any, ...], field: str) -> None:
    """The V1 conversation folder: a number in an observation's or a message's text (or its
    reasoning), planted in the first event of that kind, is said, the rest as before."""
    folder = FIXTURES / "openhands_v1" / "cd94562403b9487ebdd4018e3f531dfd"
    parsed = []
    for name, value in (("original", None), ("planted", PLANTED)):
        copy = tmp_path / name / folder.name
        shutil.copytree(folder, copy)
        if value is not None:
            event = next(p for p in sorted((copy / "events").glob("*.json"))
                         if json.loads(p.read_bytes()).get("kind") == kind)
            doc = json.loads(event.read_bytes())
            node = doc
            for key in where[:-1]:
                node = node[key]
            node[where[-1]] = value
            event.write_text(json.dumps(doc), encoding="utf-8")
        parsed.append(parse_file(copy, copy.parent, fmt="openhands_v1"))
    before, after = parsed
    new = sorted({i.reason for i in after.issues} - {i.reason for i in before.issues})
    assert len(new) == 1 and f"{field} {WORDING}" in new[0], new
    changed = [(o, n) for o, n in zip(_blocks(before), _blocks(after)) if o != n]
    assert len(_blocks(before)) == len(_blocks(after)) or field == "reasoning_content"
    assert all(n[5] in o[5] for o, n in changed) and len(changed) <= 1
