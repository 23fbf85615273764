"""The ``replay`` command: a thin layer over library functions of the same names.

Each command parses its arguments, calls the library, prints a table (or JSON
with ``--json``) and maps errors to exit codes: 0 ok, 1 something failed (a
file could not be ingested; a dataset, ``replay run`` folder or baseline read back is damaged,
``replay.errors.DamagedInputError``; a check regressed), 2 a usage or configuration error
(a bad option or policy, a path that is not there).  This is the one package that wires
``replay`` and ``analysis`` together.

This module holds the typer ``app`` (the ``replay`` console script) and
registers the commands on it, in the order ``replay --help`` lists them:

- ``replay.cli.replay_commands``: ingest, runs, policies, providers, run, calibrate, synth,
  show-policy;
- ``replay.cli.analysis_commands``: report, diff, sweep;
- ``replay.cli.check_command``: check (replay and compare with a baseline: the CI gate);
- ``replay.cli.inspect_command``: inspect (one log file as the ingest reads it);
- ``replay.cli.fidelity_command``: fidelity (the harness's own policy against its log);
- ``replay.cli.redact_command``: redact (a shareable archive of log files);
- ``replay.cli.sql_command``: sql (one query over the dataset and the traces, DuckDB);
- ``replay.cli.inputs``: the arguments they share and ``_open`` (PATHS → corpus);
- ``replay.cli.inputs_said``: what they say of their inputs, on stderr and in ``--json``;
- ``replay.cli.output``: the consoles, tables/JSON, progress bar and error exit codes.

Each command imports the library it calls inside its function, when it runs: ``replay
--help``, a command's ``--help``, ``--version`` and a usage error load none of pandas,
pyarrow, matplotlib, DuckDB or Dask (~0.35 s of CPU instead of ~1.3 s), and a command loads
only what it uses (``tests/replay/cli/test_cli_imports.py``).
"""

from __future__ import annotations

import inspect as pyinspect
import re
import typing
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from replay.cli.analysis_commands import diff, report, sweep
from replay.cli.check_command import check
from replay.cli.fidelity_command import fidelity
from replay.cli.inspect_command import inspect
from replay.cli.redact_command import redact
from replay.cli.replay_commands import (
    calibrate,
    ingest,
    policies,
    providers,
    run,
    runs,
    show_policy,
    synth,
)
from replay.cli.sql_command import sql

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Replay context-management policies over recorded coding-agent runs.",
                  epilog="\b\nExample: replay run logs/ -p two-tier-corrected\n"
                         "Each command's --help ends with an example of it.")
"""Help in click's plain layout: flags as ``--strict`` or ``--cache / --no-cache`` (typer's rich
panels label them ``<bool>``), text re-wrapped to the terminal."""

EXAMPLES: dict[str, str] = {
    "ingest": "replay ingest logs/ --out data/",
    "runs": "replay runs .ctxreplay/dataset --columns run,requests,tokens",
    "inspect": "replay inspect logs/compacting-session.jsonl --json",
    "policies": "replay policies --json",
    "providers": "replay providers",
    "run": "replay run logs/ -p two-tier-corrected --out out/two-tier",
    "calibrate": "replay calibrate logs/ --json",
    "fidelity": "replay fidelity ~/.claude/projects -p my-claude-code.yaml",
    "synth": "replay synth --out logs/ --only refactor-long",
    "show-policy": "replay show-policy two-tier-corrected --defaults",
    "report": "replay report logs/ -p claude-code -p two-tier-corrected --out out/report",
    "diff": "replay diff logs/ -p two-tier-original -p two-tier-corrected",
    "sweep": "replay sweep logs/ -p two-tier-corrected --axis tiers.1.keep_messages=8,16,24",
    "check": "replay check logs/ -p two-tier-corrected --baseline ci/baseline.json",
    "redact": "replay redact ~/.claude/projects --out shared-logs",
    "sql": "replay sql \"SELECT policy, sum(cost_usd) FROM trace_requests GROUP BY policy\" "
           "-t out/two-tier",
}
"""One example per command, shown at the end of its ``--help`` (as the line written here, not
re-wrapped)."""

_CURLY = re.compile(r"^\{(.*)\}(?=(?:\.\.\.)?$)")


class _Command(TyperCommand):
    """A command whose usage line names its arguments as click does (``PATHS...``,
    ``[PATHS]...``), not typer's ``{paths}...``, and that refuses an empty path and an option
    of one value given twice."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = super().collect_usage_pieces(ctx)
        return [_CURLY.sub(lambda m: m.group(1).upper(), p) for p in pieces]

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if name := _empty_path(self, args):
            raise typer.BadParameter("an empty path (an unset variable?) would be the current "
                                     "folder", ctx=ctx, param_hint=f"'{name}'")
        if name := _repeated_option(self, args):
            raise typer.BadParameter("given more than once, but it takes one value: all but "
                                     "the last would be dropped without a word; give it once",
                                     ctx=ctx, param_hint=f"'{name}'")
        return super().parse_args(ctx, args)


def _is_path(annotation: Any) -> bool:
    """Whether a parameter's annotation holds ``pathlib.Path`` (``Path``, ``list[Path] | None``
    under ``Annotated``)."""
    return annotation is Path or any(_is_path(a) for a in typing.get_args(annotation))


def _empty_path(command: Any, args: list[str]) -> str:
    """The option or argument of ``command`` whose path ``args`` give as '' ('' when none):
    ``--out "$OUT"`` with OUT unset wrote into the current folder, ``run "$LOGS"`` read it."""
    if "" not in args and not any(a.startswith("--") and a.endswith("=") for a in args):
        return ""
    try:  # (a module's annotations are text under ``from __future__ import annotations``)
        hints = typing.get_type_hints(command.callback, include_extras=True)
    except (NameError, TypeError):
        hints = {n: p.annotation for n, p in
                 pyinspect.signature(command.callback).parameters.items()}
    paths = {n for n, a in hints.items() if _is_path(a)}
    options = {o: p for p in command.params if p.param_type_name == "option"
               for o in (*p.opts, *p.secondary_opts)}
    positional = [p for p in command.params if p.param_type_name == "argument"]
    taken, k = 0, 0  # positional values seen; the argument they fill
    it = iter(args)
    for a in it:
        name, eq, value = a.partition("=")
        if a.startswith("-") and a != "-" and (option := options.get(name if eq else a)):
            if not option.is_flag and not option.count:
                given = value if eq else next(it, None)
                if given == "" and option.name in paths:
                    return "/".join(option.opts)
            continue
        if k < len(positional):  # (click's own rules for a token it does not know apply)
            if a == "" and positional[k].name in paths:
                return (positional[k].metavar or positional[k].name or "").upper()
            taken += 1
            if positional[k].nargs != -1 and taken >= positional[k].nargs:
                k, taken = k + 1, 0
    return ""


def _repeated_option(command: Any, args: list[str]) -> str:
    """The option of ``command`` that takes one value and that ``args`` give more than once
    ('' when none): click keeps the last, so ``replay run logs -p a -p b`` replayed b alone
    (``report``, ``diff`` and ``check`` take ``-p`` again and again), ``--out x --out y``
    wrote y, exit 0.  Flags (``--wide``, ``--strict / --no-strict``), counted options and
    options taking several values are not counted; nothing after ``--`` is an option."""
    options = {o: p for p in command.params if p.param_type_name == "option"
               for o in (*p.opts, *p.secondary_opts)}
    seen: set[str] = set()
    it = iter(args)
    for a in it:
        if a == "--":
            break
        name, eq, _ = a.partition("=")
        option = options.get(name if eq else a) if a.startswith("-") and a != "-" else None
        if option is None and a[:1] == "-" and a[1:2] not in ("-", ""):  # -qp v, -pv: click
            for i, c in enumerate(a[1:], 1):  # reads short options grouped, a value attached
                option = options.get(f"-{c}")
                if option is None or not (option.is_flag or option.count):
                    eq = "=" if i + 1 < len(a) else ""  # (the rest of the token is its value)
                    break
        if option is None or option.is_flag or option.count:
            continue
        if not eq:
            next(it, None)  # (its value, whatever it looks like)
        if option.multiple or option.nargs != 1:
            continue
        if option.name in seen:
            return " / ".join(option.opts)
        seen.add(option.name)
    return ""


for _command in (ingest, runs, inspect, policies, providers, run, calibrate, fidelity, synth,
                 show_policy, report, diff, sweep, check, redact, sql):
    _name = _command.__name__.replace("_", "-")
    _example = EXAMPLES.get(_name)  # a command without one fails test_cli_usage, not the app
    app.command(cls=_Command,
                epilog=f"\b\nExample: {_example}" if _example else None)(_command)


def _version(value: bool) -> None:
    if value:
        # lazy: only for --version (the engine's choice is made once it is imported anyway)
        from importlib.metadata import PackageNotFoundError, version
        from importlib.util import find_spec

        from replay.compiled_engine import (  # lazy: only for --version
            INGEST_PACKAGE,
            INGEST_WHAT,
            METRICS_PACKAGE,
            METRICS_WHAT,
            choose,
            choose_build,
        )

        spec = find_spec("analysis")  # (the package's folder, not imported: no NumPy here)
        folder = Path(spec.submodule_search_locations[0]) if spec and \
            spec.submodule_search_locations else Path("analysis")
        metrics = choose_build(folder / "per_run", METRICS_PACKAGE, METRICS_WHAT)
        ingest_parts = choose_build(Path(__file__).resolve().parents[1] / "ingest",
                                    INGEST_PACKAGE, INGEST_WHAT)

        try:
            release = version("ctxreplay")
        except PackageNotFoundError:
            release = "unknown (not installed)"
        typer.echo(f"ctxreplay {release}\nengine: {choose().describe()}\n"
                   f"metric parts: {metrics.describe()}\n"
                   f"ingest parts: {ingest_parts.describe()}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                 help="Print the version and which engine runs (compiled or "
                                      "pure Python, and why), then exit."),
) -> None:
    """Replay context-management policies over recorded coding-agent runs."""


def main() -> None:
    """Run the ``replay`` app (``replay.__main__.main`` is the command's entry point: it makes
    the process-wide choices first)."""
    app()
