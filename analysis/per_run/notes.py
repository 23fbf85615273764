"""The notes every command prints under its figures, in one order and one wording.

What the figures of ``replay run``, ``diff``, ``sweep`` and ``check`` rest on beyond the log:
induced work the replay added (``analysis.per_run.induced``) and how many induced re-reads were
sized as estimates, runs the tokenizer judged although recorded usage was asked for and
requests that recorded no usage (``analysis.truth_notes``), and runs not replayed
(``replay.corpus``).  Each command gives what it knows; ``figure_notes`` makes the sentences,
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
from replay.corpus import not_replayed_note

__all__ = ["estimated_by_policy", "figure_notes"]


def figure_notes(*, induced: bool | Sequence[str] = False, n_estimated: int = 0,
                 estimated_scope: str = "",
                 truth_cells: Iterable[tuple[str, str | None]] = (),
                 truth_where: str | None = None,
                 unrecorded: dict[str, int] | None = None,
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
        not_replayed: labels of the runs with no recorded request.
    """
    notes = []
    if induced:
        notes.append(INDUCED_NOTE if induced is True
                     else f"{INDUCED_NOTE}: under {', '.join(induced)}")
    if estimated := estimated_note(n_estimated):
        notes.append(f"{estimated} {estimated_scope}".rstrip())
    for note in (tokenizer_judged_note(truth_cells, truth_where),
                 unrecorded_note(unrecorded or {}), not_replayed_note(list(not_replayed))):
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
