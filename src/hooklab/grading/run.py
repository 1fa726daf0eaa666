"""One command to grade a class: collect, autograde in parallel, record, report."""

from __future__ import annotations

import hashlib
import json
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

import hooklab
from hooklab.grading import worker
from hooklab.grading.course import Course
from hooklab.grading.gradebook import Entry, Ledger, ensure_assignments, graded_keys, max_scores, record
from hooklab.grading.review import set_manual_scores
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


def grading_fingerprint(course: Course, assignment: str) -> str:
    """What the grader brings to a result: the assignment's source (hidden tests included), hooklab's
    checkers and grading code, and the course configuration with this run's options."""
    package = Path(hooklab.__file__).parent
    paths = [
        *sorted(p for p in (course.root / course.coursedir.source_directory / assignment).rglob("*") if p.is_file()),
        package / "checks.py", package / "feedback.py", *sorted((package / "grading").glob("*.py")),
    ]
    sha = hashlib.sha256()
    for path in paths:
        sha.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    sha.update(json.dumps(course.config(), sort_keys=True, default=str).encode())
    return sha.hexdigest()


def export(course: Course, ledger: Ledger, keys: set[str]) -> dict[str, tuple[float, int]]:
    """Write the grades CSV from the gradebook; returns the pass rates of the submissions in ``keys``."""
    reasons = {key: entry.explanation() for key, entry in ledger.entries.items()}
    with Gradebook(course.db_url) as gradebook:
        CellScoresExportPlugin(to=str(course.work_dir / GRADES_CSV), reasons=reasons).export(gradebook)
        return pass_rates(gradebook, keys)


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
        assignments = sorted({s.assignment for s in found.submissions})
        sources = {a: sorted((course.root / course.coursedir.source_directory / a).glob("*.ipynb")) for a in assignments}
        broken = ensure_assignments(course.db_url, sources, api.generate_assignment, force=force)
        problems += [f"{a}: nbgrader could not register the assignment; its submissions were not graded" for a in broken]
        graders = {a: grading_fingerprint(course, a) for a in assignments}
        in_gradebook = graded_keys(course.db_url)
        todo, seen, skipped = [], set(), 0
        for submission in found.submissions:
            if submission.assignment in broken:
                continue
            seen.add(submission.key)
            target, files = place(submission, course)
            fingerprint = hashlib.sha256(f"{files}:{graders[submission.assignment]}".encode()).hexdigest()
            if not force and submission.key in in_gradebook and ledger.is_current(submission.key, fingerprint):
                skipped += 1
            else:
                todo.append((submission.student, submission.assignment, target, fingerprint, files))

    points = max_scores(course.db_url, sorted({assignment for _, assignment, _, _, _ in todo}))

    def finish(result: GradingResult, fingerprint: str, files: str) -> None:
        key = f"{result.student}/{result.assignment}"
        previous = ledger.entries.get(key)
        released = previous is not None and previous.released and previous.files == files
        if previous is not None and previous.released and not released:  # a new version: review it again
            set_manual_scores(course.db_url, result.student, result.assignment, dict.fromkeys(previous.would_be))
        record(course.db_url, result)
        max_score = points[result.assignment]
        if not result.ok:
            feedback = course.step_dir("feedback") / result.student / result.assignment
            write_failure_feedback(feedback, course.notebooks[result.assignment], result.reason, max_score)
        ledger.set(key, Entry(fingerprint, result.ok, result.reason, result.score, max_score, files=files,
                              held=result.held, would_be=result.would_be, notes=result.notes, released=released))

    runnable = []
    for student, assignment, target, fingerprint, files in todo:
        reason = unreadable(target, course.notebooks[assignment])
        if reason:
            finish(GradingResult(student, assignment, ok=False, reason=reason), fingerprint, files)
        else:
            runnable.append((student, assignment, fingerprint, files))

    if runnable:
        with tempfile.TemporaryDirectory(prefix=".workers-", dir=course.work_dir) as scratch:
            snapshot = Path(scratch) / "gradebook.db"
            shutil.copyfile(course.db_url.removeprefix("sqlite:///"), snapshot)
            with ProcessPoolExecutor(jobs, initializer=worker.start, initargs=(course, snapshot, memory_bytes, course.work_dir / LOG)) as pool:
                futures = {pool.submit(worker.grade, course, s, a): (s, a, f, d) for s, a, f, d in runnable}
                with tqdm(total=len(futures), unit="submission", file=sys.stderr, dynamic_ncols=True) as bar:
                    for future in as_completed(futures):
                        student, assignment, fingerprint, files = futures[future]
                        bar.update()
                        try:
                            result = future.result()
                        except Exception as error:  # a worker process that died takes its task with it
                            problems.append(f"{student}/{assignment}: the grading process failed ({error!r}); run again to retry")
                            continue
                        finish(result, fingerprint, files)
                        bar.set_postfix_str(f"{student}/{assignment} {'✓' if result.ok else '✗ not run'}")

    rates = export(course, ledger, seen)
    entries = {key: entry for key, entry in ledger.entries.items() if key in seen}
    return summary(entries, rates, skipped, problems)
