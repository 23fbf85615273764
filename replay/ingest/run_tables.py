"""Parsed runs → the store's tables, with every block's tokens counted once.

``tokenize`` turns the parsers' ``RunDraft`` column lists into the schema's Arrow tables (each
column converted once), counts tokens with each tokenizer asked for (``TOKEN_COLUMN``: one
column each), sizes blocks that hold redaction markers by what the markers declare, and repairs
text that is not valid Unicode the way tiktoken does.

Not here: the schema (``replay.ingest.schema``), the tokenizers (``replay.ingest.tokens``).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from replay.ingest import store, token_parts
from replay.ingest.arrow_columns import (
    NUMPY_ROWS,
    all_false,
    column,
    int64_values,
    null_column,
    repeated,
    true_at,
)
from replay.ingest.arrow_read import utf8_lengths
from replay.ingest.names import TOKEN_COLUMN
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.source import Issue
from replay.ingest.redaction import ExactSizes, declared_in, exact, says_redacted, tokens_for
from replay.ingest.schema_tables import column_of, fields, schema_table, valid_unicode
from replay.ingest.token_issues import RepairedStrings, said_repaired, split_issue
from replay.ingest.tokens import by_tiktoken, count_one, count_tokens
from replay.memory import release_freed_memory

_Columns = dict[str, list[Any] | pa.Array]
"""A table's columns by name: the parsers' value lists, or Arrow arrays once converted."""


Counted = dict[str, dict[int, tuple[str, int]]]
"""Tokenizer -> id of a text -> (the text, its tokens): ``tokenize``'s ``counted``."""


def tokenize(drafts: list[RunDraft], tokenizers: tuple[str, ...], *,
             threads: int = 1, consume: bool = False, shared_text: bool = False,
             counted: Counted | None = None, issues: list[Issue] | None = None,
             path: str = "", repaired_in_file: RepairedStrings | None = None,
             ) -> store.RunTables:
    """Count tokens once per block and build the schema's tables.

    Each column is converted to Arrow once, straight from the parsers' lists.  Text that is
    not valid Unicode (a lone surrogate, as ``json.loads`` makes from an escape like
    ``"\\ud800"``) is stored with U+FFFD in its place, as tiktoken counts it.  A block holding
    redaction markers is sized by their declared lengths and flagged; a block holding
    ctxreplay's own markers (``replay redact``) gets the exact figures they declare
    (``replay.ingest.redaction``).

    ``consume``: the drafts' columns are taken, not copied (each draft's ``messages``,
    ``requests`` and ``events`` are left empty), so every column is let go as soon as it is
    converted: a big file's Python lists and its Arrow table are not held whole side by side.

    ``shared_text``: when rows of several runs hold the same text object (a Claude Code
    session's branches: each run repeats the prefix it shares), the messages' ``text`` is a
    ``pa.DictionaryArray`` of the distinct texts (``shared_texts``), each held once, not once a
    run; the store writes it as plain strings (``replay.ingest.entry_file``).  Without it, with
    less text than ``SHARED_MIN_CHARS`` or with no text shared, ``text`` is a plain ``string``
    column.

    ``counted``: the tokens of texts counted before, by text object (a run made after another
    of the same Claude Code session holds many of its text objects again: each is counted
    once); the texts counted here are added to it.

    A text longer than ``token_parts.SPLIT_CHARS`` is counted in parts (an encoder's memory
    bounded by a part's); one that has to be cut inside a piece somewhere (one unbroken word of
    half a million characters or more) has its tokens flagged as estimated, and ``issues`` (of
    the file at ``path``) gets one issue saying how many texts were.

    ``repaired_in_file``: the strings of the file at ``path`` repaired by its earlier calls (a
    file tokenized a run at a time), this call's added; ``issues`` says them all in one issue
    (``said_repaired``).
    """
    n_blocks = [len(d.messages["msg"]) for d in drafts]
    messages = _concat([d.messages for d in drafts], [d.run["run_id"] for d in drafts], "msg")
    requests = _concat([d.requests for d in drafts], [d.run["run_id"] for d in drafts], "request")
    events = _concat([d.events for d in drafts], [d.run["run_id"] for d in drafts], "event")
    runs = {col: [d.run[col] for d in drafts] for col, _ in fields("runs")
            if col in drafts[0].run} if len(drafts) > 1 else \
        {col: [value] for col, value in drafts[0].run.items()}  # (the names read once: ``fields``)
    if consume:
        for d in drafts:
            d.messages, d.requests, d.events = {}, {}, {}
    texts: list[str] = messages["text"]
    n = len(texts)
    chars = sum(map(len, texts))
    codes, texts = shared_texts(texts) if shared_text and len(drafts) > 1 \
        and chars >= SHARED_MIN_CHARS else (None, texts)
    if codes is not None:
        messages["text"] = []  # (the rows' texts: each distinct one is held by ``texts``)

    def rows(values: list[int] | np.ndarray) -> Any:  # each distinct text's -> each row's
        return values if codes is None else np.asarray(values, np.int64)[codes]

    chunked = by_tiktoken(name for name in TOKEN_COLUMN if name in tokenizers)
    repaired = [0]  # the strings stored with U+FFFD (texts counted once per distinct text)
    if consume and n >= BIG_ROWS:  # (``BIG_ROWS``: a big parse's freed heap and call ids)
        release_freed_memory()
        messages["call_id"] = column_of(messages["call_id"], "messages", "call_id", repaired)
    text, tokens, n_chars, lines, redacted, exacts, split = _measured(
        texts, tokenizers, threads, release=consume or codes is not None,
        one=codes is None and chars <= TEXT_CHUNK_CHARS, known=counted,
        long=chars >= token_parts.estimated_from(bool(chunked)), chunked=bool(chunked),
        repaired=repaired)
    if split and issues is not None:
        issues.append(split_issue(path, split, chunked))
    del texts  # (the strings are in the Arrow column now)
    n_bytes = utf8_lengths(text)  # (no encoding again; int64 arrays of their own, as the
    n_lines = lines  # lines: set in place below)
    if redacted or exacts:  # sized as the model saw them: the declared characters
        for i, (rest, _, chars) in redacted.items():  # (taken as bytes)
            n_chars[i] = len(rest) + chars
            n_bytes[i] = len(rest.encode("utf-8", "replace")) + chars
        for i, sizes in exacts.items():  # ctxreplay's own marker: the original's figures
            n_chars[i], n_bytes[i], n_lines[i] = sizes.n_chars, sizes.n_bytes, sizes.n_lines
    if codes is None:
        messages["text"] = text
        messages["n_bytes"], messages["n_chars"], messages["n_lines"] = \
            n_bytes, int64_values(n_chars), n_lines
    else:  # (each row's index into the distinct texts: its dictionary)
        indices = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(codes)])
        messages["text"] = pa.DictionaryArray.from_arrays(indices, text)
        messages["n_bytes"] = rows(n_bytes)
        messages["n_chars"], messages["n_lines"] = rows(n_chars), rows(n_lines)
    estimated = set(redacted) | set(split) | {i for i, sizes in exacts.items()
                                              if sizes.estimated}
    for name, col in TOKEN_COLUMN.items():
        if name not in tokenizers:
            messages[col] = null_column(n, pa.int64())
            continue
        counts = tokens[name]
        for i, (rest, _, chars) in redacted.items():
            counts[i] = count_one(rest, name) + tokens_for(chars, name)
        for i, sizes in exacts.items():
            declared_tokens = sizes.tokens_for(name)
            if declared_tokens is None:  # a tokenizer the marker does not name: estimated
                estimated.add(i)
                declared_tokens = tokens_for(sizes.n_chars, name)
            counts[i] = declared_tokens
        messages[col] = counts if codes is None else rows(counts).tolist()
    if codes is not None and estimated:  # the rows of the distinct texts sized by markers
        estimated = set(np.flatnonzero(np.isin(codes, list(estimated))).tolist())
    messages["tokens_estimated"] = true_at(estimated, n) if estimated else all_false(n)
    _estimated_per_run(runs, n_blocks, messages, estimated)
    for name, col in TOKEN_COLUMN.items():  # (read as lists by ``_estimated_per_run``)
        if name in tokenizers:
            messages[col] = int64_values(messages[col])
    tables = store.RunTables(runs=schema_table(runs, "runs", repaired),
                             messages=schema_table(messages, "messages", repaired),
                             requests=schema_table(requests, "requests", repaired),
                             events=schema_table(events, "events", repaired))
    if repaired[0] and issues is not None:
        said_repaired(issues, path, repaired[0],
                      RepairedStrings() if repaired_in_file is None else repaired_in_file)
    return tables


BIG_ROWS = 1 << 16
"""``tokenize`` (``consume``) of this many rows or more: the heap the parse freed is given back
first (``replay.memory.release_freed_memory``: its maps of calls, its checks' sets), and the
call ids are made a column before the texts are counted: a parser makes a call's id among its
texts, and their strings' memory is given back only once both are let go (a 65 MB document of
~100-byte OpenHands events, 616,000 rows: the call ids held it until the columns were made)."""
TEXT_CHUNK_CHARS = 1 << 20
"""Characters of text counted and converted at a time (``_measured``): a file's texts are not
held as Python strings, their UTF-8 and the Arrow column all at once."""
SHARED_MIN_CHARS = 1 << 20
"""``tokenize``'s ``shared_text`` looks for shared texts in a file of this many characters of
text or more only: below, what sharing saves is small, and finding it costs ~100 instructions
a row."""
_Sizes = tuple[pa.Array, dict[str, list[int]], list[int], np.ndarray,
               dict[int, tuple[str, int, int]], dict[int, ExactSizes], dict[int, int]]


def _measured(texts: list[str], tokenizers: tuple[str, ...], threads: int, *,
              release: bool, one: bool, known: Counted | None = None,
              long: bool = True, chunked: bool = False,
              repaired: list[int] | None = None) -> _Sizes:
    """``texts`` as a string column, with each tokenizer's counts, each text's characters and
    lines, and the texts holding redaction markers (``declared``) or ctxreplay's own
    (``exact``), by index; a text that is not valid Unicode is repaired first, as tiktoken
    counts it.  Made ``TEXT_CHUNK_CHARS`` characters at a time; ``release``: ``texts`` is the
    caller's to give up, each chunk's strings are let go from it once converted; ``one``: they
    are known to be one chunk; ``known``: ``tokenize``'s ``counted``; ``long``: some text may
    be as long as ``token_parts.estimated_from(chunked)`` (False: they hold fewer characters in
    all); ``chunked``: some encoding is counted by tiktoken (``tokens.by_tiktoken``);
    ``repaired[0]``: added the texts repaired."""
    if repaired is None:
        repaired = [0]
    counted: dict[str, list[int]] = {name: [] for name in TOKEN_COLUMN if name in tokenizers}
    arrays, lines = [], []
    n_chars: list[int] = []
    redacted: dict[int, tuple[str, int, int]] = {}
    exacts: dict[int, ExactSizes] = {}
    split: dict[int, int] = {}
    """Texts cut inside a piece to be counted in parts (``token_parts``): index → cuts."""
    for start, stop in [(0, len(texts))] if one else _chunks(texts):
        chunk = texts if stop - start == len(texts) else texts[start:stop]
        for name, counts in counted.items():  # first: the encoder leaves each text's UTF-8
            # in the string (CPython keeps it), and the column then copies it instead of
            # encoding again (a text that is not valid Unicode is counted repaired, as below)
            counts += count_tokens(chunk, name, threads=threads) if known is None \
                else _count_new(chunk, name, threads, known.setdefault(name, {}))
        try:
            part = column(chunk, pa.string(), wide=True)
        except UnicodeEncodeError:
            fixed = [valid_unicode(t) for t in chunk]
            repaired[0] += sum(1 for t, u in zip(chunk, fixed) if t != u)
            chunk = fixed
            part = column(chunk, pa.string(), wide=True)
        arrays.append(part)
        lines.append(line_counts(part))
        n_chars += map(len, chunk)
        if (long or chunked and token_parts.PANICKED) and \
                max(n_chars[start:stop]) >= token_parts.estimated_from(chunked):  # (after the
            # count: a text tiktoken panicked on is cut in chunks from then on)
            for i, t in enumerate(chunk, start):
                if (cut := token_parts.estimated_cuts(t, chunked)) > 0:
                    split[i] = cut
        for i, t in enumerate(chunk, start):
            if says_redacted(t):  # (one test a text: ``declared_in`` does not repeat it)
                if (found := exact(t)) is not None:
                    exacts[i] = found
                elif (marked := declared_in(t)) is not None:
                    redacted[i] = marked
        if release:
            texts[start:stop] = [""] * (stop - start)
        del chunk
    text = arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
    return (text, counted, n_chars, lines[0] if len(lines) == 1 else np.concatenate(lines),
            redacted, exacts, split)


def _count_new(texts: list[str], name: str, threads: int,
               known: dict[int, tuple[str, int]]) -> list[int]:
    """``count_tokens`` of ``texts``, counting only the text objects ``known`` (id -> (text,
    tokens); each held, so that its id is not reused) does not hold, which are added."""
    new = [t for t in texts if id(t) not in known]
    if new:
        for t, n in zip(new, count_tokens(new, name, threads=threads)):
            known[id(t)] = (t, n)
    return [known[id(t)][1] for t in texts]


def _chunks(texts: list[str]) -> list[tuple[int, int]]:
    """(start, stop) of consecutive runs of ``texts`` of about ``TEXT_CHUNK_CHARS``
    characters (one for all when they hold fewer)."""
    ends = np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)))
    if not len(texts) or ends[-1] <= TEXT_CHUNK_CHARS:
        return [(0, len(texts))]
    out, start = [], 0
    while start < len(texts):
        used = int(ends[start - 1]) if start else 0
        stop = max(int(np.searchsorted(ends, used + TEXT_CHUNK_CHARS, "right")), start + 1)
        out.append((start, stop))
        start = stop
    return out


def shared_texts(texts: list[str]) -> tuple[np.ndarray | None, list[str]]:
    """Each row's index into the distinct text objects of ``texts`` (int32), and those texts
    in order of first use; ``(None, texts)`` when no object is held by two rows.  Texts are
    told apart by identity (no hashing of their characters): equal texts made separately stay
    two (a parser that repeats a text gives its rows one string, as Claude Code's runs of one
    session do: ``claude_code_emit.State.shared``)."""
    first: dict[int, int] = {}
    codes = np.fromiter((first.setdefault(id(t), len(first)) for t in texts), np.int32,
                        len(texts))
    if len(first) == len(texts):
        return None, texts
    distinct = [texts[i] for i in np.unique(codes, return_index=True)[1]]
    return codes, distinct


LINES_NUMPY_ROWS = 32
"""``line_counts`` of this many texts or more: one numpy pass over the column's UTF-8; of
fewer, a ``bytes.count`` a text (below ~32 texts the numpy calls' own cost is the larger)."""
LINES_IN_PLACE_BYTES = 1 << 22
"""``line_counts`` of a column whose UTF-8 is bigger (a chunk of ``_measured`` holding a text
of more than ``TEXT_CHUNK_CHARS``): Arrow counts each string's newlines where they are, not a
copy of the UTF-8 (``bytes``) or a byte a byte of it (numpy's ``== 10``): a one-word document
of 61 MB made both."""


def line_counts(text: pa.StringArray) -> np.ndarray:
    """Each string's lines (its newlines + 1; 0 for an empty string) as int64, from one pass
    over the column's UTF-8 (a byte 0x0A is a newline wherever it is: no other character's
    encoding holds one) instead of a ``str.count`` a text (~5 instructions a character)."""
    n = len(text)
    _, offsets_buf, data_buf = text.buffers()
    if n == 0 or offsets_buf is None:
        return np.zeros(n, np.int64)
    if data_buf is not None and data_buf.size > LINES_IN_PLACE_BYTES:
        found = pc.count_substring(text, "\n")
        counts = np.frombuffer(found.buffers()[1], np.int32, n, found.offset * 4).astype(np.int64)
        counts += 1
        offsets = np.frombuffer(offsets_buf, np.int32, n + 1, text.offset * 4)
        counts[offsets[1:] == offsets[:-1]] = 0
        return counts
    if n < LINES_NUMPY_ROWS:  # (a small file's texts: a count a text costs less than numpy's
        # dozen calls, ~4 against ~14 µs for 9 texts)
        ends = memoryview(offsets_buf)[text.offset * 4:(text.offset + n + 1) * 4].cast("i")
        data_bytes = data_buf.to_pybytes() if data_buf is not None else b""
        return np.array([data_bytes.count(b"\n", start, stop) + 1 if stop > start else 0
                         for start, stop in pairwise(ends)], np.int64)
    offsets = np.frombuffer(offsets_buf, np.int32, n + 1, text.offset * 4)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    before = np.searchsorted(np.flatnonzero(data == 10), offsets)  # newlines before each start
    counts = np.diff(before).astype(np.int64, copy=False) + 1
    counts[offsets[1:] == offsets[:-1]] = 0
    return counts


def _estimated_per_run(runs: _Columns, n_blocks_of: list[int],
                       messages: _Columns, redacted: set[int]) -> None:
    """Each run's ``n_estimated_blocks`` and ``estimated_tokens_o200k`` (the o200k tokens of its
    blocks sized from redaction markers; None when o200k was not counted); ``n_blocks_of``:
    each run's number of blocks, in order."""
    o200k = messages["tokens_o200k"]
    counts = o200k if isinstance(o200k, list) else None  # an Arrow null column: not counted
    n_blocks, tokens, lo = [], [], 0
    for size in n_blocks_of:
        hi = lo + size
        mine = [i for i in redacted if lo <= i < hi] if redacted else []
        n_blocks.append(len(mine))
        tokens.append(sum(counts[i] for i in mine) if counts is not None else None)
        lo = hi
    runs["n_estimated_blocks"], runs["estimated_tokens_o200k"] = n_blocks, tokens


def _concat(parts: list[dict[str, Any]], run_ids: list[str],
            counted: str) -> _Columns:
    """The column lists of several runs' rows, one after the other, with a ``run_id`` column
    (``counted`` is a column every row has); one run's lists are taken as they are."""
    sizes = [len(part[counted]) for part in parts]
    ids = repeated(run_ids, sizes) if sum(sizes) >= NUMPY_ROWS else None  # (not a list of
    # every row's id: an array made at once)
    if len(parts) == 1:
        return {"run_id": [run_ids[0]] * sizes[0] if ids is None else ids, **parts[0]}
    out: _Columns = {"run_id": ids if ids is not None else
                     [r for r, k in zip(run_ids, sizes) for _ in range(k)]}
    for part in parts:
        for col, values in part.items():  # (an array('q') column stays one: values[:0])
            out.setdefault(col, values[:0]).extend(values)
    return out
