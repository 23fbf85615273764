"""Every output format against hostile strings: one escaping function per format
(``replay.safe_text``), and every writer uses it — ``runs --csv``, ``run --csv``, sweep.csv,
``check --markdown``, ``check --junit``, the report.

Properties on generated strings check each function; one end-to-end test per class builds
hostile names from a seeded generator (formula starts, control characters, mentions, links)
and reads every file the commands wrote with an independent reader (``csv``, ElementTree,
markdown-it)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from replay.cli import app
from replay.safe_text import (
    csv_cell,
    html_text,
    markdown,
    readable_json,
    strict_json,
    terminal,
    valid_text,
    xml_text,
)

runner = CliRunner()
FORMULA_START = "=+-@\t\r\0\uff1d\uff0b\uff0d\uff20"
"""OWASP's formula starts, with their full-width forms (the test's own list)."""
_PIECES = ["=", "+", "-", "@", "\t", "\r", "\0", "\uff1d", "@octocat", "@SUM(1+1)",
           "=HYPERLINK(\"http://x.test\")", "https://evil.test/a", "www.evil.test", "#12",
           "GH-7", "a@b.test", "\x1b[31m", "\u202e", "\x07", "\n", "|", "`", "*", "_", "[x](y)",
           "<b>", "&amp;", "\\", "'", ",", "\"", "\udcff", "\ufffe", "é", "x", "1",
           "\U000e0041\U000e0042", "\U000e007f", "\U0001fffe", "\ufdd0", "\U0001f600",
           "\u3164", "\u115f", "\uffa0", "\u034f", "\ufe01", "\U000e0100\U000e01ef"]
hostile = st.lists(st.sampled_from(_PIECES) | st.text(max_size=4), max_size=8).map("".join)
"""Strings made of the pieces attacks use, and anything else."""
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069"
                        "\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff\U000e0000-\U000e007f"
                        "\u034f\u115f\u1160\u3164\uffa0\ufe00-\ufe0d\U000e0100-\U000e01ef]")
"""Characters nothing shows (the test's own list): controls, zero-width and direction marks,
lone surrogates, the BMP's non-characters and the tag characters U+E0000-E007F (invisible
letters: a name can hide text in them)."""


def _visible(text: str) -> bool:
    return not _INVISIBLE.search(text)



def test_blank_fillers_and_variation_selectors_are_escaped() -> None:
    """A Hangul filler (U+3164, U+115F, U+FFA0) draws a blank, a grapheme joiner nothing, and
    variation selectors (U+FE00-FE0D, U+E0100-E01EF) nothing after a letter: a name can hide
    text in them (256 selectors carry any byte) or look blank; each is written as its escape.
    The emoji selectors U+FE0E/FE0F stay (an emoji drawn as written)."""
    hidden = "ok" + "".join(chr(0xE0100 + b) for b in b"rm -rf") + "\u3164\ufe01\u034f"
    assert terminal(hidden) == "ok" + "".join(f"\\U{0xE0100 + b:08x}" for b in b"rm -rf") \
        + "\\u3164\\ufe01\\u034f"
    assert terminal("\u26a0\ufe0f") == "\u26a0\ufe0f"

@given(hostile)
def test_terminal_text_is_one_visible_line_that_encodes(s: str) -> None:
    out = terminal(s)
    assert _visible(out)
    out.encode("utf-8")  # strict: no lone surrogate left
    assert terminal(out) == out  # nothing left to escape
    valid_text(s).encode("utf-8")
    assert (valid_text(s) == s) == _encodes(s)


@given(st.dictionaries(hostile, hostile, max_size=4))
def test_readable_json_reads_back_the_same_and_shows_nothing_invisible(doc: dict[str, str]) -> None:
    """A baseline's JSON (``readable_json``): every character ``terminal`` escapes is a JSON
    escape, astral ones (a tag character) as their surrogate pair: the same value read back."""
    text = json.dumps(doc, ensure_ascii=False)
    out = readable_json(text)
    assert json.loads(out) == doc
    assert _visible(out.replace("\n", ""))


def _encodes(s: str) -> bool:
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


@given(st.lists(hostile | st.integers() | st.floats(allow_nan=False) | st.none(), max_size=5))
def test_a_csv_row_has_no_cell_a_spreadsheet_reads_as_a_formula(values: list[object]) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([csv_cell(v) for v in values])
    text = buf.getvalue()
    assert _visible(text.removesuffix("\n"))  # one line, nothing for the terminal
    [row] = list(csv.reader(io.StringIO(text)))
    for cell, value in zip(row, values):
        if isinstance(value, str):
            assert not cell.startswith(tuple(FORMULA_START)), cell
            # the neutralised cell says what the text was: its escape with a ' in front
            shown = terminal(value)
            assert cell == ("'" + shown if shown.startswith(tuple(FORMULA_START)) else shown)
        elif value is not None:  # numbers stay numbers (a negative figure too)
            assert cell == str(value)


_MD = MarkdownIt("commonmark").enable("table").enable("strikethrough")
_LIVE_TEXT = [re.compile(r"@[A-Za-z0-9]"), re.compile(r"#[0-9A-Za-z]"), re.compile("://"),
              re.compile(r"(?i)www\."), re.compile(r"(?i)GH-[0-9]")]
"""What GitHub turns into a mention, a reference or an autolink, in a rendered text node."""


@given(hostile, hostile)
@example("x", "1. first")  # ordered-list markers starting the item (the pieces seldom do)
@example("x", "2) second")
@settings(max_examples=150)
def test_markdown_text_renders_as_the_text_itself_with_nothing_live(a: str, b: str) -> None:
    cell, line = markdown(a), markdown(b)
    html = _MD.render(f"| run | x |\n|---|---|\n| {cell} | 1 |\n\n- {line}\n")
    tokens = _MD.parse(f"| run | x |\n|---|---|\n| {cell} | 1 |\n\n- {line}\n")
    kinds = {t.type for tok in tokens for t in [tok, *(tok.children or [])]}
    assert not kinds & {"link_open", "image", "code_inline", "em_open", "strong_open",
                        "s_open", "html_inline", "html_block", "heading_open", "fence",
                        "code_block"}, kinds
    assert html.count("<td>") == 2  # the cell stayed one cell
    texts = [t.content for tok in tokens if tok.type == "inline" for t in tok.children or []
             if t.type == "text"]
    shown = "".join(texts)
    for live in _LIVE_TEXT:
        assert not live.search(shown), (live.pattern, shown)
    # what the reader sees is the text, escaped for the terminal; only zero-width spaces added
    def bare(t: str) -> str:  # Markdown trims a cell's and an item's spaces
        return re.sub(r"\s", "", t.replace("\u200b", ""))
    assert bare(shown) == bare("runx" + terminal(a) + "1" + terminal(b))


_MATH = re.compile(r"(?<!\\)(?:\\\\)*\$")
"""A ``$`` no backslash escapes: where GitHub's math (``$x$``, ``$$x$$``, ``$`x`$``) opens."""


@given(hostile)
@example("$\\color{red}\\text{all checks passed}$")
@example("$$\\huge x$$ and $`y`$")
def test_markdown_text_opens_no_math(s: str) -> None:
    """GitHub renders ``$…$`` in Markdown as math (a run named so could draw any text, in any
    size and colour, over a pull request's comment): every ``$`` of a name is escaped."""
    assert not _MATH.search(markdown(s)), markdown(s)


@given(hostile)
def test_xml_and_html_text_make_well_formed_documents(s: str) -> None:
    root = ET.Element("testsuite", name=xml_text(s))
    ET.SubElement(root, "failure", message=xml_text(s)).text = xml_text(s)
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    assert not _ILLEGAL_XML.search(data.decode("utf-8"))
    back = ET.fromstring(data)
    assert back.get("name") == terminal(s) and (back[0].text or "") == terminal(s)
    doc = f'<p title="{html_text(s)}">{html_text(s)}</p>'
    assert "<" not in doc[3:-4].replace('title="', "") and _visible(doc)


# --- end to end: every writer ------------------------------------------------------------

def _hostile_names(seed: int) -> dict[str, str]:
    """A model, a title and a file name each holding a formula start, a mention, a link and
    control characters, drawn from ``seed``."""
    rnd = random.Random(seed)

    def pick(*extra: str) -> str:
        return (rnd.choice("=+-@") + rnd.choice(["1+2", "SUM(1+1)", "HYPERLINK(\"u\")"])
                + rnd.choice(["@octocat", "@team-x"]) + " " + rnd.choice(extra)
                + rnd.choice(["\x1b[2J", "\x07", "\u202e"]))
    return {"model": pick("m"), "title": pick("https://evil.test/x", "www.evil.test", "#4"),
            "file": pick("f", "#12") + ".json"}


def _chat_log(path: Path, model: str, title: str) -> None:
    msgs: list[dict[str, object]] = [{"role": "user", "content": title}]
    for i in range(3):
        msgs.append({"role": "assistant", "content": "ok", "model": model, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"command": f"ls {i}"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 30})
    msgs.append({"role": "assistant", "content": "done", "model": model})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"messages": msgs}))


def _csv_cells(text: str) -> list[str]:
    return [c for row in csv.reader(io.StringIO(text)) for c in row]


def test_every_writer_neutralises_hostile_names(tmp_path: Path) -> None:
    names = _hostile_names(random.SystemRandom().randrange(2**32))
    logs = tmp_path / "logs"
    _chat_log(logs / names["file"].replace("/", "_"), names["model"], names["title"])
    cache, out = tmp_path / "cache", tmp_path / "out"
    base = ["--cache-dir", str(cache), "-q"]
    ran = runner.invoke(app, ["run", "-p", "none", str(logs), "--out", str(out), "--csv", *base])
    assert ran.exit_code == 0, ran.output
    listed = runner.invoke(app, ["runs", str(cache / "dataset"), "--csv"])
    assert listed.exit_code == 0, listed.output
    swept = runner.invoke(app, ["sweep", str(logs), "-p", "two-tier-corrected", "--axis",
                                "tiers.0.min_chars=200,400", "--out", str(tmp_path / "s"),
                                "--no-plots", "--jobs", "1", *base])
    assert swept.exit_code in (0, 1), swept.output
    sweep_csv = (tmp_path / "s" / "sweep" / "sweep.csv").read_text()
    for text in (ran.stdout, listed.stdout, sweep_csv):
        assert _visible(text.replace("\n", "")), text
        cells = _csv_cells(text)
        assert not [c for c in cells if c.startswith(tuple(FORMULA_START))
                    and not re.fullmatch(r"-[0-9.e+-]+", c)], cells  # negative figures stay
        assert any(c.startswith("'") and ("@octocat" in c or "@team-x" in c) for c in cells)
    baseline = tmp_path / "b.json"
    made = runner.invoke(app, ["check", str(logs), "-p", "none", "--baseline", str(baseline),
                               "--update-baseline", *base])
    assert made.exit_code == 0, made.output
    (logs / ("b" + names["file"])).write_text("not a log\n")  # unreadable: named everywhere
    md, junit = tmp_path / "check.md", tmp_path / "check.xml"
    checked = runner.invoke(app, ["check", str(logs), "-p", "none", "--baseline", str(baseline),
                                  "--markdown", str(md), "--junit", str(junit), *base])
    assert checked.exit_code == 1, checked.output
    root = ET.fromstring(junit.read_bytes())  # well-formed
    assert any("\\x" in (e.get("name") or "") + (e.get("message") or "") or
               "\\u202e" in (e.get("name") or "") for e in root.iter())
    text = md.read_text()
    assert _visible(text.replace("\n", ""))
    tokens = _MD.parse(text)
    shown = "".join(t.content for tok in tokens if tok.type == "inline"
                    for t in tok.children or [] if t.type == "text")
    assert "octocat" in shown or "team-x" in shown
    for live in _LIVE_TEXT:
        assert not live.search(shown), live.pattern


def _strings(doc: object) -> list[str]:
    if isinstance(doc, dict):
        return [*doc, *(s for v in doc.values() for s in _strings(v))]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return [doc] if isinstance(doc, str) else []


@given(st.recursive(hostile | st.text() | st.integers(),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(hostile, inner, max_size=3), max_leaves=8))
@example(["f\udcfe.jsonl: empty file", "a\\udcff", "\U0001f600", "x\ud800y", "\\\ud83d"])
def test_json_output_holds_no_lone_surrogate_and_keeps_valid_text(doc: object) -> None:
    """JSON that strict readers take: a lone surrogate's escape (``\\udcfe``, a file name
    that is not UTF-8) is refused by them; it is written as ``valid_text`` writes it, and every
    string that encodes as UTF-8 is kept as it is."""
    text = "".join(strict_json(json.JSONEncoder(indent=1).iterencode(doc)))
    assert text.isascii()
    back = json.loads(text)
    for got, was in zip(_strings(back), _strings(doc)):
        got.encode("utf-8")  # (a lone surrogate raises)
        assert got == valid_text(was)


@given(st.recursive(st.floats() | st.text(alphabet='NaInfity"\\-x') | st.integers(),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(alphabet='NaInfity"\\'), inner, max_size=3),
                    max_leaves=8))
@example({"NaN": [float("nan"), float("inf"), -float("inf"), "NaN", 'x\\"Infinity', 1.5]})
def test_json_output_writes_a_number_not_known_as_null(doc: object) -> None:
    """Every ``--json`` (and summary.json) goes through ``strict_json``: a NaN or infinity (an
    unknown metric pandas holds as NaN: `replay sweep --json` printed ``NaN``) is written
    ``null``, which strict readers take; a string that spells one is kept."""
    def unknown(v: object) -> object:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: unknown(x) for k, x in v.items()}
        return [unknown(x) for x in v] if isinstance(v, list) else v

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the JSON")

    for indent in (1, None):
        text = "".join(strict_json(json.JSONEncoder(indent=indent).iterencode(doc)))
        assert json.loads(text, parse_constant=refuse) == unknown(doc)


def test_ingest_json_names_a_file_that_is_not_utf8_as_valid_text(tmp_path: Path) -> None:
    """`replay ingest --json` of a folder holding an empty file named b'f\\xfe.jsonl' put
    '\\udcfe' (a lone surrogate) in its issues, beside '\\\\xfe' in its failed list."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / os.fsdecode(b"f\xfe.jsonl")).write_bytes(b"")
    got = runner.invoke(app, ["ingest", str(logs), "--out", str(tmp_path / "d"), "--json"])
    assert got.exit_code == 1, got.output
    text = got.stdout
    assert "\\ud" not in text
    strings = _strings(json.loads(text))
    assert any("f\\xfe.jsonl" in s and "empty" in s for s in strings), strings
