"""One command to grade a class: collect, autograde in parallel, record, report."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import json
import multiprocessing
import os
import secrets
import shutil
import stat
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from tqdm import tqdm

import hooklab
from hooklab.grading import class_report, worker
from hooklab.grading.course import Course, grade_ids
from hooklab.grading.feedback import write_failure_feedback
from hooklab.grading.gradebook import ensure_assignments, graded_keys, max_scores
from hooklab.grading.grades_csv import CellScoresExportPlugin
from hooklab.grading.kernels.sandbox import Sandbox, amount
from hooklab.grading.kernels.server import start_server
from hooklab.grading.keys import submission_key
from hooklab.grading.ledger import Entry, Ledger
from hooklab.grading.record import record
from hooklab.grading.review import set_manual_scores
from hooklab.grading.submissions import DEFAULT_FILENAME_REGEX, find, opened, place
from hooklab.grading.summary import pass_rates, standing, summary
from hooklab.grading.untrusted import printable
from hooklab.seeding import SEED_VARIABLE

LEDGER = "grading.json"
GRADES_CSV = "grades.csv"
LOG = "grading.log"


def unreadable(folder: Path, notebooks: list[str], sandbox: Sandbox) -> str:
    """Why a submission folder cannot be autograded at all, or "" if it can. A notebook's size is checked
    before it is read and the text of its cells before it runs, so the grader spends no time on a huge one."""
    present = [name for name in notebooks if (folder / name).is_file()]
    if not present:
        return f"no notebook submitted (expected {', '.join(notebooks)})"
    for name in present:
        info = os.lstat(folder / name)
        if not stat.S_ISREG(info.st_mode):
            return f"{name} is a link, not a notebook file"
        if sandbox.notebook_size and info.st_size > sandbox.notebook_size:
            return (f"{name} is {amount(info.st_size)}, more than the {amount(sandbox.notebook_size)} a notebook may "
                    "be (c.Sandbox.notebook_size)")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # nbformat's warnings about a notebook's age, not its validity
                nb = nbformat.read(folder / name, as_version=4)
                nbformat.validate(nb)
        except Exception as error:  # nbformat raises several unrelated types for a broken file
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            return f"{name} is not a valid notebook ({first_line[:120]})"
        text = sum(len(cell.source.encode()) for cell in nb.cells)
        if sandbox.source_size and text > sandbox.source_size:
            return (f"{name} has {amount(text)} of text in its cells, more than the {amount(sandbox.source_size)} a "
                    "notebook may hold (c.Sandbox.source_size)")
    return ""


def of_another_assignment(folder: Path, assignment: str, course: Course) -> str:
    """Why the readable notebooks of a submission are not ``assignment``'s, if they hold only another
    assignment's exercises (a notebook saved under the wrong name), or ""."""
    for name in course.notebooks[assignment]:
        ids = grade_ids(nbformat.read(folder / name, as_version=4).cells) if (folder / name).is_file() else set()
        if not ids or ids & course.cell_ids[assignment]:
            continue
        overlap, other = max((len(ids & theirs), owner) for owner, theirs in course.cell_ids.items())
        if overlap:
            return (f"{name} holds the exercises of {other} ({', '.join(course.notebooks[other])}), not those of "
                    f"{assignment}: hand in {assignment}'s own notebook")
    return ""


def code_of(notebook: Path) -> str:
    """The code of a notebook's code cells."""
    return "\n".join(cell.source for cell in nbformat.read(notebook, as_version=4).cells if cell.cell_type == "code")


def grading_fingerprint(course: Course, assignment: str) -> str:
    """What the grader brings to a result: the assignment's source (hidden tests included), hooklab's
    checkers (what they read and observe, how they draw hidden inputs) and grading code, and the course
    configuration with this run's options."""
    package = Path(hooklab.__file__).parent
    paths = [
        *sorted(p for p in (course.root / course.coursedir.source_directory / assignment).rglob("*") if p.is_file()),
        *(package / name for name in ("checks.py", "observations.py", "seeding.py", "exercises.py")),
        *sorted((package / "grading").rglob("*.py")),
        *sorted((package / "templates").glob("*")),
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
    filename_regex: str = DEFAULT_FILENAME_REGEX,
    timestamps: bool = False,
    dask: bool = False,
    scheduler: str | None = None,
) -> str:
    """Grade every submission under ``submissions``; returns the summary (also written to the log).
    ``timestamps``: the submissions' ``timestamp.txt`` are nbgrader's (:func:`hooklab.grading.submissions.find`).

    Three stages: :func:`_plan` (what to grade), :func:`_execute` (workers execute: ``jobs`` local processes, or
    with ``dask`` a local Dask cluster of ``jobs`` workers, or the workers of the Dask cluster at ``scheduler``,
    :mod:`hooklab.grading.cluster`; this process records each result in the gradebook through nbgrader's
    recording preprocessors, has its local workers write the feedback, and only then marks it done in the
    ledger, so a run that is stopped resumes with whatever was not finished), and :func:`_finish` (the ledger,
    grades.csv, the report and the summary)."""
    course.work_dir.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(course.work_dir / LEDGER)
    # the run's seed: every hidden input of the class and of the reference run is drawn from it, in the kernels
    # at test time; HOOKLAB_SEED (as grading.json logs it) draws a run's inputs again
    course = dataclasses.replace(course, seed=os.environ.get(SEED_VARIABLE) or str(secrets.randbits(63)))
    plan = _plan(submissions, course, ledger, force=force, filename_regex=filename_regex, timestamps=timestamps)
    stages = Stages()
    reruns = _execute(plan, course, ledger, stages, jobs, dask=dask, scheduler=scheduler)
    return _finish(plan, course, ledger, stages, jobs, reruns)


@dataclass
class Plan:
    """What a run grades: the submissions to grade, and what it found on the way."""

    todo: list[Task]  # to grade (those with a reason are recorded without running)
    seen: set[str]  # every submission key of the input (the summary's and the CSV's)
    skipped: int  # graded already, unchanged
    problems: list[str]  # what the summary reports: unreadable input, assignments nbgrader could not register
    sources: dict[str, list[Path]]  # assignment → its source notebooks
    points: dict[str, float]  # assignment → its points


def _plan(submissions: Path, course: Course, ledger: Ledger, *, force: bool, filename_regex: str,
          timestamps: bool) -> Plan:
    """Read the input, copy each submission into the course, register the assignments, and say which
    submissions need grading: new, changed, or graded by another grader (:func:`grading_fingerprint`)."""
    api = NbGraderAPI(config=course.config())
    sandbox = Sandbox(config=course.config())
    with opened(submissions, sandbox) as (folder, problems):
        found = find(folder, course, sandbox, filename_regex, timestamps)
        problems += found.problems
        assignments = sorted({s.assignment for s in found.submissions})
        sources = {a: sorted((course.root / course.coursedir.source_directory / a).glob("*.ipynb"))
                   for a in assignments}
        broken = ensure_assignments(course.db_url, sources, api.generate_assignment, force=force)
        problems += [f"{a}: nbgrader could not register the assignment; its submissions were not graded"
                     for a in broken]
        graders = {a: grading_fingerprint(course, a) for a in assignments}
        in_gradebook = graded_keys(course.db_url)
        todo, seen, skipped = [], set(), 0
        for submission in found.submissions:
            if submission.assignment in broken:
                continue
            seen.add(submission.key)
            if submission.refused:  # its files are not copied: what was placed before stays as it was
                files, reason = hashlib.sha256(submission.refused.encode()).hexdigest(), submission.refused
            else:
                target, files = place(submission, course)
                notebooks = course.notebooks[submission.assignment]
                reason = (unreadable(target, notebooks, sandbox)
                          or of_another_assignment(target, submission.assignment, course))
            fingerprint = hashlib.sha256(f"{files}:{graders[submission.assignment]}".encode()).hexdigest()
            if not force and submission.key in in_gradebook and ledger.is_current(submission.key, fingerprint):
                skipped += 1
            else:
                todo.append(Task(submission.student, submission.assignment, fingerprint, files, reason))
    points = max_scores(course.db_url, sorted({task.assignment for task in todo}))
    return Plan(todo, seen, skipped, problems, sources, points)


@dataclass
class ResultRecorder:
    """Records a task's result in the gradebook (:func:`hooklab.grading.record.record`) and makes its ledger
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
        recorded = record(course, task.student, task.assignment, executed=not reason, reference=reference)
        if not task.reason:  # the stages describe submissions that went to a worker
            self.stages.add(record=time.perf_counter() - started, **recorded.seconds)
        if reason:
            feedback = course.step_dir("feedback") / task.student / task.assignment
            write_failure_feedback(feedback, course.notebooks[task.assignment], reason, self.points[task.assignment])
        return Entry(task.fingerprint, not reason, reason, recorded.score, self.points[task.assignment],
                     files=task.files, held=recorded.held, would_be=recorded.would_be, notes=recorded.notes,
                     released=released, seeds=recorded.seeds)


def _execute(plan: Plan, course: Course, ledger: Ledger, stages: Stages, jobs: int, *, dask: bool,
             scheduler: str | None) -> dict[str, int]:
    """Record at once the tasks that cannot be run; execute the others on the local pool or a Dask cluster, each
    recorded as it comes back. Returns the submissions run again because their worker died."""
    record_result = ResultRecorder(course, ledger, plan.points, stages)
    runnable = []
    for task in plan.todo:
        if task.reason:
            ledger.set(task.key, record_result(task, task.reason))
        else:
            runnable.append(task)
    if not runnable:
        return {}
    started = time.perf_counter()
    assignments = sorted({t.assignment for t in runnable})
    with tempfile.TemporaryDirectory(prefix=".workers-", dir=course.work_dir) as scratch:
        snapshot = Path(scratch) / "gradebook.db"
        shutil.copyfile(course.db_url.removeprefix("sqlite:///"), snapshot)
        if not (dask or scheduler):  # one kernel server for the local workers: its preloading is done once
            code = "\n".join(code_of(path) for assignment in assignments for path in plan.sources[assignment])
            start_server(course.config(execute_only=True), code)
        # forked: the workers share this process's kernel server and what it has imported
        with _shared_heap(), ProcessPoolExecutor(jobs, multiprocessing.get_context("fork"), worker.start,
                                                 (course, snapshot, course.work_dir / LOG)) as pool:
            record_result.references.update({a: pool.submit(worker.reference, a) for a in assignments})
            if dask or scheduler:
                from hooklab.grading.cluster import DaskExecution  # dask.distributed loads only for this mode

                cluster = DaskExecution(course, assignments, snapshot, scheduler, jobs)
                try:
                    execution = Execution(lambda task: cluster.submit(task.student, task.assignment), cluster.slots,
                                          cluster.restarts)
                    plan.problems += _run(pool, execution, runnable, ledger, record_result, stages)
                finally:
                    cluster.close()
            else:
                execution = Execution(lambda task: pool.submit(worker.execute, task.student, task.assignment), jobs)
                plan.problems += _run(pool, execution, runnable, ledger, record_result, stages)
    stages.wall = time.perf_counter() - started
    return execution.reruns


def _finish(plan: Plan, course: Course, ledger: Ledger, stages: Stages, jobs: int, reruns: dict[str, int]) -> str:
    """Save the ledger, export grades.csv, write the class report, and return the summary."""
    ledger.save()
    rates = export(course, ledger, plan.seen)
    try:  # the scores, feedback and CSV are written already: a report that fails costs only itself
        class_report.write(course, ledger, stages.figures(jobs) if stages.count else None, plan.problems)
    except Exception as error:  # any failure of matplotlib or of the page
        plan.problems.append(f"the class report could not be written ({error!r}); grades.csv has the scores")
    entries = {key: entry for key, entry in ledger.entries.items() if key in plan.seen}
    report = summary(entries, rates, plan.skipped, plan.problems, reruns)
    return f"{report}\n{stages.describe(jobs)}" if stages.count else report


@contextlib.contextmanager
def _shared_heap() -> Iterator[None]:
    """While forked workers run: the objects this process holds are left alone by its garbage collector and
    theirs (gc.freeze, as Python's documentation advises before a fork: not walked, nor copied page by page)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@dataclass
class Stages:
    """Where a run's time went: seconds per stage, summed over the submissions that were executed."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    count: int = 0  # submissions executed
    wall: float = 0.0  # the whole run, workers' start included

    def add(self, **seconds: float) -> None:
        for stage, value in seconds.items():
            self.seconds[stage] += value

    def milliseconds(self) -> dict[str, float]:
        """Milliseconds per executed submission, by stage."""
        return {stage: 1000 * value / self.count for stage, value in self.seconds.items()}

    def figures(self, jobs: int) -> dict[str, float]:
        """The run's timing for the report: what it did, and ms per submission in each stage."""
        per_stage = {f"{stage} (ms per submission)": ms for stage, ms in self.milliseconds().items()}
        return {"submissions executed": self.count, "workers": jobs, "run (s)": self.wall,
                "run (ms per submission)": 1000 * self.wall / self.count, **per_stage}

    def describe(self, jobs: int) -> str:
        ms = self.milliseconds()
        return (
            f"Time per submission, in ms: waiting for a worker {ms['queue']:.0f} · autograde {ms['autograde']:.0f} "
            f"(kernel start {ms['kernel']:.0f}, cells {ms['cells']:.0f}) · record {ms['record']:.0f} · "
            f"feedback {ms['feedback']:.0f}; run: {self.wall:.1f} s with {jobs} workers, "
            f"{1000 * self.wall / self.count:.0f} ms per submission."
        )


STAGES = ("queue", "autograde", "kernel", "cells", "record", "feedback")  # kernel and cells are parts of autograde


@dataclass
class Execution:
    """Where submissions are executed: ``submit`` returns a future of :func:`worker.execute`'s result;
    ``slots`` submissions are kept there at once; ``restarts`` says how often a finished one was started
    again because its worker died (a Dask cluster re-runs it elsewhere)."""

    submit: Callable[[Task], Future]
    slots: int
    restarts: Callable[[Future], int] = lambda future: 0
    reruns: dict[str, int] = field(default_factory=dict)  # "student/assignment" → times run again


@dataclass
class Task:
    student: str
    assignment: str
    fingerprint: str  # the submission's files and the grader's side
    files: str  # the submission's files alone
    reason: str = ""  # why it cannot be run at all, found before running it

    @property
    def key(self) -> str:
        return submission_key(self.student, self.assignment)


def _run(pool: ProcessPoolExecutor, execution: Execution, tasks: list[Task], ledger: Ledger, record_result,
         stages: Stages) -> list[str]:
    """Execute every task, record each as it comes back, then have the pool write its feedback; a task
    enters the ledger once its feedback is done. No more executions are queued than ``execution`` has
    slots, so feedback is written as the run goes and a stopped run loses little. Returns the problems
    met; ``stages`` gets the time each stage took."""
    problems: list[str] = []
    backlog = iter(tasks)
    executing: dict[Future, tuple[Task, float]] = {}
    writing: dict[Future, tuple[Task, Entry]] = {}

    def execute_next() -> None:
        task = next(backlog, None)
        if task is not None:
            executing[execution.submit(task)] = task, time.perf_counter()

    def done(task: Task, entry: Entry | None) -> None:
        if entry is not None:
            ledger.set(task.key, entry)
        bar.update()
        shown = "✗ failed" if entry is None else f"{entry.score:g}/{entry.max_score:g}" + standing(entry)
        bar.set_postfix_str(f"{printable(task.key)} {shown}")

    def failed(task: Task, error: BaseException) -> None:  # a worker process that died takes its task with it
        problems.append(f"{task.key}: the grading process failed ({error!r}); run again to retry")
        done(task, None)

    for _ in range(execution.slots):
        execute_next()
    with tqdm(total=len(tasks), unit="submission", file=sys.stderr, dynamic_ncols=True) as bar:
        while executing or writing:
            finished, _ = wait([*executing, *writing], return_when=FIRST_COMPLETED)
            for future in finished:
                if future in writing:
                    task, entry = writing.pop(future)
                    if future.exception():
                        failed(task, future.exception())
                    else:
                        stages.add(feedback=future.result())
                        done(task, entry)
                    continue
                task, submitted = executing.pop(future)
                execute_next()  # first: the worker that is free executes the next while this one is recorded
                if restarts := execution.restarts(future):
                    execution.reruns[task.key] = restarts
                if future.exception():
                    failed(task, future.exception())
                    continue
                reason, seconds = future.result()
                stages.count += 1
                stages.add(queue=time.perf_counter() - submitted - seconds, autograde=seconds)
                try:
                    entry = record_result(task, reason)
                except Exception as error:  # one submission's recording costs only itself
                    failed(task, error)
                    continue
                if entry.ok:
                    writing[pool.submit(worker.feedback, task.student, task.assignment)] = (task, entry)
                else:
                    done(task, entry)
    return problems
