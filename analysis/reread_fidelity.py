"""Re-reads after a recorded compaction: what the need rules predict against what the log shows.

For every compaction the harness recorded in a run (``PreparedRun.harness_boundary``; Claude
Code ``compact_boundary``, Codex ``compacted``, OpenHands condensation, Inspect
``CompactionEvent``, whatever the parser made a harness summary of), over the requests from the
first one after it to the next compaction (or the run's end):

- *removed*: the files whose read results the harness dropped — fetched read blocks
  (``replay.engine.needs``) between the start of the context it compacted and its boundary —
  less those it kept a read of after the boundary (still in context: nothing to fetch again);
- re-attachment: a rule of what the harness put back after the summary is not applied.
  Claude Code does not write what it re-attaches to its log, and its rule
  (``replay.engine.tiers.restore.pick_files``: of the 5 files read last, those within 5,000
  tokens), applied to the five real compactions, marks as carried 9 of the 25 files the agents
  read again anyway (recall 0.81 instead of 0.88, tokens within ±30 % in 1 session of 5
  instead of 3); what the log itself holds after the boundary is kept, above;
- *recorded*: removed files the agent read again in the window, as the log shows
  (``BlockNeeds.refetch_requests``).  A read whose result is an error (the file not found,
  permission denied) brought nothing of the file back: it is not a re-read (the need rules'
  rule, ``replay.engine.needs``: it satisfies no need in the replay either); a removed file
  whose only reads in the window failed is counted apart (``rereads_failed``), not recorded;
- *predicted*: removed files with a need in the window
  (``BlockNeeds.need_requests`` under the rules given) — found without looking at any re-read;
- tokens: a predicted file costs what fetching its newest removed read again returns with the
  log known up to the boundary (``replay.engine.refetch``: the file whole as known then, the
  agent's edits applied, as its reads render it, or the part the agent read after it last lost
  the file; the replay's induced re-reads insert the same, known up to the need; the sizes
  that are estimates are counted: ``sized_parts_only``, ``sized_as_lost_before``), a recorded one the result of its first re-read in the window
  (tokenizer counts as ingested, ``o200k_base`` when stored).  Known up to the boundary, not
  the need: a recorded re-read between them must not size its own prediction.

A file counts once per compaction.  Figures per run pool its compactions: recall = predicted and
recorded / recorded, precision = predicted and recorded / predicted, tokens error = (predicted −
recorded) / recorded tokens; None when the denominator is 0 (no compaction, nothing re-read,
nothing predicted).  Re-issued calls other than reads (a command run again) are not judged:
their output is the command's new result, not the content removed.

Not here: the rules (``replay.engine.needs``), the rest of fidelity (``analysis.fidelity``).
"""

from __future__ import annotations

from dataclasses import dataclass

from replay.engine.needs import RULES, Rule, run_needs
from replay.engine.prepared import PreparedRun
from replay.engine.refetch import AS_LOST_BEFORE, PARTS_ONLY, file_contents, refetch


@dataclass(frozen=True, slots=True)
class CompactionRereads:
    """One recorded compaction's re-reads, predicted and recorded (paths as recorded)."""

    compaction: int
    first_request: int
    """First request after the compaction."""
    end_request: int
    """First request after the window (the next compaction's first request, or n_requests)."""
    removed: tuple[str, ...]
    recorded: tuple[str, ...]
    predicted: tuple[str, ...]
    recorded_tokens: int
    predicted_tokens: int
    edits_unapplied: int = 0
    """Edits of the predicted files before the boundary not applied to their sizes (no
    replaced/new text: a patch, a shell edit; ``replay.engine.refetch``): those sizes are the
    file as last read or written."""
    sized_parts_only: int = 0
    """Predicted files sized as the largest part read (never read whole by then: a lower
    bound; ``refetch.PARTS_ONLY``)."""
    sized_as_lost_before: int = 0
    """Predicted files sized as the part the agent read after it lost the file before
    (``refetch.AS_LOST_BEFORE``)."""
    rereads_failed: int = 0
    """Removed files the agent tried to read again in the window whose every read failed (an
    error result): not recorded as re-read."""

    @property
    def hits(self) -> int:
        """Files both predicted and recorded."""
        return len(set(self.recorded) & set(self.predicted))


@dataclass(frozen=True, slots=True)
class RereadFidelity:
    """A run's (or a corpus's) re-read figures pooled over its compactions."""

    compactions: int
    recorded: int
    predicted: int
    hits: int
    recorded_tokens: int
    predicted_tokens: int
    edits_unapplied: int = 0
    """``CompactionRereads.edits_unapplied`` summed."""
    sized_parts_only: int = 0
    """``CompactionRereads.sized_parts_only`` summed."""
    sized_as_lost_before: int = 0
    """``CompactionRereads.sized_as_lost_before`` summed."""
    rereads_failed: int = 0
    """``CompactionRereads.rereads_failed`` summed."""

    @property
    def recall(self) -> float | None:
        """Recorded re-reads predicted (None: none recorded)."""
        return self.hits / self.recorded if self.recorded else None

    @property
    def precision(self) -> float | None:
        """Predicted re-reads recorded (None: none predicted)."""
        return self.hits / self.predicted if self.predicted else None

    @property
    def tokens_error_frac(self) -> float | None:
        """(predicted − recorded) / recorded re-read tokens (None: none recorded)."""
        if not self.recorded_tokens:
            return None
        return (self.predicted_tokens - self.recorded_tokens) / self.recorded_tokens

    def __add__(self, other: RereadFidelity) -> RereadFidelity:
        return RereadFidelity(*(a + b for a, b in zip(_fields(self), _fields(other))))


NO_REREADS = RereadFidelity(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)


def _fields(r: RereadFidelity) -> tuple[int, ...]:
    return (r.compactions, r.recorded, r.predicted, r.hits, r.recorded_tokens,
            r.predicted_tokens, r.edits_unapplied, r.sized_parts_only, r.sized_as_lost_before,
            r.rereads_failed)


def pooled(rows: list[CompactionRereads]) -> RereadFidelity:
    """The figures of ``rows`` pooled."""
    total = NO_REREADS
    for c in rows:
        total += RereadFidelity(1, len(c.recorded), len(c.predicted), c.hits,
                                c.recorded_tokens, c.predicted_tokens, c.edits_unapplied,
                                c.sized_parts_only, c.sized_as_lost_before, c.rereads_failed)
    return total


def compaction_rereads(run: PreparedRun,
                       rules: tuple[Rule, ...] = RULES) -> list[CompactionRereads]:
    """Every recorded compaction of ``run`` with something before it: its re-reads predicted
    under ``rules`` and recorded (what the log re-attached after the boundary is kept, not
    removed)."""
    needs = run_needs(run, rules)
    tokens = run.tokens.get("o200k_base") or next(iter(run.tokens.values()))
    result_of = {run.call_of[b]: b for b in range(run.n_blocks) if run.call_of[b] >= 0}
    firsts = [(c, r) for c, r in enumerate(run.harness_first_request) if r is not None]
    out = []
    for i, (c, first) in enumerate(firsts):
        boundary = run.harness_boundary[c]
        start = run.recorded_from[first - 1] if first > 0 else 0
        if boundary <= start:
            continue  # the log begins after it: nothing it removed is in the log
        if first == 0 and _outputs_between(run, boundary, run.req_blocks[0]):
            continue  # inherited (a branch's or fork's copy of its parent's history): the
            # requests after it are the parent's, not this run's; the parent's run judges it
        end = firsts[i + 1][1] if i + 1 < len(firsts) else run.n_requests
        kept = {got.key for b in range(boundary, run.req_blocks[first])
                if (got := needs.of(b)) is not None}
        by_path: dict[str, list[int]] = {}
        for b in range(start, boundary):
            got = needs.of(b)
            if got is not None and got.key.startswith("path:") and got.key not in kept:
                by_path.setdefault(run.path[got.call_block], []).append(b)
        recorded: dict[str, int] = {}
        predicted: dict[str, int] = {}
        unapplied = 0
        estimated: dict[str, int] = {}
        failed = 0
        for path, blocks in by_path.items():
            again = min(((r, c2) for b in blocks for r, c2 in zip(
                needs.blocks[b].refetch_requests, needs.blocks[b].refetch_blocks)
                if first <= r < end), default=None)
            if again is not None:
                res = result_of.get(again[1])
                recorded[path] = tokens[res] if res is not None else 0
            elif any(first <= r < end for b in blocks
                     for r in needs.blocks[b].failed_reread_requests):
                failed += 1
            if any(first <= r < end for b in blocks for r in needs.blocks[b].need_requests):
                again_as = refetch(run, blocks[-1], boundary)
                predicted[path] = again_as.scaled(run, tokens[again_as.block])
                contents = file_contents(run)
                unapplied += contents.unapplied_before(blocks[-1], boundary)
                why = contents.estimate(blocks[-1], boundary)
                estimated[why] = estimated.get(why, 0) + 1
        out.append(CompactionRereads(
            compaction=c, first_request=first, end_request=end, removed=tuple(by_path),
            recorded=tuple(recorded),
            predicted=tuple(predicted), recorded_tokens=sum(recorded.values()),
            predicted_tokens=sum(predicted.values()), edits_unapplied=unapplied,
            sized_parts_only=estimated.get(PARTS_ONLY, 0),
            sized_as_lost_before=estimated.get(AS_LOST_BEFORE, 0), rereads_failed=failed))
    return out


def _outputs_between(run: PreparedRun, lo: int, hi: int) -> bool:
    """Whether model output lies in blocks ``[lo, hi)``: at a run's first request, the answers
    to requests the run does not hold (a rewound branch or a fork carries its parent's history,
    compactions and all, into its first request's context)."""
    role = run.role
    return any(role[b] == "assistant" for b in range(lo, hi))
