"""``make compat``'s reading of nbval, and the declared torch range agreeing everywhere it is written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from compat.__main__ import assignments, counted_cells, nbval, nbval_table
from conftest import REPO


@pytest.mark.slow  # nbval starts a kernel (in a pytest of its own, which the fast tier's guard does not see)
def test_nbval_table_counts_and_names_each_notebooks_cells_that_differ_and_that_raise(tmp_path: Path):
    cells = [
        new_code_cell("print(1)", outputs=[new_output("stream", name="stdout", text="1\n")], execution_count=1),
        new_code_cell("print(2)", outputs=[new_output("stream", name="stdout", text="3\n")], execution_count=2),
        new_code_cell("1 / 0", execution_count=3),
    ]
    folder = tmp_path / "solutions" / "01_demo"
    folder.mkdir(parents=True)
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                        "language": "python"}}), folder / "demo.ipynb")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
                    "solutions", "--junitxml=report.xml"], cwd=tmp_path, capture_output=True, timeout=300)
    row = {"cells": 3, "differ": 1, "raise": 1, "which": {"differ": ["Cell 1"], "raise": ["Cell 2"]}}
    assert nbval_table(tmp_path / "report.xml") == {"01_demo": row}
    assert (counted_cells(row, "differ"), counted_cells(row, "raise")) == ("1 (Cell 1)", "1 (Cell 2)")


def test_compat_runs_the_assignments_named_in_the_courses_order_and_refuses_an_unknown_one():
    every = sorted(notebook.parent.name for notebook in (REPO / "solutions").glob("*/*.ipynb"))
    assert assignments([]) == every
    named = ["10_hooks_inside_pytorch", "02_forward_hooks"]
    assert assignments(named) == ["02_forward_hooks", "10_hooks_inside_pytorch"]
    with pytest.raises(ValueError, match="no assignment 10_hooks in solutions/ "):
        assignments(["10_hooks"])


def test_nbval_that_wrote_no_report_says_why_instead_of_reading_an_earlier_runs(tmp_path: Path):
    python = tmp_path / "python"  # a compat environment whose pytest cannot start
    python.write_text("#!/bin/sh\necho 'No module named pytest' >&2\nexit 1\n")
    python.chmod(0o755)
    report = tmp_path / "nbval.xml"
    report.write_text("<testsuites/>")  # an earlier run's
    with pytest.raises(RuntimeError, match="(?s)nbval did not run \\(pytest exited with 1\\).*No module named pytest"):
        nbval(python, report, ["10_hooks_inside_pytorch"])
    assert not report.exists()


def test_the_torch_range_is_the_same_in_pyproject_environment_yml_and_readme():
    minimum = re.search(r'"torch>=([\d.]+)', (REPO / "pyproject.toml").read_text()).group(1)
    locked = re.search(r"^torch==([\d.]+)$", (REPO / "requirements.lock").read_text(), re.M).group(1)
    readme = (REPO / "README.md").read_text()
    assert f"torch {minimum} to " in readme, f"README names the tested range from torch {minimum}"
    assert (f"pytorch>={minimum}" in (REPO / "environment.yml").read_text()
            or f"pytorch={locked}" in (REPO / "environment.yml").read_text())
    assert tuple(map(int, minimum.split("."))) <= tuple(map(int, locked.split("."))), "the lock's torch is in the range"
