"""Notebooks held for review: the instructor's listing, and releasing them after a look.

A held notebook scores 0 in the gradebook. Releasing it writes the scores its tests earned as
manual scores, through nbgrader's gradebook (the same override the formgrader's manual grading
uses), so they win over the autograded 0 wherever nbgrader computes a total.
"""

from __future__ import annotations

from nbgrader.api import Gradebook

from hooklab.grading.keys import split_cell_key, split_submission_key
from hooklab.grading.ledger import Entry, Ledger
from hooklab.grading.untrusted import printable


def listing(ledger: Ledger) -> str:
    """Every held or released notebook, with the reasons and the scores it would get (a submission's name
    and reasons are a student's words: made printable)."""
    lines = []
    for key, entry in sorted(ledger.entries.items()):
        if not entry.held:
            continue
        state = "released" if entry.released else "held"
        lines.append(f"{printable(key)}: {state}, would score {sum(entry.would_be.values()):g} / {entry.max_score:g}")
        lines += [f"    {printable(why)}" for why in entry.held]
    return "\n".join(lines) or "No notebook is held for review."


def release(gradebook_url: str, ledger: Ledger, key: str) -> Entry:
    """Give a held submission the scores its tests earned, as manual scores; returns its entry."""
    entry = ledger.entries.get(key)
    if entry is None or not entry.held:
        raise KeyError(f"{key} is not held for review (see hooklab review)")
    student, assignment = split_submission_key(key)
    set_manual_scores(gradebook_url, student, assignment, entry.would_be)
    entry.released = True
    ledger.set(key, entry)
    return entry


def set_manual_scores(gradebook_url: str, student: str, assignment: str, scores: dict[str, float | None]) -> None:
    """Manual scores of test cells ("notebook/grade_id" → points, None to clear) in nbgrader's gradebook."""
    with Gradebook(gradebook_url) as gradebook:
        for cell, points in scores.items():
            notebook, grade_id = split_cell_key(cell)
            grade = gradebook.find_grade(grade_id, notebook, assignment, student)
            grade.manual_score = points
            grade.needs_manual_grade = False
        gradebook.db.commit()
