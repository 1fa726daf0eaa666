"""What a run grades: the input read, each submission copied into the course and registered, and the ones that
need grading (new, changed, or graded by another grader) made into tasks, with a reason where one cannot be run."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from nbgrader.apps import NbGraderAPI

import hooklab
from hooklab.grading.course import Course, grade_ids
from hooklab.grading.gradebook import ensure_assignments, graded_keys, max_scores
from hooklab.grading.kernels.sandbox import Sandbox, amount
from hooklab.grading.keys import submission_key
from hooklab.grading.ledger import Ledger
from hooklab.grading.lms import find_lms_submissions
from hooklab.grading.submissions import find_submissions, opened_input, place_submission

if TYPE_CHECKING:
    from hooklab.grading.lms import Lms


@dataclass
class Task:
    """One submission to grade."""

    student: str
    assignment: str
    fingerprint: str  # the submission's files and the grader's side
    files: str  # the submission's files alone
    reason: str = ""  # why it cannot be run at all, found before running it

    @property
    def key(self) -> str:
        return submission_key(self.student, self.assignment)


@dataclass
class Plan:
    """What a run grades: the submissions to grade, and what it found on the way."""

    todo: list[Task]  # to grade (those with a reason are recorded without running)
    seen: set[str]  # every submission key of the input (the summary's and the CSV's)
    skipped: int  # graded already, unchanged
    problems: list[str]  # what the summary reports: unreadable input, assignments nbgrader could not register
    sources: dict[str, list[Path]]  # assignment → its source notebooks
    points: dict[str, float]  # assignment → its points


def make_plan(submissions: Path, course: Course, ledger: Ledger, *, force: bool, filename_regex: str,
              timestamps: bool, lms: Lms | None = None) -> Plan:
    """Read the input, copy each submission into the course, register the assignments, and say which
    submissions need grading: new, changed, or graded by another grader (:func:`grading_fingerprint`)."""
    config = course.config()
    api, sandbox = NbGraderAPI(config=config), Sandbox(config=config)
    with opened_input(submissions, sandbox) as (folder, problems):
        found = (find_lms_submissions(folder, course, sandbox, *lms) if lms is not None
                 else find_submissions(folder, course, sandbox, filename_regex, timestamps))
        problems += found.problems
        assignments = sorted({s.assignment for s in found.submissions})
        sources = {a: sorted((course.root / course.coursedir.source_directory / a).glob("*.ipynb"))
                   for a in assignments}
        broken = ensure_assignments(course.db_url, sources, api.generate_assignment, force=force)
        problems += [f"{a}: nbgrader could not register the assignment; its submissions were not graded"
                     for a in broken]
        graders = {a: grading_fingerprint(course, a) for a in assignments}
        in_gradebook = graded_keys(course.db_url)
        todo, seen, skipped = [], set(), 0
        for submission in found.submissions:
            if submission.assignment in broken:
                continue
            seen.add(submission.key)
            if submission.refused:  # its files are not copied: what was placed before stays as it was
                files, reason = hashlib.sha256(submission.refused.encode()).hexdigest(), submission.refused
            else:
                target, files = place_submission(submission, course)
                notebooks = course.notebooks[submission.assignment]
                reason = (unreadable(target, notebooks, sandbox)
                          or of_another_assignment(target, submission.assignment, course))
            fingerprint = hashlib.sha256(f"{files}:{graders[submission.assignment]}".encode()).hexdigest()
            if not force and submission.key in in_gradebook and ledger.is_current(submission.key, fingerprint):
                skipped += 1
            else:
                todo.append(Task(submission.student, submission.assignment, fingerprint, files, reason))
    points = max_scores(course.db_url, sorted({task.assignment for task in todo}))
    return Plan(todo, seen, skipped, problems, sources, points)


def unreadable(folder: Path, notebooks: list[str], sandbox: Sandbox) -> str:
    """Why a submission folder cannot be autograded at all, or "" if it can. A notebook's size is checked
    before it is read and the text of its cells before it runs, so the grader spends no time on a huge one."""
    present = [name for name in notebooks if (folder / name).is_file()]
    if not present:
        return f"no notebook submitted (expected {', '.join(notebooks)})"
    for name in present:
        info = os.lstat(folder / name)
        if not stat.S_ISREG(info.st_mode):
            return f"{name} is a link, not a notebook file"
        if sandbox.notebook_size and info.st_size > sandbox.notebook_size:
            return (f"{name} is {amount(info.st_size)}, more than the {amount(sandbox.notebook_size)} a notebook may "
                    "be (c.Sandbox.notebook_size)")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # nbformat's warnings about a notebook's age, not its validity
                nb = nbformat.read(folder / name, as_version=4)
                nbformat.validate(nb)
        except Exception as error:  # nbformat raises several unrelated types for a broken file
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            return f"{name} is not a valid notebook ({first_line[:120]})"
        text = sum(len(cell.source.encode()) for cell in nb.cells)
        if sandbox.source_size and text > sandbox.source_size:
            return (f"{name} has {amount(text)} of text in its cells, more than the {amount(sandbox.source_size)} a "
                    "notebook may hold (c.Sandbox.source_size)")
    return ""


def of_another_assignment(folder: Path, assignment: str, course: Course) -> str:
    """Why the readable notebooks of a submission are not ``assignment``'s, if they hold only another
    assignment's exercises (a notebook saved under the wrong name), or ""."""
    for name in course.notebooks[assignment]:
        ids = grade_ids(nbformat.read(folder / name, as_version=4).cells) if (folder / name).is_file() else set()
        if not ids or ids & course.cell_ids[assignment]:
            continue
        overlap, other = max((len(ids & theirs), owner) for owner, theirs in course.cell_ids.items())
        if overlap:
            return (f"{name} holds the exercises of {other} ({', '.join(course.notebooks[other])}), not those of "
                    f"{assignment}: hand in {assignment}'s own notebook")
    return ""


def code_of(notebook: Path) -> str:
    """The code of a notebook's code cells."""
    return "\n".join(cell.source for cell in nbformat.read(notebook, as_version=4).cells if cell.cell_type == "code")


def grading_fingerprint(course: Course, assignment: str) -> str:
    """What the grader brings to a result: the assignment's source (hidden tests included), hooklab's
    checkers (what they read and observe, how they draw hidden inputs) and grading code, and the course
    configuration with this run's options."""
    package, source = Path(hooklab.__file__).parent, course.root / course.coursedir.source_directory / assignment
    paths = [
        *sorted(p for p in source.rglob("*") if p.is_file()),
        *(package / name for name in ("checks.py", "observations.py", "seeding.py", "exercises.py")),
        *sorted((package / "grading").rglob("*.py")),
        *sorted((package / "templates").glob("*")),
    ]
    sha = hashlib.sha256()
    for path in paths:  # named by where it is in the source or the package, wherever those are
        name = path.relative_to(source if path.is_relative_to(source) else package).as_posix()
        sha.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    sha.update(json.dumps(course.config(), sort_keys=True, default=str).encode())
    return sha.hexdigest()
