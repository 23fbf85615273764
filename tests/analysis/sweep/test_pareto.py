"""Choosing among a sweep's settings: aggregates, constraints and the objective, Pareto fronts,
and the sweep's plots, on a table made by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis.per_run.fast_metrics import METRIC_COLUMNS
from analysis.sweep.pareto import aggregate, best, pareto_front, plot_pareto
from replay.errors import ReplayInputError


def _table() -> pd.DataFrame:
    """Two runs × three settings, numbers chosen by hand."""
    rows = []
    for setting, frac, tokens, over, cached in (("a", 0.0, (100, 300), (0, 1), (50, 150)),
                                                ("b", 0.1, (150, 350), (0, 0), (140, 340)),
                                                ("c", 0.2, (200, 400), (0, 0), (20, 40))):
        for i, rid in enumerate(("r1", "r2")):
            row = dict.fromkeys(METRIC_COLUMNS, 0)
            row.update(run_id=rid, setting=setting, frac=frac, tokens_sent=tokens[i],
                       overshoots_n=over[i], cache_invalidation_cached_tokens=cached[i],
                       n_requests=10, peak_tokens=tokens[i],
                       cache_invalidation_cached_share=cached[i] / tokens[i])
            rows.append(row)
    return pd.DataFrame(rows)


def test_aggregate_sums_counts_and_recomputes_ratios() -> None:
    agg = aggregate(_table(), ["frac"]).set_index("setting")
    assert agg.loc["a", "tokens_sent"] == 400 and agg.loc["a", "overshoots_n"] == 1
    assert agg.loc["b", "cache_invalidation_cached_share"] == 480 / 500
    assert agg.loc["c", "peak_tokens"] == 400 and agg.loc["c", "n_runs"] == 2


def test_best_meets_the_constraints_then_minimises() -> None:
    ranked = best(_table(), ["overshoots == 0"], "tokens_sent", params=["frac"])
    assert ranked["setting"].tolist() == ["b", "c"]
    top = best(_table(), ["frac >= 0.1", "cached_share > 0.5"], "cached_share", minimise=False,
               params=["frac"])
    assert top["setting"].tolist() == ["b"]
    assert best(_table(), ["overshoots_n > 5"], params=["frac"]).empty
    with pytest.raises(ReplayInputError, match="no_such_metric"):
        best(_table(), ["no_such_metric == 0"])
    with pytest.raises(ReplayInputError, match="objective"):
        best(_table(), [], "nothing")


def test_a_misspelt_constraint_says_the_metric_names_it_may_mean() -> None:
    with pytest.raises(ReplayInputError, match="no metric 'overshoot'; did you mean overshoots_n"):
        best(_table(), ["overshoot == 0"], params=["frac"])
    with pytest.raises(ReplayInputError, match="did you mean tokens_sent"):
        best(_table(), [], "tokns_sent")
    # names inside strings, function calls and numbers are not metric names
    assert len(best(_table(), ["tokens_sent > 1e2 and frac != 'x'"], params=["frac"])) == 3


def test_pareto_front_keeps_the_undominated_settings() -> None:
    agg = aggregate(_table(), ["frac"])
    assert pareto_front(agg, "tokens_sent", "overshoots_n")["setting"].tolist() == ["a", "b"]
    front = pareto_front(agg, "tokens_sent", "cache_invalidation_cached_share", minimise_y=False)
    assert front["setting"].tolist() == ["a", "b"]
    ax = plot_pareto(agg, "tokens_sent", "overshoots_n")
    assert ax.get_xlabel() == "tokens_sent (tokens)" and len(ax.lines) == 1


def _drawn(table: pd.DataFrame, out: Path, monkeypatch: pytest.MonkeyPatch,
           **kwargs: Any) -> tuple[Any, list[Path]]:
    """The sweep's plots of ``table`` over ``frac`` written to ``out``: its metrics grid (the
    Figure, drawn) and the files."""
    from analysis.sweep import plots as sweep_plots
    figures = []
    draw = sweep_plots._metrics_figure
    monkeypatch.setattr(sweep_plots, "_metrics_figure",
                        lambda *a: figures.append(draw(*a)) or figures[-1])
    files = sweep_plots.write_plots(table, ["frac"], out, **kwargs)
    [grid] = figures
    grid.canvas.draw()
    return grid, files


def test_sweep_plots_report_progress_and_label_ticks_without_an_offset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table().assign(tokens_sent=lambda t: t["tokens_sent"] * 100_000)
    calls: list[tuple[int, int]] = []
    grid, files = _drawn(table, tmp_path, monkeypatch,
                         on_figure=lambda done, total: calls.append((done, total)))
    # the three Pareto fronts (the last: cost against induced re-reads) and the metrics grid
    assert calls == [(k, len(files)) for k in range(len(files) + 1)] and len(files) == 4
    assert all(f.stat().st_size > 0 for f in files)
    panel = next(ax for ax in grid.axes if ax.get_title().startswith("tokens_sent"))
    assert panel.get_title() == "tokens_sent (tokens)"
    assert panel.yaxis.get_offset_text().get_text() == ""  # no "1e7" over the title
    assert all(t.get_text().endswith("M") for t in panel.get_yticklabels() if t.get_text())


def test_sweep_plots_drawn_in_workers_are_the_same_files(tmp_path: Path) -> None:
    from analysis.sweep.plots import write_plots

    here = write_plots(_table(), ["frac"], tmp_path / "here", jobs=1)
    there = write_plots(_table(), ["frac"], tmp_path / "there", jobs=2)
    assert [p.name for p in here] == [p.name for p in there]
    for a, b in zip(here, there):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_sweep_metric_panels_are_only_those_drawn_ticked_at_their_ends_and_the_swept_values(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grid, _ = _drawn(_table().assign(tokens_sent=lambda t: t["tokens_sent"] * 100_000),
                     tmp_path, monkeypatch)
    titles = [ax.get_title() for ax in grid.axes]
    assert "" not in titles and len(titles) == len(set(titles))  # no empty Axes made
    panel = next(ax for ax in grid.axes if ax.get_title() == "tokens_sent (tokens)")
    assert list(panel.get_yticks()) == [40e6, 60e6]  # the settings' lowest and highest sums
    assert [t.get_text() for t in panel.get_yticklabels()] == ["40M", "60M"]
    shown = [ax for ax in grid.axes if ax.xaxis.get_visible()]
    assert shown and all(list(ax.get_xticks()) == [0.0, 0.1, 0.2] for ax in shown)
    assert len(shown) == min(5, len(grid.axes))  # x ticks under each column's lowest panel


def test_a_metric_panels_two_tick_labels_differ_when_its_ends_agree_to_four_digits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sums of 114,924,000 and 114,930,000 tokens: both read 114.9M at four significant digits,
    as if the metric never moved; the labels take the digits that tell them apart."""
    grid, _ = _drawn(_table().assign(tokens_sent=lambda t: 57_456_000 + t["tokens_sent"] * 30),
                     tmp_path, monkeypatch)
    panel = next(ax for ax in grid.axes if ax.get_title() == "tokens_sent (tokens)")
    assert list(panel.get_yticks()) == [114_924_000, 114_930_000]
    assert [t.get_text() for t in panel.get_yticklabels()] == ["114.92M", "114.93M"]
