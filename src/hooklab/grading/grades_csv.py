"""The grades CSV: nbgrader's export with one column per test cell and the reason a submission was not graded."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

from nbgrader.api import Gradebook
from nbgrader.plugins import ExportPlugin
from traitlets import Dict

from hooklab.grading.keys import cell_key, submission_key
from hooklab.grading.ledger import Ledger
from hooklab.grading.untrusted import spreadsheet_cell

if TYPE_CHECKING:  # the plugin alone (nbgrader export) needs nothing of the course
    from hooklab.grading.course import Course

GRADES_CSV = "grades.csv"


def write_grades_csv(course: Course, ledger: Ledger) -> Path:
    """Write the course's grades CSV from its gradebook, with the ledger's reason for each submission that was not
    graded, held or noted; returns its path."""
    path = course.work_dir / GRADES_CSV
    with Gradebook(course.db_url) as gradebook:
        CellScoresExportPlugin(to=str(path), reasons=reasons(ledger)).export(gradebook)
    return path


def reasons(ledger: Ledger) -> dict[str, str]:
    """The reason column of each submission: its ledger entry's explanation; for one that has none, because the last
    run did not finish it (a grading process that failed, feedback nbgrader could not write: its score may already be
    in the gradebook), what that run's problems say of it."""
    found = {key: entry.explanation() for key, entry in ledger.entries.items()}
    for problem in ledger.last_run.problems:
        key, said, why = problem.partition(": ")
        if said and "/" in key and key not in found:
            found[key] = why
    return found


class CellScoresExportPlugin(ExportPlugin):
    """nbgrader export plugin: one row per submission, one column per test cell. ``score`` is after
    the late penalty, which has its own column; the cells show the points before it.

    Also usable on its own: ``nbgrader export --exporter=hooklab.grading.grades_csv.CellScoresExportPlugin``.
    """

    reasons = Dict(help="'student/assignment' → why it could not be graded").tag(config=True)

    def export(self, gradebook: Gradebook) -> None:
        columns, rows = [], []
        for assignment in sorted(gradebook.assignments, key=lambda a: a.name):
            cells = [cell_key(nb.name, cell.name) for nb in assignment.notebooks for cell in nb.grade_cells]
            columns += [c for c in cells if c not in columns]
            for submission in sorted(assignment.submissions, key=lambda s: s.student_id):
                row = {
                    "student": submission.student_id,
                    "assignment": assignment.name,
                    "score": submission.score - submission.late_submission_penalty,  # as nbgrader's CSV export
                    "late_penalty": submission.late_submission_penalty,
                    "max_score": submission.max_score,
                    "reason": self.reasons.get(submission_key(submission.student_id, assignment.name), ""),
                }
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        row[cell_key(notebook.name, grade.name)] = grade.score
                rows.append(row)
        with open(self.to or "grades.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle,
                                    ["student", "assignment", "score", "late_penalty", "max_score", "reason", *columns])
            writer.writeheader()
            writer.writerows({column: spreadsheet_cell(value) for column, value in row.items()} for row in rows)
