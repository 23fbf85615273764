"""The exact figures each draft marker of a redacted block carries: the original block's figures
(characters, bytes, lines, tokens under every tokenizer of the schema) go into one of its
markers and zeros into the others, so that every block's markers sum to its figures; a marker
several blocks show gets its figures once.  Blocks that cannot get theirs are counted by reason.

A marker shared by blocks that need other figures (the same text alone in one block and inside a
larger one: a tool description alone and inside a dumped tool list, a message's text and the
same text before an image) is split (``probe_split``, ``split_by_block``): each occurrence of
its text inside a larger block gets a marker of its own, keyed by that block's original text,
so equal blocks still show equal markers; an occurrence that is a whole block by itself, or in
no block (a replacement history's copy, which a parser matches by text), keeps its text's.

Not here: the markers' text (``replay.ingest.redaction.format_exact``), where the markers go
(``replay.redact.leaves``).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

import pyarrow as pa

from replay.ingest.names import TOKEN_COLUMN
from replay.ingest.redaction import ExactSizes
from replay.redact.leaves import DRAFT, draft


def block_figures(messages: pa.Table) -> list[ExactSizes]:
    """Each block's figures as the original's message rows give them, in order."""
    cols = {c: messages[c].to_pylist() for c in ("n_chars", "n_bytes", "n_lines",
                                                 "tokens_estimated", *TOKEN_COLUMN.values())}
    return [ExactSizes(cols["n_chars"][i], cols["n_bytes"][i], cols["n_lines"][i],
                       tuple((name, cols[col][i]) for name, col in sorted(TOKEN_COLUMN.items())),
                       estimated=cols["tokens_estimated"][i])
            for i in range(messages.num_rows)]


_ZERO = ExactSizes(0, 0, 0, tuple((name, 0) for name in sorted(TOKEN_COLUMN)))


def assign_figures(texts: list[str], originals: list[str], want: list[ExactSizes],
                   lengths: dict[str, int] | None = None,
                   ) -> tuple[dict[str, ExactSizes | None], Counter[str], list[int]]:
    """Each draft marker's figures, so that every block's markers sum to its figures; how many
    blocks could not get theirs, by reason; and which blocks could not, because every marker
    they show already carries another block's figures.  A block's figures go to the marker
    fewest blocks show, of those the one standing for the longest text (``lengths``: draft
    key → characters; the query of a search, not a word beside it), and zeros to the others."""
    keys = [list(dict.fromkeys(DRAFT.findall(t))) for t in texts]  # a repeat counts once
    shown = Counter(k for ks in keys for k in set(ks))
    figures: dict[str, ExactSizes | None] = {}
    unsized: Counter[str] = Counter()
    shared: list[int] = []
    for block, (ks, target, text, original) in enumerate(zip(keys, want, texts, originals)):
        if not ks:
            if text != original:
                unsized["no text leaf left in the block"] += 1
            continue
        free = sorted({k for k in ks if k not in figures},
                      key=lambda k: (shown[k], -(lengths or {}).get(k, 0), ks.index(k)))
        have = [figures[k] for k in ks if k in figures]
        rest = _minus(target, [s for s in have if s is not None])
        if rest is None or not free and (rest.n_chars, rest.n_bytes, rest.n_lines,
                                         rest.tokens) != (0, 0, 0, _ZERO.tokens):
            unsized["a marker shared with another block"] += 1
            shared.append(block)
        if not free:
            continue
        figures[free[0]] = rest if rest is not None else _ZERO
        for k in free[1:]:
            figures[k] = _ZERO
    return figures, unsized, shared


def text_lengths(occurrences: list[tuple[str, str]], split: dict[int, str]) -> dict[str, int]:
    """Each draft key of a walk → the length of the longest text it stands for."""
    out: dict[str, int] = {}
    for n, (key, value) in enumerate(occurrences):
        k = split.get(n, key)
        out[k] = max(out.get(k, 0), len(value))
    return out


def probe_split(occurrences: list[tuple[str, str]], places: list[tuple[int, int]],
                units: list[Any], keys: set[str]) -> dict[int, str]:
    """A draft key of its own for every occurrence of the draft ``keys`` (to see, by parsing
    the probe, which blocks each occurrence lands in), keyed by its place in its unit and the
    unit's content (``Redactor.units``), so that items a parser skips as repeats of each other
    (equal Codex payloads on two lines) stay equal."""
    digests: dict[int, str] = {}
    split = {}
    for n, ((key, _), (u, i)) in enumerate(zip(occurrences, places)):
        if key in keys:
            if u not in digests:
                digests[u] = _key(json.dumps(units[u], sort_keys=True, ensure_ascii=False))
            split[n] = _key(key, digests[u], str(i))
    return split


def split_by_block(occurrences: list[tuple[str, str]], probe: dict[int, str],
                   probe_texts: list[str], originals: list[str]) -> dict[int, str]:
    """The draft key of each probed occurrence: its text's own when it is a whole block by
    itself (the original block's text is the occurrence's text) or in no block; else one keyed
    by the original texts of the blocks it lands in."""
    where: dict[str, list[int]] = {}
    for block, text in enumerate(probe_texts):
        for key in dict.fromkeys(DRAFT.findall(text)):
            where.setdefault(key, []).append(block)
    split: dict[int, str] = {}
    for n, probed in probe.items():
        key, value = occurrences[n]
        blocks = where.get(probed, [])
        if all(originals[b] == value and probe_texts[b] == draft(probed) for b in blocks):
            continue
        split[n] = _key(key, *sorted({originals[b] for b in blocks}))
    return split


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _minus(a: ExactSizes, parts: list[ExactSizes]) -> ExactSizes | None:
    """``a`` less the sum of ``parts`` (None when that is negative)."""
    chars = a.n_chars - sum(p.n_chars for p in parts)
    size = a.n_bytes - sum(p.n_bytes for p in parts)
    lines = a.n_lines - sum(p.n_lines for p in parts)
    tokens = tuple((name, (n or 0) - sum(dict(p.tokens).get(name) or 0 for p in parts))
                   for name, n in a.tokens)
    if min(chars, size, lines, *(n for _, n in tokens)) < 0:
        return None
    return ExactSizes(chars, size, lines, tokens, estimated=a.estimated)
