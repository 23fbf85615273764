"""``replay check`` in one call: ``run_check(settings)``, for the command, a notebook or a CI script.

``CheckSettings`` says what is checked: the archive, the policies, the baseline, the tolerances,
the provider, the project cache, whether changed logs fail; ``CheckSettings.resolve`` fills what
was not given from the project's ``[tool.ctxreplay]`` (``replay.config``), as a bare
``replay check`` does.  ``run_check`` loads the policies, tolerances and baseline and checks them
against each other before any log is read, then replays and compares (``analysis.check.gate``) or,
with ``update``, rewrites the baseline::

    from analysis.check.run import CheckSettings, run_check

    done = run_check(CheckSettings.resolve())      # the project's archive, policies, baseline
    done.exit_code                                  # 0 pass, 1 regression
    done.result.with_status("regressed")

Not here: judging (``analysis.check.gate``), tolerances (``analysis.check.tolerances``), renderings of the
result (``analysis.check.report``), printing (``replay.cli``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.check import gate as checking
from analysis.check.baseline import load_baseline
from analysis.check.baseline_changes import BaselineChange
from analysis.check.tolerances import Tolerances, load_tolerances
from replay.atomic_files import output_file
from replay.config import find_config
from replay.corpus import Corpus, Opener, corpus_of, project_opener
from replay.errors import ReplayError, ReplayInputError
from replay.layout import cache_root
from replay.output_targets import Target, check_targets
from replay.policy import Policy, load_policy, refuse_shared_names
from replay.policy.pricing import with_provider


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckSettings:
    """What ``run_check`` checks."""

    archive: tuple[Path, ...]
    """Log files or folders, or one dataset."""
    policies: tuple[Policy | str, ...]
    """Policies, or policy files or preset names."""
    baseline: Path
    tolerances: Path | None = None
    """Tolerances YAML (None: no metric may get worse at all)."""
    provider: str | None = None
    """Price every policy under this provider profile instead of its own."""
    cache_dir: Path | None = None
    """The project cache logs are ingested into (``replay.layout.cache_root``)."""
    strict_logs: bool = False
    """Also fail when a run's log changed, appeared or disappeared."""
    source: Path | None = None
    """The project configuration the defaults came from (None: none was read)."""

    @staticmethod
    def resolve(paths: Sequence[Path] | None = None, policies: Sequence[str] | None = None,
                baseline: Path | None = None, *, tolerances: Path | None = None,
                provider: str | None = None, cache_dir: Path | None = None,
                strict_logs: bool | None = None, start: Path | None = None) -> CheckSettings:
        """The given values, else ``[tool.ctxreplay]``'s of the project ``start`` (default: the
        current folder) is in (read only when one of paths, policies, baseline is missing).

        Raises:
            ReplayInputError: paths, policies or the baseline neither given nor configured.
            ConfigError: the configuration cannot be read.
        """
        cfg = (find_config(start or Path.cwd()) if not (paths and policies and baseline)
               else None)
        archive = tuple(paths or (cfg.archive if cfg and cfg.archive else ()))
        pols = tuple(policies or (cfg.policies if cfg and cfg.policies else ()))
        base = baseline or (cfg.baseline if cfg else None)
        missing = [what for what, v in (("PATHS (config: archive)", archive),
                                        ("--policy (config: policies)", pols),
                                        ("--baseline (config: baseline)", base)) if not v]
        if missing or base is None:
            where = f"{cfg.source} does not say either" if cfg else \
                "no [tool.ctxreplay] in pyproject.toml or ctxreplay.toml here or above"
            raise ReplayInputError(f"check needs {', '.join(missing)}: {where}")
        return CheckSettings(
            archive=archive, policies=pols, baseline=base,
            tolerances=tolerances or (cfg.tolerances if cfg else None),
            provider=provider or (cfg.provider if cfg else None),
            cache_dir=cache_root(cache_dir or (cfg.out if cfg and cfg.out else None)),
            strict_logs=strict_logs if strict_logs is not None else bool(cfg and cfg.strict_logs),
            source=cfg.source if cfg else None)


def check_outputs(settings: CheckSettings, *, update: bool,
                  reports: Sequence[tuple[str, Path]]) -> None:
    """Refuse, before any work, an output of the check that would overwrite what it reads
    (``replay.output_targets``) or that cannot be written (a folder, a read-only file system,
    ``/proc``: ``replay.atomic_files.output_file``).

    Raises:
        OutputError: one line naming the output and why.
    """
    targets = [Target(path, option) for option, path in reports]
    kept: list[tuple[Path, str]] = [(Path(p), "a policy file") for p in settings.policies
                                    if isinstance(p, str) and Path(p).is_file()]
    kept += [(settings.tolerances, "the tolerances")] if settings.tolerances else []
    kept += [(settings.source, "the project configuration")] if settings.source else []
    if update:
        targets.append(Target(settings.baseline, "--baseline"))
    else:
        kept.append((settings.baseline, "the baseline"))
    check_targets(targets, inputs=list(settings.archive), kept=kept,
                  cache=cache_root(settings.cache_dir))
    for t in targets:
        output_file(t.path)


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """What ``run_check`` found: the comparison, or with ``update`` what the new baseline
    changed."""

    corpus: Corpus
    result: checking.CheckResult | None
    """Every case judged (None with ``update``)."""
    changes: tuple[BaselineChange, ...] = ()
    """With ``update``: what the rewritten baseline changed."""

    @property
    def exit_code(self) -> int:
        """0 when the check passed (or the baseline was updated), 1 otherwise."""
        return self.result.exit_code if self.result is not None else 0


def run_check(settings: CheckSettings, *, update: bool = False, allow_python: bool = False,
              open_runs: Opener | None = None, on_run: Callable[[int, int], None] | None = None,
              on_warning: Callable[[str], None] | None = None,
              reports: Sequence[tuple[str, Path]] = ()) -> CheckOutcome:
    """Replay ``settings.archive`` under its policies and compare with the baseline (or, with
    ``update``, write the baseline).

    Args:
        settings: what to check.
        update: rewrite the baseline with the current values instead (an unreadable old one is
            replaced, with a warning).
        allow_python: allow ``module:Class`` tiers.
        open_runs: opens the archive (default: ``replay.corpus.project_opener`` of
            ``settings.cache_dir``), called after the policies, tolerances and baseline are
            read and checked against each other.
        on_run: ``(done, total)`` after each replayed (policy, run).
        on_warning: told what was replaced (default: nothing said).
        reports: the files the caller will write the result to, with their option
            (``("--junit", path)``): checked with the baseline of ``update`` before any work
            (``check_outputs``).

    Raises:
        ReplayError: a policy, the tolerances or the baseline cannot be read, or do not fit
            each other (``CheckError``, ``PolicyError``, ...).
        OutputError: an output is an input, the baseline (unless ``update`` writes it), the
            tolerances, a policy, in the project cache, a folder, or cannot be written.
    """
    check_outputs(settings, update=update, reports=reports)
    pols = [p if isinstance(p, Policy) else load_policy(p) for p in settings.policies]
    refuse_shared_names(pols)  # (before any log is read: as measure refuses them)
    pols = [with_provider(p, settings.provider) for p in pols] if settings.provider else pols
    tol = load_tolerances(settings.tolerances) if settings.tolerances else Tolerances()
    old = None
    try:
        old = load_baseline(settings.baseline) if not update or settings.baseline.exists() \
            else None
    except ReplayError as exc:
        if not update:
            raise
        if on_warning is not None:
            on_warning(f"replacing an unreadable baseline: {exc}")
    if old is not None and not update:
        checking.preflight(old, pols, tol)
    corpus = corpus_of(list(settings.archive), open_runs or project_opener(settings.cache_dir))
    total, done = len(corpus.replayable()) * len(pols), [0]

    def tick(_run_id: str) -> None:
        done[0] += 1
        if on_run is not None:
            on_run(done[0], total)

    if update:
        changes = checking.update_baseline(corpus, pols, settings.baseline, old, tol,
                                           allow_python=allow_python, on_run=tick)
        return CheckOutcome(corpus, None, tuple(changes))
    assert old is not None
    return CheckOutcome(corpus, checking.check(corpus, pols, old, tol,
                                               strict_logs=settings.strict_logs,
                                               allow_python=allow_python, on_run=tick))
