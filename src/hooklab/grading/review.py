"""Notebooks held for review: the instructor's listing, and releasing them after a look.

A held notebook scores 0 in the gradebook. Releasing it writes the scores its tests earned as
manual scores, through nbgrader's gradebook (the same override the formgrader's manual grading
uses), so they win over the autograded 0 wherever nbgrader computes a total.
"""

from __future__ import annotations

from hooklab.grading import class_report
from hooklab.grading.course import Course
from hooklab.grading.gradebook import set_manual_scores
from hooklab.grading.grades_csv import write_grades_csv
from hooklab.grading.keys import split_submission_key
from hooklab.grading.ledger import LEDGER, Entry, Ledger
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


def review(course: Course, keys: list[str]) -> tuple[str, str]:
    """Release the held submissions ``keys``, in order, until one is not held; then save the ledger and write
    grades.csv and the class report again (with the last run's timing and problems). Returns what to show (a line
    per release, then the listing) and why a key could not be released, or "" (the releases before it stand)."""
    ledger = Ledger(course.work_dir / LEDGER)
    lines = []
    for key in keys:
        try:
            entry = release_held(course.db_url, ledger, key)
        except KeyError as missing:
            error = printable(missing.args[0])
            break
        lines.append(f"{printable(key)}: released with {sum(entry.would_be.values()):g} / {entry.max_score:g}")
    else:
        error = ""
    if lines:
        ledger.save()
        write_grades_csv(course, ledger)
        class_report.write(course, ledger)
    return "\n".join(lines if error else [*lines, listing(ledger)]), error


def release_held(gradebook_url: str, ledger: Ledger, key: str) -> Entry:
    """Give a held submission the scores its tests earned, as manual scores; returns its entry."""
    entry = ledger.entries.get(key)
    if entry is None or not entry.held:
        raise KeyError(f"{key} is not held for review (see hooklab review)")
    student, assignment = split_submission_key(key)
    set_manual_scores(gradebook_url, student, assignment, entry.would_be)
    entry.released = True
    ledger.set(key, entry)
    return entry
