"""The report's interactive timelines (``analysis.report.interactive``), read back from the page
fragment: each policy's data as given, what acted on hover, a layer per unknown action kind, every
string escaped, the same bytes twice.  (In a browser: ``test_report_browser.py``.)
"""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd

from analysis.report.interactive import PolicyFrames, RunTimeline, timelines_html
from tests.analysis.report.report_html import ReportDoc

HOSTILE = "</script><img src=x onerror=alert(1)>&"


def frames(policy: str, kinds: tuple[str, ...] = ("trim", "summarise"),
           tier: str = "tier1") -> PolicyFrames:
    n = 6
    requests = pd.DataFrame({
        "run_id": "r", "policy": policy, "request": range(n),
        "est_tokens": [10, 20, 30, 90, 40, 50], "truth_tokens": [11, 22, 33, 99, 44, 55],
        "recorded_input_tokens": pd.array([12, None, None, None, None, None], dtype="Int64"),
        "window_tokens": 100, "reserve_tokens": 20, "overshoot_tokens": [0, 0, 0, 19, 0, 0]})
    actions = pd.DataFrame({
        "action": range(len(kinds)), "request": [3, 4, 5][:len(kinds)], "kind": list(kinds),
        "tier": tier, "undone": [False, True, False][:len(kinds)],
        "context_after_tokens": [60, 40, 55][:len(kinds)],
        "trigger_tokens": [99, 90, 55][:len(kinds)],
        "reclaimed_tokens": [39, 50, 0][:len(kinds)],
        "invalidated_tokens": [1000, 0, 0][:len(kinds)]})
    rereads = pd.DataFrame({"request": [2, 4], "is_read": True,
                            "reread_class": ["first", "eviction_induced"], "path": ["a", "a"]})
    return PolicyFrames(policy, requests, actions, rereads)


def docs_of(fragment: str) -> tuple[dict[str, Any], list[dict[str, list[str]]]]:
    """The Bokeh document and the layer → renderer names, as the page's script holds them."""
    m = re.search(r"const docs = (.*?), items = (.*?), layers = (.*?);\n", fragment)
    assert m, "no embedded document"
    docs = json.loads(m.group(1))
    return next(iter(docs.values())), json.loads(m.group(3))


def definitions(node: Any, out: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    if isinstance(node, dict):
        if "attributes" in node and "id" in node:
            out[node["id"]] = node
        for v in node.values():
            definitions(v, out)
    elif isinstance(node, list):
        for v in node:
            definitions(v, out)
    return out


def source_of(defs: dict[str, dict[str, Any]], name: str) -> dict[str, list[Any]]:
    """The columns of the data source the renderer ``name`` draws."""
    renderer = next(d for d in defs.values() if d["attributes"].get("name") == name)
    src = defs[renderer["attributes"]["data_source"]["id"]]
    return {k: (v["value"] if isinstance(v, dict) else v)
            for k, v in src["attributes"]["data"]["entries"]}


def test_each_policy_draws_its_own_numbers_and_says_what_acted() -> None:
    run = RunTimeline("r", "a run", (frames("A"), frames("B", kinds=("trim",), tier="t2")))
    fragment = timelines_html([run])
    doc, layers = docs_of(fragment)
    defs = definitions(doc, {})
    a = source_of(defs, "ctx-tl-0|0|truth|0")
    assert a["truth"] == [11, 22, 33, 99, 44, 55] and a["policy"] == ["A"] * 6
    assert a["limit"] == [80] * 6 and a["estimate"] == [10, 20, 30, 90, 40, 50]
    assert a["acted"][3] == "trim (tier1) −39 tokens, 1,000 cached invalidated"
    assert a["acted"][4] == "summarise (tier1) −50 tokens [undone]"
    assert a["acted"][0] == "–"
    b = source_of(defs, "ctx-tl-0|1|truth|1")
    assert b["acted"][3] == "trim (t2) −39 tokens, 1,000 cached invalidated"
    undone = source_of(defs, "ctx-tl-0|0|summaries|0")
    assert undone["fill"] == [0.0] and undone["y"] == [90]  # hollow, where it triggered
    over = source_of(defs, "ctx-tl-0|0|overshoots|0")
    assert over["request"] == [3] and over["y"] == [99]
    rereads = source_of(defs, "ctx-tl-0|0|rereads|0")
    assert rereads["request"] == [4]  # not the first read
    assert set(layers[0]) == {"truth", "estimate", "window", "reserve", "overshoots", "recorded",
                              "trims", "summaries", "rereads"}
    assert layers[0]["trims"] == ["ctx-tl-0|0|trims|0", "ctx-tl-0|1|trims|1"]
    boxes = [v for t, k, v in ReportDoc(fragment).attrs if t == "input" and k.startswith("data-")]
    assert boxes.count("ctx-tl-0") == 2 + 9


def test_an_action_kind_of_no_known_family_gets_a_layer_of_its_own() -> None:
    fragment = timelines_html([RunTimeline("r", "a run",
                                           (frames("A", kinds=("trim", "induced_reread")),))])
    _, layers = docs_of(fragment)
    assert layers[0]["induced_reread"] == ["ctx-tl-0|0|induced_reread|0"]
    assert 'data-layer="induced_reread"' in fragment


def test_every_string_from_the_data_is_escaped_and_the_bytes_repeat() -> None:
    run = RunTimeline(HOSTILE, HOSTILE, (frames(HOSTILE, tier=HOSTILE),))
    fragment = timelines_html([run])
    assert HOSTILE not in fragment and "<img" not in fragment
    assert not [t for t in ReportDoc(fragment).tags if t not in (
        "style", "script", "figure", "figcaption", "b", "div", "label", "input", "span")]
    doc, _ = docs_of(fragment)
    defs = definitions(doc, {})
    assert source_of(defs, "ctx-tl-0|0|truth|0")["policy"] == [HOSTILE] * 6
    assert timelines_html([run]) == fragment
    assert timelines_html([]) == ""


def test_data_naming_a_placeholder_of_the_script_reaches_it_as_written() -> None:
    """The script is filled in one pass: a re-read path or a policy named ``ITEMS``, ``LAYERS``
    or ``DOCS`` (a repository's ``ITEMS.md``) is data, never a place the next value goes (it
    was replaced by the items' JSON, and the page's script no longer parsed)."""
    named = "DOCS ITEMS LAYERS/ITEMS.md"
    f = frames(named)
    f = PolicyFrames(named, f.requests, f.actions, f.rereads.assign(path=named))
    fragment = timelines_html([RunTimeline("r", "a run", (f,))])
    doc, layers = docs_of(fragment)
    defs = definitions(doc, {})
    assert source_of(defs, "ctx-tl-0|0|truth|0")["policy"][0] == named
    assert source_of(defs, "ctx-tl-0|0|rereads|0")["path"] == [named]
    assert layers[0]["truth"] == ["ctx-tl-0|0|truth|0"]
