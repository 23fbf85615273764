"""Failure scenarios: one generated run per failure the two-tier harness's authors measured.

DESIGN.md section 6 lists what the two-tier harness (seed article 002) got wrong
in its original settings.  Each ``FailureScenario`` here pairs a deterministic
``replay.synth.scenario.Scenario`` that contains one of those cases with the policies to
compare over it: the original settings (``two-tier-original``), the corrected
side (usually the original plus the one fix the article names, so the fix is
shown alone; scenario 1 uses the whole corrected preset) and, for reference,
the whole ``two-tier-corrected`` preset.  Every policy of a scenario shares its
``setting`` (the window of a local server, a reserve of 0, …) and counts the
generated run's system prompt as fixed overhead.  ``write_scenarios`` writes
``<out>/<name>.jsonl`` per scenario and a README; ``replay synth --out logs/``
puts them in ``logs/scenarios/``.

The metric and its expected direction are stated here in words;
``tests/replay/synth/test_scenarios.py`` derives the figures from the traces and
asserts them.

Not here: computing metrics (``analysis``), the replay (``replay.engine.fold``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay.atomic_files import make_output_dir
from replay.errors import ReplayInputError
from replay.layout import cache_root
from replay.output_targets import Target, check_targets
from replay.policy import Policy, load_policy, replace_paths
from replay.synth.embedded import CORPUS, CORPUS_HEADER, check_ours, write_corpus, write_text
from replay.synth.generate import synth_run
from replay.synth.scenario import Scenario

ORIGINAL = "two-tier-original"
CORRECTED = "two-tier-corrected"
SUMMARY_OFF: tuple[str, Any] = ("tiers.1.trigger", {"never": True})
"""Tier two switched off: the summary does not run inside the turn."""
Override = tuple[str, Any]
"""A ``replace_path`` override: dotted path, value."""


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """A preset by name plus ``replace_path`` overrides, applied together."""

    preset: str
    overrides: tuple[Override, ...] = ()

    def load(self) -> Policy:
        """The policy."""
        return replace_paths(load_policy(self.preset), self.overrides)

    def __str__(self) -> str:
        shown = [f"{p}={v!r}" for p, v in self.overrides if p != "name"]
        return self.preset + (" with " + ", ".join(shown) if shown else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureScenario:
    """One measured failure: the run that contains it and the policies that show it and its fix."""

    number: int
    scenario: Scenario
    failure: str
    """The failure in one line."""
    setting: tuple[Override, ...] = ()
    """Overrides every compared policy shares (after the fixed overhead of the run)."""
    fix: tuple[Override, ...] = ()
    """What the corrected side changes, on top of ``fix_on`` and the setting."""
    fix_label: str
    """Short name of the fix (the corrected policy is named ``<fix_on>+<fix_label>``)."""
    fix_on: str = ORIGINAL
    """The preset the fix is applied to: the original (the fix alone) or the corrected one."""
    metric: str
    """What is measured, from which trace columns."""
    expected: str
    """The expected figures: original vs corrected (and the whole corrected preset)."""

    @property
    def name(self) -> str:
        """The scenario's file stem (``logs/scenarios/<name>.jsonl``)."""
        return self.scenario.name

    @property
    def shared(self) -> tuple[Override, ...]:
        """A plain tokenizer truth with the run's system prompt as fixed overhead (the figures
        of each scenario are in the generator's o200k counts; anchored truth would add the
        recorded usage's 1.09 scale), then the setting."""
        return (("truth.method", "tokenizer"),
                ("server.fixed_overhead_tokens", self.scenario.system_overhead_tokens),
                *self.setting)

    @property
    def original(self) -> PolicySpec:
        """The original settings under this scenario's setting."""
        return PolicySpec(ORIGINAL, self.shared)

    @property
    def corrected(self) -> PolicySpec:
        """The corrected side of the pair."""
        return PolicySpec(self.fix_on, (*self.shared, *self.fix,
                                        ("name", f"{self.fix_on}+{self.fix_label}")))

    @property
    def corrected_preset(self) -> PolicySpec:
        """The whole corrected preset under this scenario's setting (for reference)."""
        return PolicySpec(CORRECTED, self.shared)

    def policies(self) -> dict[str, Policy]:
        """``original``, ``corrected`` and ``corrected_preset``, loaded."""
        return {"original": self.original.load(), "corrected": self.corrected.load(),
                "corrected_preset": self.corrected_preset.load()}


_TEST = "python -m pytest tests/ -v"

SCENARIOS: tuple[FailureScenario, ...] = (
    FailureScenario(
        number=1,
        scenario=Scenario(
            name="big-output-at-limit", seed=11, n_requests=70, n_files=30, file_lines_min=30,
            file_lines_max=120, task_text="Fix the failing parser tests; the local model's server "
            "allows 32,768 tokens per request.", turn_every_requests=0, p_parallel=0.0,
            p_read=0.3, p_edit=0.25, p_write=0.05, p_test=0.15, p_grep=0.12, p_glob=0.03,
            p_bash=0.1, write_lines_min=20, write_lines_max=80, test_output_lines_min=20,
            test_output_lines_max=60, big_output_at_request=60, big_output_tokens=14_000,
            system_overhead_tokens=3_000, lean_tool_results=True,
            start_ts="2026-01-19T09:10:00.000Z"),
        failure="A ~14,000-token test output arrives near the limit of a 32,768-token window: "
                "trimming only after sending lets the request through over the limit.",
        setting=(("server.window_tokens", 32_768), ("server.reserve_tokens", 0), SUMMARY_OFF),
        fix_on=CORRECTED, fix_label="newest-output-kept",
        fix=(("tiers.0.protect.tool_results", 1),),
        metric="overshoots: requests with overshoot_tokens > 0 (and the largest overshoot); "
               "whether the big output reaches the model (not trimmed before its request)",
        expected="original ≥ 1 overshoot, at the request that carries the big output, which "
                 "stays protected as the newest output; corrected (check before sending, "
                 "emergency trims inside the protected range) 0 overshoots with the big output "
                 "sent untrimmed. The fix also protects the newest tool result in tier one: the "
                 "engine's token-based protected range leaves out a newest output larger than "
                 "itself (10,922 tokens here), so the bare preset trims the output before the "
                 "model sees it."),
    FailureScenario(
        number=2,
        scenario=Scenario(
            name="reserve-long-turn", seed=21, n_requests=272, n_files=60, file_lines_min=30,
            file_lines_max=110, p_partial_read=0.5, task_text="Migrate every request handler to "
            "the new session API in one go, then make the whole suite pass.",
            turn_every_requests=0, todo_every_requests=0, p_parallel=0.0, p_read=0.22,
            p_edit=0.3, p_write=0.2, p_test=0.1, p_grep=0.1, p_glob=0.02, p_bash=0.06,
            write_lines_min=30, write_lines_max=110, test_output_lines_min=15,
            test_output_lines_max=50, p_thinking=0.1, p_intent=0.3, lean_tool_results=True,
            start_ts="2026-01-20T08:30:00.000Z"),
        failure="One turn of ~270 tool calls grows past 105,424 tokens; with 24,576 tokens "
                "reserved for the answer on a 130,000 window, request + reserve no longer fit.",
        setting=(SUMMARY_OFF,),
        fix_label="subtract-reserve", fix=(("subtract_reserve", True),),
        metric="overshoots (overshoot_tokens > 0) and, for each, truth_tokens ≤ window_tokens "
               "(the request alone fits: the reserve is what overflows)",
        expected="original ≥ 1 overshoot, every one fitting without the reserve; corrected "
                 "(reserve subtracted exactly, nothing else changed) 0; the corrected preset 0. "
                 "Tier two never runs in this turn (the article's turn reached 105,425 tokens "
                 "past its 80,000 trigger; the engine has no turn-boundary trigger)."),
    FailureScenario(
        number=3,
        scenario=Scenario(
            name="estimator-low-margin", seed=31, n_requests=200, n_files=40, file_lines_min=40,
            file_lines_max=120, task_text="Make the integration suite pass; its failing runs "
            "print long reports.", turn_every_requests=0, todo_every_requests=0,
            p_parallel=0.0, p_read=0.12, p_edit=0.25, p_write=0.35, p_test=0.16, p_grep=0.06,
            p_glob=0.02, p_bash=0.06, p_thinking=0.05, p_intent=0.2, write_lines_min=100,
            write_lines_max=200, test_output_lines_min=500, test_output_lines_max=800,
            p_test_fail=1.0, lean_tool_results=True, start_ts="2026-01-21T13:00:00.000Z"),
        failure="The estimator reads ~10 % below the server (83,000 vs 91,000): a 10 % margin "
                "fires only at ~128,000 real tokens of 130,000, so an output arriving then "
                "overshoots.",
        setting=(("server.reserve_tokens", 0),
                 SUMMARY_OFF),
        fix_label="margin-20", fix=(("tiers.2.margin_frac", 0.2),),
        metric="overshoots; truth_tokens of the request after which the emergency (collapse) "
               "first fires; est_tokens / truth_tokens there",
        expected="estimator scale 0.9 (both presets): original (margin 0.1) fires at ≥ 127,000 "
                 "real tokens with ≥ 1 overshoot; corrected (margin 0.2) fires at ≤ 120,000 "
                 "with 0 overshoots; corrected preset 0 overshoots."),
    FailureScenario(
        number=4,
        scenario=Scenario(
            name="write-args-fill-window", seed=41, n_requests=150, n_files=30,
            file_lines_min=40, file_lines_max=140, task_text="Add a report module with one "
            "renderer per metric and a test file per renderer.", turn_every_requests=0,
            p_parallel=0.0, p_read=0.2, p_edit=0.3, p_write=0.2, p_test=0.12, p_grep=0.08,
            p_glob=0.02, p_bash=0.08, write_lines_min=80, write_lines_max=200,
            test_output_lines_min=30, test_output_lines_max=80, lean_tool_results=True,
            start_ts="2026-01-22T10:15:00.000Z"),
        failure="Write/edit-heavy work: call arguments stay verbatim while results are trimmed, "
                "so arguments fill over half the context.",
        fix_label="write-notes", fix=(("tiers.0.blocks", ["tool_results", "write_args"]),),
        metric="argument share bytes_args / (bytes_args + bytes_results + bytes_other) at the "
               "request with the most context; write/edit argument bytes there; trimmed "
               "tool results and trimmed calls (evictions)",
        expected="original: share ≥ 0.5, arguments ≥ 3 × results, results trimmed, no call "
                 "trimmed; corrected (completed writes shrink to a note): share ≤ original − "
                 "0.3 and write/edit argument bytes ≤ half; corrected preset: share ≤ original "
                 "− 0.2."),
    FailureScenario(
        number=5,
        scenario=Scenario(
            name="summary-refires", seed=5, n_requests=236, n_files=30, file_lines_min=40,
            file_lines_max=120, task_text="Build the ingestion service: one module per source "
            "format, a scheduler and the tests.", turn_every_requests=0, p_parallel=0.0,
            p_read=0.08, p_edit=0.12, p_write=0.65, p_test=0.1, p_grep=0.02, p_glob=0.0,
            p_bash=0.03, write_lines_min=240, write_lines_max=340, test_output_lines_min=15,
            test_output_lines_max=40, p_thinking=0.1, p_intent=0.3,
            system_overhead_tokens=30_000, lean_tool_results=True,
            start_ts="2026-01-23T07:45:00.000Z"),
        failure="A long build: keeping the last 24 messages verbatim leaves 50,000–65,000 "
                "tokens after each summary, so it fires again ~15 calls later.",
        fix_label="cap-eighth", fix=(("tiers.1.keep_max_frac", 0.125),),
        metric="summaries (actions.kind == 'summarise'), calls between them, context right "
               "after each (actions.context_after_tokens)",
        expected="original ≥ 10 summaries in 236 calls, ≤ 20 calls apart on average, most "
                 "leaving 45,000–65,000 tokens; corrected (remainder capped at an eighth): "
                 "fewer summaries, each leaving ≤ fixed overhead + summary + an eighth of the "
                 "window; corrected preset ≤ original / 2."),
    FailureScenario(
        number=6,
        scenario=Scenario(
            name="recall-placeholder-loop", seed=61, n_requests=100, n_files=40,
            file_lines_min=40, file_lines_max=130, p_partial_read=0.5, task_text="Find out why "
            "the session window shrinks after a reconnect.", turn_every_requests=0,
            p_parallel=0.0, p_read=0.4, p_edit=0.1, p_write=0.02, p_test=0.1, p_grep=0.2,
            p_glob=0.05, p_bash=0.1, reread_burst_at_request=30, reread_burst_reads=55,
            reread_burst_target="largest", write_lines_min=10, write_lines_max=40,
            test_output_lines_min=20, test_output_lines_max=50, lean_tool_results=True,
            start_ts="2026-01-26T15:20:00.000Z"),
        failure="A placeholder asking the model to call the tool again sits next to reads of "
                "the same file, over and over (55 reads in one turn).",
        fix_label="neutral-placeholder",
        fix=(("tiers.0.placeholder.template", ("[{tool} call {call_id} on {path}: output "
              "shortened, {lines} lines / {chars} chars in full]")),
             ("tiers.0.placeholder.head_chars", 240), ("tiers.0.placeholder.tail_chars", 120)),
        metric="reads of one path in one turn (tool_result rows with op 'read' in the store "
               "messages); copies of it replaced by a placeholder that "
               "analysis.lint_placeholders flags",
        expected="the log: ≥ 55 reads of one file in one turn; original: the lint flags tier "
                 "one's placeholder and ≥ 40 copies of the file carry it; corrected (neutral "
                 "placeholder naming the call, first 240 / last 120 characters): lint clean, "
                 "0 inviting copies; corrected preset: lint clean."),
    FailureScenario(
        number=7,
        scenario=Scenario(
            name="small-trims-cache", seed=71, n_requests=140, n_files=50, file_lines_min=30,
            file_lines_max=110, p_partial_read=0.3, task_text="Speed up the loader without "
            "changing its output.", turn_every_requests=0, p_parallel=0.0, p_read=0.35,
            p_edit=0.15, p_write=0.03, p_test=0.15, p_grep=0.15, p_glob=0.03, p_bash=0.1,
            write_lines_min=10, write_lines_max=40, test_output_lines_min=30,
            test_output_lines_max=70, lean_tool_results=True,
            start_ts="2026-01-27T11:05:00.000Z"),
        failure="Every small trim reclaims little but invalidates the cached prefix after it.",
        fix_label="min-reclaim-eighth", fix=(("tiers.0.min_reclaim_frac", 0.125),),
        metric="trim actions applied / undone, reclaimed_tokens and invalidated_tokens of the "
               "applied ones (actions, kind == 'trim')",
        expected="original: ≥ 30 trims, each reclaiming < an eighth of the window, together "
                 "invalidating ≥ 10 × what they reclaim; corrected (minimum reclaim of an "
                 "eighth, else undo): every applied trim reclaims ≥ an eighth, passes undone, "
                 "invalidated tokens ≤ original / 4."),
)
"""The seven failures of DESIGN.md section 6, in the issue's order."""


SCENARIOS_HEADER = "# Failure scenarios (synthetic)"
"""The first line of the scenarios' README (``embedded.check_ours``)."""


def write_scenarios(out_dir: Path,
                    scenarios: tuple[FailureScenario, ...] = SCENARIOS) -> list[Path]:
    """Write ``<out_dir>/<name>.jsonl`` per scenario and a README describing each.

    Args:
        out_dir: the folder (created if missing), e.g. ``logs/scenarios``.
        scenarios: what to write (default: all of ``SCENARIOS``).

    Returns:
        The JSONL paths written, in scenario order.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [write_text(out_dir / f"{fs.name}.jsonl", synth_run(fs.scenario))
               for fs in scenarios]
    lines = [SCENARIOS_HEADER, "",
             ("One generated Claude Code run per failure the two-tier harness's authors measured "
              "(DESIGN.md section 6), written by `replay.synth.failure_cases.write_scenarios`, "
              "deterministically; regenerate with `replay synth --out logs/`. Each is replayed "
              "under the original settings and the corrected side by "
              "`tests/replay/synth/test_scenarios.py`."), ""]
    for fs in scenarios:
        lines += [f"## {fs.number}. `{fs.name}.jsonl` ({fs.scenario.n_requests} requests)", "",
                  fs.failure, "",
                  f"- original: `{fs.original}`", f"- corrected: `{fs.corrected}`",
                  f"- metric: {fs.metric}", f"- expected: {fs.expected}", ""]
    write_text(out_dir / "README.md", "\n".join(lines))
    return written


def write_generated(out_dir: Path, only: Sequence[str] = ()) -> list[Path]:
    """Write the generated corpus (``replay.synth.embedded.CORPUS``) into ``out_dir`` and the
    failure scenarios into ``out_dir/scenarios``, as ``replay synth`` does; ``only``: just the
    sessions and scenarios of these names (default: all).

    Returns:
        The JSONL paths written, the corpus's first.

    Raises:
        ReplayInputError: ``only`` names none of them.
        OutputError: ``out_dir`` or ``out_dir/scenarios`` is a file, a symlink below
            ``out_dir``, or cannot be made or written, or ``out_dir`` is in the project
            cache or holds it (``replay.output_targets``), or holds a file of a name it writes
            and is no folder synth wrote (``embedded.check_ours``); nothing is written.
    """
    chosen = tuple(s for s in CORPUS if not only or s.name in only)
    failures = tuple(fs for fs in SCENARIOS if not only or fs.name in only)
    if not chosen and not failures:
        raise ReplayInputError(f"no scenario named {list(only)}; one of "
                               f"{[s.name for s in CORPUS] + [fs.name for fs in SCENARIOS]}")
    # the folders made or checked first, as every command's output: a symlink planted at
    # OUT/scenarios was followed (the scenarios written wherever it pointed), a file at OUT
    # was "OUT: File exists"
    check_targets([Target(out_dir, "--out")],  # never into the project cache (its files
                  cache=cache_root(None, writing=False))  # have fixed names: beside it is fine
    check_ours(out_dir, [*(f"{s.name}.jsonl" for s in chosen), "README.md"] if chosen else [],
               CORPUS_HEADER, "--out")  # (a user's own README.md or log of those names)
    if failures:
        check_ours(out_dir / "scenarios", [*(f"{fs.name}.jsonl" for fs in failures),
                                           "README.md"], SCENARIOS_HEADER, "--out")
    make_output_dir(out_dir, *(("scenarios",) if failures else ()))
    paths = write_corpus(out_dir, chosen) if chosen else []
    if failures:
        paths += write_scenarios(out_dir / "scenarios", failures)
    return paths


def scenario(name: str) -> FailureScenario:
    """The scenario named ``name`` (its file stem)."""
    for fs in SCENARIOS:
        if fs.name == name:
            return fs
    raise KeyError(f"no failure scenario {name!r}; one of {[fs.name for fs in SCENARIOS]}")
