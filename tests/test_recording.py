"""hooklab records scores exactly as nbgrader does: same submissions graded by ``hooklab autograde``
and by plain ``nbgrader autograde`` leave the same gradebook, late penalties and manual grading included.

The test course adds a manually graded answer (a written explanation) to the assignment, a due
date and a late penalty; one student hands in late, one gets a manual score from the instructor
on a test cell and then resubmits.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

import corpus
from conftest import make_course, run_nbgrader
from test_autograde import grade

A = corpus.ASSIGNMENT
NAME = corpus.notebook_name(A)
DUE = "2026-03-01 12:00:00 UTC"
LATE = "2026-03-02 12:00:00.000000 UTC"
WRITTEN = "explain_hooks"  # the manually graded answer added to the test course


def course_with_manual_grading(root: Path) -> Path:
    course = make_course(root)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write('c.LateSubmissionPlugin.penalty_method = "zero"\n')
    source = course / "solutions" / A / NAME
    nb = nbformat.read(source, as_version=4)
    answer = nbformat.v4.new_markdown_cell("### BEGIN SOLUTION\nA forward pre-hook sees the inputs.\n### END SOLUTION")
    answer.metadata.nbgrader = {"grade": True, "solution": True, "locked": False, "points": 2, "grade_id": WRITTEN,
                                "schema_version": 3}
    nb.cells.insert(1, answer)
    nbformat.write(nb, source)
    run_nbgrader(["generate_assignment", A, "--force"], course)
    run_nbgrader(["db", "assignment", "add", A, f"--duedate={DUE}"], course)
    return course


def submission(course: Path, answers: dict[str, str]) -> bytes:
    """The course's release with answer cells filled by grade_id."""
    nb = nbformat.read(course / "notebooks" / A / NAME, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return nbformat.writes(nb).encode()


def hand_in(folder: Path, files: dict[str, dict[str, bytes]]) -> None:
    for student, contents in files.items():
        target = folder / student / A
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name, content in contents.items():
            (target / name).write_bytes(content)


def gradebook_state(course: Path) -> dict:
    """Everything autograding records, per student: timestamp, lateness, penalties, every grade and comment."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        state = {}
        for submission in gradebook.find_assignment(A).submissions:
            notebook = submission.notebooks[0]
            state[submission.student_id] = {
                "timestamp": submission.timestamp,
                "seconds_late": submission.total_seconds_late,
                "late_penalty": notebook.late_submission_penalty,
                "score": submission.score,
                "grades": {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade, g.score) for g in notebook.grades},
                "comments": {c.name: c.auto_comment for c in notebook.comments},
            }
        return state


def set_manual_score(course: Path, student: str, grade_id: str, points: float) -> None:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        grade = gradebook.find_grade(grade_id, Path(NAME).stem, A, student)
        grade.manual_score = points
        gradebook.db.commit()


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    ours = course_with_manual_grading(tmp_path_factory.mktemp("hooklab"))
    plain = course_with_manual_grading(tmp_path_factory.mktemp("nbgrader"))
    solved = {**corpus.solutions(A), WRITTEN: "Pre-hooks see the inputs, forward hooks the output."}
    wrong = {**solved, "collect_hooks": solved["collect_hooks"].replace("answer.extend(args)", "pass")}
    files = {
        "ada": {NAME: submission(ours, solved), "timestamp.txt": LATE.encode()},  # late
        "bo": {NAME: submission(ours, wrong)},  # a wrong answer: the instructor will grade it by hand
        "cy": {NAME: submission(ours, {})},  # blank: its written answer gets "No response."
    }
    folder = tmp_path_factory.mktemp("class")
    hand_in(folder, files)
    hand_in(plain / "autograder" / "submitted", files)
    grade(ours, folder, "--timestamps")  # the class as nbgrader's exchange hands it in
    run_nbgrader(["autograde", A], plain)
    for course in (ours, plain):  # the instructor overrides a test cell's score, then bo resubmits
        set_manual_score(course, "bo", "collect_hooks_test", 2.0)
    again = {"bo": {NAME: submission(ours, {**wrong, "leaf_shapes": solved["leaf_shapes"] + "\n# checked again\n"})}}
    hand_in(folder, again)
    hand_in(plain / "autograder" / "submitted", again)
    grade(ours, folder, "--timestamps")  # the class as nbgrader's exchange hands it in
    run_nbgrader(["autograde", A, "--student=bo", "--force"], plain)
    return gradebook_state(ours), gradebook_state(plain)


def test_the_gradebooks_agree_cell_by_cell(both):
    ours, plain = both
    assert set(ours) == set(plain) == {"ada", "bo", "cy"}
    for student in plain:
        assert ours[student] == plain[student], f"{student}: hooklab recorded {ours[student]}, nbgrader {plain[student]}"


def test_late_penalty_manual_grading_and_overrides_are_recorded(both):
    ours, _ = both
    assert ours["ada"]["seconds_late"] == 24 * 3600 and ours["ada"]["late_penalty"] == ours["ada"]["score"] > 0
    assert ours["bo"]["grades"]["collect_hooks_test"] == (0.0, 2.0, True, 2.0), "the instructor's score stands and is flagged"
    assert ours["bo"]["grades"][WRITTEN][0] is None and ours["bo"]["grades"][WRITTEN][2], "written answers need a grader"
    assert ours["cy"]["comments"][WRITTEN] == "No response." and ours["ada"]["comments"][WRITTEN] is None
