"""Recording and review on their own (no kernel): a worker's autograded notebook into the gradebook through the
course's recording preprocessors, the ledger entry each result makes, and releasing a held submission."""

from __future__ import annotations

import json
import shutil
import warnings
from concurrent.futures import Future
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output
from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning

from conftest import COURSE_CONFIG
from hooklab.grading.course import Course
from hooklab.grading.grades_csv import GRADES_CSV
from hooklab.grading.ledger import LEDGER, Entry, LastRun, Ledger
from hooklab.grading.notes import Notes
from hooklab.grading.outputs import HELD, error_output
from hooklab.grading.plan import Task
from hooklab.grading.record import ResultRecorder, record_submission
from hooklab.grading.review import listing, review
from hooklab.grading.timing import Stages

POINTS = {"a_test": 2.0, "b_test": 3.0}


@pytest.fixture(scope="module")
def gradebook_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gradebook with one assignment, hw: one notebook, nb, with two test cells (2 and 3 points), and the
    students ann and bob (made once: nbgrader takes seconds to make one)."""
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with Gradebook(f"sqlite:///{path}") as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)
        gradebook.add_assignment("hw")
        gradebook.add_notebook("nb", "hw")
        for cell, points in POINTS.items():
            gradebook.add_grade_cell(cell, "nb", "hw", max_score=points, cell_type="code")
            gradebook.add_source_cell(cell, "nb", "hw", cell_type="code", source="check()", locked=True)
        for student in ("ann", "bob"):
            gradebook.add_student(student)
    return path


@pytest.fixture
def course(tmp_path: Path, gradebook_file: Path) -> Course:
    """The pack's course configuration (its recording preprocessors) on a copy of that gradebook."""
    root = tmp_path / "course"
    (root / "solutions" / "hw").mkdir(parents=True)
    nbformat.write(new_notebook(), root / "solutions" / "hw" / "nb.ipynb")
    shutil.copyfile(gradebook_file, root / "gradebook.db")
    (root / "nbgrader_config.py").write_text(
        f"c = get_config()\nload_subconfig({str(COURSE_CONFIG)!r})\nc.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.db_url = {'sqlite:///' + str(root / 'gradebook.db')!r}\n")
    return Course(root / "nbgrader_config.py")


def autograded(course: Course, student: str, outputs: dict[str, list], notes: Notes) -> Path:
    """A worker's autograded notebook for ``student``: the test cells with these outputs, and these notes."""
    cells = []
    for grade_id, points in POINTS.items():
        cell = new_code_cell("check()", outputs=outputs.get(grade_id, []))
        cell.metadata.nbgrader = {"grade": True, "solution": False, "locked": True, "grade_id": grade_id,
                                  "points": points, "schema_version": 3}
        cells.append(cell)
    nb = new_notebook(cells=cells)
    notes.write(nb)
    path = course.step_dir("autograded") / student / "hw" / "nb.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    (course.step_dir("submitted") / student / "hw").mkdir(parents=True, exist_ok=True)
    return path


def scores(course: Course, student: str) -> dict[str, tuple[float | None, float | None]]:
    with Gradebook(course.db_url) as gradebook:
        notebook = gradebook.find_submission_notebook("nb", "hw", student)
        return {grade.name: (grade.auto_score, grade.manual_score) for grade in notebook.grades}


def test_record_scores_each_test_cell_by_its_errors_and_reads_the_workers_notes(course: Course):
    notes = Notes(repairs=["restored a_test (cell 1)"], stopped="the kernel died in cell 2", limits=["output cut"],
                  seed="42", seconds={"kernel": 0.5, "cells": 1.5})
    autograded(course, "ann", {"b_test": [error_output("AssertionError", "wrong")]}, notes)
    recorded = record_submission(course, "ann", "hw", executed=True)
    assert recorded.score == 2.0 and scores(course, "ann") == {"a_test": (2.0, None), "b_test": (0.0, None)}
    assert recorded.notes == ["nb: the kernel died in cell 2", "nb: restored a_test (cell 1)", "nb: output cut"]
    assert (recorded.seeds, recorded.seconds, recorded.held) == ({"nb": "42"}, {"kernel": 0.5, "cells": 1.5}, [])


def test_a_displayed_result_decides_no_score_only_an_error_does(course: Course):
    shown = new_output("execute_result", {"text/plain": "0"}, execution_count=1)
    autograded(course, "ann", {"a_test": [shown]}, Notes())
    assert record_submission(course, "ann", "hw", executed=True).score == 5.0


def test_a_submission_that_was_not_executed_scores_zero_whatever_its_notebook_says(course: Course):
    autograded(course, "ann", {}, Notes())
    assert record_submission(course, "ann", "hw", executed=False).score == 0.0
    assert scores(course, "ann") == {"a_test": (0.0, None), "b_test": (0.0, None)}


def held(course: Course, student: str) -> None:
    hold = [error_output(HELD, "held for review: changes the builtins")]
    autograded(course, student, {"a_test": hold, "b_test": [*hold, error_output("AssertionError", "")]},
               Notes(held=["changes the builtins"], would_be={"a_test": 2.0, "b_test": 0.0}))


def test_a_held_notebook_scores_zero_and_keeps_what_it_would_score(course: Course):
    held(course, "ann")
    recorded = record_submission(course, "ann", "hw", executed=True)
    assert recorded.score == 0.0 and recorded.held == ["nb: changes the builtins"]
    assert recorded.would_be == {"nb/a_test": 2.0, "nb/b_test": 0.0}


def recorder(course: Course, ledger: Ledger, reference: object = None) -> ResultRecorder:
    future: Future = Future()
    if isinstance(reference, Exception):
        future.set_exception(reference)
    else:
        future.set_result(reference)
    return ResultRecorder(course, ledger, {"hw": 5.0}, Stages(), {"hw": future})


def test_a_result_becomes_a_ledger_entry_and_one_that_could_not_run_gets_failure_feedback(course: Course):
    ledger = Ledger(course.work_dir / LEDGER)
    autograded(course, "ann", {}, Notes(seed="7", repairs=["restored a_test (cell 1)"],
                                        seconds={"kernel": 0.5, "cells": 1.5}))
    record_result = recorder(course, ledger)
    entry = record_result(Task("ann", "hw", "digest", "files"), "")
    assert entry == Entry("digest", True, "", 5.0, 5.0, files="files", notes=["nb: restored a_test (cell 1)"],
                          seeds={"nb": "7"})
    assert entry.explanation() == "nb: restored a_test (cell 1)", "what grades.csv's reason column says"
    timing = dict(record_result.stages.seconds)
    assert timing["kernel"] == 0.5 and timing["cells"] == 1.5 and timing["record"] > 0, "the run's stages"
    refused = Task("bob", "hw", "digest2", "files2", "no notebook submitted (expected nb.ipynb)")
    entry = record_result(refused, refused.reason)
    assert (entry.ok, entry.reason, entry.score) == (False, refused.reason, 0.0)
    assert record_result.stages.seconds == timing, "a submission that was not run adds nothing to the stages"
    page = (course.step_dir("feedback") / "bob" / "hw" / "nb.html").read_text()
    assert "not graded" in page and "no notebook submitted" in page and "0 / 5" in page


def test_a_reference_run_that_failed_makes_the_submission_not_run_with_a_reason(course: Course):
    autograded(course, "ann", {}, Notes())
    entry = recorder(course, Ledger(course.work_dir / LEDGER), RuntimeError("kernel died"))(
        Task("ann", "hw", "digest", "files"), "")
    assert not entry.ok and entry.reason.startswith("the reference solution could not be run (RuntimeError")
    assert entry.score == 0.0


def test_review_releases_a_held_submission_rewrites_the_csv_and_report_and_keeps_the_last_run(course: Course):
    ledger = Ledger(course.work_dir / LEDGER)
    held(course, "ann")
    ledger.set("ann/hw", recorder(course, ledger)(Task("ann", "hw", "digest", "files"), ""))
    ledger.last_run = LastRun({"run (s)": 1.25}, ["zz.txt: ignored"])
    ledger.save()
    assert "ann/hw: held, would score 2 / 5\n    nb: changes the builtins" in listing(Ledger(ledger.path))

    shown, error = review(course, ["ann/hw", "bob/hw", "ann/hw"])
    assert error == "bob/hw is not held for review (see hooklab review)"
    assert shown == "ann/hw: released with 2 / 5", "the releases before the error stand; no listing"
    assert scores(course, "ann") == {"a_test": (0.0, 2.0), "b_test": (0.0, 0.0)}
    again = Ledger(course.work_dir / LEDGER)
    assert again.entries["ann/hw"].released and again.last_run == LastRun({"run (s)": 1.25}, ["zz.txt: ignored"])
    csv = (course.work_dir / GRADES_CSV).read_text().splitlines()
    assert csv[1].startswith("ann,hw,2.0,") and "released after review" in csv[1]
    assert "zz.txt: ignored" in (course.work_dir / "report.html").read_text()

    shown, error = review(course, [])
    assert error == "" and shown == "ann/hw: released, would score 2 / 5\n    nb: changes the builtins"


def test_a_changed_resubmission_of_a_released_one_loses_its_manual_scores(course: Course):
    ledger = Ledger(course.work_dir / LEDGER)
    held(course, "ann")
    ledger.set("ann/hw", recorder(course, ledger)(Task("ann", "hw", "digest", "files"), ""))
    review(course, ["ann/hw"])
    ledger = Ledger(course.work_dir / LEDGER)
    unchanged = recorder(course, ledger)(Task("ann", "hw", "digest", "files"), "")
    assert unchanged.released and scores(course, "ann")["a_test"] == (0.0, 2.0)
    changed = recorder(course, ledger)(Task("ann", "hw", "digest3", "other files"), "")
    assert not changed.released and scores(course, "ann")["a_test"] == (0.0, None)


def test_the_last_run_is_saved_beside_the_ledger_and_an_old_ledger_has_none(tmp_path: Path):
    ledger = Ledger(tmp_path / LEDGER)
    assert ledger.last_run == LastRun()
    ledger.last_run = LastRun(None, ["a problem"])
    ledger.save()
    assert json.loads((tmp_path / "grading-run.json").read_text()) == {"timing": None, "problems": ["a problem"]}
    assert set(json.loads((tmp_path / LEDGER).read_text())) == set(), "grading.json holds submissions only"
