"""Grading on a Dask cluster: ``hooklab autograde --scheduler ADDRESS``, or ``--dask`` for a local one.

Each Dask worker is given the course's grading side once, as bytes (:class:`CourseOnWorker`): the
assignments' source folders and a copy of the gradebook, unpacked into the worker's local directory,
and a :class:`hooklab.grading.worker.Grader` on them, whose kernels are forked and sandboxed on that
machine as in the local mode. A submission travels to a worker as its files' bytes and its autograded
folder comes back the same way (:func:`grade`), so no shared file system is needed. The grading process
records the scores and has the feedback written by its local pool, exactly as in the local mode.

A worker that dies takes its submission with it; the scheduler runs it again on another worker.
``--dask`` allows that once per submission (``distributed.scheduler.allowed-failures = 1``); on an
existing cluster its own setting applies. Either way the summary names the submissions that were run again.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import threading
import uuid
import warnings
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import dask
from distributed import Client, LocalCluster, WorkerPlugin, get_worker
from sqlalchemy.exc import SAWarning
from traitlets.config import Config

from hooklab.grading.course import Course
from hooklab.grading.worker import Grader

RERUNS_ALLOWED = 1  # times a submission is run again after its worker died (--dask)
QUEUED_PER_WORKER = 2  # submissions sent to each worker at once: one running, one waiting
_LAYOUT = {"source_directory": "source", "submitted_directory": "submitted", "autograded_directory": "autograded",
           "feedback_directory": "feedback", "release_directory": "release"}
_one_at_a_time = threading.Lock()  # a worker process grades one submission at a time, whatever its threads


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder``, by its path relative to it (a link is neither followed nor sent)."""
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and not path.is_symlink()}


def unpack(files: dict[str, bytes], folder: Path) -> None:
    """Write ``files`` (from :func:`folder_bytes`) under ``folder``; a path that would leave it is refused."""
    base = folder.resolve()
    for name, data in files.items():
        target = (base / name).resolve()
        if not target.is_relative_to(base):
            raise ValueError(f"{name!r} is outside the folder it is unpacked into")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


class CourseOnWorker(WorkerPlugin):
    """A Dask worker plugin that sets up one course's grading on each worker (see the module doc)."""

    idempotent = True  # registered again by a resumed run: the workers that have it keep it

    def __init__(self, config: Config, sources: dict[str, bytes], gradebook: bytes, name: str) -> None:
        self.config, self.sources, self.gradebook, self.name = config, sources, gradebook, name
        self.root: Path | None = None
        self.grader: Grader | None = None

    def setup(self, worker: Any) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="hooklab-course-", dir=worker.local_directory))
        unpack(self.sources, self.root / _LAYOUT["source_directory"])
        gradebook = self.root / "gradebook.db"
        gradebook.write_bytes(self.gradebook)
        config = copy.deepcopy(self.config)
        config.CourseDirectory.root = str(self.root)
        config.CourseDirectory.update(_LAYOUT)
        # this copy of the course is private too, as are the grading machine's paths where the worker shares it
        config.Sandbox.hidden = [*config.Sandbox.get("hidden", []), str(self.root)]
        self.grader = Grader(config, gradebook)

    def teardown(self, worker: Any) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)


def grade(plugin: str, student: str, assignment: str, files: dict[str, bytes]) -> tuple[str, float, dict[str, bytes]]:
    """Runs on a Dask worker: autograde one submission given as its files; returns why it could not be
    run (or ""), the seconds it took and its autograded folder's files. Nothing of it stays on the worker."""
    course: CourseOnWorker = get_worker().plugins[plugin]
    assert course.root is not None and course.grader is not None, "the course is not set up on this worker"
    submitted = course.root / _LAYOUT["submitted_directory"] / student / assignment
    autograded = course.root / _LAYOUT["autograded_directory"] / student / assignment
    with _one_at_a_time, warnings.catch_warnings():
        # nbgrader's autograde makes SQLAlchemy warn about its session: harmless (the local pool logs it)
        warnings.simplefilter("ignore", SAWarning)
        try:
            unpack(files, submitted)
            reason, seconds = course.grader.execute(student, assignment)
            return reason, seconds, folder_bytes(autograded) if autograded.is_dir() else {}
        finally:
            shutil.rmtree(submitted, ignore_errors=True)
            shutil.rmtree(autograded, ignore_errors=True)


class DaskExecution:
    """Where the grading process sends submissions in the Dask mode: ``submit`` returns a future of what
    the local pool's :func:`hooklab.grading.worker.execute` returns, once the autograded files are in place."""

    def __init__(self, course: Course, assignments: list[str], gradebook: Path, scheduler: str | None,
                 workers: int) -> None:
        self.course = course
        if scheduler:
            self.cluster, self.client = None, Client(scheduler)
        else:
            with dask.config.set({"distributed.scheduler.allowed-failures": RERUNS_ALLOWED}):
                self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None)
            self.client = Client(self.cluster)
        source = course.root / course.coursedir.source_directory
        sources = {f"{a}/{name}": data for a in assignments for name, data in folder_bytes(source / a).items()}
        config = course.config(execute_only=True)
        name = f"hooklab-course-{uuid.uuid4().hex}"
        self.plugin = name
        self.client.register_plugin(CourseOnWorker(config, sources, gradebook.read_bytes(), name), name=name)
        self._remote: dict[Future, Any] = {}  # held until done: the scheduler keeps the task's story meanwhile

    @property
    def slots(self) -> int:
        """How many submissions to keep at the cluster at once."""
        return QUEUED_PER_WORKER * max(1, len(self.client.scheduler_info(n_workers=-1)["workers"]))

    def submit(self, student: str, assignment: str) -> Future:
        files = folder_bytes(self.course.step_dir("submitted") / student / assignment)
        remote = self.client.submit(grade, self.plugin, student, assignment, files,
                                    key=f"hooklab-{student}-{assignment}-{uuid.uuid4().hex[:8]}", pure=False)
        result: Future = Future()
        self._remote[result] = remote
        target = self.course.step_dir("autograded") / student / assignment

        def arrived(remote: Any) -> None:  # in the client's thread; the folder is this submission's alone
            try:
                reason, seconds, autograded = remote.result()
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir(parents=True)
                unpack(autograded, target)
            except BaseException as error:  # the grading process reports it like a failed pool worker
                result.set_exception(error)
            else:
                result.set_result((reason, seconds))

        remote.add_done_callback(arrived)
        return result

    def restarts(self, future: Future) -> int:
        """How many times the submission behind ``future`` was started again because its worker died."""
        remote = self._remote.pop(future)  # held while the scheduler is asked: released, the task is forgotten
        key = remote.key

        def deaths(dask_scheduler: Any) -> int:
            task = dask_scheduler.tasks.get(key)
            return task.suspicious if task is not None else 0

        try:
            return int(self.client.run_on_scheduler(deaths))
        finally:
            remote.release()

    def close(self) -> None:
        try:
            self.client.unregister_worker_plugin(self.plugin)
        finally:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
