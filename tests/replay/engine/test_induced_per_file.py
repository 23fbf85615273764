"""An induced re-read is one per file (``replay.engine.induced.file_in_context``): where the
recorded run needs a removed read of a file, the agent does not read the file again while a newer
read of the whole file is in its context untrimmed, and does not read it twice at one request.

Checked on the real samples against the trace's own tables and the raw call arguments: which
block each re-read was made for (its action's message), which recorded blocks were gone by its
request (the evictions table), which reads were of the whole file (no range argument, read from
the call's JSON here, not by the engine's test)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from replay.engine.fold import replay
from replay.engine.trace import INDUCED_REREAD
from replay.policy import load_policy
from tests.replay.engine.raw_reads import read_whole


def _file_reads(run) -> dict[int, tuple[str, bool]]:  # type: ignore[no-untyped-def]
    """Read result block → (its file as the call names it, whether the call read it whole)."""
    out = {}
    for b in range(run.n_blocks):
        call = run.call_of[b]
        if run.kind[b] != "tool_result" or call < 0 or run.op[call] != "read" or run.is_error[b]:
            continue
        try:
            args = json.loads(run.text[call])
        except ValueError:
            continue
        if not isinstance(args, dict) or not run.path[call]:
            continue
        out[b] = (run.path[call].strip(), read_whole(args, run.text[call]))
    return out


@pytest.mark.parametrize("name", ["two-tier-corrected", "two-tier-original", "corecoder",
                                  "observation-masking"])
def test_no_file_is_re_read_while_it_is_in_the_context_whole(sample_corpus, name) -> None:  # type: ignore[no-untyped-def]
    policy = load_policy(name)
    judged = 0
    for rid in sample_corpus.replayable():
        run = sample_corpus.prepared(rid)
        trace = replay(run, policy, calibration=sample_corpus.calibration(rid))
        reads = _file_reads(run)
        gone: dict[int, int] = {}
        index = {(run.msg[b], run.block[b]): b for b in range(run.n_blocks)}
        for e in trace.evictions.to_pylist():
            if not e["induced"]:
                b = index[(e["msg"], e["block"])]
                gone[b] = min(gone.get(b, 10**9), e["request"])
        at_request: Counter[tuple[int, str]] = Counter()
        for a in trace.actions.to_pylist():
            if a["kind"] != INDUCED_REREAD or a["undone"] or a["when"] != "need":
                continue
            files = {reads[b][0] for b in range(run.n_blocks)
                     if run.msg[b] == a["first_msg"] and b in reads}
            if len(files) != 1:
                continue  # not a read of one file (a re-issued command), or ambiguous
            (file,) = files
            first = min(b for b in reads if run.msg[b] == a["first_msg"])
            k = a["request"]
            whole_in_context = [o for o, (f, whole) in reads.items()
                                if f == file and whole and first < o < run.req_blocks[k]
                                and gone.get(o, 10**9) > k]
            assert not whole_in_context, (name, rid, k, file)
            at_request[(k, file)] += 1
            judged += 1
        assert all(n == 1 for n in at_request.values()), (name, rid)
    assert judged >= 5  # the samples exercise it
