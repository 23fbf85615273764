"""The notebooks run top to bottom, headless, as a user would run them; outputs stay out of git.

Each notebook is executed with nbclient on the ``python3`` kernel (ipykernel, same
environment), with the Agg backend and a timeout per cell; any cell error fails
the test.  The cell tagged ``parameters`` is followed by an injected cell that
sends the outputs to a temporary folder (papermill's convention), so the run
leaves the checkout untouched, and sets the notebook's own parameters to a smaller run
(``SMALLER``): every cell runs as shipped, over the same corpus.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

SMALLER = {
    "threshold_sweep": {
        # in this process: the sweep's worker pool (jobs = 0) is tested by test_sweep.py's
        # test_local_processes_and_a_dask_cluster_give_identical_tables
        "jobs": "1",
        # each axis's ends, 2 x 2 x 2 settings, not 27: the same cells and plots, a third of
        # the replays; one setting meets the constraints and is written as chosen.yaml
        "axes": '{"tiers.1.trigger.at_tokens": [40_000, 80_000], '
                '"tiers.0.protect.frac": [0.2, 0.5], "tiers.0.min_reclaim_frac": [0.0, 0.125]}',
    },
}
"""Parameters each notebook's run in the tests sets after its ``parameters`` cell (names that
cell assigns), to values whose run shows what the notebook's own values show, for less CPU."""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebooks_have_no_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    nb = nbformat.read(path, as_version=4)
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert tagged, f"{path.name}: no cell tagged 'parameters'"
    smaller = SMALLER.get(path.stem, {})
    source = nb.cells[tagged[0]].source
    assigned = {m.group(1) for m in re.finditer(r"^(\w+) = ", source, re.MULTILINE)}
    assert {"out", *smaller} <= assigned, f"{path.name}: parameters {assigned}"
    injected = nbformat.v4.new_code_cell("\n".join(
        [f"out = Path({str(tmp_path / 'out')!r})", *(f"{k} = {v}" for k, v in smaller.items())]))
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(tagged[0] + 1, injected)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, naming the cell, when any cell fails
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    if path.stem == "threshold_sweep":
        assert (tmp_path / "out" / "sweep" / "chosen.yaml").is_file()


def test_the_notebook_extra_installs_what_runs_the_notebooks_and_the_readme_says_how() -> None:
    import tomllib

    root = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower() for d in extras["notebook"]}
    assert {"nbclient", "nbformat", "ipykernel"} <= names  # jupyter execute, the kernel
    readme = (root / "README.md").read_text()
    assert 'pip install -e ".[notebook]"' in readme
    for path in NOTEBOOKS:
        assert f"jupyter execute notebooks/{path.name}" in readme
