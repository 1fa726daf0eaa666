"""Scores into the course gradebook, in the grading process only, through nbgrader's own preprocessors; and the
ledger entry each result makes."""

from __future__ import annotations

import time
import warnings
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning

from hooklab.grading import judge
from hooklab.grading.course import Course
from hooklab.grading.feedback import write_failure_feedback
from hooklab.grading.gradebook import set_manual_scores
from hooklab.grading.keys import cell_key
from hooklab.grading.ledger import Entry, Ledger
from hooklab.grading.notes import Notes
from hooklab.grading.outputs import would_be
from hooklab.grading.plan import Task
from hooklab.grading.timing import Stages


@dataclass
class Recorded:
    """What recording a submission found in its autograded notebooks."""

    score: float = 0.0  # the autograded points
    held: list[str] = field(default_factory=list)  # "notebook: why it is held for review"
    would_be: dict[str, float] = field(default_factory=dict)  # "notebook/grade_id" → points if released
    notes: list[str] = field(default_factory=list)  # cells repaired, a kernel that stopped
    seconds: dict[str, float] = field(default_factory=dict)  # "kernel" (until ready), "cells": summed over notebooks
    seeds: dict[str, str] = field(default_factory=dict)  # notebook → the seed of its hidden tests' random inputs


def record_submission(course: Course, student: str, assignment: str, executed: bool,
                      reference: dict[str, Any] | None = None) -> Recorded:
    """Record one submission in the course gradebook as nbgrader's autograde does: its submission
    (with the timestamp it was handed in at), then the course's recording preprocessors
    (:attr:`Course.recorders`: scores, late penalties) on each autograded notebook. A notebook that
    was not ``executed`` or is missing scores 0, as nbgrader scores a missing notebook. A notebook whose
    tests are drivers is judged first against ``reference`` (notebook → the reference run's cells,
    :func:`hooklab.grading.judge.judge`), and written back with the verdicts, for its feedback."""
    timestamp = course.coursedir.get_existing_timestamp(str(course.step_dir("submitted") / student / assignment))
    config, recorded = course.config(), Recorded()
    with Gradebook(course.db_url) as gradebook:  # committed before the recorders write through their own
        with warnings.catch_warnings():
            # nbgrader's own submission creation makes SQLAlchemy warn about its session; harmless.
            warnings.simplefilter("ignore", SAWarning)
            gradebook.update_or_create_student(student)
            gradebook.update_or_create_submission(assignment, student,
                                                  **({"timestamp": timestamp} if timestamp else {}))
        for name in course.notebooks[assignment]:
            notebook, path = Path(name).stem, course.step_dir("autograded") / student / assignment / name
            if not (executed and path.is_file()):
                _zero(course.db_url, student, assignment, notebook)
                continue
            nb = nbformat.read(path, as_version=4)
            notes = Notes.read(nb)
            if notes.observed is not None:
                observed, notes.observed = notes.observed, None
                notes.write(nb)  # the notebook its feedback is made from carries no observations
                recorded.notes += [f"{notebook}: {note}"
                                   for note in judge.judge(nb, (reference or {}).get(notebook), observed)]
                _would_be(nb)
                nbformat.write(nb, path)
            resources = ResourcesDict(nbgrader={"notebook": notebook, "assignment": assignment, "student": student,
                                                "db_url": course.db_url})
            for recorder in course.recorders:
                recorder(config=config).preprocess(nb, resources)
            notes = Notes.read(nb)
            recorded.held += [f"{notebook}: {why}" for why in notes.held]
            would_be = notes.would_be or {}
            recorded.would_be.update({cell_key(notebook, cell): points for cell, points in would_be.items()})
            recorded.notes += [f"{notebook}: {note}" for note in [notes.stopped, *notes.repairs, *notes.limits] if note]
            if notes.seed:
                recorded.seeds[notebook] = notes.seed
            for stage, seconds in notes.seconds.items():
                recorded.seconds[stage] = recorded.seconds.get(stage, 0.0) + seconds
        submission = gradebook.find_submission(assignment, student)
        recorded.score = sum(grade.auto_score or 0.0 for notebook in submission.notebooks for grade in notebook.grades)
    return recorded


@dataclass
class ResultRecorder:
    """Records a task's result in the gradebook (:func:`record_submission`) and makes its ledger
    entry; a task that could not be run gets failure feedback instead of nbgrader's."""

    course: Course
    ledger: Ledger
    points: dict[str, float]
    stages: Stages
    references: dict[str, Future] = field(default_factory=dict)  # assignment → its reference run (worker.reference)

    def __call__(self, task: Task, reason: str) -> Entry:
        course, previous = self.course, self.ledger.entries.get(task.key)
        released = previous is not None and previous.released and previous.files == task.files
        if previous is not None and previous.released and not released:  # a new version: review it again
            set_manual_scores(course.db_url, task.student, task.assignment, dict.fromkeys(previous.would_be))
        started = time.perf_counter()
        reference = None
        if not reason:
            try:
                reference = self.references[task.assignment].result()
            except Exception as error:  # the worker's: the course's notebook or kernel failed
                reason = f"the reference solution could not be run ({error!r}); run again to retry"
        recorded = record_submission(course, task.student, task.assignment, executed=not reason, reference=reference)
        if not task.reason:  # the stages describe submissions that went to a worker
            self.stages.add(record=time.perf_counter() - started, **recorded.seconds)
        if reason:
            feedback = course.step_dir("feedback") / task.student / task.assignment
            write_failure_feedback(feedback, course.notebooks[task.assignment], reason, self.points[task.assignment])
        return Entry(task.fingerprint, not reason, reason, recorded.score, self.points[task.assignment],
                     files=task.files, held=recorded.held, would_be=recorded.would_be, notes=recorded.notes,
                     released=released, seeds=recorded.seeds)


def _would_be(nb: nbformat.NotebookNode) -> None:
    """A held notebook's would-be scores, from the grader's verdicts (its cells' errors but the hold)."""
    notes = Notes.read(nb)
    if notes.would_be is None:
        return
    notes.would_be = would_be(nb)
    notes.write(nb)


def _zero(gradebook_url: str, student: str, assignment: str, notebook: str) -> None:
    with Gradebook(gradebook_url) as gradebook:
        for grade in gradebook.find_submission_notebook(notebook, assignment, student).grades:
            grade.auto_score = 0.0
            grade.needs_manual_grade = grade.manual_score is not None
        gradebook.db.commit()
