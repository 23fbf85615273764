"""RunBuilder keeps a run's message rows as columns (moved from tuples a chunk at a time): what
a parser gets back is the same whatever the chunk boundaries, rewinds and branches."""

from __future__ import annotations

import json
from array import array

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from replay.ingest.arrow_columns import column
from replay.ingest.parsers import builder
from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.source import Source

N = builder._CHUNK_ROWS


def _builder() -> RunBuilder:
    return RunBuilder(Source(path="f", rel="f", data=b"", sha256="0" * 64), 0, "chat", [])


def _messages(rb: RunBuilder, first: int, last: int) -> None:
    """Messages ``first..last``: message k holds k % 3 + 1 text blocks ``k.b``."""
    for k in range(first, last):
        rb.message("user" if k % 2 else "assistant")
        for b in range(k % 3 + 1):
            rb.text(f"{k}.{b}")


def _expected(last: int) -> tuple[list[int], list[int], list[str]]:
    msgs, blocks, texts = [], [], []
    for k in range(last):
        for b in range(k % 3 + 1):
            msgs.append(k)
            blocks.append(b)
            texts.append(f"{k}.{b}")
    return msgs, blocks, texts


def test_columns_across_chunks_equal_the_rows_added() -> None:
    rb = _builder()
    _messages(rb, 0, N)  # 2N blocks: past two chunk boundaries
    assert rb.n_blocks == len(_expected(N)[0])
    m = rb.build().messages
    msgs, blocks, texts = _expected(N)
    assert list(m["msg"]) == msgs and list(m["block"]) == blocks and m["text"] == texts
    assert m["role"] == ["user" if k % 2 else "assistant" for k in msgs]


def test_rewind_and_branch_across_a_chunk_boundary() -> None:
    rb = _builder()
    _messages(rb, 0, N)
    cut = N // 2 + 7  # a message whose blocks were moved into the columns already
    branch = rb.branch(1, "abandoned-1")
    assert rb.rewind(cut) == (N - cut, 0)
    assert rb.n_blocks == len(_expected(cut)[0])
    rb.text("more")  # goes on in the last message kept, after its blocks
    _messages(rb, cut, cut + 5)
    m = rb.build().messages
    msgs, blocks, texts = _expected(cut)
    last = cut - 1
    msgs, blocks, texts = msgs + [last], blocks + [last % 3 + 1], texts + ["more"]
    tail = _expected(cut + 5)
    k0 = len(_expected(cut)[0])
    assert list(m["msg"]) == msgs + tail[0][k0:]
    assert list(m["block"]) == blocks + tail[1][k0:]
    assert m["text"] == texts + tail[2][k0:]
    b = branch.build().messages  # the copy taken before the rewind is whole
    assert (list(b["msg"]), list(b["block"]), b["text"]) == _expected(N)


def test_an_int64_array_column_equals_pa_array() -> None:
    values = [0, -1, 2**63 - 1, -(2**63), 42]
    assert column(array("q", values), pa.int64()).equals(pa.array(values, pa.int64()))


def test_calls_of_one_tool_share_one_tool_name() -> None:
    """Each call's tool name arrives as a string of its own (as a decoder gives it); the run's
    rows hold one string per (tool, op, path), the results theirs too, the values unchanged."""
    rb = _builder()
    for i in range(3):
        rb.message("assistant")
        rb.tool_call(f"c{i}", json.loads('"Bash"'), {"command": "ls"})  # a new string each
        rb.message("tool")
        rb.tool_result(f"c{i}", "out")
    rb.message("assistant")
    rb.tool_call("r", json.loads('"Read"'), {"file_path": "/a.py"})
    msgs = rb.build().messages
    assert msgs["tool"] == ["Bash"] * 6 + ["Read"]
    assert len({id(t) for t in msgs["tool"][:6]}) == 1
    assert msgs["op"][-1] == "read" and msgs["path"][-1] == "/a.py"


@given(st.lists(st.integers(0, 12), max_size=12), st.lists(st.integers(0, 14), max_size=12))
def test_each_events_request_is_the_first_made_from_its_message_on(
        outputs: list[int], events: list[int]) -> None:
    """An event's ``request`` is the first request whose output message is at or after the
    event's message (None: none), whatever order the requests' outputs were recorded in; the
    events are numbered in order of their messages."""
    rb = _builder()
    for out in outputs:
        rb.request(output_msg=out)
    for msg in events:
        rb.event("compaction", msg=msg)
    got = rb.build().events
    assert got["msg"] == sorted(events)
    assert got["event"] == list(range(len(events)))
    assert got["request"] == [next((k for k, out in enumerate(outputs) if out >= msg), None)
                              for msg in sorted(events)]
