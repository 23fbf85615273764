"""The deterministic sweep: every node of every seed replaced by a wrong-typed value and every key
deleted, one at a time, through the format's parser.
"""

from __future__ import annotations

import json

import pytest

from tests.fuzz.harness import EXAMPLES, LIMIT, parse_direct
from tests.fuzz.mutations import (
    delete_at,
    join_lines,
    json_object,
    nodes,
    serialise_with,
    split_lines,
)
from tests.fuzz.seeds import SEEDS_AT_IMPORT, Seed, dump_doc, dump_line

SWEEP_VALUES = [b'"xyz"', b'""', b"[]", b'["a"]', b"{}", b'{"a":1}', b"[{}]", b"1", b"-1", b"1.5",
                b"1e400", b"9223372036854775808", b"null", b"true", b'"\\ud800"']


@pytest.mark.parametrize("name", SEEDS_AT_IMPORT)
def test_every_field_missing_or_wrong_typed(seeds: dict[str, Seed], name: str) -> None:
    """Every node of the seed replaced by a wrong-typed value, and every key deleted, one at a
    time, through the format's parser (the checks of ``parse_direct``).  CI tries one value per
    node (rotating); with ``CTXREPLAY_FUZZ_EXAMPLES`` >= 1000, every value at every node."""
    seed = seeds[name]
    every = EXAMPLES >= 1000
    if seed.jsonl:
        lines = split_lines(seed.data)
        docs = [(at, json_object(raw)) for at, raw in enumerate(lines)]
    else:
        docs = [(None, json.loads(seed.data))]
    k = 0
    for at, doc in docs:
        for path, _ in nodes(doc):
            k += 1
            variants = [serialise_with(doc, path, v, seed.jsonl)
                        for v in (SWEEP_VALUES if every else [SWEEP_VALUES[k % len(SWEEP_VALUES)]])]
            if path and isinstance(path[-1], str):
                variants.append((dump_line if seed.jsonl else dump_doc)(delete_at(doc, path)))
            for new in variants:
                data = new if at is None else join_lines([*lines[:at], new, *lines[at + 1:]],
                                                         seed.data)
                try:
                    parse_direct(seed.fmt, seed.filename, data, LIMIT)
                except Exception as exc:
                    raise AssertionError(f"{name}: {path} -> {new[:200]!r}") from exc
