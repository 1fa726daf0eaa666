"""Submissions and grades as learning platforms export them: Canvas (:mod:`.canvas`) and Moodle (:mod:`.moodle`).

An LMS names each file of its submissions zip after the student's profile (a name the student chose, hostile
input like any other) and a number of its own. :func:`find_lms_submissions` reads such a folder (the zip already
opened by :func:`hooklab.grading.submissions.opened_input`, with its size limits), maps each file to a student id
through the LMS's number and an optional roster (:class:`Roster`: the LMS's own gradebook export), checks that id
as every student id is checked (:func:`hooklab.grading.submissions.refusal`), and says which files it could not
map and why. The grades go back into the LMS's own export with :mod:`.export`.

Lateness: the LMS applies its own late policy. The submission times a roster holds (Moodle's worksheet) become
nbgrader's ``timestamp.txt``, so ``grades.csv`` shows nbgrader's late penalty where the course config sets one,
but :mod:`.export` writes the score *before* it (unless told otherwise), so no penalty is applied twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hooklab.grading.lms.entries import LmsFile, Platform, Roster
from hooklab.grading.untrusted import printable

if TYPE_CHECKING:
    from hooklab.grading.course import Course
    from hooklab.grading.kernels.sandbox import Sandbox
    from hooklab.grading.submissions import Found

PLATFORMS = ("canvas", "moodle")


Lms = tuple[Platform, Roster | None]  # an LMS's export as ``hooklab autograde --lms`` reads it, with its roster


def platform(name: str) -> Platform:
    """The module of an LMS by its name (:data:`PLATFORMS`)."""
    from hooklab.grading.lms import canvas, moodle

    return {"canvas": canvas, "moodle": moodle}[name]  # type: ignore[return-value]


def student_id(roster: Roster | None, user: str) -> str:
    """The student id of an LMS number: the roster's, or the number itself where there is none."""
    return roster.ids.get(user, user) if roster else user


def find_lms_submissions(folder: Path, course: Course, sandbox: Sandbox, lms: Platform,
                         roster: Roster | None) -> Found:
    """Every submission of an LMS's export in ``folder`` (flat files or Moodle's folders), mapped to student ids.

    A student's newest entry of a notebook counts (an LMS keeps the latest attempt, but a renamed re-upload
    sits beside the first); the others are named. A number the roster does not know, an id the roster gives
    that cannot be a student's folder, a file of no assignment and a link are named with the reason."""
    # here, not at the top: `hooklab --help` reads PLATFORMS without loading nbgrader
    from hooklab.grading.submissions import TIMESTAMP, Found, Submission, files_of, link_problem, refusal, too_big
    problems = list(roster.problems) if roster else []
    chosen: dict[tuple[str, str], tuple[LmsFile, Path]] = {}  # (student, path in the submission) → newest entry
    folders: dict[str, Path] = {}  # student → a Moodle submission folder
    users: dict[str, str] = {}  # student → LMS number
    for path in sorted(folder.iterdir()):
        shown = printable(path.name)
        if path.is_symlink():
            problems.append(link_problem(path, folder))
            continue
        entry = lms.parse(path.name)
        if isinstance(entry, str):
            problems.append(f"{shown}: {entry}; not graded")
            continue
        if roster is not None and entry.user in roster.refused:
            problems.append(f"{shown}: {roster.refused[entry.user]}; not graded")
            continue
        if roster is not None and not entry.anonymous and entry.user not in roster.ids:
            problems.append(f"{shown}: {lms.NAME} number {entry.user} is not in the roster; not graded")
            continue
        student = student_id(roster, entry.user)
        if why := refusal(student):
            problems.append(f"{shown}: {printable(student)!r} refused as a student id ({why}); not graded")
            continue
        users[student] = entry.user
        if path.is_dir():
            if student in folders:
                problems.append(f"{shown}: a second folder of {printable(student)}; not graded")
            else:
                folders[student] = path
            continue
        if not path.is_file():
            continue
        if entry.uploaded and course.assignment_of(entry.uploaded):  # a notebook whose own name ends in -1
            entry = LmsFile(entry.user, entry.name, entry.uploaded, entry.order, entry.late, entry.uploaded,
                            entry.anonymous)
        key = (student, entry.file_id)
        if key in chosen:
            older, newer = sorted([chosen[key], (entry, path)], key=lambda pair: pair[0].order)
            problems.append(f"{printable(older[1].name)}: an earlier upload of {printable(entry.file_id)} by "
                            f"{printable(student)} ({printable(newer[1].name)} is newer); not graded")
            chosen[key] = newer
        else:
            chosen[key] = (entry, path)
    by_submission: dict[tuple[str, str], Submission] = {}
    for (student, file_id), (_, path) in sorted(chosen.items()):
        assignment = course.assignment_of(file_id)
        if assignment is None:
            problems.append(f"{printable(path.name)}: {printable(file_id)!r} is not a notebook of any assignment; "
                            "not graded")
            continue
        submission = by_submission.setdefault((student, assignment), Submission(student, assignment))
        submission.files[file_id] = path
    for student, path in sorted(folders.items()):
        files, refused = files_of(path, folder, sandbox, False, problems)
        assignments = {course.assignment_of(Path(name).name) for name in files if name.endswith(".ipynb")} - {None}
        if len(assignments) != 1:
            problems.append(f"{printable(path.name)}/: holds the notebooks of "
                            f"{'no assignment' if not assignments else 'several assignments'}; not graded")
            continue
        assignment = str(assignments.pop())
        submission = by_submission.setdefault((student, assignment), Submission(student, assignment))
        submission.files.update(files)
        submission.refused = submission.refused or refused
    for submission in by_submission.values():
        submission.files.pop(TIMESTAMP, None)  # the student's own: never theirs to set
        if submission.refused:
            submission.files = {}
            continue
        if refused := too_big(sum(p.lstat().st_size for p in submission.files.values()), len(submission.files),
                              sandbox):
            submission.refused, submission.files = refused, {}
        user = users.get(submission.student, "")
        if roster and user in roster.times:
            submission.timestamp = roster.times[user]
    return Found(sorted(by_submission.values(), key=lambda s: s.key), problems)
