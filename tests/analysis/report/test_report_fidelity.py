"""The report's fidelity section (issue #15 item 6): per run with recorded usage, how closely the
recorded harness's own policy reproduces the log, from ``analysis.fidelity`` (one definition)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.fidelity import RunFidelity, fidelity
from analysis.report.build import write_report
from analysis.report.pages import Page, render_html, render_markdown
from replay.corpus import open_corpus, replay_corpus
from replay.policy import load_policy
from tests.analysis.report.report_html import ReportDoc

COMPACTED = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
HEADER = "placement error (requests)"


def _table(doc: ReportDoc) -> list[list[str]]:
    return next(t for t in doc.tables if t and HEADER in t[0])


def test_the_fidelity_table_shows_each_run_with_usage(samples: Path, tmp_path: Path) -> None:
    corpus = open_corpus([samples / "claude-code" / COMPACTED, samples / "claude-code" /
                          "subagent.jsonl"], cache_dir=tmp_path / "ds")
    policy = load_policy("claude-code")
    files = write_report(corpus, [(policy, replay_corpus(corpus, policy))], tmp_path / "r",
                         max_timelines=0)
    table = _table(ReportDoc(files.html.read_text()))
    rows = {r[0].split(" — ")[0].rsplit("/", 1)[-1]: dict(zip(table[0], r)) for r in table[1:]}
    figures = {f.source.rsplit("/", 1)[-1]: f for f in fidelity(corpus)}
    compacted = rows[COMPACTED]
    f = figures[COMPACTED]
    assert compacted["recorded compaction (request, trigger)"] == (
        f"{f.recorded_compaction} (auto)")
    assert compacted["replayed compaction (request)"] == str(f.replayed_compaction)
    assert compacted[HEADER] == f"{f.placement_error_requests:+d}"
    assert compacted["post-compaction size error (median)"] == (
        f"{f.post_size_error_median_frac:+.1%}")
    assert f.truth_source == "anchored"  # judged by anchored truth's held-out error
    assert compacted["held-out error of the truth used (median)"] == (
        f"{f.held_out_anchored_error_frac:.2%}")
    assert compacted["held-out error, anchored / fitted model (median)"] == (
        f"{f.held_out_anchored_error_frac:.2%} / {f.held_out_fitted_error_frac:.2%}")
    plain = rows["subagent.jsonl"]  # never compacted: unknown, not 0
    assert plain["recorded compaction (request, trigger)"] == "none"
    assert plain[HEADER] == "unknown"
    assert plain["post-compaction size error (median)"] == "unknown"
    md = files.markdown.read_text()
    assert "## Fidelity" in md and "placement within ±3 requests: 1 of 1" in md
    # the counterfactual-compaction model: one compaction here, so the defaults, said so
    assert ("counterfactual compactions, model fitted on this corpus: restore: "
            "{summary_base_tokens: 3500, summary_tokens_per_summarised: 0.0, files: 5") in md
    assert "summary: defaults (1 measured compaction(s), fewer than 3)" in md
    assert "defaults (1 measured compaction(s), fewer than 3)" in files.html.read_text()


def test_every_fidelity_string_is_escaped() -> None:
    hostile = '<script>alert(1)</script>|*x*'
    row = RunFidelity(run_id="r1", source=hostile, policy="<b>p</b>", truth_source="<i>t</i>",
                      n_requests=3, recorded_compaction=1, recorded_trigger="<u>auto</u>",
                      replayed_compaction=None, placement_error_requests=None,
                      post_size_error_median_frac=None, cache_read_error_median_frac=0.5,
                      held_out_error_frac=None)
    page = Page(policies=[(load_policy("none"), [])],
                runs=[{"run_id": "r1", "label": hostile, "source": hostile, "format": "chat",
                       "model": ""}],
                metrics=pd.DataFrame(), totals=pd.DataFrame(), diffs=[], analyses=[],
                timelines=[], fidelity=[row])
    html_text = render_html(page)
    assert "<script>" not in html_text and "<b>p</b>" not in html_text
    assert "<u>auto</u>" not in html_text and "&lt;u&gt;auto&lt;/u&gt;" in html_text
    table = _table(ReportDoc(html_text))
    assert table[1][0] == hostile and table[1][3] == "1 (<u>auto</u>)"  # shown as written
    assert table[1][4] == "none" and table[1][5] == "unknown"
    md = render_markdown(page, "files")
    assert "<script>" not in md and "\\|\\*x\\*" in md
