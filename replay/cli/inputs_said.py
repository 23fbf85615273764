"""What a command that read logs says of its inputs: every line it prints on stderr of them, and
the same as the ``inputs`` object of its ``--json`` (``inputs_doc``), so a script reading the
JSON learns what a user reading the terminal does.

The lines: the folder links not followed, the compressed logs not read and the input paths
given again, read once (``discovery_said``),
each issue of a file (a line skipped, usage dropped), the cached entries parsed again, a store
rebuilt, the files without a conversation, the records of types a parser does not know
(``ingested_said``; a dataset opened as it is: ``stored_said``, with the files its last ingest
failed), the files of the same bytes (``same_bytes_note``), the failed-inputs summary
(``input_summary``) and the runs not replayed (``replay.corpus.not_replayed_note``).  Each is
written once here and printed (escaped) or put in the JSON (escaped as JSON does) from here.

The commands whose ``--json`` is a list of rows keep it so (scripts read it); what belongs to a
row is a column of it: ``source_issues_n``, the issues stored for the row's log file
(``replay.corpus.source_issues``).

Not here: opening the inputs and the exit code (``replay.cli.inputs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from replay.cli.output import say, warn

if TYPE_CHECKING:
    from replay.corpus import Corpus
    from replay.ingest.ingest_report import IngestReport
    from replay.ingest.store import Entry


@dataclass(frozen=True)
class Said:
    """One line a command prints on stderr of its inputs: ``text``, after ``warning: `` when
    ``warning``."""

    text: str
    warning: bool = False

    @property
    def line(self) -> str:
        """The line as stderr shows it (before escaping)."""
        return f"warning: {self.text}" if self.warning else self.text


def print_said(lines: Iterable[Said]) -> None:
    """``lines`` on stderr, each escaped (``replay.cli.output``)."""
    for s in lines:
        if s.warning:
            warn(s.text)
        else:
            say(s.text, err=True)


def input_exit_code(report: IngestReport | None, strict: bool) -> int:
    """The exit code the input files call for: 1 when any file failed, or with ``strict`` when
    any file had an issue; else 0 (a dataset opened as it is: 0)."""
    if report is None:
        return 0
    return 1 if report.failed or (strict and report.issues) else 0


def _n_files(report: IngestReport) -> int:
    # (a file reused from the cache that --strict fails for its stored issues is in both lists)
    return len({*report.parsed, *report.cached, *report.failed, *report.no_conversation})


def input_summary(report: IngestReport | None, strict: bool) -> str | None:
    """One line saying which input files failed (None when the exit code is 0)."""
    if not input_exit_code(report, strict):
        return None
    assert report is not None
    shown = ", ".join(report.failed[:5]) + (", …" if len(report.failed) > 5 else "")
    line = f"inputs: {len(report.failed)} of {_n_files(report)} files failed" + (
        f" ({shown})" if shown else "") + f"; {len(report.issues)} issue{'' if len(report.issues) == 1 else 's'}"
    return line + ("; --strict: stopped at the first file with a problem" if strict else "")


def no_conversation_note(report: IngestReport | None) -> str | None:
    """One line naming the input files that hold no conversation (not failures: a session file
    of ``summary`` records, a subagent's metadata), None when there is none."""
    if report is None or not report.no_conversation:
        return None
    items = sorted(report.no_conversation.items())
    shown = "; ".join(f"{k}: {v}" for k, v in items[:3])  # escaped where printed (``say``)
    more = f"; and {len(items) - 3} more" if len(items) > 3 else ""
    return (f"note: {len(items)} file{' holds' if len(items) == 1 else 's hold'} no conversation, "
            f"nothing to replay there ({shown}{more})")


def _n_unknown(report: IngestReport) -> int:
    return sum(n for types in report.unknown.values() for n in types.values())


def unknown_note(report: IngestReport | None) -> str | None:
    """One line counting the records of types their parser does not know, left out of the runs
    (``IngestReport.unknown``: a newer version's record, or a second format appended to a
    file), with the files that hold the most; None when every record was understood."""
    if report is None or not report.unknown:
        return None
    per = sorted(((sum(t.values()), src, t) for src, t in report.unknown.items()),
                 key=lambda x: (-x[0], x[1]))
    n = _n_unknown(report)

    def types(t: dict[str, int]) -> str:
        top = sorted(t.items(), key=lambda x: (-x[1], x[0]))
        return ", ".join(f"{k} x{v:,}" for k, v in top[:3]) + (
            f", +{len(top) - 3} more types" if len(top) > 3 else "")
    shown = "; ".join(f"{src}: {types(t)}" for _, src, t in per[:3])  # escaped where printed
    more = f"; and {len(per) - 3} more files" if len(per) > 3 else ""
    return (f"note: {n:,} record{'' if n == 1 else 's'} of a type the parser does not know "
            f"left out of the runs ({shown}{more}); `replay inspect FILE` shows how a file is "
            "read")


SAME_BYTES_SHOWN = 5
"""Groups of identical files the same-bytes note names at most; the rest are counted."""


def same_bytes_note(groups: Sequence[Sequence[str]]) -> str | None:
    """One line naming the input files that hold the same bytes as another (``entry_notes.same_bytes``:
    a session copied into two folders): each is a run of its own, so every total counts it once
    per copy; None when no two are the same."""
    if not groups:
        return None
    n = sum(len(g) - 1 for g in groups)
    shown = "; ".join(" = ".join(g) for g in groups[:SAME_BYTES_SHOWN])  # escaped where printed
    more = f"; and {len(groups) - SAME_BYTES_SHOWN} more" if len(groups) > SAME_BYTES_SHOWN else ""
    return (f"note: {n} input file{' holds' if n == 1 else 's hold'} the same bytes as another "
            f"({shown}{more}): each is a run of its own, counted in every total once per copy")


def uncounted_tokenizer_note(corpus: Corpus) -> str | None:
    """One line counting the runs of ``corpus`` with no o200k_base counts (a dataset ingested
    with ``--tokenizers cl100k_base``; their ``estimated_tokens_o200k`` is null): the replay
    and the fits count every text with the tokenizer a policy names, o200k_base by default,
    and where that one was not counted take the counts there are
    (``replay.engine.prepared_run``, ``truth.summary_count``), which was said nowhere: a
    policy's figures and ``calibrate``'s "scale × o200k count" then rest on cl100k_base."""
    if corpus.runs.num_rows == 0 or "estimated_tokens_o200k" not in corpus.runs.column_names:
        return None
    n = corpus.runs["estimated_tokens_o200k"].null_count
    if not n:
        return None
    return (f"note: {n} of {corpus.runs.num_rows} run(s) hold no o200k_base counts (the "
            "dataset was ingested without it): a policy or fit counting with o200k_base "
            "uses their cl100k_base counts instead (`replay ingest` of their logs with "
            "--tokenizers o200k_base counts them)")


def repaired_note(report: IngestReport | None) -> str | None:
    """One line naming the input files whose cached entry failed its checksum and were parsed
    again (``IngestReport.repaired``), None when there is none."""
    if report is None or not report.repaired:
        return None
    shown = ", ".join(report.repaired[:5]) + (", …" if len(report.repaired) > 5 else "")
    n = len(report.repaired)
    return (f"cache: {n} stored entr{'y' if n == 1 else 'ies'} missing, damaged or without a "
            f"checksum (truncated, swapped or edited files, or an older ctxreplay) parsed again "
            f"from {'its log' if n == 1 else 'their logs'}: {shown}")


def rebuilt_note(report: IngestReport | None) -> str | None:
    """One line saying that the dataset folder held a store an older ctxreplay wrote, rebuilt by
    this ingest (``IngestReport.rebuilt_from_schema``), None when it did not."""
    if report is None or report.rebuilt_from_schema is None:
        return None
    from replay.ingest.schema import SCHEMA_VERSION  # lazy: only for this note (start-up time)

    dropped = (f"; {report.dropped_older} entr{'y' if report.dropped_older == 1 else 'ies'} of "
               "files not given now dropped from it") if report.dropped_older else ""
    return (f"cache: the dataset was written by an older ctxreplay (schema version "
            f"{report.rebuilt_from_schema}, this one writes {SCHEMA_VERSION}): rebuilt, every "
            f"file given parsed again{dropped}")


def discovery_said(links: Sequence[object], packed: Sequence[object],
                   repeated: Sequence[tuple[object, object]] = ()) -> list[Said]:
    """What the walk of the input folders left out: the symlinks to a folder not followed, the
    compressed logs not read and the paths reached again, read once (``replay.ingest.discover``:
    ``a.jsonl ./a.jsonl``, or a folder and a file in it)."""
    said = []
    if repeated:
        n = len(repeated)
        shown = "; ".join(str(a) if str(a) == str(b) else f"{a} = {b}"
                          for a, b in repeated[:5]) + ("; …" if n > 5 else "")
        said.append(Said(
            f"note: {n} input path{'s' if n > 1 else ''} given again, read once ({shown}): "
            f"{'each file is' if n > 1 else 'the file is'} one run, counted once"))
    if links:
        shown = ", ".join(map(str, links[:5])) + (", …" if len(links) > 5 else "")
        said.append(Said(
            f"note: {len(links)} symlink{'s' if len(links) > 1 else ''} to a folder not followed "
            f"({shown}); name {'them' if len(links) > 1 else 'it'} to read the logs there"))
    if packed:
        shown = ", ".join(map(str, packed[:5])) + (", …" if len(packed) > 5 else "")
        said.append(Said(
            f"note: {len(packed)} compressed log file{'s' if len(packed) > 1 else ''} not read "
            f"({shown}); decompress {'them' if len(packed) > 1 else 'it'} to read "
            f"{'them' if len(packed) > 1 else 'it'}"))
    return said


def ingested_said(report: IngestReport, *, quiet: bool = False) -> list[Said]:
    """What a command says of an ingest of its inputs (after the walk's ``discovery_said``):
    each issue, the entries parsed again, a store rebuilt, the files without a conversation
    (not with ``quiet``), the records of unknown types."""
    said = [Said(str(issue), warning=True) for issue in report.issues]
    said += [Said(n, warning=True) for n in (repaired_note(report), rebuilt_note(report)) if n]
    if (note := no_conversation_note(report)) and not quiet:
        said.append(Said(note))
    if note := unknown_note(report):
        said.append(Said(note))
    return said


def stored_said(entries: Sequence[Entry], strict: bool,
                failed: dict[str, str] | None = None) -> tuple[IngestReport, list[Said]]:
    """What a dataset's entries hold of their logs' problems, said as an ingest that reuses them
    says it (the report they make, and its lines): each issue found when the log was parsed
    and the records of types the parser does not know; and the input files whose last ingest
    into it ``failed`` (``failed_inputs.failed_said``; with ``strict`` they are failed inputs:
    once, a file kept as ingested before failed for its stored issue too)."""
    # lazy: the ingest's modules load pyarrow, which --help and usage errors do not need
    from replay.ingest.failed_inputs import failed_said
    from replay.ingest.ingest_report import IngestReport, report_reused

    report = IngestReport()
    for e in entries:
        report_reused(report, e, e.source, strict)
    said = ingested_said(report)  # (its issues and unknown records: nothing else is reused)
    if note := failed_said(failed or {}, {e.source for e in entries}):
        said.append(Said(note, warning=True))
        if strict:
            report.failed.extend(s for s in sorted(failed or {}) if s not in report.failed)
    return report, said


def inputs_doc(report: IngestReport, strict: bool, said: Sequence[Said] = (), *,
               same: Sequence[Sequence[str]] = (), failed_before: int = 0,
               not_replayed: Sequence[str] | None = None,
               summarised: bool = True) -> dict[str, Any]:
    """The ``inputs`` object of a command's ``--json``: the counts of what its inputs gave and
    lost, and ``messages``, every line it says of them on stderr (``said``, then the failed-inputs
    summary and the runs ``not_replayed``: None for a command that replays nothing, whose
    ``runs_not_replayed_n`` is then null), as printed but escaped as JSON does (with
    ``--quiet`` too the no-conversation note, which stderr then leaves out).

    ``same``: the groups of input files of the same bytes (their note is among ``said``);
    ``failed_before``: of a dataset opened as it is, the input files its last ingest failed;
    ``summarised``: False for a command that says its own summary instead (redact, inspect)."""
    from replay.corpus import not_replayed_note  # lazy: pyarrow (start-up time)

    messages = [s.line for s in said]
    if summarised and (line := input_summary(report, strict)):
        messages.append(line)
    if note := not_replayed_note(list(not_replayed or [])):
        messages.append(f"note: {note}")
    return {
        "files_n": _n_files(report),
        "files_parsed_n": len(report.parsed),
        "files_reused_n": report.n_reused,
        "files_failed_n": len(report.failed), "files_failed": list(report.failed),
        "files_failed_before_n": failed_before,
        "files_no_conversation_n": len(report.no_conversation),
        "files_same_bytes_n": sum(len(g) - 1 for g in same),
        "issues_n": len(report.issues),
        "records_unknown_n": _n_unknown(report),
        "entries_repaired_n": len(report.repaired),
        "symlinks_not_followed_n": len(report.not_followed),
        "compressed_not_read_n": len(report.compressed),
        "paths_repeated_n": len(report.repeated),
        "runs_not_replayed_n": None if not_replayed is None else len(not_replayed),
        "messages": messages,
    }


def corpus_inputs(corpus: Corpus, strict: bool,
                  not_replayed: Sequence[str] | None = None) -> dict[str, Any]:
    """``inputs_doc`` of the corpus a command opened (``replay.cli.inputs._open``): its ingest's
    report, or a dataset opened as it is, its entries' stored problems."""
    from replay.ingest import entry_notes  # lazy: pyarrow (start-up time)

    if corpus.report is not None:
        report = corpus.report
        said = discovery_said(report.not_followed, report.compressed, report.repeated) + \
            ingested_said(report)
        failed_before = 0
    else:
        report, said = stored_said(corpus.entries, strict, corpus.failed)
        failed_before = len(corpus.failed)
    same = entry_notes.same_bytes(corpus.entries)
    if note := same_bytes_note(same):
        said.append(Said(note))
    if note := uncounted_tokenizer_note(corpus):
        said.append(Said(note))
    return inputs_doc(report, strict, said, same=same, failed_before=failed_before,
                      not_replayed=not_replayed)

