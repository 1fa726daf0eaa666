"""hooklab records scores exactly as nbgrader does: the same submissions graded by ``hooklab autograde`` and by
plain ``nbgrader autograde`` leave the same gradebook, late penalties and manual grading included.

"Plain" means nbgrader's own preprocessors: the plain course's config loads the course's (its folders, the
per-cell timeout) but drops what autograder/nbgrader_config.py sets for nbgrader's steps (hooklab's sanitising,
execution, recording and feedback preprocessors), so nbgrader runs its defaults and a bug shared by hooklab's
recording and its configuration cannot hide. The test course adds a manually graded answer (a written
explanation), a due date and a late penalty; one student hands in late, one gets a manual score from the
instructor on a test cell and then resubmits.

Where hooklab differs from nbgrader on purpose (README, "How a test cell is scored" and "Tampering is held for
review"), a student shows it and :data:`DIFFERENCES` names it, with the test cells it changes and the exact
score each side gives them; the comparison sets those cells aside, and only those. Not shown here: a cell that
outlives its interrupt or a kernel that dies (nbgrader drops the whole notebook; hooklab keeps the points of the
cells before: "stubborn_loop", "exits" and "late_crash" in tests/catalogues/corpus.py).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from traitlets.config import PyFileConfigLoader

from catalogues import corpus
from conftest import make_course, run_nbgrader
from hooklab.grading.course import Course
from test_autograde import grade

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

A = corpus.ASSIGNMENT
NAME = corpus.notebook_name(A)
DUE = "2026-03-01 12:00:00 UTC"
LATE = "2026-03-02 12:00:00.000000 UTC"
WRITTEN = "explain_hooks"  # the manually graded answer added to the test course
# nbgrader's own preprocessors for every step (appended to a config that loads the course's)
PLAIN_NBGRADER = """
for section, names in {"GenerateAssignment": ["preprocessors"],
                       "Autograde": ["sanitize_preprocessors", "autograde_preprocessors"],
                       "GenerateFeedback": ["preprocessors", "exporter_class"]}.items():
    for name in names:
        c[section].pop(name, None)
"""
POINTS = corpus.points(A)


def scored(points: float) -> tuple:
    """An autograded grade as :func:`gradebook_state` shows it: (auto score, manual score, needs manual grading,
    score)."""
    return points, None, False, points


UNGRADED = (None, None, True, 0.0)  # a grade cell nbgrader found no cell for: no score, left for manual grading
# hooklab's deliberate differences from plain nbgrader: student → (the difference, {test cell: (hooklab's grade,
# nbgrader's)})
DIFFERENCES = {
    "dee": ("stderr (a print to sys.stderr, a logging warning) shows in the feedback but does not zero a passing test",
            {"collect_hooks_test": (scored(POINTS["collect_hooks_test"]), scored(0.0))}),
    "eve": ("a deleted test cell is restored where it was and run, so it scores what the answer earns "
            "(nbgrader leaves its grade empty, for manual grading)",
            {"change_hooks_test": (scored(POINTS["change_hooks_test"]), UNGRADED)}),
    "fay": ("a notebook whose code looks like tampering (here gc) is held for review: 0 in every test cell until "
            "released",
            {test: (scored(0.0), scored(points)) for test, points in POINTS.items()}),
}


def course_with_manual_grading(root: Path, *, plain: bool = False) -> Path:
    course = make_course(root)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write('c.LateSubmissionPlugin.penalty_method = "zero"\n')
        if plain:
            config.write(PLAIN_NBGRADER)
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


def submission(course: Path, answers: dict[str, str], *, drop: str = "", after: str = "", extra: str = "") -> bytes:
    """The course's release with answer cells filled by grade_id, the cell ``drop`` deleted and a code cell
    ``extra`` added after the cell ``after``."""
    nb = nbformat.read(course / "notebooks" / A / NAME, as_version=4)
    cells = []
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
        if grade_id != drop or not drop:
            cells.append(cell)
        if grade_id == after and after:
            cells.append(nbformat.v4.new_code_cell(extra))
    nb.cells = cells
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
                "grades": {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade, g.score)
                           for g in notebook.grades},
                "comments": {c.name: c.auto_comment for c in notebook.comments},
            }
        return state


def set_manual_score(course: Path, student: str, grade_id: str, points: float) -> None:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        grade = gradebook.find_grade(grade_id, Path(NAME).stem, A, student)
        grade.manual_score = points
        gradebook.db.commit()


@pytest.fixture(scope="module")
def courses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The class graded by hooklab ("ours") and by plain nbgrader ("plain")."""
    ours = course_with_manual_grading(tmp_path_factory.mktemp("hooklab"))
    plain = course_with_manual_grading(tmp_path_factory.mktemp("nbgrader"), plain=True)
    solved = {**corpus.solutions(A), WRITTEN: "Pre-hooks see the inputs, forward hooks the output."}
    wrong = {**solved, "collect_hooks": solved["collect_hooks"].replace("answer.extend(args)", "pass")}
    noisy = {**solved, "collect_hooks": "import logging\nimport sys\n\n\n" + solved["collect_hooks"].replace(
        "answer.append(output)", "print('hook ran', file=sys.stderr)\n    logging.warning('still here')\n    "
                                 "answer.append(output)")}
    files = {
        "ada": {NAME: submission(ours, solved), "timestamp.txt": LATE.encode()},  # late
        "bo": {NAME: submission(ours, wrong)},  # a wrong answer: the instructor will grade it by hand
        "cy": {NAME: submission(ours, {})},  # blank: its written answer gets "No response."
        "dee": {NAME: submission(ours, noisy)},  # see DIFFERENCES
        "eve": {NAME: submission(ours, solved, drop="change_hooks_test")},
        "fay": {NAME: submission(ours, solved, after="collect_hooks_test", extra="import gc\ngc.collect()\n")},
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
    return {"ours": ours, "plain": plain}


@pytest.fixture(scope="module")
def both(courses) -> tuple[dict, dict]:
    return gradebook_state(courses["ours"]), gradebook_state(courses["plain"])


def test_the_plain_side_runs_nbgrader_s_own_preprocessors(courses):
    # as nbgrader's own autograde reads the plain config: no list set, so nbgrader's defaults (hooklab autograde would
    # put its pipeline there: hooklab.grading.pipeline)
    plain = PyFileConfigLoader("nbgrader_config.py", path=str(courses["plain"])).load_config()
    assert not {"autograde_preprocessors", "sanitize_preprocessors"} & set(plain.Autograde), "nbgrader's defaults"
    assert not {"preprocessors", "exporter_class"} & set(plain.GenerateFeedback)
    autograded = nbformat.read(courses["plain"] / "autograder" / "autograded" / "ada" / A / NAME, as_version=4)
    assert "hooklab" not in autograded.metadata, "no hooklab preprocessor touched the plain side's notebook"
    ours = Course(courses["ours"] / "nbgrader_config.py")
    assert any(p.__module__.startswith("hooklab.") for p in ours.autograde_preprocessors), "and hooklab's on our side"


def test_the_gradebooks_agree_cell_by_cell_but_where_hooklab_differs_on_purpose(both):
    ours, plain = both
    assert set(ours) == set(plain) == {"ada", "bo", "cy", *DIFFERENCES}
    for student in plain:
        if student not in DIFFERENCES:
            assert ours[student] == plain[student], (f"{student}: hooklab recorded {ours[student]}, nbgrader "
                                                     f"{plain[student]}")
            continue
        difference, cells = DIFFERENCES[student]
        for cell, (hooklab_grade, nbgrader_grade) in cells.items():
            assert ours[student]["grades"][cell] == hooklab_grade, f"{student}, {cell} ({difference})"
            assert plain[student]["grades"][cell] == nbgrader_grade, f"{student}, {cell} ({difference})"
        assert ours[student]["score"] - plain[student]["score"] == sum(h[3] - n[3] for h, n in cells.values()), (
            difference)
        aside = [{**side[student], "score": None,
                  "grades": {k: v for k, v in side[student]["grades"].items() if k not in cells}}
                 for side in (ours, plain)]
        assert aside[0] == aside[1], (f"{student}: beyond {difference}, hooklab recorded {ours[student]}, nbgrader "
                                      f"{plain[student]}")


def test_a_held_notebook_would_score_what_plain_nbgrader_gives_it(courses, both):
    ours, plain = both
    ledger = json.loads((courses["ours"] / "grading.json").read_text())[f"fay/{A}"]
    assert ledger["held"] and ledger["would_be"] == {f"{Path(NAME).stem}/{test}": plain["fay"]["grades"][test][0]
                                                     for test in POINTS}


def test_late_penalty_manual_grading_and_overrides_are_recorded(both):
    ours, _ = both
    assert ours["ada"]["seconds_late"] == 24 * 3600 and ours["ada"]["late_penalty"] == ours["ada"]["score"] > 0
    assert ours["bo"]["grades"]["collect_hooks_test"] == (0.0, 2.0, True, 2.0), ("the instructor's score stands and is "
                                                                                 "flagged")
    assert ours["bo"]["grades"][WRITTEN][0] is None and ours["bo"]["grades"][WRITTEN][2], ("written answers need a "
                                                                                           "grader")
    assert ours["cy"]["comments"][WRITTEN] == "No response." and ours["ada"]["comments"][WRITTEN] is None


def test_grades_csv_gives_the_score_after_the_late_penalty(courses, both):
    ours, _ = both
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO((courses["ours"] / "grades.csv").read_text()))}
    ada, penalty = rows["ada"], ours["ada"]["late_penalty"]
    assert penalty > 0 and float(ada["late_penalty"]) == penalty
    assert float(ada["score"]) == ours["ada"]["score"] - penalty, "score (after any late penalty)"
    cells = {name.split("/", 1)[1]: float(value) for name, value in ada.items()
             if name.startswith(f"{Path(NAME).stem}/")}
    assert cells == {name: grade[3] for name, grade in ours["ada"]["grades"].items()}, ("the cells show the points "
                                                                                        "before it")
    for student in ("bo", "cy"):  # on time: no penalty
        assert float(rows[student]["late_penalty"]) == 0 and float(rows[student]["score"]) == ours[student]["score"]
