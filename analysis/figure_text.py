"""Text drawn in a figure: a name from data, as the figure's fonts can draw it.

``plot_text(value)`` is ``replay.safe_text.terminal`` (control, invisible and bidirectional
characters as visible escapes), then:

- every ``$`` as ``\\$``, so matplotlib draws the text as written: an even number of ``$``
  would start mathtext, whose parser stopped the whole report (``$\\x{$``);
- every character that no font of the current font family has a glyph for, as its escape
  (``\\u65e5``, ``\\U0001f600``).  Matplotlib would draw an empty box for it and print a
  "Glyph … missing from font(s)" warning to the terminal, one per character and figure: a run
  of a project under ``~/日本語/`` filled the screen of ``replay report`` with them.

The font family is the one matplotlib draws with at the time (``rcParams``), with its
fallback fonts (matplotlib ≥ 3.6 takes a glyph a font lacks from the next font of the list).
ctxreplay's figures draw with ``FIGURE_RC``: the default sans-serif font (DejaVu Sans, which
matplotlib ships: Latin, Greek, Cyrillic and most symbols), then whichever of
``FALLBACK_FONTS`` the machine has (CJK, other scripts), so a name is drawn in its own
script wherever a font for it is installed, and as escapes where none is.
"""

from __future__ import annotations

import functools
from typing import Any

from replay.safe_text import terminal

FALLBACK_FONTS = (
    "Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR",
    "Source Han Sans", "Source Han Sans JP", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
    "Droid Sans Fallback", "Noto Sans", "Noto Sans Arabic", "Noto Sans Hebrew",
    "Noto Sans Devanagari", "Noto Sans Thai", "Noto Sans Symbols", "Noto Sans Symbols 2",
    "Arial Unicode MS", "Microsoft YaHei", "Yu Gothic", "Malgun Gothic", "Hiragino Sans",
    "PingFang SC", "Apple SD Gothic Neo",
)
"""Fonts a figure falls back to, in this order, for a glyph the default font lacks (those
installed; outline fonts only: matplotlib cannot draw colour-bitmap emoji fonts)."""


@functools.cache
def installed_fallbacks() -> tuple[str, ...]:
    """The ``FALLBACK_FONTS`` matplotlib finds on this machine, in order."""
    from matplotlib import font_manager  # only when drawing (a replay loads no plotting stack)

    have = {f.name for f in font_manager.fontManager.ttflist}
    return tuple(name for name in FALLBACK_FONTS if name in have)


def figure_rc() -> Any:  # (matplotlib types rc keys as a Literal of every name)
    """The font settings of ctxreplay's figures: sans-serif, then the installed fallbacks."""
    return {"font.family": ["sans-serif", *installed_fallbacks()]}


def plot_text(value: object) -> str:
    """Text drawn in a figure (a title, a legend entry, a tick label): ``terminal``, ``$`` as
    ``\\$``, and every character the current fonts cannot draw as its escape."""
    text = terminal(value).replace("$", r"\$")
    if text.isascii():  # every font matplotlib picks by default draws printable ASCII
        return text
    drawable = _drawable(_font_files())
    return "".join(c if ord(c) in drawable else _escape(c) for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _font_files() -> tuple[str, ...]:
    """The files of the fonts matplotlib draws text with now (``rcParams``), fallbacks
    included, as Agg resolves them."""
    from matplotlib import font_manager  # only when drawing (a replay loads no plotting stack)

    props = font_manager.FontProperties()
    try:  # matplotlib >= 3.6: the font list Agg falls back through
        files = font_manager.fontManager._find_fonts_by_props(props)
    except AttributeError:  # an older matplotlib draws with one font
        files = [font_manager.findfont(props)]
    return tuple(str(f) for f in files)


@functools.lru_cache(maxsize=8)
def _drawable(files: tuple[str, ...]) -> frozenset[int]:
    """The code points some font of ``files`` has a glyph for (glyph 0 is 'missing')."""
    from matplotlib import ft2font  # only when drawing (a replay loads no plotting stack)

    out: set[int] = set()
    for file in files:
        try:
            charmap = ft2font.FT2Font(file).get_charmap()
        except (OSError, RuntimeError, ValueError):  # unreadable: draws nothing
            continue
        out.update(code for code, glyph in charmap.items() if glyph)
    return frozenset(out)
