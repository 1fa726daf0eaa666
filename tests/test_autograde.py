"""`hooklab autograde` on a class covering every kind of submission (tests/corpus.py).

Each case gets the expected points in every test cell, a readable reason when it cannot be run,
feedback without the hidden tests, and a row in the grades CSV; a second run changes nothing.
"""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

import corpus
from conftest import make_course

CASES = corpus.cases()
GRADE = [sys.executable, "-m", "hooklab.cli", "autograde", "--timeout", "5", "--memory", "3G"]


def grade(course: Path, submissions: Path, *extra: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [*GRADE, "--config", str(course / "nbgrader_config.py"), *extra, str(submissions)],
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, f"hooklab autograde failed:\n{result.stdout}\n{result.stderr}"
    return result


def tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = make_course(tmp_path_factory.mktemp("course"))
    submissions = corpus.write(tmp_path_factory.mktemp("submissions"), CASES)
    before = tree_digest(submissions)
    first = grade(course, submissions)
    return {"course": course, "submissions": submissions, "input_before": before, "first": first}


def scores_in_gradebook(course: Path) -> dict[str, dict[str, float]]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {
            case.student: {
                test: gradebook.find_grade(test, "forward_hooks", corpus.ASSIGNMENT, case.student).score for test in corpus.POINTS
            }
            for case in CASES
        }


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.student)
def test_every_test_cell_gets_the_expected_points(case: corpus.Case, graded: dict):
    got = scores_in_gradebook(graded["course"])[case.student]
    assert got == case.scores, f"{case.student} ({case.why or 'see tests/corpus.py'}): got {got}, expected {case.scores}"


def test_submissions_that_cannot_run_are_recorded_with_a_reason(graded: dict):
    ledger = json.loads((graded["course"] / "grading.json").read_text())
    summary = graded["first"].stdout
    for case in CASES:
        entry = ledger[f"{case.student}/{corpus.ASSIGNMENT}"]
        if case.reason:
            assert not entry["ok"] and case.reason in entry["reason"], f"{case.student}: ledger says {entry}"
            assert f"{case.student}/{corpus.ASSIGNMENT}: " in summary and case.reason in summary
        elif case.student != "wrong_assignment":  # nbgrader may or may not run a notebook of another assignment
            assert entry["ok"], f"{case.student} should have been graded normally: {entry['reason']}"
    not_run = sum(not entry["ok"] for entry in ledger.values())
    assert f"Graded {len(CASES) - not_run} of {len(CASES)} submissions; {not_run} could not be run" in summary
    assert "hardest first" in summary


def test_grades_csv_has_a_column_per_test_cell(graded: dict):
    with open(graded["course"] / "grades.csv", newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {case.student for case in CASES}
    for case in CASES:
        row = rows[case.student]
        cells = {test: float(row[f"forward_hooks/{test}"]) for test in corpus.POINTS}
        assert cells == case.scores, f"{case.student}: CSV has {cells}"
        assert float(row["score"]) == sum(case.scores.values()) and float(row["max_score"]) == sum(corpus.POINTS.values())
        assert (case.reason in row["reason"]) if case.reason else True


def test_feedback_shows_results_but_not_hidden_tests(graded: dict):
    hidden_line = "fresh.register_forward_pre_hook(pre_hook)"  # from the first test cell's hidden block
    for case in CASES:
        page = graded["course"] / "autograder" / "feedback" / case.student / corpus.ASSIGNMENT / "forward_hooks.html"
        assert page.is_file(), f"no feedback for {case.student}"
        html = page.read_text()
        assert hidden_line not in html and "BEGIN HIDDEN TESTS" not in html, f"{case.student}'s feedback reveals hidden tests"
        if case.reason:
            assert "could not be run" in html
    html = (graded["course"] / "autograder" / "feedback" / "fake_checker" / corpus.ASSIGNMENT / "forward_hooks.html").read_text()
    assert "AnswerError" in html, "a failed test's message should be in the feedback"


def test_second_run_changes_nothing_and_input_is_untouched(graded: dict):
    course, submissions = graded["course"], graded["submissions"]
    outputs = [course / "grading.json", course / "grades.csv", course / "autograder" / "autograded", course / "autograder" / "feedback"]
    before = {str(p): tree_digest(p) if p.is_dir() else p.read_bytes() for p in outputs}
    scores = scores_in_gradebook(course)
    second = grade(course, submissions)
    assert f"{len(CASES)} unchanged since the last run" in second.stdout
    assert {str(p): tree_digest(p) if p.is_dir() else p.read_bytes() for p in outputs} == before
    assert scores_in_gradebook(course) == scores
    assert tree_digest(submissions) == graded["input_before"], "grading modified the submitted files"


def test_flat_zip_from_an_lms(tmp_path: Path):
    course = make_course(tmp_path / "course")
    by_student = {case.student: case for case in CASES if case.student in ("full", "blank")}
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for student, case in by_student.items():
            bundle.writestr(f"{student}_{corpus.NOTEBOOK}", case.files[corpus.NOTEBOOK])
        bundle.writestr("README.txt", "not a submission")
    result = grade(course, archive, "--jobs", "1")
    assert "README.txt: file name does not match" in result.stdout
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student, case in by_student.items():
            assert gradebook.find_submission(corpus.ASSIGNMENT, student).score == sum(case.scores.values())


def test_missing_input_is_a_clear_error(tmp_path: Path):
    result = subprocess.run([*GRADE, str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert result.returncode == 2 and "no such file or folder" in result.stderr
