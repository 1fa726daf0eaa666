"""Review and release (README, "Tampering is held for review"): ``hooklab review --release`` gives a held
notebook the score its tests earned, cell by cell, not full marks; a changed resubmission is held again.

One small class, graded as an instructor would over a week (each step's state kept for the tests below):

1. ada and bo both use ``gc`` (held for review) and each has one wrong answer: held, 0 in the gradebook;
2. the instructor releases both (``hooklab review --release``);
3. ada hands in a changed notebook (the wrong answer fixed, still using ``gc``); the class is graded again with
   ``--force``, so bo's unchanged notebook is recorded again too;
4. the instructor releases ada again.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from catalogues import corpus
from conftest import make_course
from test_autograde import grade, run

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

A = corpus.ASSIGNMENT
NAME = corpus.notebook_name(A)
STEM = Path(NAME).stem
SOLVED = corpus.solutions(A)
USES_GC = "import gc\ngc.collect()\n"  # honest code of a flagged kind: held, for the instructor to look at
WRONG = {
    "ada": {"collect_hooks": SOLVED["collect_hooks"].replace("answer.extend(args)", "pass")},
    "bo": {"change_hooks": "def double_inputs(module, args)\n    return args\n"},
}
# what their tests earn: every test cell but the wrong answer's
EARNED = {"ada": corpus.scores(A, collect_hooks=0), "bo": corpus.scores(A, change_hooks=0)}
FULL = corpus.scores(A)


def hand_in(folder: Path, student: str, answers: dict[str, str]) -> None:
    corpus.write(folder,
                 [corpus.Case(student, A, {NAME: corpus.notebook(A, {**SOLVED, **answers}, extra=[USES_GC])}, {})])


def state(course: Path) -> dict[str, dict]:
    """Per student: each test cell's (score, manual score) in the gradebook, its grades.csv row, its ledger entry."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        cells = {
            student: {test: (gradebook.find_grade(test, STEM, A, student).score,
                             gradebook.find_grade(test, STEM, A, student).manual_score)
                      for test in corpus.points(A)}
            for student in WRONG
        }
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO((course / "grades.csv").read_text()))}
    ledger = json.loads((course / "grading.json").read_text())
    return {student: {"cells": cells[student], "csv": rows[student], "ledger": ledger[f"{student}/{A}"]}
            for student in WRONG}


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    course = make_course(tmp_path_factory.mktemp("course"))
    folder = tmp_path_factory.mktemp("class")
    for student, answers in WRONG.items():
        hand_in(folder, student, answers)
    steps = {}
    grade(course, folder)
    steps["graded"] = state(course)
    steps["release output"] = run(course, "review", "--release", f"ada/{A}", "--release", f"bo/{A}").stdout
    steps["released"] = state(course)
    hand_in(folder, "ada", {})  # the wrong answer fixed
    steps["resubmission output"] = grade(course, folder, "--force").stdout
    steps["resubmitted"] = state(course)
    run(course, "review", "--release", f"ada/{A}")
    steps["released again"] = state(course)
    return steps


def cell_columns(row: dict[str, str]) -> dict[str, float]:
    return {test: float(row[f"{STEM}/{test}"]) for test in corpus.points(A)}


def test_a_held_notebook_scores_0_and_would_score_what_its_tests_earned(week):
    for student, earned in EARNED.items():
        got = week["graded"][student]
        assert got["cells"] == {test: (0.0, None) for test in earned}, f"{student}: held, so 0 until released"
        assert got["ledger"]["would_be"] == {f"{STEM}/{test}": points for test, points in earned.items()}
        assert cell_columns(got["csv"]) == dict.fromkeys(earned, 0.0) and float(got["csv"]["score"]) == 0
        assert got["csv"]["reason"].startswith("held for review: ")


def test_release_gives_each_cell_the_score_its_tests_earned_not_full_marks(week):
    assert sum(EARNED["ada"].values()) < sum(FULL.values()) and sum(EARNED["bo"].values()) < sum(FULL.values())
    for student, earned in EARNED.items():
        got = week["released"][student]
        assert got["cells"] == {test: (points, points) for test, points in earned.items()}, (f"{student}: released as "
                                                                                             "manual scores")
        assert cell_columns(got["csv"]) == earned, f"{student}: grades.csv has {got['csv']}"
        assert float(got["csv"]["score"]) == sum(earned.values()) and got["csv"]["reason"] == "released after review"
        released = f"{student}/{A}: released with {sum(earned.values()):g} / {sum(FULL.values()):g}"
        assert released in week["release output"]


def test_a_changed_resubmission_is_held_again_and_its_old_manual_scores_cleared(week):
    ada = week["resubmitted"]["ada"]
    assert ada["ledger"]["held"] and not ada["ledger"]["released"], "a changed notebook is reviewed again"
    assert ada["cells"] == {test: (0.0, None) for test in FULL}, ("0 until released again, the last release's scores "
                                                                  "gone")
    assert cell_columns(ada["csv"]) == dict.fromkeys(FULL, 0.0) and float(ada["csv"]["score"]) == 0
    assert ada["csv"]["reason"].startswith("held for review: ")
    assert ada["ledger"]["would_be"] == {f"{STEM}/{test}": points for test, points in FULL.items()}, ("what the new "
                                                                                                      "version earns")
    assert f"ada/{A} (would score {sum(FULL.values()):g} / {sum(FULL.values()):g}):" in week["resubmission output"]
    again = week["released again"]["ada"]
    assert again["cells"] == {test: (points, points) for test, points in FULL.items()}
    assert float(again["csv"]["score"]) == sum(FULL.values()) and again["csv"]["reason"] == "released after review"


def test_an_unchanged_notebook_graded_again_stays_released(week):
    bo = week["resubmitted"]["bo"]
    assert bo["ledger"]["released"] and bo["ledger"]["held"], "the same files: the release stands"
    assert bo["cells"] == {test: (points, points) for test, points in EARNED["bo"].items()}
    assert float(bo["csv"]["score"]) == sum(EARNED["bo"].values()) and bo["csv"]["reason"] == "released after review"
