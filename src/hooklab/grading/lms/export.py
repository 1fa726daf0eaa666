"""The class's scores written into the LMS's own export: Canvas's gradebook CSV, Moodle's grading worksheet.

Only the assignment's cells of the students graded change; every other column and row stays as the LMS wrote it,
but for text a spreadsheet would run as a formula, quoted as in every CSV the grader writes
(:func:`hooklab.grading.untrusted.spreadsheet_cell`: a student's name is theirs to choose). A student is found by
the id the roster gives (:func:`.canvas.roster_id`, :func:`.moodle.roster_id`) or the LMS's own number, as
``hooklab autograde --lms`` named them. The score written is the one *before* nbgrader's late penalty: the LMS
applies its own late policy (it knows how late each submission was; the zip does not say), so no penalty is taken
twice. ``late_penalty=True`` writes the score after it instead; then the LMS's late policy must be off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from hooklab.grading.course import Course
from hooklab.grading.keys import submission_key
from hooklab.grading.ledger import Ledger
from hooklab.grading.lms import canvas, moodle
from hooklab.grading.lms.entries import numbered
from hooklab.grading.lms.table import Table, read_table, write_table
from hooklab.grading.untrusted import printable, spreadsheet_cell


@dataclass(frozen=True)
class Score:
    points: float
    max_points: float


@dataclass
class Filled:
    """What :func:`fill` did, for the command to say."""

    written: list[str] = field(default_factory=list)  # student ids whose cell was filled
    held: list[str] = field(default_factory=list)  # held for review: their cell left as it was
    not_in_file: list[str] = field(default_factory=list)  # graded, but in no row of the LMS's file
    quoted: int = 0  # cells a spreadsheet would have run, quoted
    problems: list[str] = field(default_factory=list)  # why nothing was written, or a row that could not be


def class_scores(course: Course, ledger: Ledger, assignment: str, late_penalty: bool = False) -> tuple[
        dict[str, Score], set[str]]:
    """Student id → score of ``assignment`` in the gradebook (before its late penalty unless ``late_penalty``),
    and the students whose submission is held for review."""
    scores = {}
    with Gradebook(course.db_url) as gradebook:
        try:
            submissions = gradebook.find_assignment(assignment).submissions
        except MissingEntry:
            return {}, set()
        for submission in submissions:
            penalty = submission.late_submission_penalty if late_penalty else 0.0
            scores[submission.student_id] = Score(submission.score - penalty, submission.max_score)
    held = {student for student in scores if (entry := ledger.entries.get(submission_key(student, assignment)))
            and entry.is_held}
    return scores, held


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _shown(value: float) -> str:
    return f"{round(value, 2):g}"


def canvas_column(table: Table, wanted: str) -> int | str:
    """The index of the assignment column headed ``<Name> (<id>)`` whose whole header, name or id is ``wanted``,
    or why there is none."""
    found = [index for index, header in enumerate(table.header)
             if wanted.strip() in (header.strip(), header.strip().rpartition(" (")[0],
                                   header.strip().rpartition(" (")[2].removesuffix(")"))]
    if len(found) != 1:
        return (f"{'no' if not found else 'more than one'} column of the Canvas gradebook is headed "
                f"{printable(wanted)!r} (as \"<Name> (<id>)\", or its name or id)")
    return found[0]


def fill(table: Table, platform: str, scores: dict[str, Score], held: set[str], column: str = "") -> Filled:
    """Write ``scores`` into ``table`` (Canvas's export: into ``column``; Moodle's worksheet: its Grade), scaled to
    the LMS's maximum where it gives one (Canvas's Points Possible row, Moodle's Maximum Grade)."""
    filled = Filled()
    if platform == "canvas":
        target = canvas_column(table, column)
        if isinstance(target, str):
            filled.problems.append(target)
            return filled
        points_row = next((index for index, record in enumerate(table.records(), 1)
                           if canvas.is_points_possible(record)), None)
        possible = _number(table.rows[points_row][target]) if points_row is not None else None
        ids = [(canvas.roster_id(record), record.get(canvas.ID, "").strip()) for record in table.records()]
        skip = {points_row}
        maximum_of = {index: possible for index in range(1, len(table.rows))}
    else:
        target = table.column(moodle.GRADE)
        if target is None or table.column(moodle.IDENTIFIER) is None:
            filled.problems.append(f"no {moodle.IDENTIFIER} or {moodle.GRADE} column: not a Moodle grading worksheet")
            return filled
        records = table.records()
        ids = [(moodle.roster_id(record), numbered(record.get(moodle.IDENTIFIER, ""))) for record in records]
        skip = {index for index, record in enumerate(records, 1)
                if record.get("Grade can be changed", "").strip().lower() == "no"}
        maximum_of = {index: _number(record.get(moodle.MAXIMUM, "")) for index, record in enumerate(records, 1)}
    for index, names in enumerate(ids, 1):
        student = next((name for name in names if name in scores), None)
        if index in skip or student is None:
            continue
        if student in held:
            filled.held.append(student)
            continue
        row = table.rows[index]
        row.extend([""] * (target + 1 - len(row)))
        score, maximum = scores[student], maximum_of.get(index)
        points = score.points / score.max_points * maximum if maximum and score.max_points else score.points
        row[target] = _shown(points)
        filled.written.append(student)
    for row in table.rows:
        for position, cell in enumerate(row):
            safe = spreadsheet_cell(cell) if cell != "-" else cell  # Moodle's "none", not a formula
            if safe != cell:
                row[position] = str(safe)
                filled.quoted += 1
    return filled


def export(course: Course, ledger: Ledger, platform: str, lms_file: Path, to: Path, assignment: str,
           column: str = "", late_penalty: bool = False) -> Filled:
    """Fill the LMS's export ``lms_file`` with ``assignment``'s scores and write it to ``to``."""
    table = read_table(lms_file)
    scores, held = class_scores(course, ledger, assignment, late_penalty)
    if not scores:
        return Filled(problems=[f"no submission of {printable(assignment)} in the gradebook"])
    filled = fill(table, platform, scores, held, column)
    if not filled.problems:
        filled.not_in_file = sorted(set(scores) - set(filled.written) - set(filled.held))
        write_table(table, to)
    return filled
