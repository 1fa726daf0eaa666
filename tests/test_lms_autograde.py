"""One small grading of a Moodle export end to end: the zip graded under the worksheet's ids, its submission times
in the gradebook, what could not be mapped in the summary, and the scores back in the worksheet."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from catalogues import corpus
from conftest import make_course

pytestmark = pytest.mark.slow  # starts a grader (conftest: the fast tier)

NOTEBOOK = corpus.notebook_name(corpus.ASSIGNMENT)
WORKSHEET = [
    ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade", "Grade can be changed",
     "Last modified (submission)", "Last modified (grade)", "Feedback comments"],
    ["Participant 201", "Ada Lovelace", "ada@example.edu", "Submitted for grading", "", "100.00", "Yes",
     "Monday, 13 May 2024, 3:45 PM", "-", ""],
    ["Participant 202", "=HYPERLINK(\"x\")", "bob@example.edu", "Submitted for grading", "", "100.00", "Yes",
     "Wednesday, 15 May 2024, 4:45 PM", "-", ""],
]


def test_a_moodle_export_is_graded_under_the_worksheets_ids_and_its_scores_go_back(tmp_path: Path):
    course = make_course(tmp_path / "course")
    cases = {case.student: case for case in corpus.cases() if case.student in ("full", "blank")}
    archive = tmp_path / "moodle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr(f"Ada Lovelace_201_assignsubmission_file_/{NOTEBOOK}", cases["full"].files[NOTEBOOK])
        bundle.writestr(f"=HYPERLINK(\"x\")_202_assignsubmission_file_{NOTEBOOK}", cases["blank"].files[NOTEBOOK])
        bundle.writestr(f"Mallory_299_assignsubmission_file_/{NOTEBOOK}", cases["full"].files[NOTEBOOK])
    worksheet = tmp_path / "worksheet.csv"
    with open(worksheet, "w", newline="") as handle:
        csv.writer(handle).writerows(WORKSHEET)
    config = ["--config", str(course / "nbgrader_config.py")]
    result = subprocess.run([sys.executable, "-m", "hooklab.cli", "autograde", "--lms", "moodle", "--roster",
                             str(worksheet), "--roster-timezone", "UTC", "--jobs", "1", "--timeout",
                             str(corpus.TIMEOUT), *config, str(archive)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Mallory_299_assignsubmission_file_: Moodle number 299 is not in the roster; not graded" in result.stdout
    full = sum(cases["full"].scores.values())
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        ada = gradebook.find_submission(corpus.ASSIGNMENT, "ada@example.edu")
        bob = gradebook.find_submission(corpus.ASSIGNMENT, "bob@example.edu")
        assert (ada.score, bob.score) == (full, sum(cases["blank"].scores.values()))
        assert str(ada.timestamp).startswith("2024-05-13 15:45") and str(bob.timestamp).startswith("2024-05-15 16:45")
        maximum = ada.max_score
    assert "Similar answers" in (course / "report.html").read_text()
    out = tmp_path / "filled.csv"
    back = subprocess.run([sys.executable, "-m", "hooklab.cli", "export", str(worksheet), "--lms", "moodle",
                           "--assignment", corpus.ASSIGNMENT, "--to", str(out), *config],
                          capture_output=True, text=True, timeout=120)
    assert back.returncode == 0, back.stdout + back.stderr
    rows = list(csv.reader(io.StringIO(out.read_text())))
    assert [row[4] for row in rows] == ["Grade", f"{round(full / maximum * 100, 2):g}", "0"]
    assert rows[2][1] == "'=HYPERLINK(\"x\")" and [row[:4] for row in rows[1:2]] == [WORKSHEET[1][:4]]
