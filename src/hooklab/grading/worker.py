"""Grading in a worker process: nbgrader's autograde and feedback on a private gradebook.

SQLite gradebooks do not take concurrent writers, so each worker grades against its own copy of
the course gradebook and hands back plain records; the parent process is the only writer of the
course gradebook (see :mod:`hooklab.grading.gradebook`).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from jupyter_client.provisioning import KernelProvisionerFactory
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

from hooklab.grading import kernels, sandbox
from hooklab.grading.course import Course
from hooklab.grading.repair import METADATA


@dataclass
class CellResult:
    notebook: str
    grade_id: str
    score: float
    message: str = ""  # the test's error, "" when it passed


@dataclass
class GradingResult:
    student: str
    assignment: str
    ok: bool  # nbgrader graded it; otherwise ``reason`` says why not
    reason: str = ""
    cells: list[CellResult] = field(default_factory=list)
    comments: dict[tuple[str, str], str | None] = field(default_factory=dict)  # (notebook, grade_id) → auto comment
    timestamp: object = None
    held: list[str] = field(default_factory=list)  # why the notebook is held for review (its scores are 0)
    would_be: dict[str, float] = field(default_factory=dict)  # "notebook/grade_id" → points if released
    notes: list[str] = field(default_factory=list)  # cells repaired, a kernel that stopped

    @property
    def score(self) -> float:
        return sum(cell.score for cell in self.cells)


_api: NbGraderAPI | None = None
_db_url = ""


def start(course: Course, gradebook_copy: Path, memory_bytes: int | None, log: Path) -> None:
    """Pool initializer: a private gradebook, the memory limit every kernel inherits, a log file
    that takes this process's and its kernels' stderr (kept away from the progress display), and
    kernels forked from a preloaded server where the system allows (:mod:`hooklab.grading.kernels`)."""
    global _api, _db_url
    sandbox.die_with_parent()  # a killed grader takes its workers, their kernel servers and kernels with it
    with open(log, "a") as handle:
        os.dup2(handle.fileno(), 2)
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    private = gradebook_copy.with_name(f"worker-{os.getpid()}.db")
    shutil.copyfile(gradebook_copy, private)
    _db_url = f"sqlite:///{private}"
    config = course.config(db_url=_db_url)
    _api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    _api.log_level = "WARN"
    if kernels.SUPPORTED:
        KernelProvisionerFactory.instance().default_provisioner_name = kernels.PROVISIONER


def grade(course: Course, student: str, assignment: str) -> GradingResult:
    """Autograde one submission and write its feedback; never raises for a bad submission."""
    assert _api is not None, "worker not started"
    outcome = _api.autograde(assignment, student, force=True, create=True)
    if not outcome["success"]:
        return GradingResult(student, assignment, ok=False, reason=failure_reason(outcome.get("log", "")))
    result = read_scores(course, student, assignment)
    _api.generate_feedback(assignment, student, force=True)
    return result


def read_scores(course: Course, student: str, assignment: str) -> GradingResult:
    """Scores and comments from the private gradebook, test messages from the graded notebooks."""
    result = GradingResult(student, assignment, ok=True)
    with Gradebook(_db_url) as gradebook:
        submission = gradebook.find_submission(assignment, student)
        result.timestamp = submission.timestamp
        for notebook in submission.notebooks:
            graded = nbformat.read(course.step_dir("autograded") / student / assignment / f"{notebook.name}.ipynb", as_version=4)
            messages = test_messages(graded)
            notes = graded.metadata.get(METADATA, {})
            result.held += [f"{notebook.name}: {why}" for why in notes.get("held", [])]
            result.would_be.update({f"{notebook.name}/{cell}": points for cell, points in notes.get("would_be", {}).items()})
            result.notes += [f"{notebook.name}: {note}" for note in [notes.get("stopped"), *notes.get("repairs", [])] if note]
            for grade in notebook.grades:
                result.cells.append(
                    CellResult(notebook.name, grade.name, grade.auto_score or 0.0, messages.get(grade.name, ""))
                )
            for comment in notebook.comments:
                result.comments[(notebook.name, comment.name)] = comment.auto_comment
    return result


def test_messages(nb: nbformat.NotebookNode) -> dict[str, str]:
    """grade_id → "ErrorName: message" for every test cell that raised."""
    messages = {}
    for cell in nb.cells:
        nbgrader = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and nbgrader.get("grade"):
            errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
            if errors:
                messages[nbgrader["grade_id"]] = f"{errors[0].ename}: {errors[0].evalue}".strip()
    return messages


_REASONS = [
    (re.compile(r"DeadKernelError|Kernel died", re.I), "the kernel died (os._exit, a crash or out of memory)"),
    (re.compile(r"NotJSONError|not valid JSON|Notebook does not appear to be JSON", re.I), "not a valid notebook file (JSON)"),
    (re.compile(r"ValidationError|NBFormatError|Notebook is invalid", re.I), "not a valid notebook (nbformat)"),
    (re.compile(r"missing grade cell|metadata|MissingEntry", re.I), "the notebook does not match the assignment"),
]


def failure_reason(log: str) -> str:
    """A one-line reason for a failed nbgrader autograde, from its log."""
    for pattern, reason in _REASONS:
        if pattern.search(log):
            return reason
    lines = [line for line in log.strip().splitlines() if line.strip()]
    return f"nbgrader could not grade it: {lines[-1][:200] if lines else 'no log'}"

