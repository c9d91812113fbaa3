"""examples/quickstart.ipynb: stored without outputs, and it runs top to bottom (nbclient)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "quickstart.ipynb"


def test_notebook_is_valid_and_its_outputs_are_stripped():
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)
    assert any("HFAgent(" in c.source and "trainer=trainer" in c.source for c in code)


def _execute(tmp_path: Path, **env: str):
    import ipykernel  # noqa: F401  (the kernel nbclient starts; a dev dependency)
    import nbclient
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        nbclient.NotebookClient(
            nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


@pytest.mark.slow  # a notebook kernel (14 s); make test-slow runs it
def test_notebook_runs_with_a_tiny_model(tmp_path, tiny_causal):
    nb = _execute(
        tmp_path, LEAN_DOJO_V2_NOTEBOOK_MODEL=str(tiny_causal), LEAN_DOJO_V2_NOTEBOOK_STEPS="1"
    )
    text = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
    assert "backend replay" in text and "'trained': True" in text
    assert (tmp_path / "outputs-notebook" / "adapter_config.json").is_file()


@pytest.mark.slow  # the bundled SmolLM2 as the notebook runs it: minutes on a CPU
@pytest.mark.timeout(1800)
def test_notebook_runs_as_written(tmp_path):
    nb = _execute(tmp_path)
    assert any(c.outputs for c in nb.cells if c.cell_type == "code")
