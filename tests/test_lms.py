"""Submissions as Canvas and Moodle export them, mapped to students through their rosters, and the scores written
back into the LMS's own files (no kernel, no grader)."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_notebook

from conftest import two_assignments
from hooklab.grading.course import Course
from hooklab.grading.kernels.sandbox import Sandbox
from hooklab.grading.lms import canvas, find_lms_submissions, moodle, platform
from hooklab.grading.lms.export import Score, fill
from hooklab.grading.lms.table import read_table, write_table
from hooklab.grading.submissions import TIMESTAMP, files_in, opened_input, place_submission

NOTEBOOK = nbformat.writes(new_notebook())


@pytest.fixture
def course(tmp_path: Path) -> Course:
    return two_assignments(tmp_path / "course")


def zipped(path: Path, entries: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return path


def csv_file(path: Path, rows: list[list[str]], bom: bool = False) -> Path:
    buffer = io.StringIO(newline="")
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    path.write_text(("\ufeff" if bom else "") + buffer.getvalue(), encoding="utf-8", newline="")
    return path


CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "HW (77)", "Quiz 1 (78)",
                 "Current Score"]
CANVAS_ROWS = [
    CANVAS_HEADER,
    ["    Points Possible", "", "", "", "", "10.00", "5.00", "(read only)"],
    ["Lovelace, Ada", "1001", "S1", "ada", "A", "", "4", "80"],
    ["Babbage, Bob", "1002", "S2", "bob", "A", "", "", ""],
    ["Church, Carol", "1003", "S3", "carol", "A", "3", "", ""],
    ["=cmd|' /C calc'!A0", "1008", "S8", "[ab]", "A", "", "", ""],
    ["Eve", "1005", "S5", "eve", "A", "", "", ""],
]


def canvas_zip(tmp_path: Path) -> Path:
    return zipped(tmp_path / "submissions.zip", {
        "lovelaceada_1001_5001_nb.ipynb": NOTEBOOK,  # honest
        "babbagebob_late_1002_5002_nb.ipynb": NOTEBOOK,  # late
        "churchcarol_1003_5003_nb.ipynb": "{}",  # the first upload …
        "churchcarol_1003_5013_nb-1.ipynb": NOTEBOOK,  # … and the renamed re-upload, newer
        "nobody_1999_5004_nb.ipynb": NOTEBOOK,  # not in the roster
        "eve_1005_5005_notes.txt": "x",  # not a notebook of an assignment
        "x_1001_1_1005_5006_nb.ipynb": NOTEBOOK,  # a profile name holding another user's number
        "../../escape_1008_5008_nb.ipynb": NOTEBOOK,  # path traversal: extracted inside, graded as 1008
        "no-numbers.ipynb": NOTEBOOK,
    })


def test_canvas_zip_is_mapped_through_the_gradebook_export_and_says_what_it_left(tmp_path: Path, course: Course):
    roster = canvas.read_roster(csv_file(tmp_path / "gradebook.csv", CANVAS_ROWS, bom=True))
    assert roster.ids == {"1001": "ada", "1002": "bob", "1003": "carol", "1008": "S8", "1005": "eve"}
    sandbox = Sandbox()
    with opened_input(canvas_zip(tmp_path), sandbox) as (folder, problems):
        found = find_lms_submissions(folder, course, sandbox, platform("canvas"), roster)
        assert not list((folder.parent).glob("escape*"))
        assert {s.key: sorted(s.files) for s in found.submissions} == {
            "ada/hw": ["nb.ipynb"], "bob/hw": ["nb.ipynb"], "carol/hw": ["nb.ipynb"], "S8/hw": ["nb.ipynb"]}
        carol = next(s for s in found.submissions if s.student == "carol")
        assert carol.files["nb.ipynb"].name == "churchcarol_1003_5013_nb-1.ipynb"
        text = "\n".join(found.problems)
        assert "churchcarol_1003_5003_nb.ipynb: an earlier upload of nb.ipynb by carol" in text
        assert "nobody_1999_5004_nb.ipynb: Canvas number 1999 is not in the roster" in text
        assert "eve_1005_5005_notes.txt: 'notes.txt' is not a notebook of any assignment" in text
        assert "x_1001_1_1005_5006_nb.ipynb: a name that reads as two Canvas users" in text
        assert "no-numbers.ipynb: not named as Canvas names a submission" in text
        assert not problems


def test_canvas_without_a_roster_grades_under_canvas_user_ids(tmp_path: Path, course: Course):
    sandbox = Sandbox()
    with opened_input(canvas_zip(tmp_path), sandbox) as (folder, _):
        found = find_lms_submissions(folder, course, sandbox, platform("canvas"), None)
    assert sorted(s.key for s in found.submissions) == ["1001/hw", "1002/hw", "1003/hw", "1008/hw", "1999/hw"]


def test_canvas_file_names_are_read_as_canvas_writes_them():
    entry = canvas.parse("babbagebob_LATE_1002_5002_forward_hooks-2.ipynb")
    assert (entry.user, entry.late, entry.file_id, entry.uploaded, entry.order) == (
        "1002", True, "forward_hooks.ipynb", "forward_hooks-2.ipynb", (5002, 2))
    assert canvas.parse("ada_1001_5001_forward_hooks.ipynb").late is False
    assert isinstance(canvas.parse("ada_forward_hooks.ipynb"), str)


def test_canvas_anonymous_grading_names_are_graded_under_their_anonymous_id(tmp_path: Path, course: Course):
    """Canvas's ContentZipper leaves the name out and writes the anonymous id under anonymous grading."""
    entry = canvas.parse("LATE_anon_Ab1cD_5002_forward_hooks.ipynb")
    assert (entry.user, entry.late, entry.anonymous, entry.file_id) == ("anon_Ab1cD", True, True, "forward_hooks.ipynb")
    assert canvas.parse("anon_1001_5001_nb.ipynb").user == "1001"  # a student whose name squashes to "anon"
    roster = canvas.read_roster(csv_file(tmp_path / "gradebook.csv", CANVAS_ROWS))
    sandbox = Sandbox()
    inbox = zipped(tmp_path / "anonymous.zip", {"anon_Ab1cD_5001_nb.ipynb": NOTEBOOK,
                                                "anon_xY9zQ_5002_nb.ipynb": NOTEBOOK})
    with opened_input(inbox, sandbox) as (folder, _):
        found = find_lms_submissions(folder, course, sandbox, platform("canvas"), roster)
    assert sorted(s.key for s in found.submissions) == ["anon_Ab1cD/hw", "anon_xY9zQ/hw"]
    assert not found.problems


def test_an_oversized_lms_file_is_not_extracted(tmp_path: Path, course: Course):
    sandbox = Sandbox(notebook_size=100)
    archive = zipped(tmp_path / "big.zip", {"ada_1001_5001_nb.ipynb": "x" * 1000, "bob_1002_5002_nb.ipynb": NOTEBOOK})
    with opened_input(archive, sandbox) as (folder, problems):
        found = find_lms_submissions(folder, course, sandbox, platform("canvas"), None)
    assert [s.key for s in found.submissions] == ["1002/hw"]
    assert "ada_1001_5001_nb.ipynb: 1000 bytes, more than the 100 bytes a notebook may be" in problems[0]


WORKSHEET = [
    ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade", "Grade can be changed",
     "Last modified (submission)", "Last modified (grade)", "Feedback comments"],
    ["Participant 201", "Ada Lovelace", "ada@example.edu", "Submitted for grading", "", "100.00", "Yes",
     "Monday, 13 May 2024, 3:45 PM", "-", ""],
    ["Participant 202", "Bob", "bob@example.edu", "Submitted for grading - 2 days 1 hour late", "", "100.00", "Yes",
     "Wednesday, 15 May 2024, 4:45 PM", "-", ""],
    ["Participant 203", "Carol C", "carol@example.edu", "Submitted for grading", "", "100.00", "No",
     "Monday, 13 May 2024, 1:00 PM", "-", ""],
    ["Participant 204", "@SUM(1+1)*cmd", "dave*@example.edu", "No submission", "", "100.00", "Yes", "-", "-", ""],
]


def moodle_zip(tmp_path: Path) -> Path:
    return zipped(tmp_path / "moodle.zip", {
        "Ada Lovelace_201_assignsubmission_file_/nb.ipynb": NOTEBOOK,
        "Ada Lovelace_201_assignsubmission_file_/data/extra.csv": "1,2",
        "Bob_202_assignsubmission_file_/nb.ipynb": NOTEBOOK,
        "Bob_202_assignsubmission_file_/timestamp.txt": "2024-05-01 00:00:00",  # the student's own
        "Carol C_203_assignsubmission_file_nb.ipynb": NOTEBOOK,  # folders off
        "@SUM(1+1)*cmd_204_assignsubmission_onlinetext_/onlinetext.html": "<p>hi</p>",
        "Mallory_299_assignsubmission_file_/nb.ipynb": NOTEBOOK,  # not in the worksheet
    })


def test_moodle_zip_is_mapped_through_the_worksheet_with_its_submission_times(tmp_path: Path, course: Course):
    roster = moodle.read_roster(csv_file(tmp_path / "worksheet.csv", WORKSHEET), "Europe/London")
    assert roster.ids == {"201": "ada@example.edu", "202": "bob@example.edu", "203": "carol@example.edu",
                          "204": "204"}
    assert roster.times["201"] == "2024-05-13 14:45:00.000000 UTC"  # BST is UTC+1
    sandbox = Sandbox()
    with opened_input(moodle_zip(tmp_path), sandbox) as (folder, _):
        found = find_lms_submissions(folder, course, sandbox, platform("moodle"), roster)
        assert {s.key: sorted(s.files) for s in found.submissions} == {
            "ada@example.edu/hw": ["data/extra.csv", "nb.ipynb"], "bob@example.edu/hw": ["nb.ipynb"],
            "carol@example.edu/hw": ["nb.ipynb"]}
        bob = next(s for s in found.submissions if s.student.startswith("bob"))
        assert bob.timestamp == "2024-05-15 15:45:00.000000 UTC"
        text = "\n".join(found.problems)
        assert "Bob_202_assignsubmission_file_/timestamp.txt: the student's own, left out" in text
        assert "a Moodle onlinetext submission, not a file" in text
        assert "Mallory_299_assignsubmission_file_: Moodle number 299 is not in the roster" in text
        target, fingerprint = place_submission(bob, course)
        assert (target / TIMESTAMP).read_text() == "2024-05-15 15:45:00.000000 UTC"
        assert place_submission(bob, course) == (target, fingerprint)  # unchanged: not copied again
        assert sorted(files_in(target)) == ["nb.ipynb", TIMESTAMP]


def test_moodle_names_that_read_two_ways_or_hold_no_file_are_refused():
    # a file named after another participant's folder, uploaded by 202; a full name holding another's folder
    for name in ("Eve_202_assignsubmission_file_x_201_assignsubmission_file_nb.ipynb",
                 "Eve_201_assignsubmission_file_x_202_assignsubmission_file_"):
        assert "reads as two Moodle participants" in moodle.parse(name)
    assert moodle.parse("Ada Lovelace_201_assignsubmission_file_nb.ipynb").user == "201"
    assert isinstance(moodle.parse("nb.ipynb"), str)


def test_canvas_gradebook_is_filled_column_by_column(tmp_path: Path):
    path = csv_file(tmp_path / "gradebook.csv", CANVAS_ROWS, bom=True)
    table = read_table(path)
    scores = {"ada": Score(15.0, 20.0), "bob": Score(20.0, 20.0), "S8": Score(5.0, 20.0), "carol": Score(1, 20.0),
              "zed": Score(3.0, 20.0)}
    filled = fill(table, "canvas", scores, held={"carol"}, column="77")
    assert filled.written == ["ada", "bob", "S8"] and filled.held == ["carol"] and not filled.problems
    out = tmp_path / "filled.csv"
    write_table(table, out)
    assert out.read_bytes().startswith("\ufeff".encode()) and b"\r\n" in out.read_bytes()
    before, after = read_table(path).rows, read_table(out).rows
    assert len(after) == len(before) and after[0] == CANVAS_HEADER
    for column, name in enumerate(CANVAS_HEADER):
        if name == "HW (77)":  # scaled to the 10 points possible; carol held, her 3 kept
            assert [row[column] for row in after] == [name, "10.00", "7.5", "10", "3", "2.5", ""]
        elif name == "Student":  # a name a spreadsheet would run is quoted, the others as they were
            assert [row[column] for row in after] == [
                name, "    Points Possible", "Lovelace, Ada", "Babbage, Bob", "Church, Carol", "'=cmd|' /C calc'!A0",
                "Eve"]
        else:
            assert [row[column] for row in after] == [row[column] for row in before], name


def test_canvas_column_must_be_named_once(tmp_path: Path):
    table = read_table(csv_file(tmp_path / "gradebook.csv", CANVAS_ROWS))
    assert "no column" in fill(table, "canvas", {"ada": Score(1, 1)}, set(), column="Missing").problems[0]
    assert fill(table, "canvas", {"ada": Score(1, 1)}, set(), column="HW (77)").written == ["ada"]
    assert fill(table, "canvas", {"ada": Score(1, 1)}, set(), column="HW").written == ["ada"]


def test_moodle_worksheet_is_filled_column_by_column(tmp_path: Path):
    path = csv_file(tmp_path / "worksheet.csv", WORKSHEET)
    table = read_table(path)
    scores = {"ada@example.edu": Score(15.0, 20.0), "bob@example.edu": Score(20.0, 20.0),
              "carol@example.edu": Score(10.0, 20.0), "204": Score(0.0, 20.0)}
    filled = fill(table, "moodle", scores, held=set())
    assert filled.written == ["ada@example.edu", "bob@example.edu", "204"]  # carol's grade cannot be changed
    before, after = WORKSHEET, table.rows
    for column, name in enumerate(WORKSHEET[0]):
        if name == "Grade":
            assert [row[column] for row in after] == [name, "75", "100", "", "0"]
        elif name in ("Full name", "Email address"):
            assert [row[column] for row in after] == [row[column] if not row[column].startswith("@") else
                                                     "'" + row[column] for row in before]
        else:
            assert [row[column] for row in after] == [row[column] for row in before], name


@pytest.mark.filterwarnings("ignore:Object of type:sqlalchemy.exc.SAWarning")  # nbgrader's add_submission's own
def test_export_writes_the_gradebooks_scores_before_the_late_penalty_unless_told(tmp_path: Path, course: Course,
                                                                                 capsys: pytest.CaptureFixture[str]):
    from nbgrader.api import Gradebook

    from hooklab.cli import main

    with Gradebook(course.db_url) as gradebook:
        gradebook.add_assignment("hw")
        gradebook.add_notebook("nb", "hw")
        gradebook.add_grade_cell("ex_test", "nb", "hw", max_score=20, cell_type="code")
        for student, points, penalty in (("ada@example.edu", 15, 0), ("bob@example.edu", 20, 4), ("204", 8, 0)):
            gradebook.add_student(student)
            gradebook.add_submission("hw", student)
            gradebook.find_grade("ex_test", "nb", "hw", student).auto_score = points
            gradebook.find_submission_notebook("nb", "hw", student).late_submission_penalty = penalty
        gradebook.db.commit()
    worksheet = csv_file(tmp_path / "worksheet.csv", WORKSHEET)
    config = str(course.config_file)
    assert main(["export", str(worksheet), "--lms", "moodle", "--assignment", "hw", "--to", str(tmp_path / "raw.csv"),
                 "--config", config]) == 0
    assert "3 scores written" in capsys.readouterr().out
    grade = WORKSHEET[0].index("Grade")
    assert [row[grade] for row in read_table(tmp_path / "raw.csv").rows] == ["Grade", "75", "100", "", "40"]
    assert main(["export", str(worksheet), "--lms", "moodle", "--assignment", "hw", "--to", str(tmp_path / "late.csv"),
                 "--late-penalty", "--config", config]) == 0
    assert "turn the LMS's own late policy off" in capsys.readouterr().out
    assert [row[grade] for row in read_table(tmp_path / "late.csv").rows] == ["Grade", "75", "80", "", "40"]
    assert read_table(worksheet).rows == WORKSHEET  # the LMS's own file is only read
    assert main(["export", str(worksheet), "--lms", "moodle", "--assignment", "hw", "--to", str(worksheet),
                 "--config", config]) == 2


def test_an_id_the_roster_gives_two_students_grades_neither_under_it(tmp_path: Path, course: Course):
    rows = [CANVAS_HEADER, ["Ada", "1001", "", "1002", "A"], ["Bob", "1002", "", "", "A"],
            ["Carol", "1003", "", "", "A"]]
    roster = canvas.read_roster(csv_file(tmp_path / "gradebook.csv", rows))
    assert roster.ids == {"1003": "1003"} and sorted(roster.refused) == ["1001", "1002"]
    sandbox = Sandbox()
    archive = zipped(tmp_path / "submissions.zip", {f"{name}_{user}_1_nb.ipynb": NOTEBOOK
                                                    for name, user in (("ada", 1001), ("bob", 1002), ("carol", 1003))})
    with opened_input(archive, sandbox) as (folder, _):
        found = find_lms_submissions(folder, course, sandbox, platform("canvas"), roster)
    assert [s.key for s in found.submissions] == ["1003/hw"]
    assert ("ada_1001_1_nb.ipynb: the roster gives the id '1002' to 2 students (1001, 1002); not graded"
            in found.problems)


def test_the_command_refuses_a_roster_without_a_platform_and_an_unknown_time_zone(tmp_path: Path, course: Course,
                                                                                 capsys: pytest.CaptureFixture[str]):
    from hooklab.cli import main

    roster = csv_file(tmp_path / "worksheet.csv", WORKSHEET)
    config = ["--config", str(course.config_file)]
    assert main(["autograde", "--roster", str(roster), *config, str(tmp_path)]) == 2
    assert "--roster needs --lms" in capsys.readouterr().err
    assert main(["autograde", "--lms", "moodle", "--roster", str(roster), "--roster-timezone", "Mars/Olympus",
                 *config, str(tmp_path)]) == 2
    assert "not a time zone" in capsys.readouterr().err
