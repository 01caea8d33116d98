"""examples/quickstart.ipynb runs top to bottom on a real Jupyter kernel and shows the report.

The kernel is this interpreter (``sys.executable -m ipykernel_launcher``, declared in a kernel
spec of a temporary ``JUPYTER_PATH``), so it imports the fairscan under test whatever kernels
the machine has. The notebook audits the shipped sample data (no ../shared) with 99 replicates.
The test is skipped, with the reason, only when the docs extra is missing or a kernel cannot
start; an error in any cell fails it.
"""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from lazy_import import lazy, require

nbformat = lazy("nbformat", reason="needs the docs extra: pip install -e '.[docs]'")
nbclient = lazy("nbclient", reason="needs the docs extra: pip install -e '.[docs]'")
require("ipykernel", reason="needs the docs extra: pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
KERNEL = "fairscan-test-python3"
# the subgroup the sample data's injected bias creates (sample_data/README.md)
INJECTED = "ethnicity = C and age_group = 18-24"


@pytest.fixture
def kernel_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel spec running this interpreter, found first on JUPYTER_PATH."""
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (fairscan tests)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    # the kernel's runtime files (connection files) stay in the test's temporary folder
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    return KERNEL


def _outputs(cell: Any) -> list[Any]:
    return list(cell.get("outputs", []))


@pytest.mark.slow
def test_quickstart_notebook_runs_and_displays_the_report(kernel_name: str) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=kernel_name,
        timeout=300,
        startup_timeout=60,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    with ExitStack() as stack:
        try:
            stack.enter_context(client.setup_kernel())
        except Exception as exc:  # no kernel here (e.g. no ZeroMQ sockets): not a notebook bug
            pytest.skip(f"a Jupyter kernel cannot start here: {type(exc).__name__}: {exc}")
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)  # raises CellExecutionError on any error

    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.get("execution_count") for cell in code), "a code cell did not run"
    errors = [out for cell in code for out in _outputs(cell) if out.output_type == "error"]
    assert not errors, errors
    streams = "".join(
        out.get("text", "")
        for cell in code
        for out in _outputs(cell)
        if out.output_type == "stream"
    )
    assert "Traceback" not in streams

    # the rich display: the report cell's result is HTML naming the injected subgroup
    (report_cell,) = [c for c in code if "report-display" in c.metadata.get("tags", [])]
    results = [out for out in _outputs(report_cell) if out.output_type == "execute_result"]
    assert results, "the report cell displays nothing"
    data = results[-1]["data"]
    assert "text/html" in data, sorted(data)
    html = data["text/html"]
    assert INJECTED in html
    assert len(html) < 50_000, "the notebook display should be a compact summary"
    assert "text/plain" in data and len(data["text/plain"]) < 1_000, "the repr should be short"

    # the verdict cell: a significant finding, as `audit run` would exit 1
    verdict = next(c for c in code if c.source.strip() == "report.verdict.exit_code")
    assert [out["data"]["text/plain"] for out in _outputs(verdict)] == ["1"]
    # the description printed for the top finding names the subgroup too
    assert INJECTED in streams


def test_committed_notebook_has_no_outputs() -> None:
    """The notebook is committed clean: outputs come from running it, never from the file."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, cell.source[:60]
