"""The instructor's report on hand-made data: its numbers, its failure messages, its empty cases.

The report of a graded class (the test corpus) is checked against the grades CSV in test_autograde.py.
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning

from hooklab.grading.class_data import ClassData, SubmissionResult, aggregate, collect, failure_messages, pattern
from hooklab.grading.class_report import CSV_FILES, render, write_csv
from hooklab.grading.course import Course
from hooklab.grading.ledger import Entry, Ledger
from hooklab.grading.redaction import REDACTED, hidden_lines

CELLS = {"hw1": {"nb/a_test": 2.0, "nb/b_test": 3.0}, "hw2": {"nb2/c_test": 1.0}}


def submission(student: str, a: float, b: float, **options) -> SubmissionResult:
    return SubmissionResult(student, "hw1", a + b, 5.0, {"nb/a_test": a, "nb/b_test": b}, **options)


def read_csv(folder: Path, name: str) -> list[dict[str, str]]:
    with open(folder / name, newline="") as handle:
        return list(csv.DictReader(handle))


def test_numbers_per_assignment_and_per_test_cell():
    data = ClassData(CELLS, [
        submission("ann", 2, 3),
        submission("bob", 2, 0,
                   failures={"nb/b_test": "AssertionError: W.grad has the wrong values: 0 instead of -0.25 at index "
                                          "(0,)"}),
        submission("cy", 0, 0, failures={"nb/a_test": "NameError: name 'x1' is not defined",
                                         "nb/b_test": "AssertionError: W.grad has the wrong values: 1 instead of 0.5 "
                                                      "at index (2,)"}),
        submission("dee", 0, 0, status="not run", reasons=["no notebook submitted"]),
        submission("eve", 0, 0, status="held", reasons=["nb: searches the interpreter's objects (gc)"], would_be=5.0),
    ])
    tables = aggregate(data)
    hw1, hw2 = tables.assignments
    assert (hw1.submissions, hw1.graded, hw1.held, hw1.not_run) == (5, 3, 1, 1)
    assert (hw1.mean, hw1.median, hw1.lowest, hw1.highest, hw1.max_score) == (7 / 5, 0, 0, 5, 5)
    assert hw1.bins == [(0, 0, 3), (2, 2, 1), (5, 5, 1)]
    assert (hw2.submissions, hw2.mean, hw2.bins, hw2.max_score) == (0, None, [], 1.0)
    a, b, c = tables.cells
    assert (a.cell, a.submissions, a.full, a.share, a.mean) == ("nb/a_test", 5, 2, 0.4, 0.8)
    assert (b.full, b.mean) == (1, 0.6)
    assert a.messages == [("NameError: name 'x1' is not defined", 1, 1)]
    # the two wrong-gradient messages differ only in their numbers: one group, two variants
    assert b.messages == [("AssertionError: W.grad has the wrong values: # instead of # at index (#,)", 2, 2)]
    assert (c.assignment, c.submissions, c.share, c.mean, c.messages) == ("hw2", 0, None, None, [])
    assert [s.key for s in tables.held] == ["eve/hw1"] and [s.key for s in tables.not_run] == ["dee/hw1"]


def test_pattern_replaces_numbers_but_not_names():
    assert pattern("expected 3 hooks, got -1.5e-3 in fc2 (float32) at [0, 12]") == ("expected # hooks, got # in fc2 "
                                                                                    "(float32) at [#, #]")


def test_pattern_groups_one_and_several_of_a_counted_noun():
    assert pattern("answer has 1 item, expected 3") == pattern("answer has 0 items, expected 3") == (
        "answer has # items, expected #")


def test_the_csv_files_hold_the_page_numbers(tmp_path: Path):
    data = ClassData(CELLS,
                     [submission("ann", 2, 3), submission("bob", 2, 0, failures={"nb/b_test": "RuntimeError: oops"}),
                             submission("dee", 0, 0, status="not run", reasons=["nb.ipynb is not a valid notebook"])])
    tables = aggregate(data)
    timing = {"submissions executed": 2, "run (s)": 1.25}
    problems = ["README.txt: file name does not match '^(?P<student_id>…)', ignored",
                "stray.ipynb: a file outside any student folder, ignored"]
    write_csv(tables, timing, tmp_path, problems)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(CSV_FILES)
    assignments = {row["assignment"]: row for row in read_csv(tmp_path, "report-assignments.csv")}
    assert assignments["hw1"] == {"assignment": "hw1", "max_score": "5", "submissions": "3", "graded": "2", "held": "0",
                                  "not_run": "1",
                                  "mean": "2.333", "median": "2", "lowest": "0", "highest": "5"}
    assert assignments["hw2"]["submissions"] == "0" and assignments["hw2"]["mean"] == ""
    cells = read_csv(tmp_path, "report-cells.csv")
    assert [(r["cell"], r["full_points"], r["full_points_share"]) for r in cells] == [
        ("a_test", "2", "0.6667"), ("b_test", "1", "0.3333"), ("c_test", "0", "")]
    assert read_csv(tmp_path, "report-failures.csv") == [
        {"assignment": "hw1", "notebook": "nb", "cell": "b_test", "message": "RuntimeError: oops", "submissions": "1",
         "variants": "1"}]
    assert read_csv(tmp_path, "report-review.csv") == [
        {"student": "dee", "assignment": "hw1", "status": "not run", "score": "0", "would_score": "", "max_score": "5",
         "reasons": "nb.ipynb is not a valid notebook"}]
    assert read_csv(tmp_path, "report-timing.csv") == [{"quantity": "submissions executed", "value": "2"},
                                                       {"quantity": "run (s)", "value": "1.25"}]
    assert [row["problem"] for row in read_csv(tmp_path, "report-problems.csv")] == problems
    assert sum(int(r["submissions"]) for r in read_csv(tmp_path, "report-scores.csv")) == 3


def test_the_page_escapes_what_students_wrote_and_shows_the_figures():
    data = ClassData(CELLS, [
        submission("<b>ann</b>", 2, 0, failures={"nb/b_test": "ValueError: <script>alert(1)</script>"}),
        submission("bob", 0, 0, status="held", reasons=["nb: changed: <builtins.print>"], would_be=2.0),
    ])
    page = render(aggregate(data), {"submissions executed": 2}, ["<odd>.txt: file name does not match"])
    assert "<script>" not in page and "<b>ann" not in page and "<odd>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "changed: &lt;builtins.print&gt;" in page
    assert page.count("src='data:image/png;base64,") == 1  # hw1; hw2 has no submission
    assert "would score" in page and "2 / 5" in page and "submissions executed" in page


def test_empty_class_and_assignments_nobody_could_run(tmp_path: Path):
    empty = aggregate(ClassData({}, []))
    page = render(empty, None, [])
    assert ("No submission has been graded yet" in page and "there is no timing to show" in page
            and "data:image" not in page)
    write_csv(empty, None, tmp_path)
    assert all(len(read_csv(tmp_path, name)) == 0 for name in CSV_FILES)

    broken = aggregate(ClassData({"hw1": CELLS["hw1"]},
                                 [submission(s, 0, 0, status="not run", reasons=["no notebook submitted"])
                                  for s in "xyz"]))
    page = render(broken, None, [])
    assert "None of them could be run" in page and page.count("data:image/png") == 1
    assert [(c.share, c.messages) for c in broken.cells] == [(0.0, []), (0.0, [])]


def test_registered_assignment_without_test_cells():
    page = render(aggregate(ClassData({"hw3": {}}, [SubmissionResult("ann", "hw3", 0.0, 0.0, {})])), None, [])
    assert "data:image/png" in page


def notebook_with(*outputs: tuple[str, list[dict]], grade: bool = True) -> dict:
    cells = [{"cell_type": "code", "source": "", "metadata": {"nbgrader": {"grade": grade, "grade_id": grade_id}},
              "outputs": out}
             for grade_id, out in outputs]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def error(ename: str, evalue: str) -> dict:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": ["whatever the student printed"]}


@pytest.mark.parametrize(("outputs", "want"), [
    ([error("RuntimeError", "oops\nsecond line")], "RuntimeError: oops"),
    ([{"output_type": "stream", "name": "stderr", "text": "a warning"}, error("AssertionError", "")], "AssertionError"),
    ([error("HeldForReview", "held for review: gc"), error("TestDidNotRun", "not run: the kernel died in cell 5")],
     "TestDidNotRun: not run: the kernel died in cell 5"),
    ([error("AssertionError", "\x1b[31mred\x1b[0m text")], "AssertionError: red text"),
    ([error("AssertionError", "x" * 500)], "AssertionError: " + "x" * 143 + "…"),
    ([error("AssertionError", "assert hooked(model, inputs) == expected_output")], f"AssertionError: {REDACTED}"),
    ([error("NameError", "name '_hooklab_ran_0123abcd' is not defined")], f"NameError: {REDACTED}"),
], ids=["first-line", "no-message", "held-error-skipped", "ansi", "long", "hidden-line", "proof-name"])
def test_failure_message_of_a_test_cell(tmp_path: Path, outputs: list[dict], want: str):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook_with(("t_test", outputs))))
    hidden = hidden_lines("x = 1\n### BEGIN HIDDEN TESTS\nassert hooked(model, inputs) == expected_output\nok()\n### "
                          "END HIDDEN TESTS\n",
                          "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
    assert hidden == {"assert hooked(model, inputs) == expected_output"}  # short lines say nothing and are left out
    assert failure_messages(path, hidden | {"_hooklab_ran_"}) == {"t_test": want}


def test_failure_messages_only_of_test_cells_with_errors(tmp_path: Path):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook_with(("a_test", []),
                                             ("b_test", [{"output_type": "stream", "name": "stdout", "text": "ok"}]))))
    assert failure_messages(path, set()) == {}
    path.write_text(json.dumps(notebook_with(("answer", [error("ValueError", "in an answer cell")]), grade=False)))
    assert failure_messages(path, set()) == {}
    path.write_text('{"cells": [ not json')
    assert failure_messages(path, set()) == {}
    assert failure_messages(tmp_path / "missing.ipynb", set()) == {}


def test_every_submission_has_a_row_with_its_score_and_links_to_its_feedback():
    data = ClassData(CELLS,
                     [submission("ann", 2, 3), submission("bob", 0, 0, status="held", reasons=["nb: gc"], would_be=5.0),
                             submission("cy", 1, 0)])
    links = {"ann/hw1": [("nb", "feedback/ann/hw1/nb.html")], "cy/hw1": [("nb", "feedback/cy/hw1/a page.html")]}
    soup = BeautifulSoup(render(aggregate(data), None, [], links), "html.parser")
    rows = [[cell.get_text(" ", strip=True) for cell in row.find_all("td")]
            for row in soup.find(id="submissions").find_next("table").find_all("tr")[1:]]
    assert rows == [["ann/hw1", "5 / 5", "full marks", "nb"], ["bob/hw1", "0 / 5", "held", ""],
                    ["cy/hw1", "1 / 5", "", "nb"]]
    assert [a["href"] for a in soup.find(id="submissions").find_next("table").find_all("a")] == [
        "feedback/ann/hw1/nb.html", "feedback/cy/hw1/a%20page.html"]
    assert "3 submissions in 1 assignment:" in soup.get_text(" ")


HIDDEN = "### BEGIN HIDDEN TESTS\nassert hooked(model, inputs) == expected_output\n### END HIDDEN TESTS\n"


def course_with_gradebook(root: Path) -> Course:
    """A course whose gradebook has 'hw' (test cells a_test: 2 points, b_test: 3) with four
    submissions, and 'hw2' with none; ann's notebook was autograded, bob's never was."""
    (root / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(root)!r}\nc.CourseDirectory.db_url = "
        f"{'sqlite:///' + str(root / 'gradebook.db')!r}\n"
    )
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's submission creation, as in hooklab.grading.record
        for assignment in ("hw", "hw2"):
            gradebook.add_assignment(assignment)
            gradebook.add_notebook("nb", assignment)
            for cell, points in (("a_test", 2.0), ("b_test", 3.0)):
                gradebook.add_grade_cell(cell, "nb", assignment, max_score=points, cell_type="code")
                gradebook.add_source_cell(cell, "nb", assignment, cell_type="code", source=f"check()\n{HIDDEN}",
                                          locked=True)
        for student, scores in {"ann": (2, 0), "bob": (0, 0), "cy": (0, 0), "dee": (0, 0)}.items():
            gradebook.add_student(student)
            gradebook.add_submission("hw", student)
            for cell, score in zip(("a_test", "b_test"), scores):
                gradebook.find_grade(cell, "nb", "hw", student).auto_score = score
        gradebook.db.commit()
    path = root / "autograded" / "ann" / "hw" / "nb.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(notebook_with(("a_test", []), ("b_test", [error("RuntimeError", "oops")]))))
    return Course(root / "nbgrader_config.py")


def test_collect_reads_the_gradebook_the_ledger_and_the_autograded_notebooks(tmp_path: Path):
    course = course_with_gradebook(tmp_path)
    ledger = Ledger(tmp_path / "grading.json")
    ledger.set("cy/hw", Entry("", False, "no notebook submitted (expected nb.ipynb)", 0.0, 5.0))
    ledger.set("dee/hw",
               Entry("", True, "", 0.0, 5.0, held=["nb: changes the builtins"],
                     would_be={"nb/a_test": 2.0, "nb/b_test": 3.0}))
    data = collect(course, ledger)
    assert data.cells == {"hw": {"nb/a_test": 2.0, "nb/b_test": 3.0}, "hw2": {"nb/a_test": 2.0, "nb/b_test": 3.0}}
    got = {s.key: (s.score, s.status, s.reasons, s.failures) for s in data.submissions}
    assert got == {
        "ann/hw": (2.0, "graded", [], {"nb/b_test": "RuntimeError: oops"}),
        "bob/hw": (0.0, "graded", [],
                   dict.fromkeys(("nb/a_test", "nb/b_test"), "(no autograded notebook: not submitted or not run)")),
        "cy/hw": (0.0, "not run", ["no notebook submitted (expected nb.ipynb)"], {}),
        "dee/hw": (0.0, "held", ["nb: changes the builtins"], {}),  # a zero for being held is no failure
    }
    tables = aggregate(data)
    assert [(a.assignment, a.submissions, a.graded, a.held, a.not_run, a.mean) for a in tables.assignments] == [
        ("hw", 4, 2, 1, 1, 0.5), ("hw2", 0, 0, 0, 0, None)]
    page = render(tables, None, [])
    assert page.count("data:image/png") == 1 and "RuntimeError: oops" in page and "No submissions." in page


def test_the_report_and_review_load_none_of_the_grading_execution():
    """``hooklab review`` and the class report read the gradebook, the ledger and the notebooks: the execution side
    (kernels, workers, the judge) is not imported with them."""
    import subprocess
    import sys

    loaded = subprocess.run([sys.executable, "-c", "import sys, hooklab.grading.review, hooklab.grading.class_data\n"
                             "print(' '.join(m for m in sys.modules if m.startswith('hooklab')))"],
                            capture_output=True, text=True, check=True, timeout=120).stdout.split()
    execution = tuple(f"hooklab.grading.{name}" for name in ("execute", "kernels", "worker", "judge", "run", "record"))
    assert "hooklab.grading.class_data" in loaded and not [m for m in loaded if m.startswith(execution)], loaded


def test_the_report_links_each_graded_notebooks_own_feedback_page_and_no_file_of_the_students(tmp_path: Path):
    """nbgrader copies a submission's other files into its feedback folder: an .html a student submitted (a page
    that says 18 / 18, with a script) is not linked from the instructor's report, nor is a link to elsewhere."""
    from hooklab.grading.class_report import feedback_links

    folder = tmp_path / "feedback" / "ann" / "hw"
    folder.mkdir(parents=True)
    for name in ("nb.html", "nb_feedback.html", "notes.html"):
        (folder / name).write_text("<script>alert(1)</script>")
    (tmp_path / "feedback" / "bob" / "hw").mkdir(parents=True)
    (tmp_path / "feedback" / "bob" / "hw" / "nb.html").symlink_to(folder / "notes.html")
    submissions = [SubmissionResult("ann", "hw", 2.0, 5.0, {"nb/a_test": 2.0, "nb/b_test": 0.0}),
                   SubmissionResult("bob", "hw", 0.0, 5.0, {"nb/a_test": 0.0}),
                   SubmissionResult("cy", "hw", 0.0, 5.0, {}, status="not run")]
    assert feedback_links(submissions, tmp_path / "feedback", tmp_path) == {
        "ann/hw": [("nb", "feedback/ann/hw/nb.html")], "bob/hw": [], "cy/hw": []}
