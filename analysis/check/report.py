"""What ``replay check`` prints and writes: the verdict line, the moved rows, JUnit XML, Markdown.

- ``verdict(result)``: one line that agrees with the exit code, ``check: PASS — …`` or
  ``check: FAIL — …`` naming the worst regressions: overshoot counts and sizes first
  (``HEADLINE_METRICS``), then metrics with a better direction, then the rest, each by
  largest relative move (a value that moved off zero, appeared or vanished counts as
  infinitely large);
- ``moved(result)``: the cases that moved, regressions (worst first), then improvements,
  then moves within tolerance, then moves of unchecked metrics;
- ``junit_xml(result)``: one ``testcase`` per (policy, run, metric), grouped in one
  ``testsuite`` per policy; regressions are failures, cases not compared are skipped;
- ``markdown_summary(result)``: for a pull-request comment — counts, regressions,
  improvements, notes (changed engine, policies, logs), then the moves within tolerance
  folded away.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any

from analysis.check.baseline import Value
from analysis.check.baseline_changes import BaselineChange
from analysis.check.gate import (
    CORPUS_STATUSES,
    NOTE_STATUSES,
    Case,
    CheckResult,
    describe_change,
    fmt,
    pct,
)
from analysis.metric_spec import count
from analysis.metrics import METRIC_DIRECTIONS, SPECS, known
from replay.safe_text import markdown, xml_text

HEADLINE_METRICS: tuple[str, ...] = known("overshoots_n", "overshoots_max_tokens",
                                           "overshoots_total_tokens")
"""Named first among regressions: requests over the limit are rejected by the server."""
_MOVED_ORDER = {"regressed": 0, "improved": 1, "within": 2, "ignored": 3, "appeared": 4,
                "vanished": 4}
_SKIPPED = (*CORPUS_STATUSES, *NOTE_STATUSES, "ignored")
_ONE_SIDE = (*CORPUS_STATUSES, "new metric", "missing metric")
"""Cases of a run or a metric on one side only: not compared."""


def verdict(result: CheckResult) -> str:
    """The one-line verdict (agrees with ``result.exit_code``); its "N runs × … × M metrics"
    counts the runs and metrics compared, those not compared are named after it (a metric on
    one side only: ``new metric``, ``missing metric``)."""
    compared = result.compared_runs
    shape = (f"{_count(compared, 'run')} × "
             f"{_count({c.policy for c in result.cases}, 'policy', 'policies')} × "
             f"{_count({c.metric for c in result.cases if c.status not in _ONE_SIDE}, 'metric')}")
    if result.engine_change:
        return (f"check: FAIL — engine changed ({result.engine_change}): update the baseline "
                f"(`--update-baseline`) in the same commit")
    regressed = _worst_first(result.with_status("regressed"))
    corpus = [c for c in result.cases if c.failed and c.status in CORPUS_STATUSES]
    if result.exit_code == 0:
        extras = [f"{len(result.with_status(*s)):,} {label}" for s, label in (
            (("improved",), "improved"), (("within",), "moved within tolerance"),
            (("ignored",), "moved (unchecked)"),
            (("appeared", "vanished"), "appeared or vanished (notes)")) if result.with_status(*s)]
        extras += [_count(_runs(result, s), s) + " (not compared)" for s in CORPUS_STATUSES
                   if _runs(result, s)]
        extras += [_count(m, s) + " (not compared)" for s in ("new metric", "missing metric")
                   if (m := {c.metric for c in result.with_status(s)})]
        return f"check: PASS — {shape} within tolerance" + "".join(f"; {e}" for e in extras)
    parts = []
    if result.nothing_compared:
        not_compared = [_count(_runs(result, s), s) for s in CORPUS_STATUSES if _runs(result, s)]
        parts.append("no run compared" + (f" ({', '.join(not_compared)})" if not_compared
                                          else " (no run on either side)")
                     + ": a check of nothing; check the paths, or record the baseline again "
                       "(`--update-baseline`)")
    if result.unreadable:
        names = ", ".join(result.unreadable[:5]) + (", …" if len(result.unreadable) > 5 else "")
        parts.append(f"{_count(result.unreadable, 'unreadable log')} ({names}), not compared")
    if regressed:
        named = [f"{c.metric} {_short_change(c)} on {c.run} under {c.policy}"
                 for c in regressed[:3]]
        named_metrics = {c.metric for c in regressed[:3]}
        more = [m for m in dict.fromkeys(c.metric for c in regressed[3:]) if m not in named_metrics]
        rest = (f"; and {len(regressed) - 3} more" + (f" in {', '.join(more[:8])}"
                                                     + (", …" if len(more) > 8 else "")
                                                     if more else "")) if len(regressed) > 3 else ""
        parts.append(f"{_count(regressed, 'regression')} ({'; '.join(named)}{rest})")
    for s in CORPUS_STATUSES:
        runs = sorted({c.run for c in corpus if c.status == s})
        if runs:
            parts.append(f"{_count(runs, s)} with --strict-logs ({', '.join(runs)})")
    return "check: FAIL — " + "; ".join(parts)


def moved(result: CheckResult) -> list[Case]:
    """Cases whose value moved: regressions (worst first), improvements, within, unchecked."""
    rows = [c for c in result.cases if c.status in _MOVED_ORDER]
    regressed = _worst_first([c for c in rows if c.status == "regressed"])
    others = sorted((c for c in rows if c.status != "regressed"),
                    key=lambda c: _MOVED_ORDER[c.status])
    return regressed + others


def moved_rows(cases: list[Case], labels: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Cases as table rows: policy, run (its label in ``labels``, by run key, else its key),
    metric, baseline, current, change, tolerance, status."""
    rows = []
    for c in cases:
        base, current = _pair(c.baseline, c.current, c.metric)
        rows.append({"policy": c.policy, "run": (labels or {}).get(c.run, c.run), "metric": c.metric, "baseline": base,
                     "current": current, "change": _short_change(c),
                     "tolerance": str(c.tolerance), "status": c.status})
    return rows


MOVED_DATA_COLUMNS = ("policy", "run", "run_key", "metric", "baseline", "current", "delta",
                      "tolerance", "status")
"""``moved_data``'s columns (``check --csv``'s header when nothing moved)."""


def moved_data(cases: list[Case], labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Cases as data (``check --json``, ``--csv``): ``moved_rows``' fields with the baseline
    and current values as the numbers they are (None: unknown), their ``delta`` (None when
    either is unknown) and the run's key in the baseline beside its label; ``moved_rows``'
    text ("138,868", "+138,863 (+2,777,260.0%)") is for people."""
    return [{"policy": c.policy, "run": (labels or {}).get(c.run, c.run), "run_key": c.run,
             "metric": c.metric, "baseline": c.baseline, "current": c.current,
             "delta": None if c.baseline is None or c.current is None
             else c.current - c.baseline,
             "tolerance": str(c.tolerance), "status": c.status} for c in cases]


def change_rows(changes: list[BaselineChange]) -> list[dict[str, str]]:
    """What ``--update-baseline`` changed, as table rows."""
    rows = []
    for ch in changes:
        old, new = _pair(ch.old, ch.new) if ch.kind == "value" else (str(ch.old or ""),
                                                                      str(ch.new or ""))
        rows.append({"change": ch.kind, "where": ch.where, "old": old, "new": new})
    return rows


CHANGE_DATA_COLUMNS = ("change", "where", "old", "new")
"""``change_data``'s columns (``check --update-baseline --csv``'s header)."""


def change_data(changes: list[BaselineChange]) -> list[dict[str, Any]]:
    """What ``--update-baseline`` changed, as data (``--json``, ``--csv``): a value's old and
    new figures as the numbers they are (None: unknown), where ``change_rows`` has text."""
    return [{"change": ch.kind, "where": ch.where,
             "old": ch.old if ch.kind == "value" else str(ch.old or ""),
             "new": ch.new if ch.kind == "value" else str(ch.new or "")} for ch in changes]


def _pair(a: Value, b: Value, metric: str = "") -> tuple[str, str]:
    """Two values formatted for people (a metric's by its unit, ``MetricSpec.format``), in
    full when the short forms would look equal."""
    spec = SPECS.get(metric)
    short = (spec.format(a), spec.format(b)) if spec and a is not None and b is not None \
        else (fmt(a), fmt(b))
    return short if short[0] != short[1] else (repr(a), repr(b))


def junit_xml(result: CheckResult) -> bytes:
    """A JUnit XML report: one testsuite per policy, one testcase per (run, metric); every
    string from data through ``xml_text`` (well-formed XML 1.0 whatever the names hold)."""
    x = xml_text
    root = ET.Element("testsuites", name="replay check")
    suites: dict[str, ET.Element] = {}
    for c in result.cases:
        suite = suites.get(c.policy)
        if suite is None:
            suite = suites[c.policy] = ET.SubElement(root, "testsuite", name=x(c.policy))
            props = ET.SubElement(suite, "properties")
            for name in ("trace_version", "schema_version"):
                ET.SubElement(props, "property", name=name, value=x(getattr(result, name)))
        case = ET.SubElement(suite, "testcase", classname=x(f"{c.policy}/{c.run}"),
                             name=x(c.metric), time="0")
        if c.failed:
            kind = ("engine" if result.engine_change else
                    "corpus" if c.status in CORPUS_STATUSES else "regression")
            failure = ET.SubElement(case, "failure", message=x(c.message), type=kind)
            failure.text = x(_case_text(c))
        elif c.status in _SKIPPED:
            ET.SubElement(case, "skipped", message=x(c.message))
    if result.unreadable or result.nothing_compared:
        inputs = ET.SubElement(root, "testsuite", name="inputs")
        for source in result.unreadable:
            case = ET.SubElement(inputs, "testcase", classname="inputs", name=x(source),
                                 time="0")
            ET.SubElement(case, "failure", message=x(f"unreadable log: {source}"), type="input")
        if result.nothing_compared:  # the one failure of a check of nothing (see verdict)
            case = ET.SubElement(inputs, "testcase", classname="inputs", name="runs compared",
                                 time="0")
            ET.SubElement(case, "failure", message="no run compared", type="input").text = \
                x(verdict(result))
    for el in [root, *suites.values(), *root.findall("testsuite[@name='inputs']")]:
        cases = list(el.iter("testcase"))
        el.set("tests", str(len(cases)))
        el.set("failures", str(sum(1 for t in cases if t.find("failure") is not None)))
        el.set("errors", "0")
        el.set("skipped", str(sum(1 for t in cases if t.find("skipped") is not None)))
        el.set("time", "0")
    if result.notes:
        ET.SubElement(root, "system-out").text = "\n".join(x(n) for n in result.notes)
    ET.indent(root)
    xml: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return xml + b"\n"


def markdown_summary(result: CheckResult, *, max_rows: int = 50) -> str:
    """A Markdown summary for a pull-request comment (tables capped at ``max_rows`` rows)."""
    regressed = _worst_first(result.with_status("regressed"))
    improved = result.with_status("improved")
    within = result.with_status("within")
    notes = result.with_status("appeared", "vanished")
    counts = counts_by_kind(result)
    lines = [f"### replay check: {'PASS' if result.exit_code == 0 else 'FAIL'}", "",
             markdown(verdict(result)), "",
             "| " + " | ".join(counts) + " |", "|" + "---:|" * len(counts),
             "| " + " | ".join(f"{n:,}" for n in counts.values()) + " |", ""]
    for title, cases in (("Regressions", regressed), ("Improvements", improved),
                         ("Values that appeared or vanished (notes)", notes)):
        if cases:
            lines += [f"#### {title} ({len(cases):,})", "",
                      *_md_table(cases, max_rows, result.labels), ""]
    if result.notes:
        lines += ["#### Notes", "", *(f"- {markdown(n)}" for n in result.notes), ""]
    if within:
        lines += [f"<details><summary>Moved within tolerance ({len(within):,})</summary>", "",
                  *_md_table(within, max_rows, result.labels), "", "</details>", ""]
    return "\n".join(lines)


def counts_by_kind(result: CheckResult) -> dict[str, int]:
    """How many cases of each kind; the kinds add up to ``cases``."""
    n = {k: len(result.with_status(*s)) for k, s in (
        ("unchanged", ("same",)), ("moved within tolerance", ("within",)),
        ("improved", ("improved",)), ("regressed", ("regressed",)),
        ("unchecked", ("ignored",)), ("notes", NOTE_STATUSES),
        ("not compared", CORPUS_STATUSES))}
    return {"cases": len(result.cases), "failed": sum(c.failed for c in result.cases), **n}


def _md_table(cases: list[Case], max_rows: int, labels: dict[str, str]) -> list[str]:
    cols = ["policy", "run", "metric", "baseline", "current", "change", "tolerance"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in moved_rows(cases[:max_rows], labels):
        out.append("| " + " | ".join(markdown(row[c]) for c in cols) + " |")
    if len(cases) > max_rows:
        out.append(f"\n… and {len(cases) - max_rows:,} more")
    return out


def _case_text(c: Case) -> str:
    return (f"policy {c.policy}, run {c.run}, metric {c.metric}: baseline {fmt(c.baseline)}, "
            f"current {fmt(c.current)}, tolerance {c.tolerance} "
            f"({c.tolerance.direction} is better) — {c.status}")


def _short_change(c: Case) -> str:
    """``+3``, ``-1.2% (-12)`` …: the move of one case, signed."""
    if c.baseline is None or c.current is None:
        return describe_change(c.baseline, c.current).split(" (")[0]
    delta = c.current - c.baseline
    abs_txt = f"{'+' if delta >= 0 else '-'}{fmt(abs(delta))}"
    return f"{abs_txt} ({pct(delta / abs(c.baseline))})" if c.baseline else abs_txt


def _worst_first(cases: list[Case]) -> list[Case]:
    """``HEADLINE_METRICS`` first, then the other metrics with a known better direction, then
    the rest; in each group the largest relative move first (off zero, appeared or vanished:
    infinitely large), then case order."""
    def key(item: tuple[int, Case]) -> tuple[int, float, int]:
        i, c = item
        group = 0 if c.metric in HEADLINE_METRICS else 1 if c.metric in METRIC_DIRECTIONS else 2
        if c.baseline is None or c.current is None or c.baseline == 0:
            size = math.inf
        else:
            size = abs(c.current - c.baseline) / abs(c.baseline)
        return (group, -size, i)
    return [c for _, c in sorted(enumerate(cases), key=key)]


def _runs(result: CheckResult, status: str) -> set[str]:
    return {c.run for c in result.cases if c.status == status}


def _count(items: Any, noun: str, plural: str | None = None) -> str:
    return count(len(items), noun, plural)
