"""The instructor's report of a graded class: one HTML page and the same numbers as CSV.

What the class scored per assignment (a histogram), each test cell's pass rate, the messages its
failures showed most often (what the class misunderstood), the submissions held for review or not
run with their reasons, and where the run's time went: the numbers of :mod:`hooklab.grading.class_data`.
The page needs no server: figures are inline PNGs.
"""

from __future__ import annotations

import base64
import csv
import io
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from urllib.parse import quote

from matplotlib.figure import Figure
from nbgrader.preprocessors import ClearHiddenTests

from hooklab.grading.class_data import AssignmentStats, CellStats, SubmissionResult, Tables, aggregate, collect
from hooklab.grading.course import Course
from hooklab.grading.keys import split_cell_key
from hooklab.grading.ledger import Ledger
from hooklab.grading.similarity import BANDS, PAIRS_SHOWN, Exercise, bands, class_similarity
from hooklab.grading.untrusted import spreadsheet_cell

REPORT = "report.html"
CSV_FILES = (
    "report-assignments.csv", "report-scores.csv", "report-cells.csv", "report-failures.csv", "report-review.csv",
    "report-timing.csv",
    "report-problems.csv",
)
SIMILARITY_CSV = "report-similarity.csv"  # the flagged pairs of similar answers (hooklab.grading.similarity)
MESSAGES_SHOWN = 5  # most common messages per test cell on the page (the CSV has all)
REASONS_SHOWN = 5  # reasons a submission is held, on the page (the CSV has all)
FIGURE_WIDTH = 800  # pixels a figure takes on the page
FIGURE_INCHES = 10.0  # its width as drawn, at twice the pixels it takes: crisp on a high-density screen
FIGURE_DPI = 2 * FIGURE_WIDTH / FIGURE_INCHES


def write(course: Course, ledger: Ledger, folder: Path | None = None) -> Path:
    """Write ``report.html`` and its CSV files into ``folder`` (the course's work dir); returns the page. The
    timing and the problems shown are the ledger's last run's (:class:`hooklab.grading.ledger.LastRun`)."""
    timing, problems = ledger.last_run.timing, ledger.last_run.problems
    folder = folder or course.work_dir
    folder.mkdir(parents=True, exist_ok=True)
    tables = aggregate(collect(course, ledger))
    write_csv(tables, timing, folder, problems)
    delimiters = ClearHiddenTests(config=course.config())
    similar = class_similarity(course.root / course.coursedir.source_directory, course.step_dir("submitted"),
                               [(s.student, s.assignment) for s in tables.submissions if s.status != "not run"],
                               (delimiters.begin_test_delimeter, delimiters.end_test_delimeter))
    write_similarity_csv(similar, folder)
    page = folder / REPORT
    links = feedback_links(tables.submissions, course.step_dir("feedback"), folder)
    page.write_text(render(tables, timing, list(problems), links, similar))
    return page


def feedback_links(submissions: Sequence[SubmissionResult], feedback: Path,
                   folder: Path) -> dict[str, list[tuple[str, str]]]:
    """Each submission's feedback pages, (name, path relative to ``folder``): its graded notebooks' own pages only
    (nbgrader copies a submission's other files, an .html of the student's too, into its feedback folder)."""
    links = {}
    for s in submissions:
        pages = sorted(feedback / s.student / s.assignment / f"{notebook}.html"
                       for notebook in {cell.split("/")[0] for cell in s.cells})
        links[s.key] = [(page.stem, os.path.relpath(page, folder)) for page in pages
                        if page.is_file() and not page.is_symlink()]
    return links


def write_similarity_csv(similar: Sequence[Exercise], folder: Path) -> None:
    """The flagged pairs of similar answers, highest score first within each exercise, as the report shows them."""
    with open(folder / SIMILARITY_CSV, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["assignment", "exercise", "first", "second", "score", "threshold"])
        writer.writerows([spreadsheet_cell(value) for value in
                          (e.assignment, e.grade_id, p.first, p.second, f"{p.score:.3f}", f"{p.threshold:.3f}")]
                         for e in similar for p in e.flagged)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def write_csv(tables: Tables, timing: dict[str, float] | None, folder: Path, problems: Sequence[str] = ()) -> None:
    """The report's tables as CSV files; every cell as :func:`~hooklab.grading.untrusted.spreadsheet_cell` writes it
    (student ids, reasons, messages and file names are a student's words)."""
    rows = {
        "report-assignments.csv": (
            ["assignment", "max_score", "submissions", "graded", "held", "not_run", "mean", "median", "lowest",
             "highest"],
            [[a.assignment, _number(a.max_score), a.submissions, a.graded, a.held, a.not_run,
              *map(_number, (a.mean, a.median, a.lowest, a.highest))]
             for a in tables.assignments],
        ),
        "report-scores.csv": (
            ["assignment", "from", "to", "submissions"],
            [[a.assignment, _number(low), _number(high), count] for a in tables.assignments
             for low, high, count in a.bins],
        ),
        "report-cells.csv": (
            ["assignment", "notebook", "cell", "points", "submissions", "full_points", "full_points_share",
             "mean_points"],
            [[c.assignment, *split_cell_key(c.cell), _number(c.points), c.submissions, c.full, _number(c.share),
              _number(c.mean)]
             for c in tables.cells],
        ),
        "report-failures.csv": (
            ["assignment", "notebook", "cell", "message", "submissions", "variants"],
            [[c.assignment, *split_cell_key(c.cell), text, count, variants] for c in tables.cells
             for text, count, variants in c.messages],
        ),
        "report-review.csv": (
            ["student", "assignment", "status", "score", "would_score", "max_score", "reasons"],
            [[s.student, s.assignment, s.status, _number(s.score), _number(s.would_be) if s.status == "held" else "",
              _number(s.max_score), "; ".join(s.reasons)]
             for s in [*tables.held, *tables.not_run]],
        ),
        "report-timing.csv": (["quantity", "value"],
                              [[name, _number(value)] for name, value in (timing or {}).items()]),
        "report-problems.csv": (["problem"], [[problem] for problem in problems]),
    }
    for name, (header, body) in rows.items():
        with open(folder / name, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows([spreadsheet_cell(value) for value in row] for row in body)


def _figure(stats: AssignmentStats, cells: list[CellStats]) -> str:
    """An assignment's score histogram and its test cells' pass rates, as an inline PNG (drawn by
    matplotlib's Agg backend, which a figure made without pyplot saves with)."""
    width, height = FIGURE_INCHES, max(2.6, 0.3 * len(cells) + 1.1)
    figure = Figure(figsize=(width, height), dpi=FIGURE_DPI)
    # laid out by hand (matplotlib's constrained layout would take a third of the time): room for the
    # cell names left of the bars, about 0.6 of the 8-point font size per character
    names = [split_cell_key(c.cell)[1] for c in cells][::-1]
    label = (max(map(len, names), default=0) * 0.6 * 8 / 72 + 0.15) / width
    bottom, top = 0.55 / height, 1 - 0.35 / height
    left = figure.add_axes((0.07, bottom, 0.33, top - bottom))
    right = figure.add_axes((0.44 + label, bottom, 0.54 - label, top - bottom))
    if all(low == high for low, high, _ in stats.bins):
        width = max(stats.max_score, 1) / 30
        left.bar([low for low, _, _ in stats.bins], [n for _, _, n in stats.bins], width=width, color="#4c72b0")
    else:
        left.bar([low for low, _, _ in stats.bins], [n for _, _, n in stats.bins],
                 width=[high - low for low, high, _ in stats.bins],
                 align="edge", color="#4c72b0", edgecolor="white")
    left.set_xlim(-max(stats.max_score, 1) / 20, max(stats.max_score, 1) * 1.05)
    left.set_xlabel(f"score (of {stats.max_score:g})")
    left.set_ylabel("submissions")
    left.yaxis.get_major_locator().set_params(integer=True)
    left.set_title("Score distribution")
    shares = [100 * (c.share or 0.0) for c in cells][::-1]
    right.barh(range(len(cells)), shares,
               color=["#55a868" if s >= 80 else "#dd8452" if s >= 50 else "#c44e52" for s in shares])
    right.set_yticks(range(len(cells)), names, fontsize=8)
    right.set_xlim(0, 100)
    right.set_xlabel("% of submissions with full points")
    right.set_title("Pass rate per test cell")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode()


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right}img{max-width:100%}.low{color:#b00}.msg{font-family:monospace;font-size:90%}
ul.msgs{margin:0;padding-left:1.2em}h2{border-bottom:1px solid #ddd;margin-top:2em}
"""


def _table(header: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    cell = "<td class='n'>{}</td>", "<td>{}</td>"
    body = "".join("<tr>" + "".join(cell[i not in numeric].format(v) for i, v in enumerate(row)) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _reasons(reasons: list[str]) -> str:
    shown = "<br>".join(escape(reason) for reason in reasons[:REASONS_SHOWN])
    more = len(reasons) - REASONS_SHOWN
    return shown + (f"<br>… and {more} more (report-review.csv)" if more > 0 else "")


def _standing(submission: SubmissionResult) -> str:
    if submission.status != "graded":
        return submission.status
    return "full marks" if submission.score >= submission.max_score else ""


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"


def _similar(similar: Sequence[Exercise]) -> list[str]:
    """The report's section on similar answers: per exercise the distribution of its pairs' scores with the
    threshold marked, then the flagged pairs, highest first, each with the two answers side by side."""
    parts = ["<h2 id='similar'>Similar answers</h2>",
             "<p>Per exercise, pairs of answers that share more of their code than independent answers do, once the "
             "template is taken out and names, comments and layout are normalised (hooklab.grading.similarity). A "
             "pair's score is the share of code fingerprints the two have in common; the threshold falls with the "
             "answers' length and rises with the exercise's own chance level. Answers of a line or two are left out. "
             "A flag is a reason to look, never a verdict: it changes no score. The pairs are also in "
             f"{SIMILARITY_CSV}.</p>"]
    shown = [e for e in similar if e.compared >= 2]
    if not shown:
        return [*parts, "<p>No exercise had two answers long enough to compare.</p>"]
    header = ["exercise", "compared", "too short", *(f"{i / BANDS:.1f}–" for i in range(BANDS)), "threshold",
              "flagged"]
    rows = []
    for exercise in shown:
        low, high = exercise.thresholds
        counts = [f"<span class='low'>{n}</span>" if n and (i + 1) / BANDS > low else str(n)
                  for i, n in enumerate(bands(exercise.scores))]
        rows.append([escape(f"{exercise.assignment} / {exercise.grade_id}"), str(exercise.compared),
                     str(len(exercise.short)), *counts,
                     escape(f"{low:.2f}" if abs(high - low) < 0.005 else f"{low:.2f}–{high:.2f}"),
                     str(len(exercise.flagged))])
    parts.append("<p>How many pairs scored in each band (bands that reach the threshold in red):</p>")
    parts.append(_table(header, rows, numeric=set(range(1, BANDS + 5))))
    flagged = sorted(((e, p) for e in shown for p in e.flagged[:PAIRS_SHOWN]), key=lambda item: -item[1].score)
    if not flagged:
        return [*parts, "<p>No pair was flagged.</p>"]
    more = sum(max(0, len(e.flagged) - PAIRS_SHOWN) for e in shown)
    if more:
        parts.append(f"<p>The {PAIRS_SHOWN} highest pairs of each exercise; {_count(more, 'more pair')} in "
                     f"{SIMILARITY_CSV}.</p>")
    parts.append(_table(["exercise", "pair", "score", "threshold", "answers side by side"], [
        [escape(f"{e.assignment} / {e.grade_id}"), escape(f"{p.first} · {p.second}"), f"{p.score:.2f}",
         f"{p.threshold:.2f}",
         "<details><summary>show</summary><table><tr>"
         f"<th>{escape(p.first)}</th><th>{escape(p.second)}</th></tr><tr>"
         f"<td><pre>{escape(p.first_answer)}</pre></td><td><pre>{escape(p.second_answer)}</pre></td>"
         "</tr></table></details>"]
        for e, p in flagged
    ], numeric={2, 3}))
    return parts


def render(tables: Tables, timing: dict[str, float] | None, problems: list[str],
           feedback: Mapping[str, list[tuple[str, str]]] | None = None, similar: Sequence[Exercise] = ()) -> str:
    """The page: a summary, then per assignment its figure, its numbers and its test cells with the
    most common failure messages, then every submission's score with links to its feedback pages
    (``feedback``: "student/assignment" → (notebook, address relative to the page)), what was held or
    not run, and the run's timing. Every string that comes from a submission is escaped."""
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>hooklab: class report</title>",
             f"<style>{_STYLE}</style></head><body><h1>Class report</h1>"]
    total = sum(a.submissions for a in tables.assignments)
    if not total:
        parts.append("<p>No submission has been graded yet.</p>")
    else:
        parts.append(
            f"<p>{_count(total, 'submission')} in "
            f"{_count(sum(1 for a in tables.assignments if a.submissions), 'assignment')}: "
            f"{sum(a.graded for a in tables.assignments)} graded, {len(tables.held)} held for review, "
            f"{len(tables.not_run)} could not be run. Scores are after any late penalty; a held or not-run submission "
            "scores 0. The same numbers are in the report-*.csv files beside this page.</p>"
        )
        parts.append(_table(
            ["assignment", "submissions", "graded", "held", "not run", "mean", "median", "lowest", "highest", "of"],
            [[f"<a href='#{escape(a.assignment)}'>{escape(a.assignment)}</a>", str(a.submissions), str(a.graded),
              str(a.held),
              str(a.not_run), *(escape(_number(v)) for v in (a.mean, a.median, a.lowest, a.highest, a.max_score))]
             for a in tables.assignments],
            numeric=set(range(1, 10)),
        ))
    by_assignment: dict[str, list[CellStats]] = defaultdict(list)
    for cell in tables.cells:
        by_assignment[cell.assignment].append(cell)
    for stats in tables.assignments:
        cells = by_assignment[stats.assignment]
        parts.append(f"<h2 id='{escape(stats.assignment)}'>{escape(stats.assignment)}</h2>")
        if not stats.submissions:
            parts.append("<p>No submissions.</p>")
            continue
        parts.append(
            f"<p>{stats.submissions} submissions ({stats.graded} graded, {stats.held} held, {stats.not_run} not run); "
            f"mean {stats.mean:.3g} of {stats.max_score:g}, median {stats.median:.3g}.</p>"
        )
        if stats.graded + stats.held == 0:
            parts.append("<p>None of them could be run.</p>")
        parts.append(f"<img alt='score distribution and pass rates of {escape(stats.assignment)}' "
                     f"width='{FIGURE_WIDTH}' src='data:image/png;base64,{_figure(stats, cells)}'>")
        rows = []
        for cell in sorted(cells, key=lambda c: (c.share if c.share is not None else 2.0)):
            shown = "".join(
                f"<li><span class='msg'>{escape(text)}</span> × {count}"
                + (f" ({variants} variants)" if variants > 1 else "") + "</li>"
                for text, count, variants in cell.messages[:MESSAGES_SHOWN]
            )
            more = len(cell.messages) - MESSAGES_SHOWN
            shown += f"<li>… {more} more in report-failures.csv</li>" if more > 0 else ""
            share = _share(cell.share)
            rows.append([
                escape(cell.cell), escape(f"{cell.points:g}"), str(cell.submissions),
                f"<span class='low'>{share}</span>" if (cell.share or 0) < 0.5 else share,
                escape(_number(cell.mean)), f"<ul class='msgs'>{shown}</ul>" if shown else "",
            ])
        parts.append("<h3>Test cells, hardest first</h3>")
        parts.append(_table(["test cell", "points", "submissions", "full points", "mean points",
                             "most common failure messages (submissions)"],
                            rows, numeric={1, 2, 3, 4}))
    if similar:
        parts += _similar(similar)
    parts.append("<h2 id='submissions'>Every submission</h2>")
    if tables.submissions:
        parts.append(_table(["submission", "score", "", "feedback"], [
            [escape(s.key), escape(f"{s.score:g} / {s.max_score:g}"), escape(_standing(s)),
             " ".join(f"<a href='{escape(quote(href), quote=True)}'>{escape(name)}</a>"
                      for name, href in (feedback or {}).get(s.key, []))]
            for s in tables.submissions
        ], numeric={1}))
    else:
        parts.append("<p>None.</p>")
    parts.append("<h2 id='review'>Held for review</h2>")
    if tables.held:
        parts.append("<p>Their tests ran, but they score 0 until released (<code>hooklab review --release "
                     "STUDENT/ASSIGNMENT</code>).</p>")
        parts.append(_table(["submission", "would score", "reasons"], [
            [escape(s.key), escape(f"{s.would_be:g} / {s.max_score:g}"), _reasons(s.reasons)] for s in tables.held
        ], numeric={1}))
    else:
        parts.append("<p>None.</p>")
    parts.append("<h2 id='not-run'>Could not be run</h2>")
    if tables.not_run:
        parts.append("<p>They score 0; their feedback gives the reason.</p>")
        parts.append(_table(["submission", "reason"],
                            [[escape(s.key), escape("; ".join(s.reasons))] for s in tables.not_run]))
    else:
        parts.append("<p>None.</p>")
    if problems:
        parts.append("<h3>Input of this run that was not graded</h3><ul>"
                     + "".join(f"<li>{escape(p)}</li>" for p in problems) + "</ul>")
    parts.append("<h2 id='timing'>Timing of this run</h2>")
    if timing:
        parts.append(_table(["", "value"], [[escape(name), escape(_number(value))] for name, value in timing.items()],
                            numeric={1}))
    else:
        parts.append("<p>This run executed no submission (all were unchanged or none was found): there is no timing to "
                     "show.</p>")
    parts.append("</body></html>\n")
    return "".join(parts)
