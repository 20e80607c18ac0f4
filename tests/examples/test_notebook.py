"""The example notebook runs top to bottom, and its saved copy shows the result as HTML.

The kernel is this interpreter (``sys.executable``, so this venv) with this checkout first on
its path: the test installs a ``python3`` kernelspec saying so into a temporary directory
named by ``JUPYTER_PATH``, which Jupyter searches before any installed kernelspec.
"""

from __future__ import annotations

import html
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")
KernelSpecManager = pytest.importorskip("jupyter_client.kernelspec").KernelSpecManager

CHECKOUT = Path(__file__).resolve().parents[2]
NOTEBOOK = CHECKOUT / "examples" / "notebook.ipynb"
FINAL_TEXT = "Here is the weather: Paris: 18 C and sunny; Tokyo: 24 C with light rain."
WHERE = "import sys, req_managed_agents\nprint(sys.executable)\nprint(req_managed_agents.__file__)"


def _install_kernel(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = directory / "kernels" / "python3"
    spec.mkdir(parents=True)
    kernel = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (this checkout)",
        "language": "python",
        "env": {
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")])
            )
        },
    }
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(directory))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    assert Path(KernelSpecManager().get_kernel_spec("python3").resource_dir) == spec


def _cell(notebook: Any, tag: str) -> Any:
    return next(cell for cell in notebook.cells if tag in cell.metadata.get("tags", ()))


def _errors(notebook: Any) -> list[Any]:
    return [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]


def _result_html(notebook: Any) -> str:
    (output,) = (o for o in _cell(notebook, "result").outputs if o.output_type == "execute_result")
    return str(output.data["text/html"])


def _stdout(cell: Any) -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream")


def test_the_notebook_runs_in_this_checkout_and_shows_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_kernel(tmp_path, monkeypatch)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(WHERE))
    client = nbclient.NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=30,
        startup_timeout=30,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    assert not _errors(notebook)
    executable, package = _stdout(notebook.cells[-1]).split()
    assert os.path.samefile(executable, sys.executable)
    assert Path(package).resolve() == CHECKOUT / "req_managed_agents" / "__init__.py"
    assert FINAL_TEXT in _stdout(_cell(notebook, "run"))  # shown live by on_text
    assert html.escape(FINAL_TEXT) in _result_html(notebook)
    assert "No umbrella needed" in _stdout(_cell(notebook, "stream"))


def test_the_saved_notebook_shows_the_result_as_html() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert not _errors(notebook)
    assert FINAL_TEXT in _stdout(_cell(notebook, "run"))
    page = _result_html(notebook)
    assert page.startswith('<div class="rma-display">')
    assert html.escape(FINAL_TEXT) in page
    assert "get_weather" in page
