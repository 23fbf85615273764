"""Cline's duplicate-file-read removal in the ``cline`` preset (``Collapse.older_reads``): when
the truncation fires, every read of a file but the newest read of that file becomes Cline's
notice, and the truncation is skipped when that saved at least 30 % of the live context's bytes
(``ContextManager.getNewContextMessagesAndMetadata`` @01cfde0).  The expected blocks and the
saving are worked out here from the rule, over hand-built runs that re-read a few files."""

from __future__ import annotations

import pytest

from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun
from replay.policy import Collapse, load_policy, replace_path
from replay.policy.tier_model import DUPLICATE_READ_NOTICE
from tests.replay.engine.tier_runs import context_end, evicted, session

LEVEL = 200_000 - 40_000  # Cline's maxAllowedSize on a 200k window


def _reads(files: list[int]) -> PreparedRun:
    """A task, then one read of 200 lines per entry of ``files`` (the file ``src/f{n}.py``),
    each call a request's output, then a final answer."""
    return session([200] * len(files), files=files)


def _first_over(run: PreparedRun) -> int:
    tokens = run.tokens["o200k_base"]
    return next(k for k in range(run.n_requests) if sum(tokens[:context_end(run, k)]) >= LEVEL)


def _older(run: PreparedRun, k: int) -> list[int]:
    """The result blocks in request ``k``'s context that a later result of the same file
    follows (the newest message's block never among them)."""
    hi = context_end(run, k)
    results = [b for b in range(hi) if run.kind[b] == "tool_result"]
    later = {run.path[b]: b for b in results}  # the last result of each file
    return [b for b in results if later[run.path[b]] != b]


def test_the_preset_carries_clines_notice_and_its_30_percent() -> None:
    (tier,) = load_policy("cline").tiers
    assert isinstance(tier, Collapse) and tier.older_reads is not None
    assert tier.older_reads.notice.startswith("[[NOTE] This file read has been removed")
    assert tier.older_reads.notice == DUPLICATE_READ_NOTICE
    assert tier.older_reads.enough_frac == 0.3


def test_re_reads_of_few_files_are_replaced_and_nothing_is_truncated() -> None:
    run = _reads([i % 4 for i in range(80)])  # four files read in turn: most reads are older
    k = _first_over(run)
    trace = replay(run, load_policy("cline"))
    acts = [a for a in trace.actions.to_pylist() if a["request"] == k and not a["undone"]]
    assert [a["kind"] for a in acts] == ["collapse_trim"]
    older = _older(run, k)
    assert len(older) == acts[0]["n_blocks"] > 0
    assert [b for b in evicted(run, trace, "trimmed")][:len(older)] == older
    assert not [b for b in evicted(run, trace, "dropped")
                if b < context_end(run, k)]  # nothing truncated at k
    # the saving that decided it, from the blocks' own sizes: well over 30 %
    hi = context_end(run, k)
    saved = sum(run.n_bytes[b] for b in older) - len(older) * len(DUPLICATE_READ_NOTICE)
    assert saved / sum(run.n_bytes[:hi]) >= 0.3
    # the newest read of each file stays whole
    newest = {run.path[b]: b for b in range(hi) if run.kind[b] == "tool_result"}
    assert len(newest) == 4 and not set(newest.values()) & set(evicted(run, trace))


def test_a_small_saving_replaces_the_reads_and_truncates_as_well() -> None:
    run = _reads([0, 1, 0, 1, *range(2, 80)])  # two files read twice early on: a small saving
    k = _first_over(run)
    older = _older(run, k)
    assert len(older) == 2
    trace = replay(run, load_policy("cline"))
    acts = [a for a in trace.actions.to_pylist() if a["request"] == k and not a["undone"]]
    assert [(a["kind"], a["n_blocks"]) for a in acts] == [("collapse_trim", 2),
                                                          ("collapse", acts[1]["n_blocks"])]
    assert evicted(run, trace, "trimmed")[:2] == older


def test_without_older_reads_the_preset_truncates_at_once() -> None:
    run = _reads([i % 4 for i in range(80)])
    k = _first_over(run)
    p = replace_path(load_policy("cline"), "tiers.0.older_reads", None)
    acts = [a for a in replay(run, p).actions.to_pylist() if a["request"] == k]
    assert [a["kind"] for a in acts] == ["collapse"]


@pytest.mark.parametrize("enough", [0.0, 1.0])
def test_the_threshold_decides_whether_to_truncate(enough: float) -> None:
    run = _reads([i % 4 for i in range(80)])
    k = _first_over(run)
    p = replace_path(load_policy("cline"), "tiers.0.older_reads.enough_frac", enough)
    kinds = [a["kind"] for a in replay(run, p).actions.to_pylist() if a["request"] == k]
    assert kinds == (["collapse_trim"] if enough == 0.0 else ["collapse_trim", "collapse"])
