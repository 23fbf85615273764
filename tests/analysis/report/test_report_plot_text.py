"""Names from data drawn in figures (``replay.safe_text.plot_text``): a log's file name, its
title or a policy's name holding ``$…$`` is drawn as written, never parsed as mathtext (whose
parser stopped the whole report with a traceback), and control characters reach neither the
font nor, through matplotlib's missing-glyph warning, the terminal."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import matplotlib
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib import cbook
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from typer.testing import CliRunner

from replay.cli import app
from replay.safe_text import plot_text, terminal

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
    fig = Figure(figsize=(2, 1))
    FigureCanvasAgg(fig)
    fig.suptitle(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.canvas.draw()
    assert not [w for w in caught if "missing from font" in str(w.message)]


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
