"""`nbgrader validate` passes every solution; `validate --invert` finds no test passing on a blank template.

nbgrader's command exits 0 either way, so these tests read the validator's results instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nbgrader.validator import Validator
from traitlets.config.loader import PyFileConfigLoader

from conftest import COURSE_CONFIG, REPO, notebook_id, solution_notebooks

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

SOLUTIONS = solution_notebooks()


def validator(*, invert: bool) -> Validator:
    config = PyFileConfigLoader(COURSE_CONFIG.name, path=str(COURSE_CONFIG.parent)).load_config()
    return Validator(config=config, invert=invert)


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_solution_passes_validate(source: Path, forked_kernels):
    results = validator(invert=False).validate(str(source))
    failures = "\n\n".join(f"{item['source'][:200]}\n{item.get('raw_error', '')}" for item in results.get("failed", []))
    assert not results, f"validate found problems in {source.name}: {sorted(results)}\n{failures}"


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_no_test_passes_on_the_blank_template(source: Path, forked_kernels):
    release = REPO / "notebooks" / source.relative_to(REPO / "solutions")
    results = validator(invert=True).validate(str(release))
    passing = [item["source"].splitlines()[0] for item in results.get("passed", [])]
    assert not passing, f"test cells that pass on the blank template of {release.name}: {passing}"
    assert not results, f"validate --invert found problems: {results}"


def test_validate_in_the_lab_runs_its_kernel_over_ipc_without_the_tcp_warning(tmp_path: Path):
    """The Validate button runs nbgrader's validator with the lab's Jupyter configuration (lab/course)."""
    import os
    import subprocess
    import sys

    import nbformat

    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")]), tmp_path / "lesson.ipynb")
    config = os.pathsep.join(str(REPO / folder) for folder in ("lab/student", "lab/course", "autograder"))
    result = subprocess.run([sys.executable, "-m", "nbgrader", "validate", "lesson.ipynb"], cwd=tmp_path, timeout=180,
                            capture_output=True, text=True, env={**os.environ, "JUPYTER_CONFIG_PATH": config})
    assert result.returncode == 0 and "Success" in result.stdout, result.stdout + result.stderr
    assert "without encryption" not in result.stderr, result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["lesson.ipynb"], ("no socket file left beside the "
                                                                                  "notebook")
