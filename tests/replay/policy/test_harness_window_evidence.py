"""Claude Code's window follows what the transcript records (#26 item 6, the model's window): the
assistant records name the API model id without the ``[1m]`` the user chose, so a session on a
1M window shows only in its usage — a prompt over 200,000 tokens cannot have been sent to a
200,000 window.  Such a run is replayed under 1,000,000 (level 967,000), and the output says
which window it got and why.

The run is real-shaped: the real 2.1.157 TraceLab fixture (claude-opus-4-8, CC BY 4.0) with its
version field set to 2.1.219 and every usage figure multiplied by 8 (its largest prompt, 49,303
tokens, becomes 394,424 here: a long 1M session's growth), written to tmp.  The prompts expected
here come from a plain walk of the changed records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.fidelity import fidelity
from analysis.per_run.rollup import RUN_ROLLUP
from replay.apply_policy import run
from replay.corpus import open_corpus
from replay.engine.fold import replay
from replay.policy import load_policy
from replay.policy.harness import largest_prompt, resolve
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "claude_code" / "tracelab-claude-session-01-2.1.157.jsonl"
USAGE = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
         "output_tokens")


def _records(factor: int) -> list[dict[str, Any]]:
    out = []
    for line in FIXTURE.read_text().splitlines():
        r = json.loads(line)
        if "version" in r:
            r["version"] = "2.1.219"
        u = (r.get("message") or {}).get("usage") if r.get("type") == "assistant" else None
        if isinstance(u, dict):
            for k in USAGE:
                if isinstance(u.get(k), int):
                    u[k] *= factor
        out.append(r)
    return out


def _largest(recs: list[dict[str, Any]]) -> int:
    return max(sum(r["message"]["usage"].get(k, 0) for k in USAGE[:3])
               for r in recs if r.get("type") == "assistant")


def _open(tmp_path: Path, factor: int) -> tuple[Any, list[dict[str, Any]]]:
    recs = _records(factor)
    path = tmp_path / f"session-x{factor}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return open_corpus([path], cache_dir=tmp_path / f"c{factor}"), recs


def test_a_prompt_over_200k_means_a_1m_window(tmp_path: Path) -> None:
    corpus, recs = _open(tmp_path, 8)
    biggest = _largest(recs)
    assert biggest > 200_000  # read from the changed records
    model = next(r["message"]["model"] for r in recs if r.get("type") == "assistant")
    assert "[1m]" not in model and not model.startswith("claude-opus-5")
    [rid] = corpus.run_ids
    prepared = corpus.prepared(rid)
    assert largest_prompt(prepared.recorded_input) == biggest
    r = resolve(load_policy("claude-code"), prepared.harness, prepared.model, biggest)
    assert (r.policy.server.window_tokens, r.level_tokens) == (1_000_000, 967_000)
    # replayed under its own window: never past 967,000, so never compacted (under 200,000 the
    # preset compacts once the context passes 167,000)
    trace = replay(prepared, load_policy("claude-code"), calibration=corpus.calibration(rid))
    assert not [k for k in trace.columns("actions")["kind"] if k == "summarise"]
    # the output says which window and why: replay run's note, fidelity's trigger basis
    [row] = run(corpus, load_policy("claude-code"), rollup=RUN_ROLLUP).rollup
    assert row["note"].startswith("autocompact at 967,000: claude-code 2.1.219")
    assert f"a recorded prompt of {biggest:,} tokens is over 200,000" in row["note"]
    [f] = fidelity(corpus)
    assert f.policy_trigger_tokens == 967_000 and "1,000,000 window" in f.trigger_basis
    assert not f.not_judged_reason


def test_prompts_within_200k_keep_the_default_window(tmp_path: Path) -> None:
    corpus, recs = _open(tmp_path, 4)  # largest prompt 197,212: still the 200k window
    assert 167_000 < _largest(recs) <= 200_000
    [rid] = corpus.run_ids
    prepared = corpus.prepared(rid)
    r = resolve(load_policy("claude-code"), prepared.harness, prepared.model,
                largest_prompt(prepared.recorded_input))
    assert (r.policy.server.window_tokens, r.level_tokens) == (200_000, 167_000)
    [row] = run(corpus, load_policy("claude-code"), rollup=RUN_ROLLUP).rollup
    assert row["note"] is None or "over 200,000" not in row["note"]
