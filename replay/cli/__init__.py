"""The ``replay`` command: a thin layer over library functions of the same names.

Each command parses its arguments, calls the library, prints a table (or JSON
with ``--json``) and maps errors to exit codes: 0 ok, 1 something failed (a
file could not be ingested, a check regressed), 2 a usage or configuration
error (bad policy, missing dataset).  This is the one package that wires
``replay`` and ``analysis`` together.

This module holds the typer ``app`` (the ``replay`` console script) and
registers the commands on it, in the order ``replay --help`` lists them:

- ``replay.cli.replay_commands``: ingest, runs, policies, providers, run, calibrate, synth,
  show-policy;
- ``replay.cli.analysis_commands``: report, diff, sweep, check;
- ``replay.cli.inspect_command``: inspect (one log file as the ingest reads it);
- ``replay.cli.redact_command``: redact (a shareable archive of log files);
- ``replay.cli.inputs``: the arguments they share and ``_open`` (PATHS → corpus);
- ``replay.cli.output``: the consoles, tables/JSON, progress bar and error exit codes.
"""

from __future__ import annotations

from replay.memory import use_system_allocator

use_system_allocator()  # before pyarrow loads: see replay.memory (ARROW_DEFAULT_MEMORY_POOL wins)

import typer

from replay.cli.analysis_commands import check, diff, report, sweep
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

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Replay context-management policies over recorded coding-agent runs.")

for _command in (ingest, runs, inspect, policies, providers, run, calibrate, synth, show_policy,
                 report, diff, sweep, check, redact):
    app.command()(_command)


def main() -> None:
    """Entry point for ``python -m replay``."""
    app()
