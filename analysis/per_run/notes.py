"""The notes every command prints under its figures, in one order and one wording.

What the figures of ``replay run``, ``diff``, ``sweep`` and ``check`` rest on beyond the log:
induced work the replay added (``analysis.per_run.induced``) and how many induced re-reads were
sized as estimates, runs the tokenizer judged although recorded usage was asked for and
requests that recorded no usage (``analysis.truth_notes``), requests with no idle gap the
replay can read (``unknown_gaps``), redacted blocks sized as estimates
(``estimated_text_by_run``), and runs not replayed (``replay.corpus``).  Each command gives what it knows; ``figure_notes`` makes the sentences,
so a note is never worded, ordered or forgotten differently from one command to the next.

Here, in ``analysis.per_run``, beside the metrics the notes speak of, so that ``replay run``'s
roll-up (``rollup.run_notes``) takes them too.  Not here: a run's own note
(``analysis.per_run.rollup.replay_note``), what only the CI gate
says (changed logs and metrics, a truth that changed: ``analysis.check.gate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from analysis.per_run.induced import INDUCED_NOTE, estimated_note
from analysis.truth_notes import tokenizer_judged_note, unrecorded_note
from replay.corpus import Corpus, not_replayed_note
from replay.ingest.timestamps import WINDOW_SAID, timestamp_seconds

__all__ = ["estimated_by_policy", "estimated_text_by_run", "figure_notes", "unknown_gaps",
           "unknown_gaps_by_run"]


def unknown_gaps(ts: Iterable[str | None]) -> tuple[int, int]:
    """Of one run's requests in order (their recorded timestamps), those with no idle gap the
    replay can read: (no timestamp the engine reads, ``timestamp_seconds``: missing, not
    ISO 8601 or outside 2000-2099; timestamped before the request before it, a clock set
    back).  The prefix cache
    expires after the provider's ``ttl_s`` (and an ``idle_minutes`` trigger fires) only on a
    gap between two timestamps (``PreparedRun.expired``): there it never does, and after a
    clock set back the next gap is measured from it."""
    missing = back = 0
    prev: float | None = None
    for t in (timestamp_seconds(x or "") for x in ts):
        if t is None:
            missing += 1
            continue
        back += prev is not None and t < prev
        prev = t
    return missing, back


def unknown_gaps_by_run(corpus: Corpus, run_ids: Iterable[str]) -> dict[str, int]:
    """Run id → its requests with no idle gap the replay can read (``unknown_gaps``), of the
    runs ``run_ids`` (those replayed) that have any."""
    by_run = corpus.request_values("ts", run_ids)
    return {rid: n for rid, ts in by_run.items() if (n := sum(unknown_gaps(ts)))}


def estimated_text_by_run(corpus: Corpus, run_ids: Iterable[str]) -> dict[str, int]:
    """Run id → its blocks sized as estimates (``n_estimated_blocks``: a redacted block sized
    by its declared length, ``replay.ingest.redaction``, or a text counted in parts), of the
    runs ``run_ids`` (those replayed) that have any."""
    runs = corpus.runs
    blocks = dict(zip(runs["run_id"].to_pylist(), runs["n_estimated_blocks"].to_pylist()))
    return {rid: n for rid in dict.fromkeys(run_ids) if (n := blocks.get(rid) or 0)}


def _estimated_text_note(counts: dict[str, int]) -> str | None:
    if not counts:
        return None
    return (f"{sum(counts.values()):,} block(s) in {len(counts):,} run(s) are sized as "
            "estimates (redacted text by its declared length at 3.8 characters a token, or a "
            "text tiktoken could not count whole, counted in parts): so are the figures made "
            "of them; replay runs shows each run's estimated_blocks and estimated_tokens")


def _gaps_note(counts: dict[str, int]) -> str | None:
    if not counts:
        return None
    n = sum(counts.values())
    return (f"{n:,} request(s) in {len(counts):,} run(s) have no idle gap the replay can read "
            f"(no timestamp, one {WINDOW_SAID}, or one before the request before): the prefix "
            "cache never expires "
            "there; each run's note in replay run says how many")


def figure_notes(*, induced: bool | Sequence[str] = False, n_estimated: int = 0,
                 estimated_scope: str = "",
                 truth_cells: Iterable[tuple[str, str | None]] = (),
                 truth_where: str | None = None,
                 unrecorded: dict[str, int] | None = None,
                 unknown_gaps: dict[str, int] | None = None,
                 estimated_text: dict[str, int] | None = None,
                 not_replayed: Sequence[str] = ()) -> list[str]:
    """The notes, in order, of the facts a command gives (each left out when it has nothing).

    Args:
        induced: the figures include induced re-reads (True), or the policies whose do (named
            in the note).
        n_estimated: induced re-reads sized as estimates (``induced_rereads_estimated_n``);
            ``estimated_scope`` is said after it (what the count is summed over).
        truth_cells: (run id, truth source) of each replay; ``truth_where`` says where each
            run's truth is shown (``tokenizer_judged_note``).
        unrecorded: run id → its requests that recorded no usage (``unrecorded_requests``).
        unknown_gaps: run id → its requests with no idle gap (``unknown_gaps_by_run``).
        estimated_text: run id → its blocks sized as estimates (``estimated_text_by_run``).
        not_replayed: labels of the runs with no recorded request.
    """
    notes = []
    if induced:
        notes.append(INDUCED_NOTE if induced is True
                     else f"{INDUCED_NOTE}: under {', '.join(induced)}")
    if estimated := estimated_note(n_estimated):
        notes.append(f"{estimated} {estimated_scope}".rstrip())
    for note in (tokenizer_judged_note(truth_cells, truth_where),
                 unrecorded_note(unrecorded or {}), _gaps_note(unknown_gaps or {}),
                 _estimated_text_note(estimated_text or {}),
                 not_replayed_note(list(not_replayed))):
        if note:
            notes.append(note)
    return notes


def estimated_by_policy(counts: Sequence[tuple[str, int]]) -> tuple[int, str]:
    """Induced re-reads sized as estimates under several policies (name, count), as
    ``figure_notes`` takes them: the sum and, when more than one policy counts, each one's
    share (``(6 under a, 6 under b)``), so that the sum is never read as one policy's count
    (``replay run`` of either says 6)."""
    total = sum(n for _, n in counts)
    if len(counts) < 2 or not total:
        return total, ""
    return total, f"({', '.join(f'{n:,} under {name}' for name, n in counts)})"
