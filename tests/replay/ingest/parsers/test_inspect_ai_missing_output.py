"""Inspect AI: a model call whose ``output`` is null or of the wrong type takes its answer from
the next context (the next call's input, the sample's messages), never an empty assistant
message; one that is nowhere is no request.  Counted from how the input was made."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from replay.ingest.parsers import inspect_ai
from replay.ingest.parsers.source import Issue, Source

LOG = Path(__file__).resolve().parents[3] / "fixtures" / "inspect_ai" \
    / "2025-05-12T20-27-36-04-00_browser.json"


def _parse(doc: dict[str, Any]) -> tuple[Any, list[Issue], dict[str, dict[str, int]]]:
    data = json.dumps(doc).encode()
    src = Source(path="b.json", rel="b.json", data=data, sha256=hashlib.sha256(data).hexdigest())
    issues: list[Issue] = []
    (draft,) = inspect_ai.parse(src, issues)
    return draft, issues, src.coverage.by_type()


@pytest.mark.parametrize("bad", [None, "oops", {"choices": []}])
def test_null_outputs_take_the_next_context(bad: Any) -> None:
    doc = json.loads(LOG.read_text(encoding="utf-8"))
    whole, _, _ = _parse(doc)
    broken = copy.deepcopy(doc)
    calls = [e for e in broken["samples"][0]["events"] if e["event"] == "model"]
    for e in calls:
        e["output"] = copy.deepcopy(bad)
    draft, issues, cov = _parse(broken)
    n = len(calls)
    assert draft.messages["text"] == whole.messages["text"]  # not an empty message a call
    assert draft.messages["role"] == whole.messages["role"]
    assert draft.requests["output_msg"] == whole.requests["output_msg"]
    assert draft.requests["input_tokens"] == [None] * n  # the usage was in the output
    assert cov["model (output from the next context)"] == {"modelled": n}
    assert len(issues) == 1 and issues[0].reason.startswith(f"{n} model call(s) have no "
                                                            "readable output")
    assert f"{n} answer(s) taken" in issues[0].reason and "0 not found" in issues[0].reason


def test_an_answer_nowhere_is_no_request() -> None:
    doc = json.loads(LOG.read_text(encoding="utf-8"))
    sample = doc["samples"][0]
    calls = [e for e in sample["events"] if e["event"] == "model"]
    calls[-1]["output"] = None
    sample["messages"] = sample["messages"][:len(calls[-1]["input"])]  # its answer not kept
    draft, issues, cov = _parse(doc)
    assert len(draft.requests["output_msg"]) == len(calls) - 1
    assert cov["model (output missing: no request)"] == {"unknown": 1}
    assert "0 answer(s) taken" in issues[0].reason and "1 not found" in issues[0].reason
