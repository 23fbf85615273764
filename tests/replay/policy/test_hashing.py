"""A policy value's hash, computed once (``replay.policy.hashing``): the dataclass's own hash of
its fields, the same for equal values, not carried by a copy made through pickling (another
process hashes strings differently), and only for frozen dataclasses."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass

import pytest

from replay.policy import Placeholder, TokenCounter, load_policy
from replay.policy.hashing import HashedOnce, hashed_once
from replay.policy.providers import Cache, Prices


def _fields_hash(obj: object) -> int:
    """What a frozen dataclass's generated ``__hash__`` returns: the hash of its fields' tuple."""
    return hash(tuple(getattr(obj, f.name) for f in dataclasses.fields(obj)))  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [
    TokenCounter(method="chars", chars_per_token=3.5),
    TokenCounter(tokenizer="cl100k_base", scale=1.1),
    Placeholder(template="[{tool}: {chars} chars]", head_lines=2),
    Cache(provider="openai", granularity_tokens=128, prices=Prices(cache_write_per_mtok=None)),
])
def test_the_hash_is_the_fields_hash_every_time(value: object) -> None:
    assert [hash(value), hash(value)] == [_fields_hash(value)] * 2


def test_equal_values_hash_alike_and_a_changed_one_is_hashed_anew() -> None:
    a, b = TokenCounter(method="chars"), TokenCounter(method="chars")
    assert hash(a) == hash(b) and a == b
    c = dataclasses.replace(a, chars_per_token=2.0)  # after a's hash was kept
    assert hash(c) == _fields_hash(c) != hash(a)
    assert {a: 1}[b] == 1  # a memo keyed by one finds the other


def test_a_copy_through_pickle_computes_its_own() -> None:
    policy = load_policy("observation-masking")
    hash(policy.cache), hash(policy.estimator)
    copy = pickle.loads(pickle.dumps(policy))
    assert copy == policy
    assert not hasattr(copy.cache, "_hash") and not hasattr(copy.estimator, "_hash")
    assert hash(copy.cache) == hash(policy.cache)


def test_only_a_frozen_dataclass_of_hashed_once() -> None:
    @dataclass(slots=True)
    class Mutable(HashedOnce):
        x: int = 0

    @dataclass(frozen=True, slots=True)
    class Plain:
        x: int = 0

    for cls in (Mutable, Plain):
        with pytest.raises(TypeError, match="not a frozen HashedOnce dataclass"):
            hashed_once(cls)
