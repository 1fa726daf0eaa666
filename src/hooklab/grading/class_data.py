"""What the class report says: the class's data read from the gradebook, the ledger and the autograded notebooks
(:func:`collect`), and the numbers shown, computed from it alone (:func:`aggregate`).

The numbers come from nbgrader's gradebook (the scores, as in the grades CSV), hooklab's ledger (why a submission
was held or not run) and the autograded notebooks (each failing test cell's error message: ``ename: evalue``, first
line only, and never one that quotes a hidden test).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Assignment, Grade, Gradebook, GradeCell, Notebook, SubmittedAssignment, SubmittedNotebook
from nbgrader.preprocessors import ClearHiddenTests

from hooklab.grading.course import Course
from hooklab.grading.keys import cell_key, split_cell_key, submission_key
from hooklab.grading.ledger import Ledger
from hooklab.grading.outputs import ANSI, NOT_WRITTEN, errors
from hooklab.grading.redaction import PROOF_PREFIX, REDACTED, hidden_lines

MESSAGE_LENGTH = 160  # characters of a failure message shown
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?!\w)", re.IGNORECASE)
_COUNTED = re.compile(r"# (item|key|cell)s?\b")  # "1 item" and "0 items" are one message


@dataclass
class SubmissionResult:
    """One submission's result as the gradebook and the ledger know it (the report's row; the submission found in
    the input is :class:`hooklab.grading.submissions.Submission`)."""

    student: str
    assignment: str
    score: float  # after the late penalty, as in the grades CSV
    max_score: float
    cells: dict[str, float]  # "notebook/grade_id" → points (before the late penalty)
    status: str = "graded"  # "graded", "held" (for review) or "not run"
    reasons: list[str] = field(default_factory=list)  # why it is held or was not run
    would_be: float = 0.0  # points once released, for a held one
    failures: dict[str, str] = field(default_factory=dict)  # "notebook/grade_id" → its message, where it failed

    @property
    def key(self) -> str:
        return submission_key(self.student, self.assignment)


@dataclass
class ClassData:
    """What the report is made of: test cells per assignment (in notebook order) and the submissions."""

    cells: dict[str, dict[str, float]]  # assignment → "notebook/grade_id" → its points
    submissions: list[SubmissionResult]


# -- what the report shows, computed from ClassData alone ----------------------------------------


@dataclass
class AssignmentStats:
    assignment: str
    max_score: float
    submissions: int
    graded: int
    held: int
    not_run: int
    mean: float | None  # over all submissions, as the grades CSV's score column (None: no submission)
    median: float | None
    lowest: float | None
    highest: float | None
    bins: list[tuple[float, float, int]]  # (from, to, submissions): one per distinct score, or equal bins


@dataclass
class CellStats:
    assignment: str
    cell: str  # "notebook/grade_id"
    points: float
    submissions: int
    full: int  # submissions with full points
    mean: float | None
    messages: list[tuple[str, int, int]]  # (message, submissions, variants), most common first

    @property
    def share(self) -> float | None:
        return self.full / self.submissions if self.submissions else None


@dataclass
class Tables:
    assignments: list[AssignmentStats]
    cells: list[CellStats]
    held: list[SubmissionResult]
    not_run: list[SubmissionResult]
    submissions: list[SubmissionResult]  # every one, by student then assignment


def pattern(message: str) -> str:
    """A message with its numbers replaced (a counted noun in the plural), so that failures differing only in values
    group together."""
    return _COUNTED.sub(r"# \1s", _NUMBER.sub("#", message))


def histogram(scores: list[float], max_score: float, most: int = 30) -> list[tuple[float, float, int]]:
    """(from, to, count): one bar per distinct score when there are at most ``most``, else 20 equal bins."""
    distinct = Counter(round(score, 6) for score in scores)
    if len(distinct) <= most:
        return [(score, score, count) for score, count in sorted(distinct.items())]
    top = max(max_score, max(scores))
    low = min(0.0, min(scores))
    width = (top - low) / 20
    counts = [0] * 20
    for score in scores:
        counts[min(19, int((score - low) / width))] += 1
    return [(low + i * width, low + (i + 1) * width, count) for i, count in enumerate(counts)]


def aggregate(data: ClassData) -> Tables:
    """The report's numbers: per assignment, per test cell, and the submissions to look at."""
    by_assignment: dict[str, list[SubmissionResult]] = defaultdict(list)
    for submission in data.submissions:
        by_assignment[submission.assignment].append(submission)
    assignments, cells = [], []
    for assignment in sorted(set(data.cells) | set(by_assignment)):
        subs = sorted(by_assignment.get(assignment, []), key=lambda s: s.student)
        points = data.cells.get(assignment, {})
        scores = sorted(s.score for s in subs)
        max_score = subs[0].max_score if subs else sum(points.values())
        count = Counter(s.status for s in subs)
        middle = len(scores) // 2
        assignments.append(AssignmentStats(
            assignment, max_score, len(subs), count["graded"], count["held"], count["not run"],
            mean=sum(scores) / len(scores) if scores else None,
            median=((scores[middle] if len(scores) % 2 else (scores[middle - 1] + scores[middle]) / 2)
                    if scores else None),
            lowest=scores[0] if scores else None, highest=scores[-1] if scores else None,
            bins=histogram(scores, max_score) if scores else [],
        ))
        for cell, cell_points in points.items():
            got = [s.cells[cell] for s in subs if cell in s.cells]
            groups: dict[str, Counter[str]] = defaultdict(Counter)
            for s in subs:
                if cell in s.failures:
                    groups[pattern(s.failures[cell])][s.failures[cell]] += 1
            messages = [
                (variants.most_common(1)[0][0] if len(variants) == 1 else key, sum(variants.values()), len(variants))
                for key, variants in groups.items()
            ]
            messages.sort(key=lambda m: (-m[1], m[0]))
            cells.append(CellStats(
                assignment, cell, cell_points, len(got), sum(score >= cell_points for score in got),
                sum(got) / len(got) if got else None, messages,
            ))
    ordered = sorted(data.submissions, key=lambda s: s.key)
    return Tables(assignments, cells, [s for s in ordered if s.status == "held"],
                  [s for s in ordered if s.status == "not run"], ordered)


# -- reading the gradebook, the ledger and the autograded notebooks --------------------------------


def collect(course: Course, ledger: Ledger) -> ClassData:
    """Every submission in the course gradebook, with its status from the ledger and the failure
    message of each test cell that lost points in its autograded notebooks."""
    delimiters = ClearHiddenTests(config=course.config())
    markers = {delimiters.begin_test_delimeter, delimiters.end_test_delimeter, PROOF_PREFIX}
    cells: dict[str, dict[str, float]] = {}
    submissions: list[SubmissionResult] = []
    autograded = course.step_dir("autograded")
    with Gradebook(course.db_url) as gradebook:
        hidden: dict[str, set[str]] = {}  # assignment → what no message may quote
        for assignment in sorted(gradebook.assignments, key=lambda a: a.name):
            hidden[assignment.name] = set(markers)
            cells[assignment.name] = {}
            for notebook in assignment.notebooks:
                grade_ids = {cell.name for cell in notebook.grade_cells}
                for cell in notebook.grade_cells:
                    cells[assignment.name][cell_key(notebook.name, cell.name)] = cell.max_score
                for source in notebook.source_cells:
                    if source.name in grade_ids:
                        hidden[assignment.name] |= hidden_lines(source.source, delimiters.begin_test_delimeter,
                                                                delimiters.end_test_delimeter)
            hidden[assignment.name].discard("")
        # two queries for the whole class (the ORM's lazy loading costs a query per submission and notebook)
        scores: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
        grades = (
            gradebook.db.query(SubmittedAssignment.student_id, Assignment.name, Notebook.name, GradeCell.name,
                               Grade.score)
            .select_from(Grade)
            .join(GradeCell, Grade.cell_id == GradeCell.id)
            .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
            .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
            .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
        )
        for student, assignment, notebook, grade_id, score in grades:
            scores[student, assignment][cell_key(notebook, grade_id)] = score
        totals = gradebook.db.query(
            SubmittedAssignment.student_id, Assignment.name, SubmittedAssignment.score,
            SubmittedAssignment.late_submission_penalty, SubmittedAssignment.max_score,
        ).join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
        rows = sorted(totals)
    for student, assignment, score, penalty, max_score in rows:
        entry = ledger.entries.get(submission_key(student, assignment))
        points = cells[assignment]
        submission = SubmissionResult(student, assignment, score - penalty, max_score, scores[student, assignment])
        submissions.append(submission)
        if entry is not None and not entry.ok:
            submission.status, submission.reasons = "not run", [entry.reason]
            continue
        lost = {cell for cell, got in submission.cells.items() if got < points.get(cell, 0.0)}
        if entry is not None and entry.is_held:  # a zero for being held is no failure of the test
            submission.status, submission.reasons = "held", list(entry.held)
            submission.would_be = sum(entry.would_be.values())
            lost = {cell for cell in lost if entry.would_be.get(cell, 0.0) < points[cell]}
        for notebook in sorted({split_cell_key(cell)[0] for cell in lost}):
            path = autograded / student / assignment / f"{notebook}.ipynb"
            found = failure_messages(path, hidden[assignment]) if path.is_file() else {}
            missing = "(no error recorded)" if path.is_file() else "(no autograded notebook: not submitted or not run)"
            for cell in lost:
                name, grade_id = split_cell_key(cell)
                if name == notebook:
                    submission.failures[cell] = found.get(grade_id, missing)
    return ClassData(cells, submissions)


def failure_messages(path: Path, hidden: set[str]) -> dict[str, str]:
    """grade_id → the first error of each test cell in an autograded notebook, as ``ename: evalue``
    (its first line, shortened), leaving out the HeldForReview error; a message that quotes a hidden
    test line, a delimiter or the proof-of-run name is redacted."""
    try:
        nb = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    found = {}
    for cell in nb.get("cells", []):
        grader = cell.get("metadata", {}).get("nbgrader", {})
        if not grader.get("grade") or "grade_id" not in grader:
            continue
        failures = errors(cell.get("outputs", []))
        if failures:
            found[grader["grade_id"]] = message(str(failures[0].get("ename", "")), str(failures[0].get("evalue", "")),
                                                hidden)
    return found


def message(ename: str, evalue: str, hidden: set[str]) -> str:
    """An error in one line (an exercise not written yet in its own words), shortened, redacted where it quotes a
    hidden test."""
    text = ANSI.sub("", evalue if ename == NOT_WRITTEN else f"{ename}: {evalue}" if evalue.strip() else ename)
    if any(line in text for line in hidden):
        return f"{ename}: {REDACTED}" if ename and not any(line in ename for line in hidden) else REDACTED
    first = text.strip().splitlines()[0] if text.strip() else "(an error without a message)"
    return first if len(first) <= MESSAGE_LENGTH else first[: MESSAGE_LENGTH - 1] + "…"
