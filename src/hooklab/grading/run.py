"""One command to grade a class: collect, autograde in parallel, record, report."""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from tqdm import tqdm

from hooklab.grading import worker
from hooklab.grading.course import Course
from hooklab.grading.gradebook import Entry, Ledger, ensure_assignments, max_scores, record
from hooklab.grading.report import CellScoresExportPlugin, pass_rates, summary, write_failure_feedback
from hooklab.grading.submissions import DEFAULT_FILENAME_REGEX, find, opened, place
from hooklab.grading.worker import GradingResult

LEDGER = "grading.json"
GRADES_CSV = "grades.csv"
LOG = "grading.log"


def unreadable(folder: Path, notebooks: list[str]) -> str:
    """Why a submission folder cannot be autograded at all, or "" if it can."""
    present = [name for name in notebooks if (folder / name).is_file()]
    if not present:
        return f"no notebook submitted (expected {', '.join(notebooks)})"
    for name in present:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # nbformat's warnings about a notebook's age, not its validity
                nbformat.validate(nbformat.read(folder / name, as_version=4))
        except Exception as error:  # nbformat raises several unrelated types for a broken file
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            return f"{name} is not a valid notebook ({first_line[:120]})"
    return ""


def autograde(
    submissions: Path,
    course: Course,
    jobs: int,
    *,
    force: bool = False,
    memory_bytes: int | None = None,
    filename_regex: str = DEFAULT_FILENAME_REGEX,
) -> str:
    """Grade every submission under ``submissions``; returns the summary (also written to the log)."""
    course.work_dir.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(course.work_dir / LEDGER)
    api = NbGraderAPI(config=course.config())
    with opened(submissions) as folder:
        found = find(folder, course, filename_regex)
        problems = list(found.problems)
        broken = ensure_assignments(course.db_url, sorted({s.assignment for s in found.submissions}), api.generate_assignment)
        problems += [f"{a}: nbgrader could not register the assignment; its submissions were not graded" for a in broken]
        todo, seen, skipped = [], set(), 0
        for submission in found.submissions:
            if submission.assignment in broken:
                continue
            seen.add(submission.key)
            target, fingerprint = place(submission, course)
            if not force and ledger.is_current(submission.key, fingerprint):
                skipped += 1
            else:
                todo.append((submission.student, submission.assignment, target, fingerprint))

    points = max_scores(course.db_url, sorted({assignment for _, assignment, _, _ in todo}))

    def finish(result: GradingResult, fingerprint: str) -> None:
        record(course.db_url, result)
        max_score = points[result.assignment]
        if not result.ok:
            feedback = course.step_dir("feedback") / result.student / result.assignment
            write_failure_feedback(feedback, course.notebooks[result.assignment], result.reason, max_score)
        key = f"{result.student}/{result.assignment}"
        ledger.set(key, Entry(fingerprint, result.ok, result.reason, result.score, max_score))

    runnable = []
    for student, assignment, target, fingerprint in todo:
        reason = unreadable(target, course.notebooks[assignment])
        if reason:
            finish(GradingResult(student, assignment, ok=False, reason=reason), fingerprint)
        else:
            runnable.append((student, assignment, fingerprint))

    if runnable:
        with tempfile.TemporaryDirectory(prefix=".workers-", dir=course.work_dir) as scratch:
            snapshot = Path(scratch) / "gradebook.db"
            shutil.copyfile(course.db_url.removeprefix("sqlite:///"), snapshot)
            with ProcessPoolExecutor(jobs, initializer=worker.start, initargs=(course, snapshot, memory_bytes, course.work_dir / LOG)) as pool:
                futures = {pool.submit(worker.grade, course, s, a): (s, a, f) for s, a, f in runnable}
                with tqdm(total=len(futures), unit="submission", file=sys.stderr, dynamic_ncols=True) as bar:
                    for future in as_completed(futures):
                        student, assignment, fingerprint = futures[future]
                        bar.update()
                        try:
                            result = future.result()
                        except Exception as error:  # a worker process that died takes its task with it
                            problems.append(f"{student}/{assignment}: the grading process failed ({error!r}); run again to retry")
                            continue
                        finish(result, fingerprint)
                        bar.set_postfix_str(f"{student}/{assignment} {'✓' if result.ok else '✗ not run'}")

    reasons = {key: entry.reason for key, entry in ledger.entries.items() if not entry.ok}
    with Gradebook(course.db_url) as gradebook:
        CellScoresExportPlugin(to=str(course.work_dir / GRADES_CSV), reasons=reasons).export(gradebook)
        rates = pass_rates(gradebook, seen)
    entries = {key: entry for key, entry in ledger.entries.items() if key in seen}
    return summary(entries, rates, skipped, problems)
