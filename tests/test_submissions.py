"""Reading a class's input on its own (no kernel, no grader): nbgrader's layout, a flat folder, a zip; ids that
cannot be students; copying a submission into the course."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from conftest import two_assignments
from hooklab.grading.course import Course
from hooklab.grading.kernels.sandbox import Sandbox
from hooklab.grading.submissions import (
    DEFAULT_FILENAME_REGEX,
    files_in,
    find_submissions,
    opened_input,
    place_submission,
    refusal,
)


@pytest.fixture
def course(tmp_path: Path) -> Course:
    return two_assignments(tmp_path / "course")


def write(path: Path, text: str = "{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def found(folder: Path, course: Course, **limits) -> tuple[dict[str, object], list[str]]:
    result = find_submissions(folder, course, Sandbox(**limits))
    return ({s.key: s.refused or sorted(s.files) for s in result.submissions}, result.problems)


@pytest.mark.parametrize(("student", "refused"), [
    ("ada", False), ("Ada Lovelace", False), ("李", False),
    ("", True), (".", True), ("..", True), (".hidden", True), ("a/b", True), ("a\\b", True),
    ("a*", True), ("[ab]", True), ("who?", True), ("ad\u200ba", True), ("ad\x1ba", True),
])
def test_a_student_id_names_one_folder_literally(student: str, refused: bool):
    assert bool(refusal(student)) is refused


def test_nbgrader_layout_finds_each_students_assignments_and_says_what_it_left(tmp_path: Path, course: Course):
    inbox = tmp_path / "inbox"
    write(inbox / "ada" / "hw" / "nb.ipynb")
    write(inbox / "ada" / "hw" / "data" / "extra.txt", "x")
    write(inbox / "ada" / "hw" / ".ipynb_checkpoints" / "nb-checkpoint.ipynb")
    write(inbox / "ada" / "hw2" / "other.ipynb")
    write(inbox / "bob" / "hw" / "nb.ipynb")
    write(inbox / "bob" / "hw" / "timestamp.txt", "2030-01-01 00:00:00")
    write(inbox / "cy" / "homework" / "nb.ipynb")
    write(inbox / "stray.ipynb")
    (inbox / "a*").mkdir()
    os.symlink(inbox / "ada" / "hw" / "nb.ipynb", inbox / "bob" / "hw" / "linked.ipynb")
    submissions, problems = found(inbox, course)
    assert submissions == {"ada/hw": ["data/extra.txt", "nb.ipynb"], "ada/hw2": ["other.ipynb"],
                           "bob/hw": ["nb.ipynb"]}
    assert problems == [
        "a*/: refused as a student id (one of * ? [ ], which nbgrader would take as a pattern matching other "
        "students); not graded",
        "bob/hw/linked.ipynb: a link, not followed (only the files themselves are graded)",
        "bob/hw/timestamp.txt: the student's own, left out (hooklab autograde --timestamps takes it)",
        "cy/: no folder named after an assignment (hw, hw2)",
        "stray.ipynb: a file outside any student folder, ignored",
    ]


def test_the_courses_own_submitted_folder_keeps_nbgraders_timestamps(course: Course):
    write(course.step_dir("submitted") / "ada" / "hw" / "nb.ipynb")
    write(course.step_dir("submitted") / "ada" / "hw" / "timestamp.txt", "2030-01-01 00:00:00")
    assert found(course.step_dir("submitted"), course) == ({"ada/hw": ["nb.ipynb", "timestamp.txt"]}, []), (
        "nbgrader's exchange wrote it: the late penalty depends on it")


def test_a_flat_folder_is_read_by_file_name(tmp_path: Path, course: Course):
    inbox = tmp_path / "inbox"
    for name in ("ada_nb.ipynb", "ada_other.ipynb", "bob_nb.ipynb", "cy_unknown.ipynb", "notes.txt", "a*_nb.ipynb"):
        write(inbox / name)
    submissions, problems = found(inbox, course)
    assert submissions == {"ada/hw": ["nb.ipynb"], "ada/hw2": ["other.ipynb"], "bob/hw": ["nb.ipynb"]}
    assert problems == [
        "a*_nb.ipynb: 'a*' refused as a student id (one of * ? [ ], which nbgrader would take as a pattern matching "
        "other students); not graded",
        "cy_unknown.ipynb: 'unknown.ipynb' is not a notebook of any assignment, ignored",
        f"notes.txt: file name does not match {DEFAULT_FILENAME_REGEX!r}, ignored",
    ]


def test_a_submission_over_the_limits_is_refused_whole(tmp_path: Path, course: Course):
    inbox = tmp_path / "inbox"
    write(inbox / "ada" / "hw" / "nb.ipynb", "x" * 100)
    for index in range(3):
        write(inbox / "bob" / "hw" / f"f{index}.txt")
    submissions, _ = found(inbox, course, submission_size=50, submission_files=2)
    assert submissions["ada/hw"].startswith("100 bytes of files, more than the 50 bytes a submission may hold")
    assert submissions["bob/hw"].startswith("3 files or more, more than the 2 a submission may hold")


def test_a_zip_is_extracted_a_submission_at_a_time_within_the_limits(tmp_path: Path, course: Course):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("ada/hw/nb.ipynb", "{}")
        zipped.writestr("bob/hw/nb.ipynb", "x" * 100)
        zipped.writestr("../escape/hw/nb.ipynb", "{}")
    with opened_input(archive, Sandbox(submission_size=50)) as (folder, problems):
        assert sorted(files_in(folder)) == ["ada/hw/nb.ipynb", "escape/hw/nb.ipynb"], "'..' dropped; bob's left out"
        assert problems == ["bob/hw: 100 bytes of files, more than the 50 bytes a submission may hold "
                            "(c.Sandbox.submission_size); not extracted from the zip, not graded"]
    assert not folder.exists(), "the scratch folder goes with the run"
    assert not (tmp_path / "escape").exists()


def test_place_copies_a_submission_once_and_replaces_it_whole_when_it_changes(tmp_path: Path, course: Course):
    inbox = tmp_path / "inbox"
    write(inbox / "ada" / "hw" / "nb.ipynb", "first")
    (submission,) = find_submissions(inbox, course, Sandbox()).submissions
    target, first = place_submission(submission, course)
    assert target == course.step_dir("submitted") / "ada" / "hw" and (target / "nb.ipynb").read_text() == "first"
    write(target / "left-over.txt")  # an earlier version's file
    assert place_submission(submission, course)[1] == first
    write(inbox / "ada" / "hw" / "nb.ipynb", "second")
    target, second = place_submission(submission, course)
    assert second != first
    assert sorted(files_in(target)) == ["nb.ipynb"] and (target / "nb.ipynb").read_text() == "second"
    assert [p.name for p in target.parent.iterdir()] == ["hw"], "no staging folder left beside it"
