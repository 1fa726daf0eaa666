"""Grading in a worker process: nbgrader's autograde runs the submission, nothing is recorded here.

A worker (a process of the local pool, or a Dask worker: :mod:`hooklab.grading.cluster`) executes a submission with
nbgrader's ``Autograde`` minus the preprocessors that write scores (the parent records them,
:func:`hooklab.grading.record.record_submission`), against a private copy of the course gradebook: nbgrader's autograde
registers the submission as it starts, and SQLite gradebooks do not take concurrent writers. Feedback is written
once the parent has recorded, from the course gradebook, which it only reads.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.provisioning import KernelProvisionerFactory
from nbconvert.exporters.exporter import ResourcesDict
from nbgrader import utils
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config, LazyConfigValue

from hooklab.grading import judge
from hooklab.grading.course import Course
from hooklab.grading.gradebook import scratch, share_engines
from hooklab.grading.kernels.provisioner import PROVISIONER
from hooklab.grading.kernels.server import SUPPORTED
from hooklab.grading.kernels.supervise import die_with_parent
from hooklab.grading.notes import Notes


class Grader:
    """nbgrader's autograde and feedback for one course, in the process that grades: executing against
    a private copy of the gradebook, writing feedback from the course gradebook."""

    def __init__(self, execute_config: Config, gradebook_copy: Path, feedback_config: Config | None = None) -> None:
        share_engines()  # a Dask worker's too
        private = gradebook_copy.with_name(f"worker-{os.getpid()}.db")
        shutil.copyfile(gradebook_copy, private)
        scratch(private)  # a copy for nbgrader's autograde to register submissions in, thrown away after the run
        execute_config = copy.deepcopy(execute_config)
        execute_config.CourseDirectory.db_url = f"sqlite:///{private}"
        self._executing = _api(execute_config)
        self._reference_config = copy.deepcopy(execute_config)
        self._reference_config.GuardedExecute.integrity = False  # the instructor's own code
        self._feedback = _api(_pages_kept(feedback_config)) if feedback_config is not None else None
        if SUPPORTED:
            KernelProvisionerFactory.instance().default_provisioner_name = PROVISIONER

    def execute(self, student: str, assignment: str) -> tuple[str, float]:
        """Autograde one submission into the ``autograded`` folder; returns why it could not be (or "")
        and the seconds it took."""
        started = time.perf_counter()
        outcome = self._executing.autograde(assignment, student, force=True, create=True)
        return ("" if outcome["success"] else failure_reason(outcome.get("log", ""))), time.perf_counter() - started

    def reference(self, assignment: str) -> dict[str, dict[str, dict[str, Any]]]:
        """The reference run: each source notebook of ``assignment`` whose tests are drivers, executed as a
        submission is (the run's seed, every cell readied alike) in a kernel of its own. Returns notebook →
        grade_id → ``{"observed": [...], "error": ""}`` (the error the reference's test raised, if any)."""
        from hooklab.grading.execute import GuardedExecute  # imports nbclient's machinery: here, not at start

        coursedir = self._executing.coursedir
        folder = Path(coursedir.format_path(coursedir.source_directory, ".", assignment))
        results = {}
        for path in sorted(folder.glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            if not judge.has_drivers(nb):
                continue
            resources = ResourcesDict(metadata={"path": str(folder)},
                                      nbgrader={"assignment": assignment, "notebook": path.stem})
            nb, _ = GuardedExecute(config=self._reference_config).preprocess(nb, resources)
            observed = Notes.read(nb).observed or {}
            results[path.stem] = {
                cell.metadata.nbgrader["grade_id"]: {"observed": observed.get(cell.metadata.nbgrader["grade_id"], []),
                                                     "error": _error(cell)}
                for cell in nb.cells if cell.cell_type == "code" and utils.is_grade(cell)
            }
        return results

    def feedback(self, student: str, assignment: str) -> float:
        """nbgrader's feedback for a recorded submission; returns the seconds it took."""
        assert self._feedback is not None, "this grader only executes"
        started = time.perf_counter()
        outcome = self._feedback.generate_feedback(assignment, student, force=True)
        if not outcome["success"]:
            raise RuntimeError(f"nbgrader: {outcome.get('log', '').strip()[-300:]}")
        return time.perf_counter() - started


def _error(cell: nbformat.NotebookNode) -> str:
    errors = [output for output in cell.outputs if output.output_type == "error"]
    return f"{errors[0].ename}: {errors[0].evalue}"[:300] if errors else ""


def _pages_kept(config: Config) -> Config:
    """``config`` for writing feedback: the student's files and folders named as a page (``*.html``) are not copied
    into the feedback folder (nbgrader copies a submission's other files there first), where one would take a
    notebook's page's place, or be a page of the student's beside the grader's."""
    config = copy.deepcopy(config)
    default = CourseDirectory.class_traits()["ignore"].default()
    ignored = config.CourseDirectory.get("ignore", default)
    ignored = ignored.get_value(default) if isinstance(ignored, LazyConfigValue) else ignored
    config.CourseDirectory.ignore = [*ignored, "*.html"]
    return config


def _api(config: Config) -> NbGraderAPI:
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    api.log_level = "WARN"
    return api


_grader: Grader | None = None  # this pool process's


def start(course: Course, gradebook_copy: Path, log: Path) -> None:
    """Pool initializer: a :class:`Grader` for the course, a log file that takes this process's and its
    kernels' stderr (kept away from the progress display), and kernels forked from a preloaded server
    where the system allows (:mod:`hooklab.grading.kernels`)."""
    global _grader
    die_with_parent()  # a killed grader takes its workers, their kernel servers and kernels with it
    with open(log, "a") as handle:
        os.dup2(handle.fileno(), 2)
    _grader = Grader(course.config(execute_only=True), gradebook_copy, course.config())


def execute(student: str, assignment: str) -> tuple[str, float]:
    """:meth:`Grader.execute` in a pool process."""
    assert _grader is not None, "worker not started"
    return _grader.execute(student, assignment)


def reference(assignment: str) -> dict[str, dict[str, dict[str, Any]]]:
    """:meth:`Grader.reference` in a pool process."""
    assert _grader is not None, "worker not started"
    return _grader.reference(assignment)


def feedback(student: str, assignment: str) -> float:
    """:meth:`Grader.feedback` in a pool process."""
    assert _grader is not None, "worker not started"
    return _grader.feedback(student, assignment)


_REASONS = [
    (re.compile(r"NotJSONError|not valid JSON|Notebook does not appear to be JSON", re.I),
     "not a valid notebook file (JSON)"),
    # before nbformat's: nbgrader raises a ValidationError for cells whose metadata are not the assignment's
    (re.compile(r"missing grade cell|metadata|MissingEntry", re.I), "the notebook does not match the assignment"),
    (re.compile(r"ValidationError|NBFormatError|Notebook is invalid", re.I), "not a valid notebook (nbformat)"),
]


def failure_reason(log: str) -> str:
    """A one-line reason for a failed nbgrader autograde, from its log."""
    for pattern, reason in _REASONS:
        if pattern.search(log):
            return reason
    lines = [line for line in log.strip().splitlines() if line.strip()]
    return f"nbgrader could not grade it: {lines[-1][:200] if lines else 'no log'}"
