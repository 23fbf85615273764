"""A baseline edited by hand or truncated is refused with its key (exit 1: an input that failed, as a damaged dataset), never read as a
narrower check: a run missing a metric the baseline lists had that metric judged a "new metric"
with no note (it could regress without limit, and the verdict still said "84 metrics within
tolerance"); a run holding a metric the list omits was compared and also noted as a "new
metric"; a ``runs.*.sha256`` that is not a sha256 never equalled the log's, so its run was a
"changed log", not compared.  A baseline older than a metric (the metric in neither the list
nor any run) still checks, and the verdict counts only the metrics compared.

Every baseline here is the one a real ``--update-baseline`` wrote, then edited.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.check.check_helpers import LOG, RUN, _cli, _first_line, _flat

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture
def recorded(store: Path, files: dict[str, Path]) -> dict[str, Any]:
    """The baseline ``replay check --update-baseline`` writes for the run under both policies."""
    result = _cli(store, files, "--update-baseline")
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(files["baseline"].read_text())
    return doc


def _check_edited(store: Path, files: dict[str, Path], doc: dict[str, Any], edit: Edit,
                  *extra: str):  # type: ignore[no-untyped-def]
    edit(doc)
    files["baseline"].write_text(json.dumps(doc))
    return _cli(store, files, *extra)


def test_what_update_baseline_writes_is_consistent_and_passes(
        store: Path, files: dict[str, Path], recorded: dict[str, Any]) -> None:
    """The invariants the reader now enforces hold for what ctxreplay writes: every run of every
    policy holds exactly the listed metrics, and each run's sha256 is its log's."""
    listed = recorded["metrics"]
    assert len(listed) == len(set(listed)) > 0
    for pol in recorded["policies"].values():
        assert all(sorted(vals) == sorted(listed) for vals in pol["runs"].values())
    assert recorded["runs"] == {RUN: {"source": RUN,
                                      "sha256": hashlib.sha256(LOG.read_bytes()).hexdigest()}}
    result = _cli(store, files)
    assert result.exit_code == 0, result.output
    assert _first_line(result.output) == \
        f"check: PASS — 1 run × 2 policies × {len(listed)} metrics within tolerance"


def _drop_from_one_run(doc: dict[str, Any]) -> None:
    del doc["policies"]["two-tier-corrected"]["runs"][RUN]["tokens_sent"]


def test_a_run_missing_a_listed_metric_exits_1_naming_the_run_and_key(
        store: Path, files: dict[str, Path], recorded: dict[str, Any]) -> None:
    """It passed (exit 0, no note) with tokens_sent never compared under that policy."""
    result = _check_edited(store, files, recorded, _drop_from_one_run)
    assert result.exit_code == 1, result.output
    assert (f"{files['baseline']}: policies.two-tier-corrected.runs.{RUN}.tokens_sent: "
            "missing, but `metrics` lists it") in _flat(result)


def _unlist(doc: dict[str, Any]) -> None:
    doc["metrics"].remove("tokens_sent")
    doc["policies"]["reserve-exact"]["runs"][RUN]["tokens_sent"] = 5


def _empty_list(doc: dict[str, Any]) -> None:
    doc["metrics"] = []
    doc["policies"]["reserve-exact"]["runs"][RUN]["tokens_sent"] = 5


@pytest.mark.parametrize("edit", [_unlist, _empty_list], ids=["one unlisted", "empty list"])
def test_a_value_of_a_metric_the_list_omits_exits_1_naming_the_key(
        store: Path, files: dict[str, Path], recorded: dict[str, Any], edit: Edit) -> None:
    """It failed on tokens_sent while noting tokens_sent as a metric not in the baseline."""
    first = min(recorded["policies"]["reserve-exact"]["runs"][RUN]) \
        if edit is _empty_list else "tokens_sent"  # (the file's keys are sorted)
    result = _check_edited(store, files, recorded, edit)
    assert result.exit_code == 1, result.output
    assert (f"{files['baseline']}: policies.reserve-exact.runs.{RUN}.{first}: not a metric "
            "`metrics` lists") in _flat(result)
    assert "new metric" not in result.output


def test_a_metric_listed_twice_exits_1(store: Path, files: dict[str, Path],
                                       recorded: dict[str, Any]) -> None:
    result = _check_edited(store, files, recorded,
                           lambda doc: doc["metrics"].append("overshoots_n"))
    assert result.exit_code == 1, result.output
    assert f"{files['baseline']}: metrics: 'overshoots_n' is listed twice" in _flat(result)


def _older(doc: dict[str, Any]) -> None:
    """A baseline written before tokens_sent existed: in neither the list nor any run."""
    doc["metrics"].remove("tokens_sent")
    for pol in doc["policies"].values():
        for vals in pol["runs"].values():
            del vals["tokens_sent"]


def test_a_baseline_older_than_a_metric_passes_counting_it_not_compared(
        store: Path, files: dict[str, Path], recorded: dict[str, Any]) -> None:
    compared = len(recorded["metrics"]) - 1
    result = _check_edited(store, files, recorded, _older)
    assert result.exit_code == 0, result.output
    assert _first_line(result.output) == (f"check: PASS — 1 run × 2 policies × {compared} "
                                          "metrics within tolerance; 1 new metric (not compared)")
    assert "note: new metric (not in the baseline): tokens_sent" in result.output
    as_json = _cli(store, files, "--json")
    doc = json.loads(as_json.output[as_json.output.index("{"):])
    assert doc["exit_code"] == 0 and doc["verdict"].endswith("; 1 new metric (not compared)")
    assert [n for n in doc["notes"] if "metric" in n] == \
        ["new metric (not in the baseline): tokens_sent"]


def _set_run(field: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        doc["runs"][RUN][field] = value(doc["runs"][RUN][field]) if callable(value) else value
    return edit


@pytest.mark.parametrize(("edit", "message"), [
    (_set_run("sha256", 5), "sha256: expected the log's sha256 (64 lowercase hex digits), got 5"),
    (_set_run("sha256", None), "sha256: expected the log's sha256 (64 lowercase hex digits), got None"),
    (_set_run("sha256", str.upper), "sha256: expected the log's sha256"),
    (_set_run("sha256", lambda s: s[:-1]), "sha256: expected the log's sha256"),
    (_set_run("sha256", lambda s: s + "\n"), "sha256: expected the log's sha256"),
    (_set_run("source", 5), "source: expected text, got 5"),
    (_set_run("source", ["a"]), "source: expected text, got ['a']"),
], ids=["sha int", "sha null", "sha upper", "sha 63", "sha newline", "source int",
        "source list"])
def test_a_crafted_run_entry_exits_1_naming_the_key(
        store: Path, files: dict[str, Path], recorded: dict[str, Any], edit: Edit,
        message: str) -> None:
    """A sha256 of 5 was read as '5': the run a changed log, not compared (a source of 5 was
    read as '5')."""
    result = _check_edited(store, files, recorded, edit)
    assert result.exit_code == 1, result.output
    assert f"{files['baseline']}: runs.{RUN}.{message}" in _flat(result)


def test_a_crafted_digest_exits_1_naming_the_key(store: Path, files: dict[str, Path],
                                                 recorded: dict[str, Any]) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["policies"]["reserve-exact"]["digest"] = ["x"]

    result = _check_edited(store, files, recorded, edit)
    assert result.exit_code == 1, result.output
    assert (f"{files['baseline']}: policies.reserve-exact.digest: expected text, got ['x']"
            in _flat(result))


def test_another_logs_sha256_is_a_changed_log_not_an_error(
        store: Path, files: dict[str, Path], recorded: dict[str, Any]) -> None:
    """A well-formed sha256 of other bytes is what a changed log looks like: reported, and with
    no run left to compare the check fails (exit 1), as before."""
    other = hashlib.sha256(b"another log").hexdigest()
    result = _check_edited(store, files, recorded, _set_run("sha256", other))
    assert result.exit_code == 1, result.output
    assert _first_line(result.output).startswith("check: FAIL — no run compared (1 changed log)")


@pytest.mark.parametrize("where", ["policy", "run", "metric"])
def test_a_key_given_twice_exits_1_and_neither_copy_is_taken(
        store: Path, files: dict[str, Path], recorded: dict[str, Any], where: str) -> None:
    """A merge that kept both sides' copies of a policy (or a run's values, or one value): JSON
    keeps the last, so the first copy, here one that regresses, was never read and the check
    passed (exit 0).  The copy that regresses fails on its own (exit 1), so the test proves the
    first copy was read at all only by the refusal."""
    pol = recorded["policies"]["two-tier-corrected"]
    stale = json.loads(json.dumps(pol))
    stale["runs"][RUN]["tokens_sent"] = 1  # the replay sends more: a regression
    alone = json.loads(json.dumps(recorded))
    alone["policies"]["two-tier-corrected"] = stale
    files["baseline"].write_text(json.dumps(alone))
    assert _cli(store, files).exit_code == 1  # the stale copy, read on its own, regresses
    text = json.dumps(recorded, indent=1, sort_keys=True)
    opening, copy = {
        "policy": ('"policies": {', f'"two-tier-corrected": {json.dumps(stale)},'),
        "run": ('"runs": {', f'"{RUN}": {json.dumps(stale["runs"][RUN])},'),
        "metric": ('"tokens_sent": ', '1, "tokens_sent": '),
    }[where]
    at = text.index(opening, text.index('"two-tier-corrected": {')) if where != "policy" \
        else text.index(opening)
    files["baseline"].write_text(text[:at + len(opening)] + copy + text[at + len(opening):])
    result = _cli(store, files)
    assert result.exit_code == 1, result.output
    assert "is given twice in one object" in _flat(result)
