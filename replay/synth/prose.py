"""What the people in a ``replay.synth.generate`` run write: the assistant's and the human's text.

Todo lists, the assistant's thinking, the short intent before a tool call, the
end-of-turn report, the human's follow-up prompts, and the harness's compaction
summary in Claude Code's wording.  Everything is drawn from the
``random.Random`` it is given.

Not here: the fake repo (``replay.synth.repo``), the tool calls and their output
(``replay.synth.tools``), JSONL records (``replay.synth.generate``).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from replay.synth.repo import ADJS, NOUNS, VERBS, FakeRepo, gerund, ident

if TYPE_CHECKING:
    from replay.synth.tools import Workspace

def todo_items(rng: random.Random) -> list[tuple[str, str]]:
    """5-8 ``(content, activeForm)`` todo items."""
    items = [("Explore the codebase and map the call sites", "Exploring the codebase")]
    for _ in range(rng.randint(3, 6)):
        v, n, a = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(ADJS)
        items.append((f"{v.capitalize()} {a} {n}s in {n}.py", f"{gerund(v).capitalize()} {a} {n}s"))
    return items + [("Run the full test suite and fix failures", "Running the test suite")]


def todos(items: list[tuple[str, str]], progress: float) -> list[dict[str, str]]:
    """The todo list at ``progress`` (0..1): done items completed, the next one in progress."""
    done = int(progress * len(items))
    return [{"content": c, "status": "completed" if i < done else "in_progress" if i == done
             else "pending", "activeForm": f} for i, (c, f) in enumerate(items)]


def thinking(rng: random.Random, subject: str) -> str:
    """A few sentences of reasoning about ``subject``."""
    s = [f"I need to understand how {subject} fits with the {rng.choice(NOUNS)} handling.",
         (f"The {rng.choice(ADJS)} {rng.choice(NOUNS)} path probably calls {ident(rng)} with "
          f"limit={rng.choice((8, 16, 64))}, which would explain the off-by-{rng.randint(1, 3)}."),
         (f"Before changing anything I should check where {ident(rng)} is used; there were "
          f"{rng.randint(2, 14)} call sites last time."),
         f"If I change the signature, test_{rng.choice(NOUNS)}.py will need updating too.",
         f"Let me keep the change small: {rng.choice(VERBS)} first, then {rng.choice(VERBS)}."]
    return " ".join(rng.sample(s, rng.randint(2, 5)))


def intent(rng: random.Random, what: str) -> str:
    """The short text an assistant writes before a tool call."""
    return rng.choice((f"Let me {what}.", f"Now I'll {what}.", f"I'll {what} next.",
                       f"Good. Next, {what}.", f"That explains it. Let me {what}."))


def final_text(rng: random.Random, repo: FakeRepo, n_passed: int) -> str:
    """The end-of-turn report."""
    changed = [repo.rel(p) for p in (repo.modified + repo.created)[-6:]] or ["(no files)"]
    return ("Done. Summary of the changes:\n\n" + "\n".join(f"- `{p}`: {rng.choice(VERBS)} the "
            f"{rng.choice(ADJS)} {rng.choice(NOUNS)}s" for p in changed)
            + f"\n\nThe suite passes ({n_passed} tests). Note: {ident(rng)} still allocates per "
            "call; worth a follow-up.")


def follow_up(rng: random.Random) -> str:
    """A human's next prompt in the same session."""
    return rng.choice((f"Now also handle {rng.choice(ADJS)} {rng.choice(NOUNS)}s in {ident(rng)}.",
                       f"The CI run still fails on test_{ident(rng)}, can you look?",
                       f"Can you refactor {ident(rng)} so it doesn't copy the list?",
                       "Looks good. Next, add tests for the edge cases you mentioned.",
                       f"Please also document the {rng.choice(NOUNS)}s and rerun everything."))


def compact_summary(task: str, ws: Workspace, todo: list[dict[str, str]]) -> str:
    """The harness's compaction summary (Claude Code's opening, sections and closing)."""
    changed = ws.repo.modified + ws.repo.created
    files = "\n".join(f"   - {ws.repo.rel(p)}: read {n} time(s)" + (", modified" if p in changed
                      else "") for p, n in list(ws.reads.items())[-25:])
    errs = "\n".join(f"   - {e}" for e in ws.errors[-12:]) or "   - none"
    pend = "\n".join(f"   - [{t['status']}] {t['content']}" for t in todo)
    return ("This session is being continued from a previous conversation that ran out of context. "
            "The summary below covers the earlier portion of the conversation.\n\nAnalysis:\n"
            "Let me chronologically analyze the conversation: the user asked for the task below; I "
            "explored the code, edited the files listed, and ran the tests repeatedly.\n\n"
            "Summary:\n"
            f"1. Primary Request and Intent:\n   {task}\n\n2. Files and Code Sections:\n{files}\n\n"
            f"3. Errors and fixes:\n{errs}\n\n4. Pending Tasks:\n{pend}\n\n5. Current Work:\n"
            "   Iterating on the failing tests.\n\nPlease continue the conversation from where we "
            "left it off without asking the user any further questions. Continue with the last "
            "task that you were asked to work on.")
