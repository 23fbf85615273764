"""Strings from data made safe for each output format: one function per format.

Every string a log, a policy file or a path holds may have been crafted.  Before it reaches an
output it goes through the one function of that output's format:

- ``terminal(value)``: control characters, line breaks, invisible and bidirectional-override
  characters, lone surrogates (a file name that is not UTF-8) and non-characters written as
  visible escapes (``\\x1b``, ``\\n``, ``\\u202e``, ``\\xff``, a tag character ``\\U000e0041``);
  one line, printable anywhere.
- ``csv_cell(value)``: ``terminal``, then a text cell that a spreadsheet would read as a
  formula (one starting with ``=``, ``+``, ``-``, ``@``, a tab, a carriage return or NUL, or
  their full-width forms) gets a leading ``'``, as OWASP's CSV-injection guidance says.
  Numbers are numbers, never changed (a negative figure stays ``-3``).
- ``markdown(value)``: ``terminal``, HTML-escaped, Markdown's active characters (GitHub's math
  ``$`` too, and a list marker at its start) backslash-escaped, and no live ``@mention``, issue
  reference or autolink: a zero-width space (``&#8203;``) follows every ``@`` and ``#`` and
  breaks ``://``, ``www.`` and ``GH-``.
- ``xml_text(value)``: ``terminal``; it leaves no character XML 1.0 forbids (ElementTree
  escapes ``&<>"`` itself).
- ``html_text(value)``: ``terminal``, HTML-escaped (quotes too).
- ``valid_text(value)``: a string that encodes as UTF-8, for names stored or hashed (a file
  name's undecodable bytes as ``\\xff``, other lone surrogates as ``\\udXXX``).
- ``readable_json(text)``: JSON text written with ``ensure_ascii=False`` (a file people read
  and review, a baseline) with every character ``terminal`` escapes written as its JSON escape
  (``\\u202e``): the same value read back, nothing invisible or reordering on screen.
- ``strict_json(chunks)``: JSON text as ``json``'s encoder writes it (ASCII), with every lone
  surrogate it escaped (``\\udcff``: strict readers refuse one) written as ``valid_text``
  writes it, a JSON string of its escape, and every NaN or infinity (``NaN``, ``Infinity``:
  no strict reader takes them) written ``null``, a number not known.

Not here: names made into paths (``replay.safe_names``), printing (``replay.cli.output``),
text drawn in a figure (``analysis.figure_text.plot_text``: it depends on the fonts).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator

_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5"
                          "\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u2069\u3164"
                          "\ufdd0-\ufdef\ufe00-\ufe0d\ufeff\uffa0\ufff9-\ufffb\ufffe\uffff"
                          "\ud800-\udfff\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
"""What ``terminal`` writes as an escape (it includes every character XML 1.0 forbids; the tag
characters U+E0000-E007F are invisible letters a name could hide text in, and so are the
variation selectors U+FE00-FE0D and U+E0100-E01EF, 256 of them: any byte; the Hangul fillers
U+115F, U+1160, U+3164, U+FFA0 draw a blank, U+034F, U+17B4-17B5, U+180B-180F nothing; the
emoji selectors U+FE0E-FE0F are left, an emoji shown as written).  The non-characters
of planes 1-16 (U+1FFFE, ...) are not in it: a terminal shows them as a box, and 32 single
characters here made every ``terminal`` call ~8x slower."""
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(m: re.Match[str]) -> str:
    c = m.group()
    if "\udc80" <= c <= "\udcff":  # an undecodable byte of a file name (surrogateescape)
        return f"\\x{ord(c) - 0xDC00:02x}"
    n = ord(c)
    return _SHORT_ESCAPES.get(c) or (f"\\x{n:02x}" if n <= 0xFF else f"\\u{n:04x}" if n <= 0xFFFF
                                     else f"\\U{n:08x}")


def terminal(value: object) -> str:
    """``value`` as text safe for a terminal (None: empty): control characters, line breaks,
    invisible and bidirectional-override characters, lone surrogates and non-characters
    written as escapes (``\\x1b``, ``\\n``, ``\\u202e``, ``\\xff``)."""
    text = "" if value is None else str(value)
    return _UNPRINTABLE.sub(_escape_char, text)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""First characters a spreadsheet reads as the start of a formula (with the full-width forms
some normalise)."""


def csv_cell(value: object) -> object:
    """A CSV cell: numbers, booleans and None as they are; any other value ``terminal``-escaped
    with a ``'`` in front when it would start a formula."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = terminal(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


_MD_ACTIVE = str.maketrans({c: "\\" + c for c in "\\`*[]|~!$"})
"""Markdown characters that would start code, emphasis, strikethrough, an image, a link, a
cell or GitHub's math (``$…$``: any text drawn in any size and colour): backslash-escaped
(``<``, ``>`` and ``&`` are HTML-escaped before)."""
_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
"""An ``_`` that could open or close emphasis (one inside a word, ``peak_tokens``, cannot)."""
_BLOCK_START = re.compile(r"^([+-])|^(\d+)([.)])")
"""A line start Markdown reads as a list item or a rule (``+ x``, ``- x``, ``---``, ``1. x``):
its marker is backslash-escaped."""
_ZWSP = "&#8203;"
_LIVE = re.compile(r"(?<=[@#])|(?<=:)(?=//)|(?<=www)(?=\.)|(?<=GH)(?=-)", re.IGNORECASE)
"""Where a zero-width space goes: after ``@`` (mentions, e-mail autolinks) and ``#`` (issue
references, headings), inside ``://`` and ``www.`` (autolinks) and ``GH-`` (references)."""


def markdown(value: object) -> str:
    """Text of a Markdown file (a pull-request comment) that is not ours: one line, no raw
    HTML, no code, emphasis, link, image or cell syntax, no mention, reference or autolink."""
    text = html.escape(terminal(value).strip(" "), quote=False).translate(_MD_ACTIVE)
    text = _UNDERSCORE.sub(r"\\_", text)
    text = _BLOCK_START.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", text)
    return _LIVE.sub(_ZWSP, text)


def xml_text(value: object) -> str:
    """Text for an XML attribute or text node: ``terminal`` (which escapes every character
    XML 1.0 forbids and the line breaks)."""
    return terminal(value)


def html_text(value: object) -> str:
    """Text for HTML (element content or a quoted attribute): ``terminal``, HTML-escaped."""
    return html.escape(terminal(value))


def valid_text(value: str) -> str:
    """``value`` as a string that encodes as UTF-8: an undecodable byte of a file name
    (``os.fsdecode``'s surrogate escape) as ``\\xff``, any other lone surrogate as
    ``\\udXXX``; a valid string is returned as it is."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        pass
    try:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")


def readable_json(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``'s) with each character ``terminal``
    escapes — control, invisible and bidirectional-override characters, lone surrogates,
    non-characters — written as its ``\\uXXXX`` escape.  The encoder already escapes control
    characters inside strings, and outside them JSON text holds only its white space (kept), so
    only strings change, and ``json.loads`` reads the same value back (a key a baseline
    compares stays the same key); other non-ASCII text stays readable."""
    return _UNPRINTABLE.sub(_readable_escape, text)


def _readable_escape(m: re.Match[str]) -> str:
    """One character as ``readable_json`` writes it: white space kept, a character past the
    BMP as its UTF-16 surrogate pair (what a JSON escape holds), any other as ``\\uXXXX``."""
    c = m.group()
    if c in "\n\r\t":
        return c
    n = ord(c)
    if n <= 0xFFFF:
        return f"\\u{n:04x}"
    n -= 0x10000
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


_JSON_ESCAPE = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\(u[0-9a-f]{4}|.)")
"""An escape of ``json``'s ASCII output, one at a time from the left (so ``\\\\`` is never read
as the start of another): a surrogate pair, or any single escape."""


def _json_escape(m: re.Match[str]) -> str:
    one = m.group(3)
    if one is None or not "ud800" <= one <= "udfff":  # a pair, or no surrogate
        return m.group()
    return "\\\\" + valid_text(chr(int(one[1:], 16)))[1:]  # its escape as text


_JSON_NOT_FINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')
"""A JSON string (kept, whatever it holds) or a bare ``NaN`` / ``Infinity`` / ``-Infinity``
token, which ``json`` writes for a float that is not finite."""


def _null_if_not_finite(m: re.Match[str]) -> str:
    return m.group() if m.group(1) is None else "null"


def strict_json(chunks: Iterable[str]) -> Iterator[str]:
    """``chunks`` of ``json``'s ASCII encoding (``ensure_ascii``, the default) with each lone
    surrogate's escape made text: a file name's undecodable byte (``\\udcff``) becomes the
    string ``\\xff``, as ``terminal`` and ``valid_text`` show it, another lone surrogate
    ``\\udXXX``; and each NaN or infinity (an unknown metric held as NaN by pandas) as
    ``null``, which strict readers take and which says the number is not known.  The encoder
    writes a string whole in one chunk, so no escape or string is split."""
    for chunk in chunks:
        if "\\ud" in chunk:
            chunk = _JSON_ESCAPE.sub(_json_escape, chunk)
        if "NaN" in chunk or "Infinity" in chunk:
            chunk = _JSON_NOT_FINITE.sub(_null_if_not_finite, chunk)
        yield chunk
