"""``replay check``'s usage and configuration errors: a missing baseline, bad tolerances or
policies, a policy missing from the baseline and two policies of one name all exit 2 with one
line naming what is wrong.  A baseline that is there but damaged (not JSON, a value of the wrong
type or one no replay measures) is an input that failed, as a damaged dataset is: exit 1, with
the same one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.analysis.check.check_helpers import RUN, _cli, _flat


@pytest.mark.parametrize(("text", "message"), [
    ('{"format": 1, "trace_version": "1",', "not a valid baseline (invalid JSON at line 1"),
    ("[]", "(top): expected a mapping, got list"),
])
def test_malformed_baseline_exits_1(store: Path, files: dict[str, Path], text: str,
                                   message: str) -> None:
    files["baseline"].write_text(text)
    result = _cli(store, files)
    assert result.exit_code == 1
    assert f"{files['baseline']}: {message}" in _flat(result)


def test_baseline_with_a_non_number_exits_1_naming_the_key(store: Path,
                                                           files: dict[str, Path]) -> None:
    doc = json.loads(files["baseline"].read_text())
    doc["policies"]["reserve-exact"]["runs"][RUN]["overshoots_n"] = "zero"
    files["baseline"].write_text(json.dumps(doc))
    result = _cli(store, files)
    assert result.exit_code == 1
    assert f"policies.reserve-exact.runs.{RUN}.overshoots_n: expected a number" in _flat(result)


def test_missing_baseline_exits_2_and_says_how_to_create_it(store: Path,
                                                            files: dict[str, Path]) -> None:
    files["baseline"].unlink()
    result = _cli(store, files)
    assert result.exit_code == 2 and "--update-baseline" in result.output


@pytest.mark.parametrize(("text", "message"), [
    ("overshots_n: +0\n", "overshots_n: unknown metric; did you mean 'overshoots_n'?"),
    ("direction: {peak_tokenz: lower}\n", "direction.peak_tokenz: unknown metric"),
    ("cost_usd: +five\n", "cost_usd: '+five' is not a tolerance"),
    ("cost_usd: -1%\n", "cost_usd: '-1%' allows the metric to fall, but lower is better"),
    ("direction: {cost_usd: sideways}\n", "direction.cost_usd: 'sideways' is not lower"),
    ("- a list\n", "expected a mapping of metric names to tolerances"),
    ("cost_usd: +1%\ncost_usd: +50%\n",
     "not read as tolerances: a key is given twice in one mapping (lines 1 and 2"),
    (f"tokens_sent: +{'9' * 400}\n",  # float() of it is inf: every move passed, shown "+inf"
     "tokens_sent: +99999999999… (401 characters) is beyond the largest tolerance"),
    (f"default: '{'1' * 330}%'\n", "default: 111111111111… (331 characters) is beyond"),
])
def test_bad_tolerances_exit_2_naming_the_key(store: Path, files: dict[str, Path],
                                              tmp_path: Path, text: str, message: str) -> None:
    tol = tmp_path / "tolerances.yaml"
    tol.write_text(text)
    result = _cli(store, files, "--tolerances", str(tol))
    assert result.exit_code == 2, result.output
    assert f"{tol}: {message}" in _flat(result)


def test_bad_policy_exits_2_with_the_key_path(store: Path, files: dict[str, Path]) -> None:
    files["reserve-exact"].write_text("name: reserve-exact\nserver: {windw_tokens: 5}\n")
    result = _cli(store, files)
    assert result.exit_code == 2
    assert "server.windw_tokens" in _flat(result) and "window_tokens" in _flat(result)


def test_policy_missing_from_the_baseline_exits_2(store: Path, files: dict[str, Path]) -> None:
    result = _cli(store, files, policies=("corecoder",))
    assert result.exit_code == 2
    assert "the baseline has no policy 'corecoder'" in _flat(result)


def test_two_policies_with_one_name_exit_2(store: Path, files: dict[str, Path]) -> None:
    result = _cli(store, files, "--update-baseline",
                  policies=("reserve-exact", "reserve-exact"))
    assert result.exit_code == 2 and "two policies are named 'reserve-exact'" in _flat(result)


@pytest.mark.parametrize(("value", "shown"), [
    ("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf"), ("1e999", "inf"),
    ("1" + "0" * 400, "a whole number of 401 digits"), ("1e300", "1e+300"),
], ids=["nan", "inf", "-inf", "1e999", "401 digits", "1e300"])
def test_baseline_with_a_value_no_metric_has_exits_1(store: Path, files: dict[str, Path],
                                                      value: str, shown: str) -> None:
    """json reads NaN, ±Infinity and huge numbers: a NaN baseline made a regression 'improved',
    ±inf compared equal to any value (check passed), a 400-digit int was an OverflowError."""
    doc = json.loads(files["baseline"].read_text())
    doc["policies"]["reserve-exact"]["runs"][RUN]["overshoots_n"] = "VALUE"
    files["baseline"].write_text(json.dumps(doc).replace('"VALUE"', value))
    result = _cli(store, files)
    assert result.exit_code == 1, result.output
    assert f"policies.reserve-exact.runs.{RUN}.overshoots_n: expected a finite number" \
        in _flat(result) and f"got {shown}" in _flat(result)


def test_baseline_with_an_integer_json_cannot_read_exits_1(store: Path,
                                                           files: dict[str, Path]) -> None:
    """An integer of more digits than Python converts (4300) is a ValueError, not a
    JSONDecodeError: it was a traceback."""
    text = files["baseline"].read_text().replace('"format": 1', '"format": 1' + "0" * 5000, 1)
    files["baseline"].write_text(text)
    result = _cli(store, files)
    assert result.exit_code == 1, result.output
    assert f"{files['baseline']}: not a valid baseline (Exceeds the limit" in _flat(result)


def test_baseline_nested_too_deeply_exits_1(store: Path, files: dict[str, Path]) -> None:
    """json.loads raises RecursionError (not a ValueError) past Python's recursion limit."""
    files["baseline"].write_text("[" * 100_000 + "]" * 100_000)
    result = _cli(store, files)
    assert result.exit_code == 1, result.output
    assert f"{files['baseline']}: not a valid baseline (maximum recursion depth" in _flat(result)


@pytest.mark.parametrize(("metric", "value", "why"), [
    ("overshoots_n", "-1", "-1 is below 0, the least overshoots_n can be (requests)"),
    ("tokens_sent", "-1e6", "-1000000.0 is below 0, the least tokens_sent can be (tokens)"),
    ("cost_usd", "-0.5", "-0.5 is below 0, the least cost_usd can be (USD)"),
    ("n_requests", "70.5", "70.5 is not a whole number, and n_requests is one (requests)"),
    ("cache_invalidation_cached_share", "1.5",
     "1.5 is above 1, the most cache_invalidation_cached_share can be (fraction)"),
    ("arg_share_args_mean", "-0.25",
     "-0.25 is below 0, the least arg_share_args_mean can be (fraction)"),
    ("overshoots_first_request", "-2",
     "-2 is below -1, the least overshoots_first_request can be (request index)"),
], ids=["negative requests", "negative tokens", "negative cost", "half a request",
        "share above 1", "negative share", "request index below -1"])
def test_baseline_with_a_value_its_metric_cannot_take_exits_1(
        store: Path, files: dict[str, Path], metric: str, value: str, why: str) -> None:
    """A value no replay measures (a negative count or cost, a share above 1, half a request)
    was compared as any other: a baseline of -1 overshoots made the run regress ('overshoots_n
    +1 (+100.0%)'), a cached share (higher is better) of -0.5 let any drop pass, one of 1.5
    failed any value.  Refused when read, naming the file, the policy, the run and the
    metric."""
    doc = json.loads(files["baseline"].read_text())
    doc["policies"]["reserve-exact"]["runs"][RUN][metric] = "VALUE"
    files["baseline"].write_text(json.dumps(doc).replace('"VALUE"', value))
    result = _cli(store, files)
    assert result.exit_code == 1, result.output
    assert (f"{files['baseline']}: policies.reserve-exact.runs.{RUN}.{metric}: {why}: no run "
            "measures that") in _flat(result)


def test_a_refused_value_is_named_escaped(store: Path, files: dict[str, Path]) -> None:
    """The policy and run named in the refusal come from the file: printed escaped."""
    doc = json.loads(files["baseline"].read_text())
    odd_run, odd_policy = "r\x1b[2J.jsonl", "p\x1b[31m"
    doc["runs"][odd_run] = doc["runs"][RUN]
    doc["policies"][odd_policy] = {"digest": "d", "runs": {odd_run: {
        **doc["policies"]["reserve-exact"]["runs"][RUN], "rereads_n": -3}}}
    files["baseline"].write_text(json.dumps(doc))
    result = _cli(store, files)
    assert result.exit_code == 1, result.output
    assert "\x1b" not in result.output
    assert ("policies.p\\x1b[31m.runs.r\\x1b[2J.jsonl.rereads_n: -3 is below 0, the least "
            "rereads_n can be (count)") in _flat(result)


def test_values_at_their_bounds_are_read(files: dict[str, Path]) -> None:
    """The bounds are inclusive: no overshoot (-1), no re-read (0), every token cached (1.0)."""
    from analysis.check.baseline import load_baseline

    doc = json.loads(files["baseline"].read_text())
    vals = doc["policies"]["reserve-exact"]["runs"][RUN]
    vals.update(overshoots_first_request=-1, rereads_n=0, cache_invalidation_cached_share=1.0,
                overshoots_est_error_median_frac=-7.5)  # (a signed error: any value)
    files["baseline"].write_text(json.dumps(doc))
    got = load_baseline(files["baseline"]).policies["reserve-exact"].values[RUN]
    assert got["overshoots_first_request"] == -1 and got["cache_invalidation_cached_share"] == 1.0


def test_a_baseline_named_wrong_is_2_and_one_not_a_file_is_1(store: Path,
                                                               files: dict[str, Path]) -> None:
    """A folder named as the baseline is a usage error (as a tolerances folder is); a FIFO
    planted under the baseline's name is a damaged input (exit 1), never read (it would block)."""
    baseline = files["baseline"]
    baseline.unlink()
    baseline.mkdir()
    result = _cli(store, files)
    assert result.exit_code == 2, result.output
    assert f"{baseline}: a folder, not a baseline file" in _flat(result)
    baseline.rmdir()
    os.mkfifo(baseline)
    result = _cli(store, files)
    assert result.exit_code == 1, result.output
    assert f"{baseline}: not a baseline file: " in _flat(result)
