"""`hooklab autograde` on a class covering every kind of submission (tests/corpus.py).

Each case gets the expected points in every test cell, a readable reason when it cannot be run,
held for review exactly when it cheats, feedback without any hidden-test line, and a row in the
grades CSV; a second run changes nothing; a held notebook can be released by the instructor.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

import corpus
from conftest import make_course, solution_notebooks
from hooklab.feedback import MIN_LINE

CASES = corpus.cases()
GRADE = [sys.executable, "-m", "hooklab.cli", "autograde", "--timeout", "5", "--memory", "3G"]


def run(course: Path, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "hooklab.cli", *args, "--config", str(course / "nbgrader_config.py")],
                            capture_output=True, text=True, timeout=1500)
    assert result.returncode == 0, f"hooklab {args[0]} failed:\n{result.stdout}\n{result.stderr}"
    return result


def grade(course: Path, submissions: Path, *extra: str) -> subprocess.CompletedProcess:
    return run(course, "autograde", "--timeout", "5", "--memory", "3G", *extra, str(submissions))


def tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def key(case: corpus.Case) -> str:
    return f"{case.student}/{case.assignment}"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = make_course(tmp_path_factory.mktemp("course"))
    submissions = corpus.write(tmp_path_factory.mktemp("submissions"), CASES)
    before = tree_digest(submissions)
    first = grade(course, submissions)
    ledger = json.loads((course / "grading.json").read_text())
    return {"course": course, "submissions": submissions, "input_before": before, "first": first, "ledger": ledger}


def expected(case: corpus.Case, graded: dict) -> dict[str, float]:
    """The case's points, or 0 everywhere where it is held for review."""
    return corpus.zero(case.assignment) if graded["ledger"][key(case)]["held"] else case.scores


def scores_in_gradebook(course: Path, cases: list[corpus.Case] = CASES) -> dict[str, dict[str, float]]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {
            key(case): {
                test: gradebook.find_grade(test, Path(corpus.notebook_name(case.assignment)).stem, case.assignment, case.student).score
                for test in corpus.points(case.assignment)
            }
            for case in cases
        }


@pytest.mark.parametrize("case", CASES, ids=key)
def test_every_test_cell_gets_the_expected_points(case: corpus.Case, graded: dict):
    got = scores_in_gradebook(graded["course"])[key(case)]
    want = expected(case, graded)
    assert got == want, f"{key(case)} ({case.why or 'see tests/corpus.py'}): got {got}, expected {want}"


@pytest.mark.parametrize("case", CASES, ids=key)
def test_held_for_review_exactly_when_it_tampers(case: corpus.Case, graded: dict):
    entry = graded["ledger"][key(case)]
    reasons = "\n".join(entry["held"])
    if case.held is None:
        pass  # either way: the points are checked above
    elif case.held:
        assert entry["held"], f"{key(case)} ({case.why}) was not held for review"
        assert case.held in reasons, f"{key(case)} held for {reasons!r}, expected {case.held!r}"
    else:
        assert not entry["held"], f"{key(case)} ({case.why or 'honest'}) was held for review: {reasons}"
    if case.note:
        assert any(case.note in note for note in entry["notes"]), f"{key(case)}: notes {entry['notes']}, expected {case.note!r}"


def test_submissions_that_cannot_run_are_recorded_with_a_reason(graded: dict):
    ledger, summary = graded["ledger"], graded["first"].stdout
    for case in CASES:
        entry = ledger[key(case)]
        if case.reason:
            assert not entry["ok"] and case.reason in entry["reason"], f"{key(case)}: ledger says {entry}"
            assert f"{key(case)}: " in summary and case.reason in summary
        elif case.student != "wrong_assignment":  # nbgrader may or may not run a notebook of another assignment
            assert entry["ok"], f"{key(case)} should have been graded: {entry['reason']}"
    not_run = sum(not entry["ok"] for entry in ledger.values())
    held = sum(bool(entry["held"]) for entry in ledger.values())
    assert f"Graded {len(CASES) - not_run} of {len(CASES)} submissions; {not_run} could not be run; {held} held for review" in summary
    assert "hardest first" in summary and "Held for review" in summary
    stages = re.search(r"Time per submission, in ms: waiting for a worker (\d+) · autograde (\d+) \(kernel start (\d+), "
                       r"cells (\d+)\) · record (\d+) · feedback (\d+); run: [\d.]+ s with \d+ workers", summary)
    assert stages, "the summary says where the time went"
    queue, autograde, kernel, cells, record, feedback = map(int, stages.groups())
    assert kernel + cells <= autograde + 1 and min(autograde, kernel, cells, record, feedback) > 0, stages.group(0)


def test_grades_csv_has_a_column_per_test_cell_and_the_reasons(graded: dict):
    with open(graded["course"] / "grades.csv", newline="") as handle:
        rows = {f"{row['student']}/{row['assignment']}": row for row in csv.DictReader(handle)}
    assert set(rows) == {key(case) for case in CASES}
    for case in CASES:
        row = rows[key(case)]
        stem = Path(corpus.notebook_name(case.assignment)).stem
        cells = {test: float(row[f"{stem}/{test}"]) for test in corpus.points(case.assignment)}
        assert cells == expected(case, graded), f"{key(case)}: CSV has {cells}"
        assert float(row["late_penalty"]) == 0 and float(row["score"]) == sum(cells.values()) and float(row["max_score"]) == sum(corpus.points(case.assignment).values())
        assert case.reason in row["reason"]
        held = bool(graded["ledger"][key(case)]["held"])
        assert row["reason"].startswith("held for review: ") == held, f"{key(case)}: reason {row['reason']!r}"


def hidden_lines() -> set[str]:
    lines = set()
    for path in solution_notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.metadata.get("nbgrader", {}).get("grade"):
                hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
                lines |= {line.strip() for line in hidden.splitlines() if len(line.strip()) >= MIN_LINE}
    return lines


def test_feedback_shows_results_but_never_a_hidden_test_line(graded: dict):
    secret = hidden_lines()
    for case in CASES:
        page = graded["course"] / "autograder" / "feedback" / key(case) / corpus.notebook_name(case.assignment).replace(".ipynb", ".html")
        assert page.is_file(), f"no feedback for {key(case)}"
        text = html.unescape(page.read_text())
        own = "\n".join(content.decode(errors="replace") for content in case.files.values())  # the student may write it too
        leaked = [line for line in secret if line in text and line not in own]
        markers = "BEGIN HIDDEN TESTS" in text and "BEGIN HIDDEN TESTS" not in own
        assert not leaked and not markers, f"{key(case)}'s feedback reveals hidden tests: {leaked[:3]}"
        if case.reason:
            assert "could not be run" in text
        if graded["ledger"][key(case)]["held"]:
            assert "HeldForReview" in text, f"{key(case)}'s feedback should say it is held for review"
    page = graded["course"] / "autograder" / "feedback" / "exception" / corpus.ASSIGNMENT / "forward_hooks.html"
    text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))  # the words, without the colouring spans
    assert "RuntimeError: oops" in text, "a failed test's message should be in the feedback"


def test_release_after_review_gives_the_scores_the_tests_earned(graded: dict):
    course = graded["course"]
    listing = run(course, "review").stdout
    full = sum(corpus.points(corpus.ASSIGNMENT).values())
    assert f"flagged_but_honest/{corpus.ASSIGNMENT}: held, would score {full:g} / {full:g}" in listing
    assert "searches the interpreter's objects (gc)" in listing
    run(course, "review", "--release", f"flagged_but_honest/{corpus.ASSIGNMENT}")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(corpus.ASSIGNMENT, "flagged_but_honest").score == full
    with open(course / "grades.csv", newline="") as handle:
        row = next(r for r in csv.DictReader(handle) if r["student"] == "flagged_but_honest")
    assert float(row["score"]) == full and row["reason"] == "released after review"
    assert "flagged_but_honest/02_forward_hooks: released" in run(course, "review").stdout


def test_second_run_changes_nothing_and_input_is_untouched(graded: dict):
    course, submissions = graded["course"], graded["submissions"]
    outputs = [course / "autograder" / "autograded", course / "autograder" / "feedback"]
    before = {str(p): tree_digest(p) for p in outputs}
    scores = scores_in_gradebook(course)
    second = grade(course, submissions)
    assert f"{len(CASES)} unchanged since the last run" in second.stdout
    assert {str(p): tree_digest(p) for p in outputs} == before
    assert scores_in_gradebook(course) == scores
    assert tree_digest(submissions) == graded["input_before"], "grading modified the submitted files"


def test_flat_zip_from_an_lms(tmp_path: Path):
    course = make_course(tmp_path / "course")
    by_student = {case.student: case for case in CASES if case.student in ("full", "blank")}
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for student, case in by_student.items():
            bundle.writestr(f"{student}_{corpus.notebook_name(corpus.ASSIGNMENT)}", case.files[corpus.notebook_name(corpus.ASSIGNMENT)])
        bundle.writestr("README.txt", "not a submission")
    result = grade(course, archive, "--jobs", "1")
    assert "README.txt: file name does not match" in result.stdout
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student, case in by_student.items():
            assert gradebook.find_submission(corpus.ASSIGNMENT, student).score == sum(case.scores.values())


def test_missing_input_is_a_clear_error(tmp_path: Path):
    result = subprocess.run([*GRADE, str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert result.returncode == 2 and "no such file or folder" in result.stderr
