"""End to end through nbgrader on a scratch course: submit, autograde, read the gradebook.

A fully solved notebook scores every point, and a notebook that answers only its first exercise scores exactly
that exercise's tests, none of the others (the blank template scoring none is test_validate's --invert, and
test_autograde's blank submission).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from conftest import (
    belongs_to_exercise,
    nbgrader_cells,
    notebook_id,
    run_nbgrader,
    solution_notebooks,
    solution_sources,
)

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

SOLUTIONS = solution_notebooks()


def answered(release: nbformat.NotebookNode, source: nbformat.NotebookNode,
             grade_ids: set[str]) -> nbformat.NotebookNode:
    """The release with the solution cells in ``grade_ids`` filled in as a student would."""
    solutions = solution_sources(source)
    submission = nbformat.from_dict(release)
    for cell in nbgrader_cells(submission, "solution"):
        if cell.metadata.nbgrader.grade_id in grade_ids:
            cell.source = solutions[cell.metadata.nbgrader.grade_id]
    return submission


def expected_scores(source: nbformat.NotebookNode, grade_ids: set[str]) -> dict[str, float]:
    """Full points for the test cells of the answered exercises, zero for the rest."""
    scores = {}
    for cell in nbgrader_cells(source, "grade"):
        grade_id = cell.metadata.nbgrader.grade_id
        solved = any(belongs_to_exercise(grade_id, solution) for solution in grade_ids)
        scores[grade_id] = float(cell.metadata.nbgrader.points) if solved else 0.0
    return scores


@pytest.mark.parametrize("source_path", SOLUTIONS, ids=notebook_id)
def test_round_trip_scores(source_path: Path, released_course: Path):
    assignment, notebook = source_path.parent.name, source_path.stem
    source = nbformat.read(source_path, as_version=4)
    release = nbformat.read(released_course / "notebooks" / assignment / source_path.name, as_version=4)
    all_ids = {cell.metadata.nbgrader.grade_id for cell in nbgrader_cells(source, "solution")}
    first_id = nbgrader_cells(source, "solution")[0].metadata.nbgrader.grade_id
    students = {"full": all_ids, "partial": {first_id}}

    for student, grade_ids in students.items():
        folder = released_course / "autograder" / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(answered(release, source, grade_ids), folder / source_path.name)
    run_nbgrader(["autograde", assignment, "--create", "--force"], released_course)

    with Gradebook(f"sqlite:///{released_course / 'gradebook.db'}") as gradebook:
        for student, grade_ids in students.items():
            expected = expected_scores(source, grade_ids)
            scores = {
                grade_id: gradebook.find_grade(grade_id, notebook, assignment, student).score for grade_id in expected
            }
            assert scores == expected, f"{student} submission: per-cell scores {scores}, expected {expected}"
        total = sum(expected_scores(source, all_ids).values())
        assert gradebook.find_submission_notebook(notebook, assignment, "full").score == total
        partial = gradebook.find_submission_notebook(notebook, assignment, "partial").score
        assert 0 < partial < total
