"""What a student names and raises reaches the instructor's terminal and spreadsheets as text, never as commands.

A folder name, an exception or a file name with escape sequences, bidi overrides or a leading ``=`` is shown
escaped in the summary and the review listing, and quoted in every CSV the grader writes; ordinary names
(accented letters too) and the numbers (negative ones too) are left as they are.
"""

from __future__ import annotations

import csv
import re
import warnings
from pathlib import Path

from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning

from hooklab.grading.class_data import ClassData, SubmissionResult, aggregate
from hooklab.grading.class_report import write_csv
from hooklab.grading.grades_csv import CellScoresExportPlugin
from hooklab.grading.ledger import Entry, Ledger
from hooklab.grading.review import listing
from hooklab.grading.summary import standing, summary
from hooklab.grading.untrusted import printable, spreadsheet_cell

RAW_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
ERASE = "\x1b[1A\x1b[2K"  # cursor up one line, erase it
HIDE = "\x1b[8m"  # what follows is invisible
RLO = "\u202e"  # right-to-left override: "exe.txt" shows as "txt.exe"
FORMULA = '=HYPERLINK("https://example.org","see the grader")'

HOSTILE_KEY = f"mallory{ERASE}/hw"
HOSTILE = Entry("", True, "", 0.0, 2.0, held=[f"nb: changes the checkers{HIDE} (nothing to see)", f"nb: {RLO}exe.txt"],
                would_be={"nb/a_test": 2.0}, notes=[f"{FORMULA}\nsecond line"])
NOT_RUN_KEY = "=SUM(1,2)/hw"
NOT_RUN = Entry("", False, f"{FORMULA}: not a valid notebook{HIDE}", 0.0, 2.0)
HONEST_KEY = "Zoë/hw"
HONEST = Entry("", True, "", 1.0, 2.0, held=["nb: searches the interpreter's objects (gc)"],
               would_be={"nb/a_test": 1.5},
               notes=["restored a_test", "the kernel died in cell 4"])


def lines_without_raw_controls(text: str) -> bool:
    return not any(RAW_CONTROL.search(line) for line in text.split("\n"))


def test_printable_escapes_controls_and_bidi_and_keeps_the_rest():
    assert printable(f"a{ERASE}b\n{RLO}c\x7f\x9b\u2066") == "a\\x1b[1A\\x1b[2Kb\\x0a\\u202ec\\x7f\\x9b\\u2066"
    honest = "Zoë/hw: ValueError: x ≠ y (naïve, 東京, \\x1b typed by hand)"
    assert printable(honest) == honest
    assert printable(printable(f"{HIDE}x")) == printable(f"{HIDE}x") == "\\x1b[8mx", "escaping twice changes nothing"


def test_spreadsheet_cells_that_would_be_formulas_are_quoted():
    for formula in ("=1+1", "+1+cmd", "-2+3", "@SUM(A1)", FORMULA, "'=already quoted"):
        cell = spreadsheet_cell(formula)
        assert cell == "'" + formula
    assert spreadsheet_cell("\tx") == "'\\x09x" and spreadsheet_cell("\r=1") == "'\\x0d=1", ("a leading tab or CR: "
                                                                                             "quoted, and escaped")
    for kept in ("Zoë", "hw1", "", "-1.5", "+2", "1e-05", -1.5, 0, 2.0):
        assert spreadsheet_cell(kept) == kept


def test_the_summary_shows_what_students_named_escaped_and_the_rest_as_written():
    entries = {HOSTILE_KEY: HOSTILE, NOT_RUN_KEY: NOT_RUN, HONEST_KEY: HONEST}
    text = summary(entries, {}, 0, [f"{RLO}gpj.ipynb: a file outside any student folder, ignored"],
                   {f"eve{ERASE}/hw": 1})
    assert lines_without_raw_controls(text), [line for line in text.split("\n") if RAW_CONTROL.search(line)]
    assert ("  mallory\\x1b[1A\\x1b[2K/hw (would score 2 / 2): nb: changes the checkers\\x1b[8m (nothing to see) "
            "(and 1 more: the reason column of the grades CSV)\n") in text, "a held submission: one line"
    assert f"  =SUM(1,2)/hw: {FORMULA}: not a valid notebook\\x1b[8m" in text
    assert f"{FORMULA}\\x0asecond line" in text, "a note is one line"
    assert "  eve\\x1b[1A\\x1b[2K/hw: once" in text and "  \\u202egpj.ipynb: a file outside" in text
    # the honest twin, as written; the summary's own lines stay lines
    assert "  Zoë/hw (would score 1.5 / 2): nb: searches the interpreter's objects (gc)\n" in text
    assert ("Scores:\n  =SUM(1,2)/hw                  0 / 2  not run\n"
            "  Zoë/hw                        1 / 2  held for review (would score 1.5)\n"
            "  mallory\\x1b[1A\\x1b[2K/hw      0 / 2  held for review (would score 2)\n") in text, (
        "a score per submission, sorted")
    assert "Could not be run (scored 0):\n  =SUM(1,2)/hw:" in text


def test_the_review_listing_shows_what_students_named_escaped(tmp_path: Path):
    ledger = Ledger(tmp_path / "grading.json")
    for key, entry in {HOSTILE_KEY: HOSTILE, HONEST_KEY: HONEST}.items():
        ledger.set(key, entry)
    text = listing(ledger)
    assert lines_without_raw_controls(text)
    assert text.split("\n") == [
        "Zoë/hw: held, would score 1.5 / 2",
        "    nb: searches the interpreter's objects (gc)",
        "mallory\\x1b[1A\\x1b[2K/hw: held, would score 2 / 2",
        "    nb: changes the checkers\\x1b[8m (nothing to see)",
        "    nb: \\u202eexe.txt",
    ]


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_grades_csv_quotes_formulas_and_escapes_controls_but_keeps_numbers(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    students = {"=SUM(1,2)": (2.0, 0.0), "Zoë": (0.0, 1.0), "ann": (1.5, 0.5)}  # points, late penalty
    with Gradebook(url) as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's submission creation, as in hooklab.grading.record
        gradebook.add_assignment("hw")
        gradebook.add_notebook("nb", "hw")
        gradebook.add_grade_cell("a_test", "nb", "hw", max_score=2.0, cell_type="code")
        for student, (points, penalty) in students.items():
            gradebook.add_student(student)
            gradebook.add_submission("hw", student)
            gradebook.find_grade("a_test", "nb", "hw", student).auto_score = points
            gradebook.find_submission_notebook("nb", "hw", student).late_submission_penalty = penalty
        gradebook.db.commit()
        reasons = {"=SUM(1,2)/hw": f"{FORMULA}: raised\x1b[2J", "Zoë/hw": "late: submitted after the deadline",
                   "ann/hw": "-1 point: late"}
        CellScoresExportPlugin(to=str(tmp_path / "grades.csv"), reasons=reasons).export(gradebook)
    rows = {row["student"]: row for row in read_csv(tmp_path / "grades.csv")}
    assert set(rows) == {"'=SUM(1,2)", "Zoë", "ann"}
    assert rows["'=SUM(1,2)"]["reason"] == f"'{FORMULA}: raised\\x1b[2J"
    assert rows["ann"]["reason"] == "'-1 point: late" and rows["Zoë"]["reason"] == "late: submitted after the deadline"
    numbers = {student: tuple(float(row[column]) for column in ("score", "late_penalty", "max_score", "nb/a_test"))
               for student, row in rows.items()}
    assert numbers == {"'=SUM(1,2)": (2.0, 0.0, 2.0, 2.0), "Zoë": (-1.0, 1.0, 2.0, 0.0), "ann": (1.0, 0.5, 2.0, 1.5)}


def test_the_report_csvs_quote_formulas_and_escape_controls(tmp_path: Path):
    cells = {"hw": {"nb/a_test": 2.0}}
    data = ClassData(cells, [
        SubmissionResult("=SUM(1,2)", "hw", 0.0, 2.0, {"nb/a_test": 0.0},
                         failures={"nb/a_test": f"{FORMULA}: see\x1b[8m"}),
        SubmissionResult(f"@eve{ERASE}", "hw", 0.0, 2.0, {"nb/a_test": 0.0}, status="held",
                         reasons=[f"nb: {RLO}exe.txt", "+1 more"], would_be=2.0),
        SubmissionResult("Zoë", "hw", -0.5, 2.0, {"nb/a_test": 0.0}, status="not run",
                         reasons=["no notebook submitted"]),
    ])
    problems = [f"{FORMULA}.ipynb: a file outside any student folder, ignored",
                "stray.ipynb: a file outside any student folder, ignored",
                f"{RLO}gpj.ipynb: ignored"]
    write_csv(aggregate(data), {"run (s)": 1.25}, tmp_path, problems)
    for path in tmp_path.glob("*.csv"):
        with open(path, newline="") as handle:  # rows end in CRLF, as the csv module writes them
            assert not RAW_CONTROL.search(handle.read().replace("\r\n", "")), (f"{path.name} holds a raw control "
                                                                               "character")
    assert read_csv(tmp_path / "report-failures.csv")[0]["message"] == f"'{FORMULA}: see\\x1b[8m"
    review = {row["student"]: row for row in read_csv(tmp_path / "report-review.csv")}
    assert set(review) == {"'@eve\\x1b[1A\\x1b[2K", "Zoë"}
    assert review["'@eve\\x1b[1A\\x1b[2K"]["reasons"] == "nb: \\u202eexe.txt; +1 more"
    assert float(review["Zoë"]["score"]) == -0.5 and review["Zoë"]["score"] == "-0.5", "a negative score stays a number"
    assert [row["lowest"] for row in read_csv(tmp_path / "report-assignments.csv")] == ["-0.5"]
    assert [row["problem"][:2] for row in read_csv(tmp_path / "report-problems.csv")] == ["'=", "st", "\\u"]


def test_the_progress_and_score_marks_tick_only_full_marks():
    assert standing(Entry("", True, "", 2.0, 2.0)) == "  ✓"
    assert standing(Entry("", True, "", 1.5, 2.0)) == "", "partial marks: the score alone"
    assert standing(Entry("", True, "", 0.0, 2.0, held=["nb: gc"], would_be={"nb/a": 2.0})) == ("  held for review "
                                                                                                "(would score 2)")
    assert standing(NOT_RUN) == "  not run"
