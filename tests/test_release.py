"""The student release in notebooks/ is exactly nbgrader's output, and the sources are well formed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbgrader.converters import GenerateAssignment
from traitlets.config.application import Application
from traitlets.utils.importstring import import_item

from conftest import REPO, belongs_to_exercise, nbgrader_cells, notebook_id, solution_notebooks
from hooklab import checks
from hooklab.release import RAISES, USES_ANSWER, RunPastOpenExercises

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

SOLUTIONS = solution_notebooks()


def test_there_are_solution_notebooks():
    assert SOLUTIONS, "no notebooks found under solutions/"


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_release_is_up_to_date(source: Path, released_course: Path):
    relative = source.relative_to(REPO / "solutions")
    generated = json.loads((released_course / "notebooks" / relative).read_text())
    committed_path = REPO / "notebooks" / relative
    assert committed_path.exists(), f"notebooks/{relative} is missing: run `make release`"
    committed = json.loads(committed_path.read_text())
    assert committed == generated, (f"notebooks/{relative} differs from nbgrader's release of solutions/: run `make "
                                    "release`")


def test_the_release_is_nbgraders_with_the_run_past_tag():
    """The course config names nbgrader's default release preprocessors (so that reading it imports nothing):
    they must stay nbgrader's, in order, followed by hooklab's, however often the file is read (JupyterLab's
    formgrader reads it again at every request)."""
    app = Application()
    for _ in range(2):
        app.load_config_file("nbgrader_config.py", path=str(REPO / "autograder"))
    named = [import_item(name) for name in app.config.GenerateAssignment.preprocessors]
    assert named == [*GenerateAssignment.class_traits()["preprocessors"].default(), RunPastOpenExercises]


def test_release_has_no_extra_notebooks():
    released = {path.relative_to(REPO / "notebooks") for path in REPO.glob("notebooks/*/*.ipynb")}
    sources = {path.relative_to(REPO / "solutions") for path in SOLUTIONS}
    assert released == sources, f"notebooks/ without a source in solutions/: {sorted(map(str, released - sources))}"


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_every_exercise_has_tests_with_points_and_hidden_tests(source: Path):
    nb = nbformat.read(source, as_version=4)
    solutions = [cell.metadata.nbgrader.grade_id for cell in nbgrader_cells(nb, "solution")]
    tests = nbgrader_cells(nb, "grade")
    assert len(solutions) >= 1, "a notebook needs at least one exercise"
    for cell in tests:
        grade_id = cell.metadata.nbgrader.grade_id
        assert cell.metadata.nbgrader.get("points", 0) > 0, f"{grade_id}: a test cell needs points"
        assert "### BEGIN HIDDEN TESTS" in cell.source, f"{grade_id}: no hidden tests on fresh inputs"
        hidden = cell.source.split("### BEGIN HIDDEN TESTS\n", 1)[1]
        used = sorted(name for name in checks.__all__ if re.search(rf"\b{name}\b", cell.source))
        assert hidden.startswith(f"from hooklab.checks import {', '.join(used)}"), (
            f"{grade_id}: the hidden tests must start by re-importing the checkers the cell uses ({', '.join(used)}), "
            "so that an answer cell cannot replace them"
        )
        assert any(belongs_to_exercise(grade_id, solution) for solution in solutions), (
            f"{grade_id}: name a test cell '<solution grade_id>_test…' so it is tied to its exercise"
        )
    untested = [s for s in solutions if not any(belongs_to_exercise(c.metadata.nbgrader.grade_id, s) for c in tests)]
    assert not untested, f"exercises without a test cell: {untested}"


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_solutions_are_executed_seeded_and_quiet(source: Path):
    nb = nbformat.read(source, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert "torch.manual_seed(" in code[0].source, "seed torch in the first code cell so outputs are deterministic"
    unexecuted = [i for i, cell in enumerate(code) if cell.execution_count is None]
    assert not unexecuted, f"code cells {unexecuted} have no stored outputs: run `make execute`"
    assert nb.metadata.kernelspec.name == "python3"
    noisy = [i for i, cell in enumerate(code) for out in cell.outputs if out.get("name") == "stderr"]
    assert not noisy, f"code cells {noisy} write to stderr (nbgrader scores a test cell with stderr as failed)"


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_run_all_on_a_blank_release_reaches_the_last_cell(source: Path, forked_kernels):
    """As JupyterLab's Run All: only cells tagged raises-exception may fail, and every demo after them still runs."""
    path = REPO / "notebooks" / source.relative_to(REPO / "solutions")
    release = nbformat.read(path, as_version=4)
    try:
        NotebookClient(release, timeout=120, kernel_name="python3").execute(cwd=str(path.parent))
    except CellExecutionError as error:
        pytest.fail(f"Run All on the blank {source.name} stops at an untagged cell (tag it uses-answer in solutions/ "
                    f"or make it independent of the answers): {str(error)[-400:]}")
    code = [cell for cell in release.cells if cell.cell_type == "code"]
    assert code[-1].execution_count is not None, "the last code cell did not run"
    failed = [cell for cell in code if any(out.output_type == "error" for out in cell.outputs)]
    assert failed, "a blank release should fail at its open exercises"
    drawn = [i for i, cell in enumerate(code) if any(out.output_type == "error" for out in cell.outputs)
             and any("image/png" in out.get("data", {}) for out in cell.outputs)]
    assert not drawn, f"code cells {drawn} draw a figure and then stop at an open exercise (compute first, then draw)"
    exercises = nbgrader_cells(release, "solution") + nbgrader_cells(release, "grade")
    assert all(RAISES in cell.metadata.get("tags", []) for cell in exercises), "every answer and test cell is tagged"
    assert not any(USES_ANSWER in cell.metadata.get("tags", []) for cell in release.cells), ("source-only tag left in "
                                                                                             "the release")


def test_readme_table_counts_each_notebooks_exercises_and_points():
    readme = (REPO / "README.md").read_text()
    for source in SOLUTIONS:
        nb = nbformat.read(source, as_version=4)
        exercises = len(nbgrader_cells(nb, "solution"))
        points = sum(cell.metadata.nbgrader.points for cell in nbgrader_cells(nb, "grade"))
        row = next((line for line in readme.splitlines() if line.startswith(f"| [`{source.parent.name}`]")), None)
        assert row, f"README's table has no row for {source.parent.name}"
        assert row.endswith(f"| {exercises} ({points:g} points) |"), (f"README: {source.parent.name} has {exercises} "
                                                                      f"exercises, {points:g} points")
