"""The exact figures each draft marker of a redacted block carries: the original block's figures
(characters, bytes, lines, tokens under every tokenizer of the schema) go into one of its
markers and zeros into the others, so that every block's markers sum to its figures; a marker
several blocks show gets its figures once.  Blocks that cannot get theirs are counted by reason.

Not here: the markers' text (``replay.ingest.redaction.format_exact``), where the markers go
(``replay.redact.leaves``).
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from replay.ingest.redaction import ExactSizes
from replay.redact.leaves import DRAFT

_TOKEN_COLUMN = {"o200k_base": "tokens_o200k", "cl100k_base": "tokens_cl100k"}


def block_figures(messages: pa.Table) -> list[ExactSizes]:
    """Each block's figures as the original's message rows give them, in order."""
    cols = {c: messages[c].to_pylist() for c in ("n_chars", "n_bytes", "n_lines",
                                                 "tokens_estimated", *_TOKEN_COLUMN.values())}
    return [ExactSizes(cols["n_chars"][i], cols["n_bytes"][i], cols["n_lines"][i],
                       tuple((name, cols[col][i]) for name, col in sorted(_TOKEN_COLUMN.items())),
                       estimated=cols["tokens_estimated"][i])
            for i in range(messages.num_rows)]


_ZERO = ExactSizes(0, 0, 0, tuple((name, 0) for name in sorted(_TOKEN_COLUMN)))


def assign_figures(texts: list[str], originals: list[str], want: list[ExactSizes],
                   ) -> tuple[dict[str, ExactSizes | None], Counter[str]]:
    """Each draft marker's figures, so that every block's markers sum to its figures; and how
    many blocks could not get theirs, by reason."""
    keys = [list(dict.fromkeys(DRAFT.findall(t))) for t in texts]  # a repeat counts once
    shown = Counter(k for ks in keys for k in set(ks))
    figures: dict[str, ExactSizes | None] = {}
    unsized: Counter[str] = Counter()
    for ks, target, text, original in zip(keys, want, texts, originals):
        if not ks:
            if text != original:
                unsized["no text leaf left in the block"] += 1
            continue
        free = sorted({k for k in ks if k not in figures}, key=lambda k: (shown[k], ks.index(k)))
        have = [figures[k] for k in ks if k in figures]
        rest = _minus(target, [s for s in have if s is not None])
        if rest is None or not free and (rest.n_chars, rest.n_bytes, rest.n_lines,
                                         rest.tokens) != (0, 0, 0, _ZERO.tokens):
            unsized["a marker shared with another block"] += 1
        if not free:
            continue
        figures[free[0]] = rest if rest is not None else _ZERO
        for k in free[1:]:
            figures[k] = _ZERO
    return figures, unsized


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
