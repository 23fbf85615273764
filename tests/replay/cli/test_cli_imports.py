"""The ``replay`` command imports what the command it runs uses, and no more (issue 24 target 4).

``replay --help``, every ``replay COMMAND --help``, ``--version`` and a usage error load none of
the heavy libraries (pandas, pyarrow, matplotlib, DuckDB, Dask): they cost ~1.2 s of CPU per
process when the command modules imported every library at the top, and the suite starts some
forty such processes.  The policy commands read no dataset (no pyarrow); ``replay ingest`` makes
no frame (no pandas).  ``replay run`` without ``--report`` loads no plotting stack:
``tests/analysis/test_library_calls.py``.

Counted in one fresh process (a test worker has loaded everything already): each step adds to
what the steps before it loaded, so each step's check covers the ones before it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from replay.cli import app
from replay.ingest.parsers import PARSERS

REPO = Path(__file__).resolve().parents[3]
LOG = REPO / "tests" / "golden" / "parallel_tool_calls" / "input.json"
HEAVY = ("pandas", "pyarrow", "matplotlib", "duckdb", "dask", "distributed")

_STEPS = """
import json, sys
from typer.testing import CliRunner
import replay.__main__
from replay.cli import app

HEAVY = {heavy!r}
loaded = {{}}

def step(name, args, code):
    result = CliRunner().invoke(app, args, prog_name="replay")
    assert result.exit_code == code, (name, result.exit_code, result.output)
    loaded[name] = sorted(m for m in HEAVY if m in sys.modules)

step("--help", ["--help"], 0)
for command in {commands!r}:
    step(command + " --help", [command, "--help"], 0)
step("--version", ["--version"], 0)
step("a usage error", ["run", "--bogus"], 2)
step("show-policy", ["show-policy", "two-tier-corrected"], 0)
step("policies", ["policies"], 0)
step("providers", ["providers"], 0)
step("ingest", ["ingest", {log!r}, "--out", {out!r}, "-q"], 0)
print(json.dumps(loaded))
"""


def test_each_command_loads_only_what_it_uses(tmp_path: Path) -> None:
    """Help, the version, a usage error and the policy commands load no heavy library; the
    ingest loads pyarrow, never pandas."""
    commands = [c.callback.__name__.replace("_", "-") for c in app.registered_commands
                if c.callback is not None]
    code = _STEPS.format(heavy=HEAVY, commands=commands, log=str(LOG),
                         out=str(tmp_path / "ds"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    loaded = json.loads(out.stdout.splitlines()[-1])
    assert len(commands) == 16
    assert {step: mods for step, mods in loaded.items() if mods and step != "ingest"} == {}
    assert loaded["ingest"] == ["pyarrow"]


def test_the_format_option_names_every_parser_in_the_order_they_are_tried() -> None:
    """``--format``'s help is written from ``replay.ingest.names`` (no parser loaded), which
    ``PARSERS`` is checked against when the parsers load."""
    from typer.main import get_command

    for name in ("ingest", "run", "inspect"):
        option = next(p for p in get_command(app).commands[name].params  # type: ignore[attr-defined]
                      if p.name == "fmt" or "--format" in p.opts)
        assert f": {', '.join(PARSERS)}." in option.help, (name, option.help)
