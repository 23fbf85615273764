"""``replay fidelity PATHS``: how closely replaying each run's harness policy reproduces its log.

For every run with recorded usage, under its format's harness preset or ``--policy`` (the
user's own configuration of their harness): where the replay compacts against where the log
did, the post-compaction request sizes, the cache reads, the held-out error of the truth
used and the re-reads after recorded compactions (predicted by the need rules against the log),
then the totals against the targets of issues #15 and #22 — and, for each run the policy is
evidently not the harness of, why it is not judged (``analysis.fidelity``).

Not here: the figures themselves (``analysis.fidelity``, also in the HTML report).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer

from replay.cli.inputs import (
    CacheOutOpt,
    FormatOpt,
    PathsArg,
    QuietOpt,
    StrictOpt,
    _finish,
    _open,
    table_command,
)
from replay.cli.inputs_said import corpus_inputs
from replay.cli.output import _emit, _errors, _print_json, say
from replay.cli.tables import Layout, TableOptions

FIDELITY_LAYOUT = Layout(columns=(
    "run", "policy", "recorded_compaction", "replayed_compaction", "placement_error_requests",
    "post_size_error_median_frac", "cache_read_error_median_frac", "held_out_error_frac",
    "reread_recall", "reread_precision", "reread_tokens_error_frac", "not_judged_reason"))


@table_command
def fidelity(
    paths: PathsArg,
    policy: Annotated[str | None, typer.Option(
        "--policy", "-p", help="Replay every run under this policy (preset or YAML: your "
        "harness's own configuration) instead of its format's preset.")] = None,
    cache_dir: CacheOutOpt = None, fmt: FormatOpt = None, strict: StrictOpt = False,
    quiet: QuietOpt = False, *, table: TableOptions,
) -> None:
    """Replay each run with recorded usage under its harness's policy and compare with the log.

    Per run: the first compaction recorded and replayed (requests) and the placement error,
    the median error of the request sizes after the recorded compaction, the median cache-read
    error (a fraction of the recorded input), the held-out error of the truth used, the files
    fetched again after the recorded compactions against those the need rules predict (recall,
    precision, signed tokens error), and why a run is not judged (its harness evidently ran another configuration: replay it with yours,
    --policy).  Then the totals against the targets.  Errors are fractions (0.012 = 1.2 %).
    """
    # lazy: pandas loads only for this command (start-up time of the others)
    from analysis.fidelity import fidelity as measure
    from analysis.fidelity import fidelity_totals
    from analysis.fidelity_lines import totals_lines
    from replay.corpus import source_issues
    from replay.ingest.run_label import run_labels
    from replay.policy import load_policy

    with _errors():
        harness = load_policy(policy) if policy else None
        corpus = _open(paths, cache_dir, fmt, quiet, strict)
        found = measure(corpus, policy=harness)
    labels = run_labels(corpus.runs)
    issues = source_issues(corpus, (r.run_id for r in found))
    rows: list[dict[str, Any]] = [
        {"run": labels[r.run_id], **dataclasses.asdict(r), "not_judged_reason":
         r.not_judged_reason, "source_issues_n": n} for r, n in zip(found, issues)]
    totals = fidelity_totals(found, runs_in_corpus=len(corpus.run_ids))
    if table.as_json:
        _print_json({"runs": rows, "totals": totals, "inputs": corpus_inputs(corpus, strict)})
    else:
        units = {c: "fraction" for c in (rows[0] if rows else {}) if c.endswith("_frac")}
        _emit(rows, table, layout=dataclasses.replace(FIDELITY_LAYOUT, units=units),
              title="fidelity of the harness's own policy (errors in %; --json: fractions)")
        for line in totals_lines(totals):
            say(line, err=table.as_csv)  # (in the CSV it made rows of prose)
    _finish(corpus.report, strict)
