"""The notebooks run top to bottom, headless, as a user would run them; outputs stay out of git.

Each notebook is executed with nbclient on the ``python3`` kernel (ipykernel, same
environment), with the Agg backend and a timeout per cell; any cell error fails
the test.  The cell tagged ``parameters`` is followed by an injected cell that
sends the outputs to a temporary folder (papermill's convention), so the run
leaves the checkout untouched.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


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
    injected = nbformat.v4.new_code_cell(f"out = Path({str(tmp_path / 'out')!r})")
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
