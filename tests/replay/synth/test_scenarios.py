"""The seven failure scenarios of DESIGN.md section 6, replayed from the committed files.

Each test ingests ``logs/scenarios/<name>.jsonl``, replays it under the
scenario's original settings, its corrected side and the whole corrected
preset (``replay.synth.failure_cases``), and asserts that the failure shows under the
original settings and is gone (or shrinks by the stated amount) under the
corrected ones.  Every figure is derived here from the trace tables or the
store messages; none is copied from the generator.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from analysis import lint_placeholders
from replay.engine.fold import replay
from replay.engine.prepared import PreparedRun, prepare
from replay.engine.trace import Trace
from replay.ingest.parse_file import parse_file
from replay.policy import Policy
from replay.synth.embedded import CORPUS
from replay.synth.failure_cases import (
    CORRECTED,
    ORIGINAL,
    SCENARIOS,
    FailureScenario,
    scenario,
    write_scenarios,
)
from replay.synth.generate import synth_run

REPO = Path(__file__).resolve().parents[3]
SCENARIO_DIR = REPO / "logs" / "scenarios"
SIDES = ("original", "corrected", "corrected_preset")


@functools.cache
def ingested(name: str) -> tuple[PreparedRun, pa.Table]:
    """The committed file's one run, prepared, and its store message rows."""
    parsed = parse_file(SCENARIO_DIR / f"{name}.jsonl")
    assert parsed.tables is not None and not parsed.issues, parsed.issues
    t = parsed.tables
    assert t.runs.num_rows == 1
    run_id = t.runs["run_id"][0].as_py()
    return prepare(t.messages, t.requests, run_id), t.messages


@functools.cache
def replayed(name: str, *, rereads: bool = True) -> dict[str, tuple[Policy, Trace]]:
    """The run under each side of the scenario: (policy, trace).  ``rereads=False``: the
    recorded trajectory as it is (no induced re-reads, ``replay.engine.induced``) — for the
    scenarios that isolate one mechanism the seed measured on a fixed log."""
    run, _ = ingested(name)
    sides = scenario(name).policies().items()
    if not rereads:
        sides = [(side, dataclasses.replace(p, behaviour=dataclasses.replace(p.behaviour,
                                                                              rereads=False)))
                 for side, p in sides]
    return {side: (p, replay(run, p)) for side, p in sides}


def cols(trace: Trace, table: str) -> list[dict[str, Any]]:
    """A trace table as rows."""
    c = trace.columns(table)
    return [dict(zip(c, values)) for values in zip(*c.values())]


def overshoots(trace: Trace) -> list[dict[str, Any]]:
    """Requests that exceed the window (with the reserve counted)."""
    return [r for r in cols(trace, "requests") if r["overshoot_tokens"] > 0]


def actions(trace: Trace, *kinds: str) -> list[dict[str, Any]]:
    """Action rows of the given kinds."""
    return [a for a in cols(trace, "actions") if a["kind"] in kinds]


def largest_request(trace: Trace) -> dict[str, Any]:
    """The request with the most context (truth tokens); the first of equals."""
    return max(cols(trace, "requests"), key=lambda r: r["truth_tokens"])


def arg_share(r: dict[str, Any]) -> float:
    """Call-argument bytes over all bytes in context."""
    return r["bytes_args"] / (r["bytes_args"] + r["bytes_results"] + r["bytes_other"])


def request_of_block(run: PreparedRun, b: int) -> int:
    """The first request whose context holds block ``b``."""
    return next(k for k, hi in enumerate(run.req_blocks) if hi > b)


def evicted(trace: Trace) -> dict[tuple[int, int], dict[str, Any]]:
    """(msg, block) → its first eviction row."""
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for e in cols(trace, "evictions"):
        out.setdefault((e["msg"], e["block"]), e)
    return out


# -- the catalogue ----------------------------------------------------------------------------

def test_seven_scenarios_in_the_issues_order_each_with_a_distinct_policy_pair() -> None:
    assert [fs.number for fs in SCENARIOS] == list(range(1, 8))
    assert len({fs.name for fs in SCENARIOS}) == 7
    for fs in SCENARIOS:
        assert fs.failure and fs.metric and fs.expected
        policies = fs.policies()
        assert policies["original"].name == ORIGINAL
        assert policies["corrected_preset"].name == CORRECTED
        assert policies["corrected"].digest() != policies["original"].digest()
        # every side counts the generated run's system prompt, as the recorded usage does
        assert {p.server.fixed_overhead_tokens for p in policies.values()} == \
            {fs.scenario.system_overhead_tokens}


@pytest.mark.parametrize("fs", SCENARIOS, ids=lambda fs: fs.name)
def test_regenerating_a_scenario_gives_the_committed_file(fs: FailureScenario) -> None:
    committed = (SCENARIO_DIR / f"{fs.name}.jsonl").read_text(encoding="utf-8")
    assert synth_run(fs.scenario) == committed


def test_write_scenarios_writes_every_file_and_the_committed_readme(tmp_path: Path) -> None:
    paths = write_scenarios(tmp_path)
    assert [p.name for p in paths] == [f"{fs.name}.jsonl" for fs in SCENARIOS]
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == \
        (SCENARIO_DIR / "README.md").read_text(encoding="utf-8")
    assert not {fs.name for fs in SCENARIOS} & {s.name for s in CORPUS}


def test_the_scenario_files_stay_small() -> None:
    sizes = [p.stat().st_size for p in SCENARIO_DIR.glob("*.jsonl")]
    assert len(sizes) == 7 and sum(sizes) <= 8_000_000


# -- 1. a big output near the limit of a 32,768 window ------------------------------------------

def test_1_big_output_overshoots_after_send_but_not_with_a_check_before_sending() -> None:
    fs = SCENARIOS[0]
    run, _ = ingested(fs.name)
    sides = replayed(fs.name, rereads=False)  # the mechanism on the recorded trajectory
    big = max((b for b in range(run.n_blocks) if run.kind[b] == "tool_result"),
              key=lambda b: run.tokens["o200k_base"][b])
    assert run.tokens["o200k_base"][big] >= 12_000  # ~14,000 Claude tokens
    k = request_of_block(run, big)
    key = (run.msg[big], run.block[big])

    policy, trace = sides["original"]
    assert policy.server.window_tokens == 32_768 and all(t.when == "after" for t in policy.tiers)
    over = overshoots(trace)
    assert [r["request"] for r in over] == [k]  # only the request carrying the big output
    assert over[0]["truth_tokens"] - over[0]["window_tokens"] >= 1
    # protected as the newest output: still in context for the request after it
    assert evicted(trace).get(key, {"request": k + 2})["request"] > k + 1

    policy, trace = sides["corrected"]
    assert all(t.when == "before" for t in policy.tiers)
    assert overshoots(trace) == []
    assert evicted(trace).get(key, {"request": k + 1})["request"] > k  # the model sees it
    assert {a["request"] for a in actions(trace, "collapse", "collapse_trim")} == {k}
    assert overshoots(sides["corrected_preset"][1]) == []


# -- 2. the answer reserve in a turn of ~270 calls ---------------------------------------------

def test_2_reserve_overflows_unless_subtracted_exactly() -> None:
    fs = SCENARIOS[1]
    _run, messages = ingested(fs.name)
    kinds = messages["kind"].to_pylist()
    roles = messages["role"].to_pylist()
    assert sum(k == "tool_call" for k in kinds) >= 260
    assert sum(k == "text" and r == "user" for k, r in zip(kinds, roles)) == 1  # one turn
    sides = replayed(fs.name)

    policy, trace = sides["original"]
    limit = policy.server.window_tokens - policy.server.reserve_tokens
    assert (policy.server.window_tokens, policy.server.reserve_tokens) == (130_000, 24_576)
    assert not policy.subtract_reserve
    over = overshoots(trace)
    assert len(over) >= 1
    assert largest_request(trace)["truth_tokens"] > limit  # past 105,424
    # each request fits the window by itself: the reserve is what overflows
    assert all(r["truth_tokens"] <= r["window_tokens"] for r in over)
    assert all(r["overshoot_tokens"] <= r["reserve_tokens"] for r in over)

    policy, trace = sides["corrected"]
    assert policy.subtract_reserve and policy.usable_tokens == limit
    assert overshoots(trace) == []
    assert largest_request(trace)["truth_tokens"] <= limit
    assert overshoots(sides["corrected_preset"][1]) == []


# -- 3. an estimator 10 % low against a 10 % margin --------------------------------------------

def test_3_ten_percent_margin_fires_at_the_limit_twenty_percent_does_not() -> None:
    fs = SCENARIOS[2]
    sides = replayed(fs.name, rereads=False)  # the estimator's margin alone, on the fixed log

    def firing(trace: Trace) -> dict[str, Any]:
        """The request after which the emergency first fired (its cut applies to the next)."""
        q = actions(trace, "collapse")[0]["request"]
        return cols(trace, "requests")[q - 1]

    policy, trace = sides["original"]
    assert policy.estimator.scale == 0.9 and policy.tiers[2].margin_frac == 0.1
    fired = firing(trace)
    assert fired["truth_tokens"] >= 127_000  # "only at about 128,000 real tokens of 130,000"
    assert 0.90 <= fired["est_tokens"] / fired["truth_tokens"] <= 0.93  # 83,000 vs 91,000
    over = overshoots(trace)
    assert len(over) >= 1 and all(r["reserve_tokens"] == 0 for r in over)

    policy, trace = sides["corrected"]
    assert policy.estimator.scale == 0.9 and policy.tiers[2].margin_frac == 0.2
    assert firing(trace)["truth_tokens"] <= 120_000
    assert overshoots(trace) == []
    assert overshoots(sides["corrected_preset"][1]) == []


# -- 4. call arguments fill the window ---------------------------------------------------------

def test_4_write_arguments_fill_the_context_until_completed_writes_shrink() -> None:
    fs = SCENARIOS[3]
    run, _ = ingested(fs.name)
    sides = replayed(fs.name, rereads=False)  # the mechanism on the recorded trajectory

    def trimmed_kinds(trace: Trace) -> Counter[str]:
        index = {(run.msg[b], run.block[b]): b for b in range(run.n_blocks)}
        return Counter(run.kind[index[key]] for key, e in evicted(trace).items()
                       if e["fate"] == "trimmed")

    trace = sides["original"][1]
    peak = largest_request(trace)
    original_share = arg_share(peak)
    assert original_share >= 0.5
    assert peak["bytes_args"] >= 3 * peak["bytes_results"]  # "152 KB of arguments vs 38 KB"
    kinds = trimmed_kinds(trace)
    assert kinds["tool_result"] >= 1 and kinds["tool_call"] == 0

    trace = sides["corrected"][1]
    fixed = largest_request(trace)
    assert arg_share(fixed) <= original_share - 0.3
    assert fixed["bytes_args_write"] <= peak["bytes_args_write"] / 2
    assert trimmed_kinds(trace)["tool_call"] >= 1

    assert arg_share(largest_request(sides["corrected_preset"][1])) <= original_share - 0.2


# -- 5. the summary fires again soon after ----------------------------------------------------

def test_5_summary_refires_until_the_remainder_is_capped() -> None:
    fs = SCENARIOS[4]
    run, _ = ingested(fs.name)
    assert run.n_requests == 236
    sides = replayed(fs.name, rereads=False)  # the mechanism on the recorded trajectory

    policy, trace = sides["original"]
    summaries = actions(trace, "summarise")
    assert len(summaries) >= 10
    at = [a["request"] for a in summaries]
    assert (at[-1] - at[0]) / (len(at) - 1) <= 20  # "again about fifteen calls later"
    after = [a["context_after_tokens"] for a in summaries]
    assert all(45_000 <= c <= 65_000 for c in after), after  # "50,000 to 65,000 tokens"

    policy, trace = sides["corrected"]
    capped = actions(trace, "summarise")
    assert len(capped) < len(summaries)
    cap = policy.tiers[1].keep_max_frac * policy.usable_tokens  # in estimated tokens
    remainder = [a["context_after_tokens"] - policy.server.fixed_overhead_tokens
                 - a["summary_tokens"] for a in capped]
    assert max(remainder) <= cap / policy.estimator.scale + 50
    assert statistics.mean(a["context_after_tokens"] for a in capped) < statistics.mean(after)

    assert len(actions(sides["corrected_preset"][1], "summarise")) <= len(summaries) / 2


# -- 6. a placeholder inviting the model to call again ----------------------------------------

def test_6_recall_placeholder_sits_next_to_a_read_loop_and_the_lint_flags_it() -> None:
    fs = SCENARIOS[5]
    _run, messages = ingested(fs.name)
    rows = messages.select(["msg", "block", "kind", "role", "op", "path"]).to_pylist()
    reads = Counter(r["path"] for r in rows if r["kind"] == "tool_result" and r["op"] == "read")
    path, n = reads.most_common(1)[0]
    assert n >= 55
    copies = [r for r in rows if r["kind"] == "tool_result" and r["op"] == "read"
              and r["path"] == path]
    prompts = [r["msg"] for r in rows if r["role"] == "user" and r["kind"] == "text"]
    assert not [m for m in prompts if copies[0]["msg"] < m < copies[-1]["msg"]]  # one turn
    sides = replayed(fs.name)

    def inviting_copies(policy: Policy, trace: Trace) -> int:
        flagged = {policy.tiers[int(f.split(".")[1])].name for f in lint_placeholders(policy)}
        ev = evicted(trace)
        return sum(1 for c in copies if ev.get((c["msg"], c["block"]), {}).get("tier") in flagged)

    policy, trace = sides["original"]
    lint = lint_placeholders(policy)
    assert lint and lint[0].startswith("tiers.0.placeholder")
    assert inviting_copies(policy, trace) >= 40

    policy, trace = sides["corrected"]
    assert lint_placeholders(policy) == []
    assert inviting_copies(policy, trace) == 0
    assert lint_placeholders(sides["corrected_preset"][0]) == []


# -- 7. small trims invalidate the cache -------------------------------------------------------

def test_7_small_trims_cost_the_cache_until_a_minimum_reclaim_undoes_them() -> None:
    fs = SCENARIOS[6]
    sides = replayed(fs.name, rereads=False)  # the mechanism on the recorded trajectory

    policy, trace = sides["original"]
    eighth = policy.usable_tokens // 8
    applied = [a for a in actions(trace, "trim") if not a["undone"]]
    assert len(applied) >= 30
    assert all(a["reclaimed_est_tokens"] < eighth for a in applied)
    reclaimed = sum(a["reclaimed_tokens"] for a in applied)
    invalidated = sum(a["invalidated_tokens"] for a in applied)
    assert invalidated >= 10 * reclaimed

    policy, trace = sides["corrected"]
    trims = actions(trace, "trim")
    kept = [a for a in trims if not a["undone"]]
    assert kept and all(a["reclaimed_est_tokens"] >= eighth for a in kept)
    assert any(a["undone"] for a in trims)
    assert sum(a["invalidated_tokens"] for a in kept) <= invalidated / 4
    assert sum(r["invalidated_tokens"] for r in cols(trace, "requests")) <= \
        sum(r["invalidated_tokens"] for r in cols(sides["original"][1], "requests")) / 4


def test_write_generated_is_what_replay_synth_writes(tmp_path: Path) -> None:
    """``replay synth`` is one library call (#14 item 5): ``write_generated``."""
    from typer.testing import CliRunner

    from replay.cli import app
    from replay.errors import ReplayInputError
    from replay.synth.failure_cases import SCENARIOS, write_generated

    name = SCENARIOS[0].name
    assert write_generated(tmp_path, [name]) == [tmp_path / "scenarios" / f"{name}.jsonl"]
    assert (tmp_path / "scenarios" / "README.md").is_file()
    with pytest.raises(ReplayInputError, match="no scenario named \\['nope'\\]"):
        write_generated(tmp_path, ["nope"])
    res = CliRunner().invoke(app, ["synth", "--out", str(tmp_path / "cli"), "--only", name])
    assert res.exit_code == 0 and f"{name}.jsonl" in res.output
    assert (tmp_path / "cli" / "scenarios" / f"{name}.jsonl").read_bytes() == \
        (tmp_path / "scenarios" / f"{name}.jsonl").read_bytes()
    bad = CliRunner().invoke(app, ["synth", "--out", str(tmp_path / "x"), "--only", "nope"])
    assert bad.exit_code == 2 and "no scenario named ['nope']" in bad.output


def test_synth_writes_nothing_through_a_symlink_in_its_output_folder(tmp_path: Path) -> None:
    """A symlink planted at OUT/scenarios was followed: the scenarios (and their README) were
    written wherever it pointed, exit 0; a file at OUT was "OUT: File exists".  Both are one
    line and exit 2, as every command's output folder."""
    from typer.testing import CliRunner

    from replay.cli import app
    from replay.synth.failure_cases import SCENARIOS

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "scenarios").symlink_to(elsewhere)
    res = CliRunner().invoke(app, ["synth", "--out", str(out), "--only", SCENARIOS[0].name])
    assert res.exit_code == 2, res.output
    assert "is a symlink" in res.output and list(elsewhere.iterdir()) == []
    (tmp_path / "file").write_text("x")
    res = CliRunner().invoke(app, ["synth", "--out", str(tmp_path / "file"), "--only",
                                   SCENARIOS[0].name])
    assert res.exit_code == 2 and "exists and is not a folder" in res.output, res.output


@pytest.mark.parametrize("area", ["dataset", "sweep_cache"])
def test_synth_never_writes_into_the_project_cache(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   area: str) -> None:
    """Every command keeps its outputs out of the project cache's dataset and sweep cache
    (``replay.output_targets``); ``synth --out .ctxreplay/dataset`` wrote its logs and README
    among the store's files, exit 0.  Now exit 2, nothing written."""
    from typer.testing import CliRunner

    from replay.cli import app
    from replay.synth.failure_cases import SCENARIOS

    monkeypatch.setenv("CTXREPLAY_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "cache" / area / "logs"
    res = CliRunner().invoke(app, ["synth", "--out", str(out), "--only", SCENARIOS[0].name])
    assert res.exit_code == 2, res.output
    assert "project cache" in res.output and not out.exists()
