"""hooklab.grading.run's loop with fakes for the pool and the workers, without a kernel: each submission executed,
recorded, its feedback written, then entered in the ledger; one whose recording or feedback fails costs only itself
and is named, and stays out of the ledger so that the next run grades it again."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from hooklab.grading import run, worker
from hooklab.grading.ledger import Entry, Ledger
from hooklab.grading.plan import Task
from hooklab.grading.timing import Stages

STUDENTS = ("ada", "bob", "cy", "dee", "eve")


def graded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, unrecorded: str = "",
           unwritten: str = "") -> tuple[Ledger, list[str], Stages, list[str]]:
    """The loop over one task per student: ``unrecorded``'s recording raises, ``unwritten``'s feedback does."""
    written: list[str] = []

    def feedback(student: str, assignment: str) -> float:
        if student == unwritten:
            raise RuntimeError("nbgrader: [Errno 21] Is a directory: 'nb.html'")
        written.append(student)
        return 0.25

    def record(task: Task, reason: str) -> Entry:
        if task.student == unrecorded:
            raise OSError("disk full")
        return Entry(digest=task.fingerprint, ok=not reason, reason=reason, score=2.0, max_score=3.0)

    monkeypatch.setattr(worker, "feedback", feedback)
    tasks = [Task(student, "hw", f"digest-{student}", "files") for student in STUDENTS]
    ledger, stages = Ledger(tmp_path / "grading.json"), Stages()
    with ThreadPoolExecutor(2) as pool:
        def execute(task: Task) -> Future:
            return pool.submit(lambda: ("" if task.student != "cy" else "the kernel died", 0.5))

        problems = run._run(pool, run.Execution(execute, 2), tasks, ledger, record, stages)
    return ledger, problems, stages, written


def test_every_submission_is_recorded_and_its_feedback_written_before_it_enters_the_ledger(tmp_path, monkeypatch):
    ledger, problems, stages, written = graded(tmp_path, monkeypatch)
    assert problems == []
    assert sorted(ledger.entries) == [f"{student}/hw" for student in STUDENTS]
    assert ledger.entries["cy/hw"].ok is False and "cy" not in written  # not run: no feedback to write
    assert sorted(written) == ["ada", "bob", "dee", "eve"] and stages.count == len(STUDENTS)


def test_a_recording_or_feedback_that_fails_costs_only_its_submission_and_is_named(tmp_path, monkeypatch):
    ledger, problems, _, written = graded(tmp_path, monkeypatch, unrecorded="bob", unwritten="dee")
    assert sorted(ledger.entries) == ["ada/hw", "cy/hw", "eve/hw"] and sorted(written) == ["ada", "eve"]
    assert sorted(problems) == [
        "bob/hw: the grading process failed (OSError('disk full')); run again to retry",
        "dee/hw: scored 2 / 3 in the gradebook, but its feedback could not be written (nbgrader: [Errno 21] Is a "
        "directory: 'nb.html'); run again to write it",
    ]
