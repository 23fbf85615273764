"""The report: one self-contained HTML page and a Markdown summary, per run and policy.

The corpus report is rendered once (both two-tier presets over the real samples,
three timelines); the one-run reports are small and rendered per test.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from analysis.report.build import ReportFiles, write_report
from analysis.rereads import lint_placeholders
from replay.cli import app
from replay.corpus import Corpus, replay_corpus
from replay.policy import load_policy
from tests.analysis.conftest import PRESETS, Replayed
from tests.analysis.report.report_html import ReportDoc, decodes, png_of, png_size
from tests.conftest import REPO
from tests.shared_results import SharedResults

ORIGINAL, CORRECTED = PRESETS
HEADLINE_START = ["run", "run id", "policy"]
N_ANALYSES = 5


@pytest.fixture(scope="module")
def corpus_report(sample_corpus: Corpus, replayed: dict[str, Replayed],
                  shared_results: SharedResults) -> ReportFiles:
    """The corpus report, written once for the session by one xdist worker
    (``tests/shared_results.py``); the tests only read its files."""
    runs = [(replayed[n].policy, replayed[n].trace) for n in PRESETS]
    out = shared_results.files("corpus-report")
    return shared_results.get("corpus-report",
                              lambda: write_report(sample_corpus, runs, out, max_timelines=3))


@pytest.fixture(scope="module")
def doc(corpus_report: ReportFiles) -> ReportDoc:
    return ReportDoc(corpus_report.html.read_text())


def headline_pairs(table: list[list[str]]) -> list[tuple[str, str, list[str]]]:
    """(run_id, policy, metric cells) per row of the headline table (run cells span rows)."""
    width, out, run = len(table[0]), [], ""
    for row in table[1:]:
        if len(row) == width:
            run, row = row[1], row[2:]
        out.append((run, row[0], row[1:]))
    return out


def test_headline_row_per_run_and_policy(doc: ReportDoc, replayed: dict[str, Replayed]) -> None:
    table = doc.table_with(HEADLINE_START)
    rows = headline_pairs(table)
    expected = {(r, p) for n in PRESETS
                for r, p in zip(replayed[n].metrics["run_id"], replayed[n].metrics["policy"])}
    assert {(r, p) for r, p, _ in rows} == expected
    assert len(rows) == len(expected)
    col = table[0].index("small cache-invalidating trims") - len(HEADLINE_START)
    for run, pol, cells in rows:
        m = replayed[pol].metrics.set_index("run_id")
        assert cells[col] == f"{int(m.loc[run, 'cache_invalidation_n_small_trims']):,}"
    # side by side: each run's policies are adjacent, in the order given
    order = [p for _, p, _ in rows]
    assert order == [ORIGINAL, CORRECTED] * (len(rows) // 2)


def test_markdown_has_the_same_headline_rows(corpus_report: ReportFiles,
                                             replayed: dict[str, Replayed]) -> None:
    md = corpus_report.markdown.read_text()
    runs = md.split("## Runs", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in runs.splitlines() if line.startswith("| ")][1:]
    pairs = {(r[1], r[2]) for r in rows}
    assert pairs == {(r, n) for n in PRESETS for r in replayed[n].metrics["run_id"]}
    for name in ("rereads.png", "arg_share.png", "overshoots.png"):
        assert f"(report_files/{name})" in md
        assert (corpus_report.markdown.parent / "report_files" / name).is_file()


def test_every_image_is_an_inline_png_that_decodes(doc: ReportDoc,
                                                   corpus_report: ReportFiles) -> None:
    assert len(doc.images) == N_ANALYSES  # the timelines are interactive in the page
    on_disk = {p.read_bytes() for p in corpus_report.images}
    for img in doc.images:
        data = png_of(img)
        size = decodes(data)
        assert size == png_size(data) == (int(img["width"]), int(img["height"]))
        assert img["alt"]
        assert data in on_disk


def test_self_contained_no_external_url_scripts_inline(corpus_report: ReportFiles,
                                                        doc: ReportDoc) -> None:
    assert not {"link", "iframe", "object", "embed", "base"} & set(doc.tags)
    for tag, name, value in doc.attrs:
        assert not name.startswith("on"), (tag, name)
        v = value.strip().lower()
        assert not v.startswith(("http:", "https:", "//", "file:", "ftp:")), (tag, name, v[:80])
        if name in ("src", "href"):
            assert tag == "img" and v.startswith("data:image/png;base64,"), (tag, name, v[:80])
    css = "".join(doc.styles).lower()
    assert "url(" not in css and "@import" not in css
    raw = corpus_report.html.read_text()
    scripts = raw.lower().count("<script")
    assert scripts == raw.lower().count("<script>") >= 2  # BokehJS and the timelines, inline


def test_lint_finding_of_the_original_is_shown(corpus_report: ReportFiles,
                                               replayed: dict[str, Replayed]) -> None:
    found = lint_placeholders(replayed[ORIGINAL].policy)
    assert found, "the original preset's placeholder invites a re-call"
    assert not lint_placeholders(replayed[CORRECTED].policy)
    text, md = corpus_report.html.read_text(), corpus_report.markdown.read_text()
    lint_html = text.split("Placeholder lint", 1)[1].split("</ul>", 1)[0]
    for f in found:
        assert html.escape(f) in lint_html
        # report.md escapes Markdown's active characters of text it did not write
        assert f in md.split("## Placeholder lint", 1)[1].split("##", 1)[0].replace("\\", "")
    assert f"<code>{CORRECTED}</code>: no placeholder invites re-calling" in lint_html


def test_differences_table_compares_against_the_first_policy(doc: ReportDoc) -> None:
    table = doc.table_with(["run", "metric", ORIGINAL, CORRECTED])
    metrics_shown = {row[1] for row in table[1:]}
    assert "cache_invalidation_n_small_trims" in metrics_shown
    small = next(r for r in table[1:] if r[0] == "(all runs)"
                 and r[1] == "cache_invalidation_n_small_trims")
    assert small[-1].startswith("better")


def test_timelines_are_the_longest_runs(corpus_report: ReportFiles, doc: ReportDoc,
                                        replayed: dict[str, Replayed]) -> None:
    m = replayed[ORIGINAL].metrics.sort_values("n_requests", ascending=False, kind="stable")
    names = [p.name for p in corpus_report.images if p.name.startswith("timeline_")]
    assert [n.split("_", 2)[2].rsplit("-", 1)[0] for n in names] == list(m["run_id"].head(3))
    text = corpus_report.html.read_text()
    shown = re.findall(r'<figure class="timeline" id="ctx-tl-\d+"><figcaption><b>Timeline of '
                       r"(.*?)</b> \((.*?)\)", text)
    assert [r for _, r in shown] == list(m["run_id"].head(3)), shown
    assert "3 of 25 runs" in text


@pytest.fixture(scope="module")
def one_run(sample_corpus: Corpus, replayed: dict[str, Replayed]) -> str:
    """The shortest run with a tier action under the original preset."""
    m = replayed[ORIGINAL].metrics
    with_trims = m[m["n_trims"] > 0].sort_values("n_requests", kind="stable")
    return str(with_trims["run_id"].iloc[0])


def one_run_report(corpus: Corpus, run_id: str, out: Path, *names: str,
                   on_figure: Callable[[int, int], None] | None = None) -> ReportFiles:
    runs = []
    for name in names:
        policy = load_policy(name)
        runs.append((policy, replay_corpus(corpus, policy, run_ids=[run_id])))
    return write_report(corpus, runs, out, on_figure=on_figure)


@pytest.fixture(scope="module")
def pair_report(sample_corpus: Corpus, one_run: str,
                tmp_path_factory: pytest.TempPathFactory) -> ReportFiles:
    """Both presets over one run."""
    return one_run_report(sample_corpus, one_run, tmp_path_factory.mktemp("pair"), *PRESETS)


def test_report_for_one_run(pair_report: ReportFiles, one_run: str) -> None:
    text = pair_report.html.read_text()
    doc = ReportDoc(text)
    rows = headline_pairs(doc.table_with(HEADLINE_START))
    assert [(r, p) for r, p, _ in rows] == [(one_run, ORIGINAL), (one_run, CORRECTED)]
    assert len(doc.images) == N_ANALYSES and text.count('<figure class="timeline"') == 1
    last = pair_report.images[-1].name
    assert last.startswith(f"timeline_000_{one_run}-") and last.endswith(".png")
    assert "1 run (" in text
    assert f"Differences: {CORRECTED} against {ORIGINAL}" in text


def test_same_inputs_give_byte_identical_files(sample_corpus: Corpus, one_run: str,
                                               pair_report: ReportFiles, tmp_path: Path) -> None:
    stale = tmp_path / "report_files" / "timeline_099_gone.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"left by an earlier report")
    calls: list[tuple[int, int]] = []  # and the figures' progress (on_figure), as drawn
    again = one_run_report(sample_corpus, one_run, tmp_path, *PRESETS,
                           on_figure=lambda done, total: calls.append((done, total)))
    n = len(again.images)
    assert n == N_ANALYSES + 1 and calls == [(k, n) for k in range(n + 1)]
    assert again.html.read_bytes() == pair_report.html.read_bytes()
    assert again.markdown.read_bytes() == pair_report.markdown.read_bytes()
    assert [p.name for p in again.images] == [p.name for p in pair_report.images]
    for a, b in zip(again.images, pair_report.images):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert b"\x00\x00\x00\x12tEXtSoftware\x00ctxreplay" in again.images[0].read_bytes()  # no version
    assert not stale.exists()
    assert sorted(p.name for p in stale.parent.iterdir()) == sorted(p.name for p in again.images)


def test_same_policy_twice_is_told_apart(sample_corpus: Corpus, one_run: str,
                                         tmp_path: Path) -> None:
    policy = load_policy(ORIGINAL)
    trace = replay_corpus(sample_corpus, policy, run_ids=[one_run])
    files = write_report(sample_corpus, [(policy, trace), (policy, trace)], tmp_path,
                         max_timelines=0)
    rows = headline_pairs(ReportDoc(files.html.read_text()).table_with(HEADLINE_START))
    assert [p for _, p, _ in rows] == [ORIGINAL, f"{ORIGINAL} #2"]
    assert len(files.images) == N_ANALYSES


def test_cli_report_and_run_report_write_the_same_files(samples: Path, tmp_path: Path) -> None:
    log = samples / "claude-code" / "tool_heavy.jsonl"
    runner = CliRunner()
    res = runner.invoke(app, ["report", str(log), "--policy", ORIGINAL, "--out",
                              str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    # its progress, not quiet: a line (not a terminal); one run, so one timeline
    assert f"report: drawing figures ({N_ANALYSES + 1})" in res.output
    res = runner.invoke(app, ["run", str(log), "--policy", ORIGINAL, "--out",
                              str(tmp_path / "run"), "--report", "-q"])
    assert res.exit_code == 0, res.output
    for name in ("report.html", "report.md"):
        assert (tmp_path / "rep" / name).read_bytes() == (tmp_path / "run" / name).read_bytes()
    res = runner.invoke(app, ["report", "--traces", str(tmp_path / "run"), "--out",
                              str(tmp_path / "from-traces"), "-q"])
    assert res.exit_code == 0 and "report: drawing" not in res.output, res.output
    assert (tmp_path / "from-traces" / "report.html").read_bytes() == \
        (tmp_path / "run" / "report.html").read_bytes()


def test_cli_report_usage_errors_exit_2(samples: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    log = samples / "claude-code" / "tool_heavy.jsonl"
    assert runner.invoke(app, ["report", str(log), "--out", str(tmp_path)]).exit_code == 2
    res = runner.invoke(app, ["report", "--traces", str(tmp_path / "nothing")])
    assert res.exit_code == 2
    assert "no such file or folder" in res.output and "nothing" in res.output
    (tmp_path / "empty").mkdir()
    res = runner.invoke(app, ["report", "--traces", str(tmp_path / "empty")])
    assert res.exit_code == 2
    assert "no traces here" in res.output


def test_timeline_marks_limits_actions_overshoots_and_rereads() -> None:
    from matplotlib.figure import Figure

    from analysis.report.timeline import plot_timeline

    n = 6
    requests = pd.DataFrame({
        "run_id": "r", "policy": "p", "request": range(n),
        "est_tokens": [10, 20, 30, 90, 40, 50], "truth_tokens": [11, 22, 33, 99, 44, 55],
        "recorded_input_tokens": pd.array([12, None, None, None, None, None], dtype="Int64"),
        "window_tokens": 100, "reserve_tokens": 20, "overshoot_tokens": [0, 0, 0, 19, 0, 0]})
    actions = pd.DataFrame({"request": [3, 4, 5], "kind": ["trim", "summarise", "trim"],
                            "undone": [False, False, True], "context_after_tokens": [60, 40, 55],
                            "trigger_tokens": [99, 90, 55]})
    rereads = pd.DataFrame({"request": [2, 4, 5], "is_read": True,
                            "reread_class": ["first", "eviction_induced", "redundant"]})
    ax = plot_timeline(requests, actions, rereads, ax=Figure().subplots())
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["window (100)", "window − reserve (80)", "recorded prompt (log)",
                      "estimate (harness)", "truth", "summarise (1)", "trim (1)",
                      "trim (1) undone", "overshoot (1)", "re-read: eviction-induced (1)",
                      "re-read: redundant (1)"]
    assert ax.get_xlabel() == "request (index in the run)"
    assert ax.get_ylabel() == "context size (tokens)"
    with pytest.raises(ValueError, match="one \\(run, policy\\)"):
        plot_timeline(pd.concat([requests, requests.assign(policy="q")]), actions)


def test_timeline_ticks_are_few_and_whole_requests() -> None:
    """A report-wide timeline (6.5 in) gets at most seven x ticks, at whole requests, and six y
    ticks: each tick is an object and a label to draw (matplotlib's default: nine and eight)."""
    from matplotlib.figure import Figure

    from analysis.report.timeline import plot_timeline

    n = 200
    requests = pd.DataFrame({
        "run_id": "r", "policy": "p", "request": range(n), "est_tokens": range(0, 700 * n, 700),
        "truth_tokens": range(0, 700 * n, 700), "recorded_input_tokens": pd.NA,
        "window_tokens": 130_000, "reserve_tokens": 24_576, "overshoot_tokens": 0})
    actions = pd.DataFrame(columns=["request", "kind", "undone", "context_after_tokens",
                                    "trigger_tokens"])
    ax = plot_timeline(requests, actions, ax=Figure(figsize=(6.5, 5.3)).subplots())
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    xs = [t for t in ax.get_xticks() if x0 <= t <= x1]
    ys = [t for t in ax.get_yticks() if y0 <= t <= y1]
    assert 3 <= len(xs) <= 7 and all(float(t).is_integer() for t in xs), xs
    assert 3 <= len(ys) <= 6, ys


def test_a_report_from_traces_pools_the_runs_the_traces_hold(samples: Path, tmp_path: Path) -> None:
    """A run with too few recorded requests borrows the fit of its model's other runs in the
    corpus.  The project cache also holds other runs of that model (ingested earlier): a report
    read from ``replay run`` traces must pool what the run pooled, not the whole cache (before:
    the report said ``anchored`` where the run said ``anchored-unscaled``)."""
    runner, cache = CliRunner(), tmp_path / "cache"
    others = runner.invoke(app, ["run", str(samples / "claude-code"), "--policy", ORIGINAL,
                                 "--out", str(tmp_path / "all"), "--cache-dir", str(cache), "-q"])
    assert others.exit_code == 0, others.output
    log = samples / "claude-code" / "tool_heavy.jsonl"
    res = runner.invoke(app, ["run", str(log), "--policy", ORIGINAL, "--out", str(tmp_path / "run"),
                              "--report", "--cache-dir", str(cache), "-q"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["report", "--traces", str(tmp_path / "run"), "--out",
                              str(tmp_path / "from-traces"), "--cache-dir", str(cache), "-q"])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "from-traces" / "report.html").read_text()
    assert "<td>anchored-unscaled</td>" in page  # 4 recorded requests: no usable fit of its own
    assert page == (tmp_path / "run" / "report.html").read_text()


def test_analysis_plots_say_which_runs_they_show_and_name_them_by_label(
        corpus_report: ReportFiles, sample_corpus: Corpus, replayed: dict[str, Replayed]) -> None:
    """Issue #25 items 4 and 10: the line plots show the 4 runs with the most requests; the
    caption says so and names them by label (the legends use the same labels, not hashes)."""
    import html as html_mod

    from replay.ingest.run_label import run_labels

    m = replayed[ORIGINAL].metrics.sort_values("n_requests", ascending=False, kind="stable")
    labels = run_labels(sample_corpus.runs)
    text = corpus_report.html.read_text()
    assert "the 4 runs with the most requests of 25" in text
    for rid in m["run_id"].head(4):
        assert html_mod.escape(labels[rid]) in text, labels[rid]
    from analysis import frames
    from analysis.arg_share import arg_share, plot_arg_share

    req = frames.requests_df(replayed[ORIGINAL].trace)
    first = m["run_id"].iloc[0]
    ax = plot_arg_share(arg_share(req[req["run_id"] == first]), labels={first: "the-label"})
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend and all(t.startswith("the-label ") for t in legend)


def test_the_verdict_says_who_wins_and_which_provider_priced_each_cost(tmp_path: Path) -> None:
    """Issue #25 items 6 and 10: a one-line verdict at the top; the pricing chosen explicitly
    (--pricing first|own) and said where the costs are."""
    log = REPO / "logs" / "compacting-session.jsonl"
    firsts: dict[str, str] = {}
    for how in ("first", "own"):
        out = tmp_path / how
        res = CliRunner().invoke(app, ["report", str(log), "-p", "two-tier-corrected", "-p",
                                       "claude-code", "--pricing", how, "--out", str(out),
                                       "--cache-dir", str(tmp_path / "c"), "-q",
                                       "--max-timelines", "0"])
        assert res.exit_code == 0, res.output
        md = (out / "report.md").read_text()
        firsts[how] = md.splitlines()[2]
        assert firsts[how].startswith("**Verdict over 1 run: fewest overshoots:")
        assert "fewest tokens sent: " in firsts[how] and "cheapest: " in firsts[how]
        totals = md[md.index("## Totals over all runs"):].splitlines()[4:6]
        priced = [row.rstrip(" |").rsplit("|", 1)[-1].strip() for row in totals]
        assert priced == (["vllm", "vllm"] if how == "first" else ["vllm",
                                                                    "anthropic-sonnet-4"])
    assert "costs priced under vllm" in firsts["first"]
    assert "each under its own provider (two-tier-corrected: vllm, claude-code: " \
           "anthropic-sonnet-4)" in firsts["own"]
    clash = CliRunner().invoke(app, ["report", str(log), "-p", "none", "--pricing", "first",
                                     "--own-providers", "--out", str(tmp_path / "x")])
    assert clash.exit_code == 2


def test_a_one_policy_verdict_names_each_unit_once() -> None:
    """'cost (USD) 28.43 USD': the verdict appended USD after the figures, whose cost header
    already names it."""
    from analysis.report.verdict import VERDICT_METRICS, verdict
    from replay.policy import load_policy

    pol = load_policy("two-tier-corrected")
    row = {"policy": pol.name, "n_runs": 2, **{m: 1234.5 for m in VERDICT_METRICS}}
    line = verdict(pd.DataFrame([row]), [pol])
    assert line.startswith(f"Verdict: {pol.name} over 2 runs: ")
    assert line.count("USD") == 1, line
