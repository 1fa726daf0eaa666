"""The summary printed at the end of a run: how many were graded, each submission's score, what was held or not
run and why, and each test cell's pass rate."""

from __future__ import annotations

from collections import defaultdict

from nbgrader.api import Gradebook

from hooklab.grading.keys import cell_key, submission_key
from hooklab.grading.ledger import Entry
from hooklab.grading.untrusted import printable


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
