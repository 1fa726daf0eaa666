"""`hooklab autograde` on a class covering every kind of submission (tests/catalogues/corpus.py).

Each case gets the expected points in every test cell, the exact reason when it cannot be run,
held for review exactly when it cheats (naming the technique and the cell), its notes exactly (a deleted
cell restored where it was, a kernel stopped in a named cell), feedback without any hidden-test line,
and a row in the grades CSV; a second run changes nothing; a held notebook can be released by the instructor.
No test here measures speed (``make bench`` does).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import html
import io
import json
import re
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from catalogues import corpus
from conftest import make_course, solution_notebooks
from hooklab import hints
from hooklab.grading import class_report
from hooklab.grading.course import Course
from hooklab.grading.ledger import LEDGER, LastRun, Ledger
from hooklab.grading.redaction import MIN_LINE
from test_feedback import assert_loads_nothing_from_elsewhere

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

CASES = corpus.cases()
GRADE = [sys.executable, "-m", "hooklab.cli", "autograde", "--timeout", str(corpus.TIMEOUT), "--memory", "3G"]


def run(course: Path, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "hooklab.cli", *args, "--config",
                             str(course / "nbgrader_config.py")],
                            capture_output=True, text=True, timeout=1500)
    assert result.returncode == 0, f"hooklab {args[0]} failed:\n{result.stdout}\n{result.stderr}"
    return result


def grade(course: Path, submissions: Path, *extra: str) -> subprocess.CompletedProcess:
    return run(course, "autograde", "--timeout", str(corpus.TIMEOUT), "--memory", "3G", *extra, str(submissions))


def tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


def key(case: corpus.Case) -> str:
    return f"{case.student}/{case.assignment}"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = make_course(tmp_path_factory.mktemp("course"))
    submissions = corpus.write(tmp_path_factory.mktemp("submissions"), CASES)
    before = tree_digest(submissions)
    first = grade(course, submissions)
    ledger = json.loads((course / "grading.json").read_text())
    # the first run's outputs as they were, before later tests release or regrade anything (in whatever order they run)
    report = {name: (course / name).read_text()
              for name in ("grades.csv", class_report.REPORT, *class_report.CSV_FILES)}
    scores = scores_in_gradebook(course)
    return {"course": course, "submissions": submissions, "input_before": before, "first": first, "ledger": ledger,
            "report": report, "last_run": Ledger(course / LEDGER).last_run, "scores": scores}


def held(case: corpus.Case, graded: dict) -> bool:
    """Whether the case is held for review: as the corpus says, or as it came out where the corpus allows either."""
    return bool(case.held) if case.held is not None else bool(graded["ledger"][key(case)]["held"])


def expected(case: corpus.Case, graded: dict) -> dict[str, float]:
    """The case's points, or 0 everywhere where it is held for review."""
    return corpus.zero(case.assignment) if held(case, graded) else case.scores


def explanation(case: corpus.Case, entry: dict) -> str:
    """What the CSV's reason column must say: why it was not run, why it is held, or its notes."""
    if case.reason:
        return case.reason
    if entry["held"]:
        return "held for review: " + "; ".join(entry["held"])  # the case's own reason is checked among them
    return "; ".join(case.notes)


def scores_in_gradebook(course: Path, cases: list[corpus.Case] = CASES) -> dict[str, dict[str, float]]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {
            key(case): {
                test: gradebook.find_grade(test, Path(corpus.notebook_name(case.assignment)).stem, case.assignment,
                                           case.student).score
                for test in corpus.points(case.assignment)
            }
            for case in cases
        }


@pytest.mark.parametrize("case", CASES, ids=key)
def test_every_test_cell_gets_the_expected_points(case: corpus.Case, graded: dict):
    got = graded["scores"][key(case)]
    want = expected(case, graded)
    assert got == want, f"{key(case)} ({case.why or 'see tests/catalogues/corpus.py'}): got {got}, expected {want}"


@pytest.mark.parametrize("case", CASES, ids=key)
def test_held_for_review_exactly_when_it_tampers(case: corpus.Case, graded: dict):
    entry = graded["ledger"][key(case)]
    reasons = "\n".join(entry["held"])
    if case.held is None:
        pass  # either way: the points are checked above
    elif case.held:
        assert entry["held"], f"{key(case)} ({case.why}) was not held for review"
        assert case.held in entry["held"], f"{key(case)} held for {reasons!r}, expected (exactly) {case.held!r}"
    else:
        assert not entry["held"], f"{key(case)} ({case.why or 'honest'}) was held for review: {reasons}"
    notes, expected = entry["notes"], list(case.notes)
    if case.student.removeprefix("attack-") in corpus.KILL_THEIR_KERNEL:  # dead or deaf: lost either way
        notes, expected = list(map(corpus.kernel_lost, notes)), list(map(corpus.kernel_lost, expected))
    assert notes == expected, f"{key(case)}: notes {entry['notes']}, expected {list(case.notes)}"


RESTORED = re.compile(r"(?P<notebook>\w+): restored (?P<grade_id>\w+) \(cell (?P<number>\d+)\)")


def layout(nb: nbformat.NotebookNode) -> list[tuple[str, str | None]]:
    return [(cell.cell_type, cell.metadata.get("nbgrader", {}).get("grade_id")) for cell in nb.cells]


@pytest.mark.parametrize("case", [case for case in CASES if any(RESTORED.fullmatch(note) for note in case.notes)],
                         ids=key)
def test_a_deleted_cell_is_restored_where_it_was(case: corpus.Case, graded: dict):
    """The note names the cell's place in the release, and the cell is there in the autograded notebook."""
    name = corpus.notebook_name(case.assignment)
    autograded = nbformat.read(graded["course"] / "autograder" / "autograded" / key(case) / name, as_version=4)
    release = nbformat.read(corpus.REPO / "notebooks" / case.assignment / name, as_version=4)
    for note in case.notes:
        restored = RESTORED.fullmatch(note)
        number, grade_id = int(restored["number"]), restored["grade_id"]
        assert layout(release)[number - 1][1] == grade_id, f"{note}: the release has {grade_id} elsewhere"
        assert layout(autograded)[number - 1][1] == grade_id, (f"{key(case)}: {grade_id} is not cell {number}: "
                                                               f"{layout(autograded)}")
        cell = autograded.cells[number - 1]
        if cell.metadata.nbgrader.get("solution"):  # a deleted answer comes back as the release's stub
            assert cell.source == release.cells[number - 1].source
    assert layout(autograded) == layout(release), f"{key(case)}: the cells are not in the release's order"


def test_submissions_that_cannot_run_are_recorded_with_a_reason(graded: dict):
    ledger, summary = graded["ledger"], graded["first"].stdout
    for case in CASES:
        entry = ledger[key(case)]
        if case.reason:
            assert not entry["ok"] and entry["reason"] == case.reason, f"{key(case)}: ledger says {entry}"
            assert f"\n  {key(case)}: {case.reason}\n" in summary, f"{key(case)}: the summary does not give its reason"
        else:
            assert entry["ok"], f"{key(case)} should have been graded: {entry['reason']}"
    not_run = sum(not entry["ok"] for entry in ledger.values())
    held = sum(bool(entry["held"]) for entry in ledger.values())
    assert (f"Graded {len(CASES) - not_run} of {len(CASES)} submissions; {not_run} could not be run; {held} held for "
            "review") in summary
    assert "hardest first" in summary and "Held for review" in summary
    stages = re.search(r"Time per submission, in ms: waiting for a worker (\d+) · autograde (\d+) \(kernel start "
                       r"(\d+), cells (\d+)\) · record (\d+) · feedback (\d+); run: [\d.]+ s with \d+ workers", summary)
    assert stages, "the summary says where the time went"
    queue, autograde, kernel, cells, record, feedback = map(int, stages.groups())
    assert kernel + cells <= autograde + 1, f"kernel start and cells are parts of autograde: {stages.group(0)}"


def test_grades_csv_has_a_column_per_test_cell_and_the_reasons(graded: dict):
    rows = {f"{row['student']}/{row['assignment']}": row for row in table(graded["report"]["grades.csv"])}
    assert set(rows) == {key(case) for case in CASES}
    for case in CASES:
        row = rows[key(case)]
        stem = Path(corpus.notebook_name(case.assignment)).stem
        cells = {test: float(row[f"{stem}/{test}"]) for test in corpus.points(case.assignment)}
        assert cells == expected(case, graded), f"{key(case)}: CSV has {cells}"
        assert (float(row["late_penalty"]) == 0 and float(row["score"]) == sum(cells.values())
                and float(row["max_score"]) == sum(corpus.points(case.assignment).values()))
        assert row["reason"] == explanation(case, graded["ledger"][key(case)]), f"{key(case)}: reason {row['reason']!r}"
        assert row["reason"].startswith("held for review: ") == held(case, graded), (f"{key(case)}: reason "
                                                                                     f"{row['reason']!r}")


def hidden_lines() -> set[str]:
    lines = set()
    for path in solution_notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.metadata.get("nbgrader", {}).get("grade"):
                hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
                lines |= {line.strip() for line in hidden.splitlines() if len(line.strip()) >= MIN_LINE}
    return lines


def hidden_only_lines() -> set[str]:
    """The hidden tests' lines that no other part of the notebooks holds (a given cell, a visible test, a solution):
    those are the secret; a line such as `loss.backward()` is also in students' own answers."""
    elsewhere = set()
    for path in solution_notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            parts = cell.source.split("### BEGIN HIDDEN TESTS")
            outside = parts[0] + "".join(part.split("### END HIDDEN TESTS", 1)[-1] for part in parts[1:])
            elsewhere |= {line.strip() for line in outside.splitlines()}
    return hidden_lines() - elsewhere


def _text_of(content: bytes) -> str:
    """A submitted file's text: a notebook's cells' sources as its page shows them, else the file as text."""
    try:
        return "\n".join(cell.source for cell in nbformat.reads(content.decode(), as_version=4).cells)
    except Exception:  # not a notebook (or a broken one)
        return content.decode(errors="replace")


def test_feedback_shows_results_but_never_a_hidden_test_line(graded: dict):
    secret = hidden_lines()
    for case in CASES:
        page = (graded["course"] / "autograder" / "feedback" / key(case)
                / corpus.notebook_name(case.assignment).replace(".ipynb", ".html"))
        assert page.is_file(), f"no feedback for {key(case)}"
        text = html.unescape(page.read_text())
        # the student may write it too, and a given cell may show the same line
        own = "\n".join(map(_text_of, case.files.values()))
        leaked = [line for line in secret if line in text and line not in own]
        markers = "BEGIN HIDDEN TESTS" in text and "BEGIN HIDDEN TESTS" not in own
        assert not leaked and not markers, f"{key(case)}'s feedback reveals hidden tests: {leaked[:3]}"
        if case.reason:
            assert f"could not be run: {case.reason}." in text, f"{key(case)}'s feedback does not give its reason"
        if graded["ledger"][key(case)]["held"]:
            assert "HeldForReview" in text, f"{key(case)}'s feedback should say it is held for review"
    page = graded["course"] / "autograder" / "feedback" / "exception" / corpus.ASSIGNMENT / "forward_hooks.html"
    text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))  # the words, without the colouring spans
    assert "RuntimeError: oops" in text, "a failed test's message should be in the feedback"
    # the notebook's "Your progress" cell, run by the grader, points to the scores (not "0 of 7 …: not run yet")
    assert text.count(hints.GRADED) == 1 and "not run yet" not in text


def test_feedback_runs_and_loads_nothing_a_submission_displayed(graded: dict):
    feedback = graded["course"] / "autograder" / "feedback"
    pages = {page: page.read_text() for page in feedback.rglob("*.html")}
    for page, text in pages.items():
        assert "<script" not in text.lower() and "cdnjs" not in text and "unpkg" not in text, (f"{page} runs or loads "
                                                                                               "a script")
    shown = pages[feedback / "shows_scripts" / corpus.ASSIGNMENT / "forward_hooks.html"]
    assert_loads_nothing_from_elsewhere(shown)
    assert "<b>my hooks ran</b>" in shown, "what is safe of the student's display still shows"

def table(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def check_report_against_grades(grades: list[dict[str, str]], report: dict[str, list[dict[str, str]]]) -> None:
    """The report's numbers per assignment and per test cell are those of the grades CSV."""
    rows = defaultdict(list)
    for row in grades:
        rows[row["assignment"]].append(row)
    assignments = {r["assignment"]: r for r in report["report-assignments.csv"]}
    assert set(rows) <= set(assignments)
    for assignment, stats in assignments.items():
        scores = [float(row["score"]) for row in rows[assignment]]
        held = sum(row["reason"].startswith("held for review: ") for row in rows[assignment])
        assert int(stats["submissions"]) == len(scores) and int(stats["held"]) == held, stats
        assert int(stats["graded"]) + held + int(stats["not_run"]) == len(scores)
        assert float(stats["mean"]) == pytest.approx(sum(scores) / len(scores), rel=1e-3), stats
        assert (float(stats["lowest"]), float(stats["highest"])) == (min(scores), max(scores))
        histogram = [r for r in report["report-scores.csv"] if r["assignment"] == assignment]
        assert sum(int(r["submissions"]) for r in histogram) == len(scores)
    cells = [r for r in report["report-cells.csv"]]
    assert {(r["assignment"], r["cell"]) for r in cells} == {(c.assignment, test) for c in CASES
                                                             for test in corpus.points(c.assignment)}
    for r in cells:
        points = corpus.points(r["assignment"])[r["cell"]]
        got = [float(row[f"{r['notebook']}/{r['cell']}"]) for row in rows[r["assignment"]]]
        assert float(r["points"]) == points and int(r["submissions"]) == len(got)
        assert int(r["full_points"]) == sum(score >= points for score in got), r
        assert float(r["full_points_share"]) == pytest.approx(sum(score >= points for score in got) / len(got),
                                                              rel=1e-3)
        assert float(r["mean_points"]) == pytest.approx(sum(got) / len(got), rel=1e-3)


def report_tables(files: dict[str, str]) -> dict[str, list[dict[str, str]]]:
    return {name: table(files[name]) for name in class_report.CSV_FILES}


def test_report_of_the_run_matches_its_grades_csv(graded: dict):
    files = graded["report"]
    check_report_against_grades(table(files["grades.csv"]), report_tables(files))
    last = graded["first"].stdout.strip().splitlines()[-1]
    assert last.endswith(f"Report: {graded['course'] / class_report.REPORT}"), last
    page = files[class_report.REPORT]
    assert page.count("src='data:image/png;base64,") == len({case.assignment for case in CASES})
    timing = {r["quantity"]: float(r["value"]) for r in table(files["report-timing.csv"])}
    refused = sum(bool(case.reason) for case in CASES)  # found unreadable before a worker is asked
    assert timing["submissions executed"] == len(CASES) - refused and "run (s)" in timing
    stages = re.search(r"waiting for a worker (\d+) · autograde (\d+) \(kernel start (\d+), cells (\d+)\) · record "
                       r"(\d+) · feedback (\d+)",
                       graded["first"].stdout)
    for stage, ms in zip(("queue", "autograde", "kernel", "cells", "record", "feedback"), map(int, stages.groups())):
        assert abs(timing[f"{stage} (ms per submission)"] - ms) <= 1, (f"{stage}: the report says {timing}, the "
                                                                       f"summary {stages.group(0)}")
    assert "Timing of this run" in page and "submissions executed" in page


def test_report_lists_held_and_not_run_submissions_with_reasons(graded: dict):
    page, review = html.unescape(graded["report"][class_report.REPORT]), table(graded["report"]["report-review.csv"])
    listed = {f"{r['student']}/{r['assignment']}": r for r in review}
    want = {key: "not run" for key, entry in graded["ledger"].items() if not entry["ok"]}
    want |= {key: "held" for key, entry in graded["ledger"].items() if entry["ok"] and entry["held"]}
    assert {key: r["status"] for key, r in listed.items()} == want
    for submission, status in want.items():
        entry, row = graded["ledger"][submission], listed[submission]
        reasons = entry["reason"] if status == "not run" else "; ".join(entry["held"])
        assert row["reasons"] == reasons and float(row["score"]) == 0
        first = entry["reason"] if status == "not run" else entry["held"][0]
        assert first in page, f"{submission}'s reason is not on the page"
        if status == "held":
            assert float(row["would_score"]) == pytest.approx(sum(entry["would_be"].values()), rel=1e-3)
    assert all(listed[key(case)]["reasons"] == case.reason for case in CASES if case.reason)


def test_report_counts_the_failure_messages_of_the_class(graded: dict):
    files, ledger = graded["report"], graded["ledger"]
    failures = table(files["report-failures.csv"])
    counted = {(r["assignment"], r["cell"], r["message"]): (int(r["submissions"]), int(r["variants"]))
               for r in failures}
    # "deleted_test" (1 item) and two attacks whose hooks append nothing (0 items): one message, "item" or "items"
    missing_output = (corpus.ASSIGNMENT, "collect_hooks_test",
                      "WrongAnswer: answer has # items, expected #: [x1, x2, output]")
    assert counted[missing_output] == (3, 2)
    # "blank" and "edited_tests" (nothing answered): the function not written, in the words the lab uses
    assert counted[(corpus.ASSIGNMENT, "collect_hooks_test", "pre_hook is not written yet")] == (2, 1)
    # "exception": the student's own error, where their hook raised, as one sentence naming the call (checks.calling)
    own = [message for (assignment, cell, message) in counted if (assignment, cell) == (corpus.ASSIGNMENT,
           "collect_hooks_test") and "raised RuntimeError: oops" in message]
    assert len(own) == 1 and own[0].startswith("WrongAnswer: "), own
    assert counted[(corpus.ASSIGNMENT, "collect_hooks_test", own[0])] == (1, 1)
    # "exits" and "late_crash": their kernels died in different cells, one message with the numbers left out
    died = (corpus.ASSIGNMENT, "leaf_shapes_test",
            "TestDidNotRun: not run: the kernel died in cell # (os._exit, a crash or out of memory)")
    assert counted[died] == (2, 2)
    page = html.unescape(re.sub(r"<[^>]+>", "", files[class_report.REPORT]))  # the words, without the tags
    assert f"{missing_output[2]} × 3 (2 variants)" in page and f"{died[2]} × 2 (2 variants)" in page
    # every lost test cell of a submission that ran has one message, except a zero for being held only
    for cell in table(files["report-cells.csv"]):
        column, points = f"{cell['notebook']}/{cell['cell']}", float(cell["points"])
        lost = [
            row for row in table(files["grades.csv"])
            if row["assignment"] == cell["assignment"] and float(row[column]) < points
            and ledger[f"{row['student']}/{row['assignment']}"]["ok"]
            and ledger[f"{row['student']}/{row['assignment']}"]["would_be"].get(column, 0.0) < points
        ]
        where = ("assignment", "notebook", "cell")
        counted = sum(int(r["submissions"]) for r in failures if [r[k] for k in where] == [cell[k] for k in where])
        assert counted == len(lost), f"{cell['assignment']}/{column}: {counted} messages for {len(lost)} failures"
    assert not any(r["message"].startswith(("HeldForReview", "(no")) for r in failures)


def test_report_shows_no_hidden_test_line(graded: dict):
    secret = hidden_only_lines()
    for name in (class_report.REPORT, "report-failures.csv"):
        text = html.unescape(graded["report"][name])
        leaked = [line for line in secret if line in text]
        assert not leaked and "HIDDEN TESTS" not in text, f"{name} reveals hidden tests: {leaked[:3]}"


def test_report_written_again_from_the_gradebook_agrees_with_the_grades_csv(graded: dict, tmp_path: Path):
    course = graded["course"]
    ledger = Ledger(course / LEDGER)
    ledger.last_run = LastRun()  # written from the gradebook alone: no run to show
    page = class_report.write(Course(course / "nbgrader_config.py"), ledger, folder=tmp_path)
    files = {name: (tmp_path / name).read_text() for name in (class_report.REPORT, *class_report.CSV_FILES)}
    check_report_against_grades(table((course / "grades.csv").read_text()), report_tables(files))
    assert page == tmp_path / class_report.REPORT and "there is no timing to show" in files[class_report.REPORT]


def test_release_after_review_gives_the_scores_the_tests_earned(graded: dict):
    course = graded["course"]
    listing = run(course, "review").stdout
    full = sum(corpus.points(corpus.ASSIGNMENT).values())
    assert f"flagged_but_honest/{corpus.ASSIGNMENT}: held, would score {full:g} / {full:g}" in listing
    flagged = next(case for case in CASES if case.student == "flagged_but_honest")
    assert f"\n    {flagged.held}\n" in listing, "the listing names the technique and the cell"
    stray = "stray.ipynb: a file outside any student folder, ignored"  # as a run with such input would have listed it
    # the first run's timing (a second run, if another test made one first, executed nothing and has none to show)
    ledger = Ledger(course / LEDGER)
    ledger.last_run = dataclasses.replace(graded["last_run"], problems=[*graded["last_run"].problems, stray])
    ledger.save()
    run(course, "review", "--release", f"flagged_but_honest/{corpus.ASSIGNMENT}")
    assert (course / "report-timing.csv").read_text() == graded["report"]["report-timing.csv"], (
        "the report written again lost the run's timing")
    assert Ledger(course / LEDGER).last_run == ledger.last_run, "review keeps the last run as it was"
    assert stray in html.unescape((course / class_report.REPORT).read_text())
    assert "there is no timing to show" not in (course / class_report.REPORT).read_text()
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(corpus.ASSIGNMENT, "flagged_but_honest").score == full
    with open(course / "grades.csv", newline="") as handle:
        row = next(r for r in csv.DictReader(handle) if r["student"] == "flagged_but_honest")
    assert float(row["score"]) == full and row["reason"] == "released after review"
    assert "flagged_but_honest/02_forward_hooks: released" in run(course, "review").stdout


def test_second_run_changes_nothing_and_input_is_untouched(graded: dict):
    course, submissions = graded["course"], graded["submissions"]
    outputs = [course / "autograder" / "autograded", course / "autograder" / "feedback"]
    before = {str(p): tree_digest(p) for p in outputs}
    scores = scores_in_gradebook(course)
    second = grade(course, submissions)
    assert f"{len(CASES)} unchanged since the last run" in second.stdout
    assert {str(p): tree_digest(p) for p in outputs} == before
    assert scores_in_gradebook(course) == scores
    assert tree_digest(submissions) == graded["input_before"], "grading modified the submitted files"


def test_flat_zip_from_an_lms(tmp_path: Path):
    course = make_course(tmp_path / "course")
    by_student = {case.student: case for case in CASES if case.student in ("full", "blank")}
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for student, case in by_student.items():
            bundle.writestr(f"{student}_{corpus.notebook_name(corpus.ASSIGNMENT)}",
                            case.files[corpus.notebook_name(corpus.ASSIGNMENT)])
        bundle.writestr("README.txt", "not a submission")
    result = grade(course, archive, "--jobs", "1")
    assert "README.txt: file name does not match" in result.stdout
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student, case in by_student.items():
            assert gradebook.find_submission(corpus.ASSIGNMENT, student).score == sum(case.scores.values())


def test_missing_input_is_a_clear_error(tmp_path: Path):
    result = subprocess.run([*GRADE, str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert result.returncode == 2 and "no such file or folder" in result.stderr


def test_a_broken_course_config_is_a_clear_error(tmp_path: Path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.root = (\n")
    for command in ([*GRADE, "--config", str(tmp_path / "nbgrader_config.py"), str(tmp_path)],
                    [sys.executable, "-m", "hooklab.cli", "review", "--config", str(tmp_path / "nbgrader_config.py")]):
        result = subprocess.run(command, capture_output=True, text=True)
        assert result.returncode == 2 and "cannot be read (SyntaxError" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
