"""The parent's side of nbgrader's gradebook: assignments registered, submissions graded, points per assignment,
manual scores set or cleared; and one SQLAlchemy engine per gradebook in each grading process."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
import nbgrader.api
import sqlalchemy
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry

from hooklab.grading.keys import split_cell_key, submission_key


def ensure_assignments(gradebook_url: str, sources: dict[str, list[Path]], generate, *,
                       force: bool = False) -> list[str]:
    """Register each assignment (nbgrader's generate_assignment) that is missing from the gradebook, or
    whose test cells there differ from its source notebooks (a hidden test was changed), or all with
    ``force``; returns those it failed on."""
    failed = []
    for assignment, notebooks in sources.items():
        if (force or not registered(gradebook_url, assignment, notebooks)) and not generate(assignment)["success"]:
            failed.append(assignment)
    return failed


def registered(gradebook_url: str, assignment: str, notebooks: list[Path]) -> bool:
    """Whether the gradebook holds these source notebooks' current test cells (code and points)."""
    with Gradebook(gradebook_url) as gradebook:
        try:
            for path in notebooks:
                for cell in nbformat.read(path, as_version=4).cells:
                    if utils.is_grade(cell):
                        grade_id, notebook = cell.metadata.nbgrader["grade_id"], path.stem
                        stored = gradebook.find_source_cell(grade_id, notebook, assignment)
                        points = gradebook.find_grade_cell(grade_id, notebook, assignment).max_score
                        if stored.source != cell.source or points != float(cell.metadata.nbgrader["points"]):
                            return False
        except MissingEntry:
            return False
    return True


def graded_keys(gradebook_url: str) -> set[str]:
    """'student/assignment' of every submission the gradebook holds."""
    with Gradebook(gradebook_url) as gradebook:
        return {submission_key(s.student_id, a.name) for a in gradebook.assignments for s in a.submissions}


def max_scores(gradebook_url: str, assignments: list[str]) -> dict[str, float]:
    """Assignment → the points its test cells are worth."""
    with Gradebook(gradebook_url) as gradebook:
        return {assignment: gradebook.find_assignment(assignment).max_score for assignment in assignments}


def set_manual_scores(gradebook_url: str, student: str, assignment: str, scores: dict[str, float | None]) -> None:
    """Manual scores of test cells ("notebook/grade_id" → points, None to clear) in nbgrader's gradebook."""
    with Gradebook(gradebook_url) as gradebook:
        for cell, points in scores.items():
            notebook, grade_id = split_cell_key(cell)
            grade = gradebook.find_grade(grade_id, notebook, assignment, student)
            grade.manual_score = points
            grade.needs_manual_grade = False
        gradebook.db.commit()


_engines: dict[tuple[Any, ...], sqlalchemy.Engine] = {}


def _engine(url: str, **options: Any) -> sqlalchemy.Engine:
    """This process's engine for a gradebook: made at the first :class:`Gradebook` that opens it, then used by the
    next ones (a forked process makes its own, as SQLAlchemy advises)."""
    key = (os.getpid(), str(url), *sorted(options.items()))
    if key not in _engines:
        _engines[key] = sqlalchemy.create_engine(url, **options)
    return _engines[key]


def scratch(path: Path) -> None:
    """Have this process's connections to the gradebook at ``path`` commit without waiting for the disk (SQLite's
    ``synchronous = OFF``, its rollback journal in memory): for a worker's private copy, which nothing reads after
    the worker (its scores are recorded in the course gradebook by the grading process), never for the course's."""
    target = os.path.realpath(path)

    def unsynced(connection: Any, record: Any) -> None:
        files = [row[2] for row in connection.execute("PRAGMA database_list") if row[1] == "main"]
        if files and os.path.realpath(files[0]) == target:
            connection.execute("PRAGMA synchronous = OFF")
            connection.execute("PRAGMA journal_mode = MEMORY")

    sqlalchemy.event.listen(sqlalchemy.pool.Pool, "connect", unsynced)


def share_engines() -> None:
    """Have nbgrader's :class:`Gradebook` share one SQLAlchemy engine per database in this process.

    nbgrader makes a new engine for every Gradebook it opens (``Gradebook.__init__``), about ten for each graded
    submission (the autograde's, the recorders', the feedback's), so every query is compiled again (SQLAlchemy
    keeps compiled statements per engine) and the tables are looked up on a new dialect each time. Shared, the
    engine keeps its compiled statements; each Gradebook still has its own session and connections, and its
    ``close`` still disposes of the engine's pooled connections: the same statements, transactions and commits."""
    nbgrader.api.create_engine = _engine
