"""The parent's side of grading: the course gradebook (one writer) and the ledger of what was done."""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning

from hooklab.grading.worker import GradingResult


def ensure_assignments(gradebook_url: str, assignments: list[str], generate) -> list[str]:
    """Register missing assignments (nbgrader's generate_assignment); returns those it failed on."""
    with Gradebook(gradebook_url) as gradebook:
        known = {a.name for a in gradebook.assignments if a.notebooks}
    failed = []
    for assignment in assignments:
        if assignment not in known and not generate(assignment)["success"]:
            failed.append(assignment)
    return failed


def record(gradebook_url: str, result: GradingResult) -> None:
    """Write one submission's scores into the course gradebook, as nbgrader's SaveAutoGrades would.

    A submission nbgrader could not grade (``result.ok`` false) is recorded with zero for every
    autograded test, so it appears in the gradebook, the CSV and the totals.
    """
    with Gradebook(gradebook_url) as gradebook, warnings.catch_warnings():
        # nbgrader's own submission creation makes SQLAlchemy warn about its session; harmless.
        warnings.simplefilter("ignore", SAWarning)
        gradebook.update_or_create_student(result.student)
        submission = gradebook.update_or_create_submission(result.assignment, result.student)
        if result.timestamp is not None:
            submission.timestamp = result.timestamp
        scores = {(cell.notebook, cell.grade_id): cell.score for cell in result.cells}
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = scores.get((notebook.name, grade.name), 0.0)
                grade.needs_manual_grade = grade.manual_score is not None
            for comment in notebook.comments:
                comment.auto_comment = result.comments.get((notebook.name, comment.name))
        gradebook.db.commit()


def max_scores(gradebook_url: str, assignments: list[str]) -> dict[str, float]:
    """Assignment → the points its test cells are worth."""
    with Gradebook(gradebook_url) as gradebook:
        return {assignment: gradebook.find_assignment(assignment).max_score for assignment in assignments}


@dataclass
class Entry:
    """What the ledger remembers of one submission."""

    digest: str
    ok: bool
    reason: str
    score: float
    max_score: float


class Ledger:
    """``grading.json``: per submission, the fingerprint it was graded at and the outcome.

    Saved after every submission (write, then rename), so a run that is stopped resumes where it was.
    """

    def __init__(self, path: Path):
        self.path = path
        self.entries: dict[str, Entry] = {}
        if path.exists():
            self.entries = {key: Entry(**value) for key, value in json.loads(path.read_text()).items()}

    def is_current(self, key: str, digest: str) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry.digest == digest

    def set(self, key: str, entry: Entry) -> None:
        self.entries[key] = entry
        scratch = self.path.with_suffix(".tmp")
        scratch.write_text(json.dumps({k: asdict(v) for k, v in sorted(self.entries.items())}, indent=1))
        os.replace(scratch, self.path)
