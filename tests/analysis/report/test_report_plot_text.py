"""Names from data drawn in figures (``analysis.figure_text.plot_text``): a log's file name, its
title or a policy's name holding ``$…$`` is drawn as written, never parsed as mathtext (whose
parser stopped the whole report with a traceback); control characters reach neither the
font nor, through matplotlib's missing-glyph warning, the terminal; a character in a script no
installed font draws (a project under ``~/日本語/``) is shown as its escape, not as an empty box
and a warning per character on the terminal."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import matplotlib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib import cbook
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from typer.testing import CliRunner

from analysis import figure_text
from analysis.figure_text import figure_rc, plot_text
from replay.cli import app
from replay.safe_text import terminal

runner = CliRunner()
_PIECES = ["$", "\\", "$\\frac{$", "\\$", "{", "}", "^", "_", "\x1b[31m", "\u202e", "\x07",
           "\n", "x", "é"]
names = st.lists(st.sampled_from(_PIECES) | st.text(st.characters(max_codepoint=0x7e), max_size=3),
                 max_size=8).map("".join)
"""Names holding mathtext and control characters (other text printable ASCII: every glyph the
default font lacks is then a control character that got through)."""


@given(names)
@settings(max_examples=60, deadline=None)
def test_a_drawn_name_is_plain_text_showing_its_terminal_escape(s: str) -> None:
    text = plot_text(s)
    assert not cbook.is_math_text(text)  # matplotlib's own rule for starting mathtext
    assert text.replace("\\$", "$") == terminal(s)  # what it draws: the escaped name
    assert not _missing_glyphs(text)


def _missing_glyphs(text: str) -> list[str]:
    """matplotlib's own missing-glyph warnings drawing ``text`` as a title (the oracle)."""
    fig = Figure(figsize=(2, 1))
    FigureCanvasAgg(fig)
    fig.suptitle(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.canvas.draw()
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


@given(st.text(max_size=12))
@settings(max_examples=60, deadline=None)
def test_a_name_in_any_script_draws_without_a_missing_glyph(s: str) -> None:
    with matplotlib.rc_context(figure_rc()):
        assert not _missing_glyphs(plot_text(s))


_SCRIPTS = ("é", "ß", "Ж", "α", "ש", "ع", "क", "ก", "日", "本", "한", "ア", "😀", "🦀", "≤",
            "→", "✓", "⨁", "͸", "", "é", "𝒳", "ℵ")
"""Latin, Cyrillic, Greek, Hebrew, Arabic, Devanagari, Thai, CJK, Hangul, kana, emoji, math,
an unassigned code point, a private-use one, a combining mark."""


def test_what_a_font_draws_is_kept_and_only_what_none_draws_is_escaped() -> None:
    for rc in ({}, {"font.family": ["sans-serif", "STIXGeneral"]}, figure_rc()):
        with matplotlib.rc_context(rc):
            for c in _SCRIPTS:
                # matplotlib says what it lacks, character by character
                want = "".join(_escape(x) if _missing_glyphs(x) else x for x in c)
                assert plot_text(c) == want, (rc, c)
    # a font added to the family draws what it has (STIX's math symbols), kept as written
    with matplotlib.rc_context({"font.family": ["sans-serif", "STIXGeneral"]}):
        assert plot_text("⨝𝒳") == "⨝𝒳"
    assert plot_text("⨝𝒳") == "\\u2a1d\\U0001d4b3" and plot_text("\u0378") == "\\u0378"


def _escape(c: str) -> str:
    return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"


def test_the_figures_fall_back_to_installed_fonts_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # STIX (shipped with matplotlib) stands for an installed CJK font: one the machine has is
    # in the figures' family and draws what the default font lacks; one it lacks is left out
    monkeypatch.setattr(figure_text, "FALLBACK_FONTS", ("No Such Font", "STIXGeneral"))
    figure_text.installed_fallbacks.cache_clear()
    try:
        assert figure_rc() == {"font.family": ["sans-serif", "STIXGeneral"]}
        with matplotlib.rc_context(figure_rc()):
            assert plot_text("⨝𝒳") == "⨝𝒳" and not _missing_glyphs("⨝𝒳")
    finally:
        figure_text.installed_fallbacks.cache_clear()


def _chat_log(path: Path) -> None:
    msgs: list[dict[str, object]] = [{"role": "user", "content": "fix $\\bad{$ it"}]
    for i in range(3):
        msgs.append({"role": "assistant", "content": "ok", "model": "m$\\x{$", "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"command": f"ls {i}"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 30})
    msgs.append({"role": "assistant", "content": "done"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"messages": msgs}))


def test_report_draws_names_holding_dollars_and_control_characters(tmp_path: Path) -> None:
    _chat_log(tmp_path / "logs" / "a$\\bad{$b\x1b[31m.json")
    policy = tmp_path / "p.yaml"
    policy.write_text('name: "p$\\\\frac{$\\x1b[2J"\nextends: two-tier-corrected\n')
    with matplotlib.rc_context({"text.parse_math": True}):  # the default, said
        got = runner.invoke(app, ["report", str(tmp_path / "logs"), "-p", "none", "-p",
                                  str(policy), "--out", str(tmp_path / "r"), "--cache-dir",
                                  str(tmp_path / "c"), "-q"])
    assert got.exit_code == 0, got.output
    assert "\x1b" not in got.output  # nothing raw on the terminal (stdout and stderr)
    assert (tmp_path / "r" / "report.html").stat().st_size > 0


def test_report_of_a_project_named_in_cjk_prints_no_glyph_warnings(tmp_path: Path) -> None:
    _chat_log(tmp_path / "logs" / "日本語のプロジェクト😀.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = runner.invoke(app, ["report", str(tmp_path / "logs"), "-p", "none", "--out",
                                  str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c"), "-q"])
    assert got.exit_code == 0, got.output
    assert "missing from font" not in got.output
    assert not [w for w in caught if "missing from font" in str(w.message)]
    assert (tmp_path / "r" / "report.html").stat().st_size > 0
