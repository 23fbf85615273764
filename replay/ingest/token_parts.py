"""Counting a long text in parts: where a text can be cut without changing its tokens.

A BPE encoder works piece by piece (the pieces its pattern splits a text into: words, runs of
digits, of punctuation, of whitespace) and holds some 70-130 bytes a character of the piece it
is merging: 10 MB of one letter took 777 MB to count, and a 100 MB message of one word 7.3 GB
and 52 s (a crafted or broken log; a document may be 128 MiB, a JSON line 16 MiB:
``replay.ingest.input_files``).  So a text longer than ``SPLIT_CHARS`` is counted in parts of
at most that many characters (``parts``), its memory bounded by a part's.

A part ends where the encodings' pattern (o200k_base's and cl100k_base's) always ends a piece,
whatever follows and precedes: before a space or a tab that follows a character that is no
whitespace (no piece holds a character that is no whitespace and a space or tab after it: a
word's, a number's and a punctuation run's pieces end before any whitespace but a line's end
or, in o200k_base, a slash, and a whitespace piece holds whitespace only; Python's whitespace
holds every character the pattern calls whitespace, and more, so the look-behind never takes one
for a non-space), after a line feed that an ASCII letter follows (no piece holds a line feed and
a letter after it), or between an ASCII digit and an ASCII letter (no piece holds both).  Each part then splits into the pieces the whole text splits into there, so the
parts' tokens add up to the text's exactly (tests/replay/ingest/test_token_parts.py checks it
against tiktoken's ids of the whole text, on random and adversarial texts).

Where the last half of a part's window holds no such place (a run of ``SPLIT_CHARS // 2``
characters or more with no space or tab after a non-space, and no line feed or digit before
a letter: one unbroken word or run of punctuation, a long run of whitespace, base64 without
digits), the run is cut inside its piece
every ``FORCED_CHARS`` characters (after an exact cut at the last place before it), so that an
encoder holds a few MB for it, not ~70 MB a 1 Mi-character part of one word: the count is then
an estimate (a few tokens a cut off), and ``forced_cuts`` says how many such cuts a text needs,
for ingest to flag its tokens as estimated and say so.

tiktoken (the encodings ctxreplay does not count with splintr) has one more limit, its regex
engine's stack: a run of ``LONG_WHITESPACE`` whitespace characters is encoded in 64 Ki-character
chunks (``encode_safely``), cut inside the run's piece: that count is an estimate too
(``chunk_cuts``; ``estimated_cuts`` counts both kinds of cut, for ingest to flag and say).  So
is a text whose encoding panics all the same (none is known), then counted in chunks: its
hash is kept (``PANICKED``) and ``chunk_cuts`` counts its chunks' cuts too.

Not here: the encoders (``replay.ingest.tokens``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

SPLIT_CHARS = 1 << 20
"""The longest text counted whole, and the longest part of a longer one (characters): an
encoder then holds at most ~130 MB for it."""
FORCED_CHARS = 1 << 16
"""The characters of a part cut inside a run with no place to cut (``cuts``): an encoder then
holds ~4.5 MB for it."""
_CUT = re.compile(r"(?<=\S)(?=[ \t])|(?<=[\n0-9])(?=[A-Za-z])")
"""A place where every piece of the encodings' pattern ends (see the module's text): the start
of a part."""
_CUT_SCAN = re.compile(r"[ \t\n0-9](?:(?<=\S[ \t])|(?<=[\n0-9])(?=[A-Za-z]))")
"""``_CUT``'s places found by the character at them (a space or tab) or before them (a line feed
or digit), which the regex engine scans for (one class first: ~4 ns a character of a long word,
where ``_CUT``'s look-behind at every character took ~45 ns; ``first_cut``)."""


def first_cut(text: str, start: int, stop: int) -> int | None:
    """The first place to cut (``_CUT``) at ``start`` or after and before ``stop``, or None:
    ``_CUT.search(text, start, stop).start()``, faster."""
    found = _CUT_SCAN.search(text, max(start - 1, 0), stop)
    while found is not None:
        at = found.start() + (text[found.start()] not in " \t")
        if at >= start:
            return at if at < stop else None
        found = _CUT_SCAN.search(text, found.start() + 1, stop)
    return None


def cuts(text: str, size: int = 0) -> tuple[list[int], int]:
    """Where ``text`` is cut into parts of at most ``size`` characters (``SPLIT_CHARS`` when 0):
    each part's start after the first, and how many of those cuts are forced (inside a piece:
    no place to cut exactly in the last half of the part's window).  No cut for a text of
    ``size`` characters or fewer.

    A run with no place to cut (``FORCED_CHARS`` or more of it known) is cut every
    ``FORCED_CHARS`` characters (``size``'s when smaller), the tail of the text too, after
    an exact cut at the last place before it when the part holds one: an encoder merges the
    run's piece a part at a time, and what it holds for a part is about 70 bytes a character
    (a 1 MiB part of one word: 70 MB, kept by the encoder's allocator for the rest of the
    process; 64 Ki characters: 4.5 MB).  Each window's characters are searched once."""
    size = size or SPLIT_CHARS
    step = min(FORCED_CHARS, size)
    out: list[int] = []
    forced = 0
    pos, n = 0, len(text)
    clear = searched = 0  # [clear, searched): the last windows searched, with no place to cut
    end = 0  # the place to cut that ends the run from ``clear`` (0: not found yet)
    while n - pos > size or pos >= clear and (searched - pos > step or pos < end):
        if pos >= clear and pos < end:  # in a run whose end is known: on to it in steps
            cut = pos + step if end - pos > step else end
            forced += cut != end
            out.append(pos := cut)
            continue
        if n - pos > size:
            lo, hi = pos + size // 2 + 1, pos + size + 1
            found = first_cut(text, max(lo, searched), hi)
            if found is not None and step < size and pos >= clear and lo <= searched \
                    and found - pos > step:  # (the run goes on to it: no place before)
                end = searched = found
                continue
            if found is not None:
                out.append(pos := found)
                continue
            if searched < lo:  # (a new run: else the run searched before goes on)
                clear = lo
            searched = hi
        if step < size and pos + 1 < clear and (
                before := _last_cut(text, pos + 1, clear)) is not None:
            out.append(pos := before)  # (exact: the run begins a part of its own)
            clear = pos
            continue
        out.append(pos := pos + step)
        forced += 1
    return out, forced


def _last_cut(text: str, start: int, stop: int) -> int | None:
    """The last place to cut exactly (``_CUT``) at ``start`` or after and before ``stop``, or
    None."""
    while stop > start:  # (from the end, 4 Ki characters at a time)
        at, last = max(start, stop - 4096), None
        while (found := first_cut(text, at, stop)) is not None:
            last, at = found, found + 1
        if last is not None:
            return last
        stop = max(start, stop - 4096)
    return None


def forced_cuts(text: str) -> int:
    """How many of ``text``'s cuts into parts fall inside a piece (0: its count in parts is
    exact, or it is counted whole)."""
    return cuts(text)[1] if len(text) > SPLIT_CHARS else 0


def parts(text: str, size: int = 0) -> Iterator[str]:
    """``text`` in parts of at most ``size`` characters (``SPLIT_CHARS`` when 0), cut where
    ``cuts`` says: the text itself when it is no longer."""
    if len(text) <= (size or SPLIT_CHARS):
        yield text
        return
    pos = 0
    for cut in (*cuts(text, size)[0], len(text)):
        yield text[pos:cut]
        pos = cut


def count_in_parts(count: Callable[[str], int], text: str, size: int = 0) -> int:
    """``count(text)``, a text longer than ``size`` (``SPLIT_CHARS`` when 0) counted a part at
    a time (``parts``)."""
    return sum(map(count, parts(text, size)))


def ids_in_parts(encode: Callable[[str], list[int]], text: str, size: int = 0) -> list[int]:
    """``encode(text)``, a text longer than ``size`` (``SPLIT_CHARS`` when 0) encoded a part at
    a time (``parts``: their ids one after another)."""
    return [i for part in parts(text, size) for i in encode(part)]


CHUNK_CHARS = 65536
"""The characters of a chunk ``encode_safely`` encodes at a time (a long whitespace run)."""
LONG_WHITESPACE = 500_000
"""A run of this many whitespace characters or more is not given to tiktoken whole: its regex
engine overflows its stack at about 900,000 (a Rust panic, which also prints "thread …
panicked … StackOverflow" on stderr); such a text is counted in 64 Ki-character chunks (within
a few tokens of the whole count: 3,128 whole vs 3,130 chunked for 400,000 spaces)."""
_WHITESPACE = re.compile(r"\s+")
PANICKED: set[int] = set()
"""The hashes of the texts (parts) tiktoken panicked on, which ``encode_safely`` counted in
chunks instead, for the rest of the process (a text counted once and its rows written again is
flagged again: ``chunk_cuts``).  Empty while no panic happened: nothing is hashed to look."""


def long_whitespace(text: str) -> bool:
    """Whether ``text`` holds a run of ``LONG_WHITESPACE`` whitespace characters or more (one
    that ``encode_safely`` counts in chunks)."""
    return len(text) >= LONG_WHITESPACE and any(
        m.end() - m.start() >= LONG_WHITESPACE for m in _WHITESPACE.finditer(text))


def chunk_cuts(text: str) -> int:
    """How many cuts ``encode_safely`` makes in ``text`` (a part, ``parts``): its 64 Ki-character
    chunks' when it holds a long whitespace run (``long_whitespace``), else none.  Such a cut
    may fall inside a piece (the run's): the count is then an estimate (3,910 tokens chunked
    against 3,909 whole for ``x``, 500,000 spaces and ``y`` under o200k_base), and when
    tiktoken panicked on it (``PANICKED``: cut anywhere)."""
    return (len(text) - 1) // CHUNK_CHARS if long_whitespace(text) or (
        PANICKED and len(text) > CHUNK_CHARS and hash(text) in PANICKED) else 0


def estimated_cuts(text: str, chunked: bool) -> int:
    """How many of the cuts made to count ``text`` may fall inside a piece (0: its count is
    exact, tiktoken's of the whole text): its ``forced_cuts``, and with ``chunked`` (counted by
    an encoding tiktoken counts: ``tokens.by_tiktoken``) its parts' ``chunk_cuts``.  The one
    test of a count that ingest flags as estimated and says (``token_issues.split_issue``)."""
    cut = forced_cuts(text)
    if chunked and len(text) >= estimated_from(chunked):
        cut += sum(map(chunk_cuts, parts(text)))
    return cut


def estimated_from(chunked: bool) -> int:
    """The fewest characters of a text that ``estimated_cuts`` may find cut (a shorter one is
    counted whole, exactly): one chunk and a character more once tiktoken panicked
    (``PANICKED``)."""
    return (CHUNK_CHARS + 1 if PANICKED else LONG_WHITESPACE) if chunked else SPLIT_CHARS + 1


def encode_safely(enc: tiktoken.Encoding, text: str) -> list[int]:
    """``encode_ordinary``, except for a text with a run of ``LONG_WHITESPACE`` whitespace
    characters (``long_whitespace``), or where tiktoken's regex engine panics all the same:
    then the text is counted in 64 Ki-character chunks (``chunk_cuts``; the panic is not
    foreseen: none is known below that run's length, and the text's hash is kept in
    ``PANICKED``, for its count to be flagged as estimated and said as the run's is)."""
    if long_whitespace(text):
        return _chunked(enc, text)
    try:
        return enc.encode_ordinary(text)
    except BaseException as exc:  # pyo3's PanicException is not an Exception
        if type(exc).__name__ != "PanicException":
            raise
        ids = _chunked(enc, text)
        PANICKED.add(hash(text))
        return ids


def _chunked(enc: tiktoken.Encoding, text: str) -> list[int]:
    out: list[int] = []
    for i in range(0, len(text), CHUNK_CHARS):
        out.extend(enc.encode_ordinary(text[i:i + CHUNK_CHARS]))
    return out
