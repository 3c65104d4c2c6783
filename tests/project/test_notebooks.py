"""Every teaching notebook executes cleanly, and is stored without outputs.

Each notebook runs in a fresh kernel of this interpreter (nbclient maps the
"python3" kernel to ``sys.executable``), with the OpenGL backend pointed at a
headless EGL context, and any cell error fails the test with the cell shown.
"""
from __future__ import annotations

import os
import pathlib
import time

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
EXPECTED = [
    "01_tour.ipynb",
    "02_schedule_primitives.ipynb",
    "03_matmul_cpu.ipynb",
    "04_gpu_cuda.ipynb",
    "05_opengl.ipynb",
    "06_reductions_rfactor.ipynb",
    "07_autotuning.ipynb",
    "08_graph_fusion.ipynb",
    "09_why_is_it_slow.ipynb",
    "10_transformer.ipynb",
    "deploy.ipynb",
]
CELL_TIMEOUT_S = 180


def test_all_notebooks_present():
    found = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert found == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_is_stored_clean(name):
    """Outputs are cleared in git: no outputs, no execution counts, valid format."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    assert nb.cells[0].cell_type == "markdown", "a notebook starts with its title"
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{name} cell {k} has stored outputs"
            assert cell.execution_count is None, f"{name} cell {k} has an execution count"


def _cell_failure(nb, err):
    """The source of the failing cell and the tail of its error, for the failure message."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return (f"cell:\n{cell.source}\n\n{out.ename}: {out.evalue}")
    return str(err)[-3000:]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_executes(name, tmp_path, monkeypatch):
    monkeypatch.setenv("PYOPENGL_PLATFORM", "egl")
    monkeypatch.setenv("EGL_PLATFORM", "surfaceless")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}})
    start = time.perf_counter()
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as err:
        pytest.fail(f"{name} failed in {_cell_failure(nb, err)}", pytrace=False)
    elapsed = time.perf_counter() - start
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    print(f"{name}: {elapsed:.1f} s")
    if os.environ.get("TVMLAB_KEEP_NOTEBOOKS"):
        nbformat.write(nb, pathlib.Path(os.environ["TVMLAB_KEEP_NOTEBOOKS"]) / name)


def test_notebooks_copy_into_a_folder(tmp_path, capsys):
    """``python -m tvmlab.notebooks DIR`` copies the shipped notebooks; edits already there are kept."""
    from tvmlab import notebooks
    from tvmlab.notebooks.__main__ import main
    assert notebooks.names() == EXPECTED
    assert main([str(tmp_path / "mine")]) == 0
    assert sorted(p.name for p in (tmp_path / "mine").glob("*.ipynb")) == EXPECTED
    mine = tmp_path / "mine" / EXPECTED[0]
    mine.write_text("my edits")
    assert main([str(tmp_path / "mine")]) == 0 and mine.read_text() == "my edits"
    assert f"{len(EXPECTED)} already there, kept" in capsys.readouterr().out
    assert notebooks.copy(tmp_path / "mine", overwrite=True) and mine.read_text() != "my edits"
    (tmp_path / "file").write_text("")
    assert main([str(tmp_path / "file")]) == 1
    assert "is not a folder" in capsys.readouterr().err
