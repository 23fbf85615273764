"""Tables that fit the terminal (``replay.cli.tables``; issue 16 item 6): no line wider than
``COLUMNS``, numbers never split, every run shown by its source path, a totals row, and
``--columns`` / ``--wide`` / ``--csv`` for the rest."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay.cli import app
from replay.cli.tables import fit

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]
LOGS = REPO / "logs"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tables") / "ds"
    assert runner.invoke(app, ["ingest", str(LOGS), "--out", str(out), "-q"]).exit_code == 0
    return out


def _sources() -> list[str]:
    return sorted(p.relative_to(LOGS).as_posix() for p in LOGS.rglob("*.jsonl"))


def _invoke(args: list[str], columns: int) -> str:
    result = runner.invoke(app, args, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def diffs_made() -> dict[str, object]:
    return {}


@pytest.fixture
def diff_once(diffs_made: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    """``replay diff``'s library call (``diff_policies``: both replays and their metrics, ~2 s)
    made once per spec for the module: the width tests print the same diff at each width,
    and what they check is the printing."""
    from analysis.report import compare

    real = compare.diff_policies

    def once(spec: compare.CompareSpec, **kwargs: object) -> object:
        key = repr(spec)
        if key not in diffs_made:
            diffs_made[key] = real(spec, **kwargs)  # type: ignore[arg-type]
        return diffs_made[key]

    monkeypatch.setattr(compare, "diff_policies", once)


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.usefixtures("diff_once")
def test_runs_run_and_diff_fit_the_width(dataset: Path, tmp_path: Path, columns: int) -> None:
    outputs = {
        "runs": _invoke(["runs", str(dataset)], columns),
        "run": _invoke(["run", "-p", "two-tier-corrected", str(dataset), "--out",
                        str(tmp_path / "o"), "-q"], columns),
        "diff": _invoke(["diff", str(dataset), "-p", "two-tier-original", "-p",
                         "two-tier-corrected", "-q"], columns),
    }
    for name, text in outputs.items():
        widest = max(len(line) for line in text.splitlines())
        assert widest <= columns, f"{name}: a line of {widest} characters at COLUMNS={columns}"


def test_every_run_shows_its_source_and_numbers_are_whole(dataset: Path, tmp_path: Path) -> None:
    text = _invoke(["run", "-p", "two-tier-corrected", str(dataset), "--out",
                    str(tmp_path / "o"), "-q"], 100)
    rows = json.loads(_invoke(["run", "-p", "two-tier-corrected", str(dataset), "--out",
                               str(tmp_path / "o"), "-q", "--json"], 100))
    for source in _sources():
        assert any(source in line or source[:6] in line and source[-10:] in line
                   for line in text.splitlines()), source  # whole, or its head and tail
    for r in rows:  # every number of the default columns printed whole, on one line
        for col in ("n_requests", "tokens_sent", "peak_tokens", "overshoots_n"):
            assert f"{r[col]:,}" in text, (col, r[col])
    total_line = next(line for line in text.splitlines() if "total (" in line)
    assert f"{sum(r['tokens_sent'] for r in rows):,}" in total_line  # an independent sum
    assert f"{sum(r['n_requests'] for r in rows):,}" in total_line
    assert f"{max(r['peak_tokens'] for r in rows):,}" in total_line


def test_columns_wide_and_csv(dataset: Path) -> None:
    picked = _invoke(["runs", str(dataset), "--columns", "source,messages"], 100)
    header = next(line for line in picked.splitlines() if "source" in line)
    assert "messages" in header and "model" not in header
    wide = _invoke(["runs", str(dataset), "--wide"], 100)
    assert "coverage" in wide and "run_id" in wide
    rows = list(csv.DictReader(io.StringIO(_invoke(["runs", str(dataset), "--csv"], 100))))
    assert sorted(r["source"] for r in rows) == _sources()
    assert {"run_id", "coverage", "tokens"} <= set(rows[0])
    bad = runner.invoke(app, ["runs", str(dataset), "--columns", "sourc"])
    assert bad.exit_code == 2 and "source" in bad.output


def test_hidden_columns_are_said(dataset: Path) -> None:
    text = _invoke(["runs", str(dataset), "--columns",
                    "source,model,requests,tokens,recorded_input_tokens,compactions,tool_calls"],
                   60)
    assert "not shown" in text and "--wide" in text
    assert max(len(line) for line in text.splitlines()) <= 60


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=12), st.booleans(),
                          st.lists(st.integers(0, 80), min_size=3, max_size=3)),
                min_size=1, max_size=8),
       st.integers(30, 200))
def test_fit_never_exceeds_the_width_and_keeps_numbers_whole(cols, width: int) -> None:
    header = [f"{name}{i}" for i, (name, _, _) in enumerate(cols)]
    numeric = [n for _, n, _ in cols]
    cells = [["9" * lens[r] if numeric[i] else "x" * lens[r] for i, (_, _, lens) in
              enumerate(cols)] for r in range(3)]
    keep, dropped, widths = fit(header, cells, numeric, width)
    assert keep and sorted(keep) == keep
    assert [header[i] for i in range(len(header)) if i not in keep] == dropped
    used = 1 + sum(3 + (max(len(header[i]), *(len(r[i]) for r in cells)) if numeric[i]
                        else widths[i]) for i in keep)
    if len(keep) > 1:  # one column too wide on its own is shown anyway (and cut by rich)
        assert used <= width



FIXTURES = REPO / "tests" / "fixtures"
_ROLLOUT = "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab6{}a.jsonl"
_SESSION = "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a88134{}.jsonl"


@pytest.fixture(scope="module")
def lookalikes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Logs whose names differ only at their end (Codex rollouts of one minute, one session's
    subagents): cut from the right, their labels were the same (issue #25 item 1)."""
    root = tmp_path_factory.mktemp("lookalikes") / "logs"
    rollout = (FIXTURES / "codex" / "rollout-2026-08-09T20-25-45-019fe7c6-10ee-75f2-aeb2-"
                              "e17e16a59b29.jsonl").read_bytes()
    agent = (FIXTURES / "claude_code" / "agent-acompact-f46190.jsonl").read_bytes()
    names = [f"codex/{_ROLLOUT.format(i)}" for i in range(3)] + \
        [f"claude-code/{_SESSION.format(i)}" for i in range(2)]
    for n, name in enumerate(names):  # each a different run: one changed word
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(rollout.replace(b"keep tests green", b"keep tests %d" % n)
                                  if name.startswith("codex") else
                                  agent.replace(b"nested too deep", b"nested %d deep" % n))
    return root, names


def _first_cells(text: str) -> list[str]:
    """The first cell of each body row of a rich table (totals row left out)."""
    cells = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    return [c for c in cells if not c.startswith("total (")]


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_runs_whose_names_differ_at_the_end_get_distinct_labels(
        lookalikes: tuple[Path, list[str]], tmp_path: Path, columns: int) -> None:
    root, names = lookalikes
    cache = ["--cache-dir", str(tmp_path / "cache"), "-q"]
    tables = {
        "runs": _invoke(["ingest", str(root), "--out", str(tmp_path / "ds"), "-q"], columns)
        and _invoke(["runs", str(tmp_path / "ds")], columns),
        "run": _invoke(["run", str(root), "-p", "claude-code", "--out", str(tmp_path / "o"),
                        "--columns", "run,n_requests,note", *cache], columns),
        "calibrate": _invoke(["calibrate", str(root), *cache], columns),
    }
    for name, text in tables.items():
        labels = _first_cells(text)
        assert len(labels) == len(names), (name, text)
        assert len(set(labels)) == len(labels), f"{name} at {columns}: {labels}"
        assert max(len(line) for line in text.splitlines()) <= columns
        for i in range(3):  # the distinguishing tail of each rollout is shown
            assert any(f"{i}a.jsonl" in label for label in labels), (name, labels)


def test_a_narrow_table_keeps_the_headline_columns_first(dataset: Path, tmp_path: Path) -> None:
    """Issue #25 item 3: at 80 columns replay run keeps the label, requests, tokens sent and
    overshoots (before: it kept cost_usd and hid overshoots_n)."""
    text = _invoke(["run", "-p", "two-tier-corrected", str(dataset), "--out",
                    str(tmp_path / "o"), "-q"], 80)
    header = next(line for line in text.splitlines() if "┃" in line)
    cols = [c.strip() for c in header.strip("┃").split("┃")]
    assert cols[:4] == ["run", "n_requests", "tokens_sent", "overshoots_n"], cols


def test_policy_names_are_whole_when_there_is_room() -> None:
    """Issue #25 item 10: a 120-column pipe cut 'anthropic-context-editing'."""
    from replay.policy import presets

    for columns in (100, 120):
        text = _invoke(["policies"], columns)
        for name in presets():
            assert f"│ {name} " in text, (columns, name)
