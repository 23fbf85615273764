"""Nesting limits of ``replay.safe_yaml.parse_yaml``: a document nests at most
``MAX_YAML_DEPTH`` levels (a scalar or an empty collection is one level, a collection one more
than its deepest value), whichever way it nests, and a flow collection opened inside
``MAX_YAML_DEPTH`` others is refused where it opens, before the scanner reads on."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.safe_yaml import MAX_YAML_DEPTH, YamlRefused, parse_yaml

NESTED = f"nested more than {MAX_YAML_DEPTH} levels deep"


def _depth(value: Any) -> int:
    """Levels of ``value`` counted here, independently of the module's node walk."""
    if isinstance(value, dict):
        return 1 + max((max(_depth(k), _depth(v)) for k, v in value.items()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 1


_LEVEL = st.tuples(st.booleans(), st.sampled_from(["", "1, ", "'[{', "]))
"""One level: a one-key mapping (True) or a list, and what the list holds before the next."""


@st.composite
def _nested_flow(draw: st.DrawFn) -> tuple[str, Any]:
    """A flow document nesting 95-105 levels, and the value it holds, built alongside: each
    level a list or a one-key mapping, a list with or without a scalar before the next level;
    the innermost an empty collection, a number, a word or an empty string."""
    text, value = draw(st.sampled_from([("[]", []), ("{}", {}), ("7", 7), ("word", "word"),
                                        ("''", "")]))
    for is_map, beside in draw(st.lists(_LEVEL, min_size=MAX_YAML_DEPTH - 5,
                                        max_size=MAX_YAML_DEPTH + 5)):
        if is_map:
            text, value = "{k: " + text + "}", {"k": value}
        else:
            text, value = "[" + beside + text + "]", [yaml.safe_load(beside[:-2])] * bool(
                beside) + [value]
    start = draw(st.sampled_from(["", "a: ", "- "]))
    return start + text, {"": value, "a: ": {"a": value}, "- ": [value]}[start]


@settings(max_examples=30)  # each parse of ~100 flow levels takes ~20 ms in PyYAML
@given(_nested_flow())
def test_a_document_is_refused_exactly_when_it_nests_too_deep(doc: tuple[str, Any]) -> None:
    text, value = doc
    if _depth(value) > MAX_YAML_DEPTH:
        with pytest.raises(YamlRefused, match=NESTED):
            parse_yaml(text)
    else:
        assert parse_yaml(text) == value


@pytest.mark.parametrize("opener", ["[", "{a: ", "[{a: "])
def test_the_flow_collection_past_the_limit_is_refused_where_it_opens(opener: str) -> None:
    """What follows the collection that opens too deep is not read: an unterminated quote
    there would be 'invalid YAML' if the scanner went on."""
    text = "tiers: " + opener * (MAX_YAML_DEPTH + 1) + "'unterminated"
    with pytest.raises(YamlRefused, match=NESTED):
        parse_yaml(text)


def test_brackets_in_a_quoted_string_are_not_nesting() -> None:
    assert parse_yaml("a: '" + "[" * 10_000 + "'") == {"a": "[" * 10_000}


def test_a_document_of_too_many_written_values_is_not_called_an_alias_bomb() -> None:
    """A policy of 30,000 tiers written out, without one alias, was refused as "its aliases
    expand to more than 100,000 values (an alias bomb?)"; an alias bomb still is one."""
    written = "tiers: [" + ", ".join(f"{{type: trim, name: t{i}}}" for i in range(30_000)) + "]"
    with pytest.raises(YamlRefused, match=r"^more than 100,000 values; a configuration file "
                                          r"may hold at most 100,000$"):
        parse_yaml(written)
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n"
        for i in range(5))
    with pytest.raises(YamlRefused, match="aliases expand to more than 100,000 values"):
        parse_yaml(bomb)
