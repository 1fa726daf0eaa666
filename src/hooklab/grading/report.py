"""What grading produces for the instructor: the grades CSV and the end-of-run summary."""

from __future__ import annotations

import csv
from collections import defaultdict
from html import escape
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import ExportPlugin
from traitlets import Dict

from hooklab.grading.gradebook import Entry
from hooklab.grading.keys import cell_key, submission_key
from hooklab.grading.untrusted import printable, spreadsheet_cell


class CellScoresExportPlugin(ExportPlugin):
    """nbgrader export plugin: one row per submission, one column per test cell. ``score`` is after
    the late penalty, which has its own column; the cells show the points before it.

    Also usable on its own: ``nbgrader export --exporter=hooklab.grading.report.CellScoresExportPlugin``.
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


def pass_rates(gradebook: Gradebook, keys: set[str]) -> dict[str, tuple[float, int]]:
    """"assignment/notebook/grade_id" → (share of the submissions in ``keys`` with full points, how many)."""
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for assignment in gradebook.assignments:
        for submission in assignment.submissions:
            if submission_key(submission.student_id, assignment.name) not in keys:
                continue
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    cell = f"{assignment.name}/{cell_key(notebook.name, grade.name)}"
                    outcomes[cell].append(grade.score >= grade.max_score)
    return {cell: (sum(passed) / len(passed), len(passed)) for cell, passed in outcomes.items()}


def standing(entry: Entry) -> str:
    """A submission's mark beside its score: ✓ for full marks only, else why it has fewer points, if not its answers."""
    if not entry.ok:
        return "  not run"
    if entry.is_held:
        return f"  held for review (would score {sum(entry.would_be.values()):g})"
    return "  ✓" if entry.score >= entry.max_score else ""


def summary(
    entries: dict[str, Entry], rates: dict[str, tuple[float, int]], skipped: int, problems: list[str],
            reruns: dict[str, int] | None = None
) -> str:
    """The report printed at the end of a run; ``reruns``: submissions run again after their worker died."""
    failed = {key: entry.reason for key, entry in sorted(entries.items()) if not entry.ok}
    held = {key: entry for key, entry in sorted(entries.items()) if entry.ok and entry.is_held}
    noted = {key: entry.notes for key, entry in sorted(entries.items()) if entry.ok and entry.notes}
    head = f"Graded {len(entries) - len(failed)} of {len(entries)} submissions; {len(failed)} could not be run"
    head += f"; {len(held)} held for review" if held else ""
    lines = [head + (f" ({skipped} unchanged since the last run, not regraded)." if skipped else ".")]
    # below, every name and reason may be a student's (a folder, a file, an exception): each is made printable
    if entries:
        lines.append("Scores:")
        width = max(len(printable(key)) for key in entries)
        lines += [f"  {printable(key):<{width}}  {entry.score:5g} / {entry.max_score:g}{standing(entry)}"
                  for key, entry in sorted(entries.items())]
    if failed:
        lines.append("Could not be run (scored 0):")
        lines += [f"  {printable(key)}: {printable(reason)}" for key, reason in failed.items()]
    if held:
        lines.append("Held for review (scored 0 until released: hooklab review --release STUDENT/ASSIGNMENT):")
        for key, entry in held.items():
            more = (f" (and {len(entry.held) - 1} more: the reason column of the grades CSV)" if len(entry.held) > 1
                    else "")
            lines.append(f"  {printable(key)} (would score {sum(entry.would_be.values()):g} / {entry.max_score:g}): "
                         f"{printable(entry.held[0])}{more}")
    if noted:
        lines.append("Graded with notes (cells after a stopped kernel score 0; repaired cells; output cut at a limit):")
        lines += [f"  {printable(key)}: {'; '.join(map(printable, notes))}" for key, notes in noted.items()]
    if reruns:
        lines.append("Run again on another worker after theirs died (the result is the last run's):")
        lines += [f"  {printable(key)}: {'once' if times == 1 else f'{times} times'}"
                  for key, times in sorted(reruns.items())]
    if problems:
        lines.append("Input that was not graded:")
        lines += [f"  {printable(problem)}" for problem in problems]
    if rates:
        lines.append("Test cells, hardest first (share of submissions with full points):")
        width = max(map(len, rates))
        for cell, (rate, count) in sorted(rates.items(), key=lambda item: (item[1][0], item[0])):
            lines.append(f"  {cell:<{width}}  {rate:4.0%} of {count}")
    return "\n".join(lines)


def write_failure_feedback(folder: Path, notebooks: list[str], reason: str, max_score: float) -> None:
    """Feedback for a submission that could not be run: the reason, and the score 0."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in notebooks:
        page = (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(name)}</title></head><body>"
            f"<h1>{escape(name)}: not graded</h1><p>Your submission could not be run: {escape(reason)}.</p>"
            f"<p>Score: 0 / {max_score:g}</p></body></html>\n"
        )
        (folder / name).with_suffix(".html").write_text(page)
