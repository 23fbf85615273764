"""Re-reads: classes, loops, identical repeats on hand-built frames; properties on real traces."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from matplotlib.axes import Axes

from analysis import frames
from analysis.rereads import (
    CLASSES,
    REREADS_COLUMNS,
    lint_placeholders,
    plot_rereads,
    rereads,
    rereads_summary,
)
from replay.corpus import Corpus
from replay.engine.trace import Trace
from replay.policy import load_policy, policy_from_dict, policy_to_dict

P = "p"


def call(msg: int, cid: str, path: str = "a.py", *, op: str = "read", tool: str = "Read",
         text: str | None = None, block: int = 0) -> dict[str, Any]:
    return {"run_id": "r", "msg": msg, "block": block, "kind": "tool_call", "call_id": cid,
            "tool": tool, "op": op, "path": path,
            "text": text if text is not None else f'{{"file_path": "{path}"}}',
            "tokens_o200k": 10, "is_error": False}


def result(msg: int, cid: str, tokens: int = 100, *, error: bool = False,
           block: int = 0) -> dict[str, Any]:
    return {"run_id": "r", "msg": msg, "block": block, "kind": "tool_result", "call_id": cid,
            "tool": "", "op": "", "path": "", "text": "...", "tokens_o200k": tokens,
            "is_error": error}


def steps(*calls: dict[str, Any],
          tokens: tuple[int, ...] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One call per request: call k in message 2k+1, its result in 2k+2."""
    rows, outs = [], []
    for k, c in enumerate(calls):
        m = 2 * k + 1
        rows.append({**c, "msg": m, "call_id": f"c{k}"})
        rows.append(result(m + 1, f"c{k}", tokens[k] if k < len(tokens) else 100))
        outs.append(m)
    return pd.DataFrame(rows), requests_for(outs)


def requests_for(outs: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"run_id": "r", "request": range(len(outs)), "output_msg": outs})


def evictions(*rows: tuple[int, int, str]) -> pd.DataFrame:
    """(msg, request, fate) rows for block 0 of run r under policy p."""
    return pd.DataFrame({"run_id": "r", "policy": P, "msg": [m for m, _, _ in rows], "block": 0,
                         "request": [q for _, q, _ in rows], "tier": "t",
                         "fate": [f for _, _, f in rows]},
                        columns=["run_id", "policy", "msg", "block", "request", "tier", "fate"])


NONE = evictions()


def classes(df: pd.DataFrame) -> list[str]:
    return df["reread_class"].tolist()


def test_edge_no_reads() -> None:
    msgs, reqs = steps(call(0, "", "", op="exec", tool="Bash", text="ls"),
                       call(0, "", "", op="exec", tool="Bash", text="pwd"))
    df = rereads(msgs, reqs, NONE, policies=[P])
    assert df.empty
    keys = pd.DataFrame({"run_id": ["r"], "policy": [P]})
    s = rereads_summary(df, keys=keys)
    assert len(s) == 1
    assert s.filter(like="rereads_").eq(0).all(axis=None)


def test_edge_path_read_once() -> None:
    msgs, reqs = steps(call(0, "", "a.py"), call(0, "", "b.py"))
    df = rereads(msgs, reqs, NONE, policies=[P])
    assert classes(df) == ["first", "first"]
    s = rereads_summary(df)
    assert (s["rereads_n_reads"].item(), s["rereads_n"].item()) == (2, 0)


def test_redundant_when_previous_result_still_in_context() -> None:
    msgs, reqs = steps(call(0, "", "a.py"), call(0, "", "a.py"), tokens=(100, 250))
    df = rereads(msgs, reqs, NONE, policies=[P])
    assert classes(df) == ["first", "redundant"]
    again = df.iloc[1]
    assert (again["request"], again["prev_request"], again["prev_msg"]) == (1, 0, 1)
    assert bool(again["prev_in_context"]) and bool(again["same_args"])
    assert again["result_tokens"] == 250
    assert rereads_summary(df)["rereads_tokens_redundant"].item() == 250


@pytest.mark.parametrize(("evicted_before_request", "expected"),
                         [(1, "eviction_induced"), (0, "eviction_induced"), (2, "redundant")])
def test_boundary_eviction_before_the_reread(evicted_before_request: int, expected: str) -> None:
    """First result (message 2) evicted before request 0 or 1 → induced; before 2 → not."""
    msgs, reqs = steps(call(0, "", "a.py"), call(0, "", "a.py"))
    df = rereads(msgs, reqs, evictions((2, evicted_before_request, "trimmed")))
    assert classes(df) == ["first", expected]
    if expected == "eviction_induced":
        assert df.iloc[1]["evicted_fate"] == "trimmed"
        assert rereads_summary(df)["rereads_n_evicted_trimmed"].item() == 1


def test_refresh_takes_precedence_over_eviction() -> None:
    msgs, reqs = steps(call(0, "", "a.py"), call(0, "", "a.py", op="edit", tool="Edit", text="x"),
                       call(0, "", "a.py"))
    df = rereads(msgs, reqs, evictions((2, 1, "summarised")))
    assert classes(df[df["is_read"]]) == ["first", "refresh"]


def test_write_to_another_path_is_no_refresh() -> None:
    msgs, reqs = steps(call(0, "", "a.py"), call(0, "", "b.py", op="write", tool="Write", text="x"),
                       call(0, "", "a.py"))
    assert classes(rereads(msgs, reqs, NONE, policies=[P])) == ["first", "redundant"]


def test_retry_after_an_error_result() -> None:
    msgs, reqs = steps(call(0, "", "a.py"), call(0, "", "a.py"))
    msgs.loc[1, "is_error"] = True
    assert classes(rereads(msgs, reqs, NONE, policies=[P])) == ["first", "retry"]


def test_edge_two_reads_issued_together() -> None:
    """Both calls in one assistant message: redundant, though the first result had not arrived."""
    msgs = pd.DataFrame([call(1, "c0", "a.py"), call(1, "c1", "a.py", block=1),
                         result(2, "c0"), result(2, "c1", block=1)])
    df = rereads(msgs, requests_for([1, 3]), NONE, policies=[P])
    assert classes(df) == ["first", "redundant"]
    assert not df.iloc[1]["prev_in_context"]


@pytest.mark.parametrize(("read_requests", "n_loops", "loop_reads"), [
    ([0, 4, 9], 1, 3),            # span 9 < 10: a loop
    ([0, 5, 10], 0, 0),           # span 10: not within 10 requests
    ([0, 1, 2, 8, 9], 1, 5),      # overlapping windows merge
    ([0, 1, 2, 30, 31, 32], 2, 6),  # two bursts, two loops
    ([0, 1], 0, 0),               # fewer than k
])
def test_boundary_loops(read_requests: list[int], n_loops: int, loop_reads: int) -> None:
    n = max(read_requests) + 1
    calls = [call(0, "", "a.py") if k in read_requests
             else call(0, "", "", op="exec", tool="Bash", text=f"echo {k}") for k in range(n)]
    msgs, reqs = steps(*calls)
    s = rereads_summary(rereads(msgs, reqs, NONE, policies=[P]))
    assert (s["rereads_n_loops"].item(), s["rereads_loop_reads"].item()) == (n_loops, loop_reads)


def test_loop_parameters() -> None:
    msgs, reqs = steps(*[call(0, "", "a.py")] * 2)
    s = rereads_summary(rereads(msgs, reqs, NONE, policies=[P], loop_k=2, loop_window_requests=1))
    assert s["rereads_n_loops"].item() == 0  # requests 0 and 1 are not within 1 request
    s = rereads_summary(rereads(msgs, reqs, NONE, policies=[P], loop_k=2, loop_window_requests=2))
    assert s["rereads_n_loops"].item() == 1


def test_identical_repeats_and_unchanged_ones() -> None:
    bash = {"op": "exec", "tool": "Bash", "path": ""}
    msgs, reqs = steps(call(0, "", text="pytest", **bash), call(0, "", text="ls", **bash),
                       call(0, "", text="ls", **bash),
                       call(0, "", "a.py", op="edit", tool="Edit", text="e"),
                       call(0, "", text="pytest", **bash))
    df = rereads(msgs, reqs, NONE, policies=[P])
    assert df["request"].tolist() == [2, 4]  # only the repeats are rows (no reads here)
    assert df["is_identical_repeat"].all()
    assert df["is_unchanged_repeat"].tolist() == [True, False]  # an edit came before 2nd pytest
    s = rereads_summary(df)
    assert (s["rereads_n_identical"].item(), s["rereads_n_identical_unchanged"].item()) == (2, 1)
    assert s["rereads_n_reads"].item() == 0


def test_one_row_set_per_policy() -> None:
    msgs, reqs = steps(call(0, "", "a.py"), call(0, "", "a.py"))
    df = rereads(msgs, reqs, NONE, policies=["x", "y"])
    assert sorted(set(df["policy"])) == ["x", "y"]
    assert len(rereads_summary(df)) == 2


def test_runs_interleaved_in_any_row_order_and_dtype_give_the_same_rows() -> None:
    """Each run's calls are taken in (msg, block) order whatever the frame's row order, runs
    apart however their rows interleave, from NumPy or Arrow-backed columns alike."""
    bash = {"op": "exec", "tool": "Bash", "path": ""}
    msgs, reqs = steps(call(0, "", "a.py"), call(0, "", "a.py"), call(0, "", text="ls", **bash),
                       call(0, "", "a.py", op="edit", tool="Edit", text="e"),
                       call(0, "", "a.py"), call(0, "", text="ls", **bash), call(0, "", "a.py"))
    ev = evictions((10, 5, "trimmed"))  # run r: the third read's result, before the fourth
    runs = [(msgs.assign(run_id=rid), reqs.assign(run_id=rid)) for rid in ("r", "s")]
    want = pd.concat([rereads(m, q, ev, policies=[P]) for m, q in runs], ignore_index=True)
    two = pd.concat([m for m, _ in runs], ignore_index=True)
    reqs = pd.concat([q for _, q in runs], ignore_index=True)
    assert sorted(set(want["reread_class"])) == ["", "eviction_induced", "first", "redundant",
                                                 "refresh"]
    shuffled = two.iloc[[k for pair in zip(range(13, -1, -1), range(27, 13, -1))
                         for k in pair]]  # r and s alternate, each backwards
    order = ["run_id", "msg", "block"]
    for frame in (shuffled, shuffled.convert_dtypes(dtype_backend="pyarrow")):
        got = rereads(frame, reqs, ev, policies=[P])
        pd.testing.assert_frame_equal(got.sort_values(order, ignore_index=True),
                                      want.sort_values(order, ignore_index=True))


def test_needs_policies_and_text() -> None:
    msgs, reqs = steps(call(0, "", "a.py"))
    with pytest.raises(ValueError, match="policies"):
        rereads(msgs, reqs, NONE)
    with pytest.raises(ValueError, match="text"):
        rereads(msgs.drop(columns=["text"]), reqs, NONE, policies=[P])


def test_lint_flags_the_original_placeholder_only() -> None:
    found = lint_placeholders(load_policy("two-tier-original"))
    assert len(found) == 1 and found[0].startswith("tiers.0.placeholder.template")
    assert lint_placeholders(load_policy("two-tier-corrected")) == []


@pytest.mark.parametrize(("template", "flagged"), [
    ("[output cut. Call the tool again to see the full output.]", True),
    ("[truncated; call read_file again if you need it]", True),
    ("[{tool} output removed - re-run the command for details]", True),
    ("[long file; read the file again to see it]", True),
    ("[trimmed; reread {path} when needed]", True),
    ("[retry the call to get the rest]", True),
    ("[{tool} call {call_id} on {path}: output shortened, {lines} lines in full]", False),
    ("[{tool} output trimmed: {lines} lines, {chars} chars]", False),
])
def test_lint_phrasings(template: str, flagged: bool) -> None:
    doc = policy_to_dict(load_policy("two-tier-corrected"))
    doc["tiers"][0]["placeholder"]["template"] = template
    assert bool(lint_placeholders(policy_from_dict(doc))) == flagged


def test_plot_rereads() -> None:
    msgs, reqs = steps(call(0, "", "a.py"), call(0, "", "a.py"))
    ax = plot_rereads(rereads(msgs, reqs, NONE, policies=[P]))
    assert isinstance(ax, Axes)
    assert ax.get_xlabel() == "policy" and "count" in ax.get_ylabel()


def test_real_traces_consistent(sample_corpus: Corpus, both_trace: Trace) -> None:
    msgs = frames.messages_df(sample_corpus, REREADS_COLUMNS, kinds=("tool_call", "tool_result"))
    ev = frames.evictions_df(both_trace)
    df = rereads(msgs, frames.recorded_requests_df(sample_corpus), ev)
    s = rereads_summary(df, keys=frames.requests_df(both_trace))
    assert (s["rereads_n"] == s[[f"rereads_n_{c}" for c in CLASSES]].sum(axis=1)).all()
    assert (s["rereads_n_eviction_induced"]
            == s[["rereads_n_evicted_trimmed", "rereads_n_evicted_summarised",
                  "rereads_n_evicted_dropped"]].sum(axis=1)).all()
    assert set(df["reread_class"]) <= {"first", "", *CLASSES}
    # reads do not depend on the policy; only their classes do
    per_policy = s.groupby("policy")[["rereads_n_reads", "rereads_n", "rereads_n_loops"]].sum()
    assert per_policy.nunique().eq(1).all()
    # every eviction-induced re-read has an eviction of the previous result before it
    induced = df[df["reread_class"] == "eviction_induced"]
    assert len(induced) > 0
    assert (induced["evicted_fate"] != "").all()
