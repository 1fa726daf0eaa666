"""One command to grade a class, in three stages: plan (:mod:`hooklab.grading.plan`), execute (the local pool of
forked workers, or a Dask cluster), finish (the ledger, grades.csv, the class report and the summary)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import multiprocessing
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nbgrader.api import Gradebook
from tqdm import tqdm

from hooklab.grading import class_report, worker
from hooklab.grading.course import Course
from hooklab.grading.gradebook import share_engines
from hooklab.grading.grades_csv import write_grades_csv
from hooklab.grading.kernels.preloading import modules_to_preload
from hooklab.grading.kernels.server import KernelServer
from hooklab.grading.ledger import LEDGER, Entry, LastRun, Ledger
from hooklab.grading.plan import Plan, Task, code_of, make_plan
from hooklab.grading.record import ResultRecorder
from hooklab.grading.submissions import DEFAULT_FILENAME_REGEX
from hooklab.grading.summary import pass_rates, standing, summary
from hooklab.grading.timing import Stages
from hooklab.grading.untrusted import printable
from hooklab.seeding import SEED_VARIABLE

if TYPE_CHECKING:
    from hooklab.grading.lms import Lms

LOG = "grading.log"


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
    server: KernelServer | None = None,
    lms: Lms | None = None,
) -> str:
    """Grade every submission under ``submissions``; returns the summary (also written to the log).
    ``timestamps``: the submissions' ``timestamp.txt`` are nbgrader's
    (:func:`hooklab.grading.submissions.find_submissions`). ``server``: the kernel server the local workers'
    kernels are forked from, which the command started first so that it imports torch while the class is read
    (:func:`hooklab.grading.kernels.server.start_server`); None with Dask, or where kernels cannot be forked. A
    local worker without it (or whose server has ended) starts one of its own at its first kernel. ``lms``: the
    input is that LMS's export, mapped with its roster (:mod:`hooklab.grading.lms`).

    Three stages: :func:`hooklab.grading.plan.make_plan` (what to grade), :func:`_execute` (workers execute:
    ``jobs`` local processes, or with ``dask`` a local Dask cluster of ``jobs`` workers, or the workers of the Dask
    cluster at ``scheduler``, :mod:`hooklab.grading.cluster`; this process records each result in the gradebook
    through nbgrader's recording preprocessors, has its local workers write the feedback, and only then marks it
    done in the ledger, so a run that is stopped resumes with whatever was not finished), and :func:`_finish` (the
    ledger, grades.csv, the report and the summary)."""
    share_engines()  # here and in the workers forked from here: nbgrader's Gradebooks share an engine per database
    course.work_dir.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(course.work_dir / LEDGER)
    # the run's seed: every hidden input of the class and of the reference run is drawn from it, in the kernels
    # at test time; HOOKLAB_SEED (as grading.json logs it) draws a run's inputs again
    course = dataclasses.replace(course, seed=os.environ.get(SEED_VARIABLE) or str(secrets.randbits(63)))
    started = time.perf_counter()
    plan = make_plan(submissions, course, ledger, force=force, filename_regex=filename_regex,
                     timestamps=timestamps, lms=lms)
    stages = Stages(plan=time.perf_counter() - started)
    problems, reruns = _execute(plan, course, ledger, stages, jobs, dask=dask, scheduler=scheduler, server=server)
    return _finish(plan, course, ledger, stages, jobs, [*plan.problems, *problems], reruns)


def _execute(plan: Plan, course: Course, ledger: Ledger, stages: Stages, jobs: int, *, dask: bool,
             scheduler: str | None, server: KernelServer | None) -> tuple[list[str], dict[str, int]]:
    """Record at once the tasks that cannot be run; execute the others on the local pool or a Dask cluster, each
    recorded as it comes back. Returns the problems met, and the submissions run again because their worker
    died."""
    record_result = ResultRecorder(course, ledger, plan.points, stages)
    runnable = []
    for task in plan.todo:
        if task.reason:
            ledger.set(task.key, record_result(task, task.reason))
        else:
            runnable.append(task)
    if not runnable:
        return [], {}
    started = time.perf_counter()
    assignments = sorted({t.assignment for t in runnable})
    with tempfile.TemporaryDirectory(prefix=".workers-", dir=course.work_dir) as scratch:
        snapshot = Path(scratch) / "gradebook.db"
        shutil.copyfile(course.db_url.removeprefix("sqlite:///"), snapshot)
        if server is not None and server.running():  # the local workers' one server: what the notebooks import
            code = "\n".join(code_of(path) for assignment in assignments for path in plan.sources[assignment])
            server.preload(modules_to_preload(code))
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
                    problems = _run(pool, execution, runnable, ledger, record_result, stages)
                finally:
                    cluster.close()
            else:
                # one more than the workers: a worker that finishes starts the next at once, not once this process
                # has recorded its result
                execution = Execution(lambda task: pool.submit(worker.execute, task.student, task.assignment), jobs + 1)
                problems = _run(pool, execution, runnable, ledger, record_result, stages)
    stages.wall = time.perf_counter() - started
    return problems, execution.reruns


def _finish(plan: Plan, course: Course, ledger: Ledger, stages: Stages, jobs: int, problems: list[str],
            reruns: dict[str, int]) -> str:
    """Save the ledger with this run's timing and problems, write grades.csv and the class report, and return the
    summary."""
    ledger.last_run = LastRun(stages.figures(jobs) if stages.count else None, problems)
    ledger.save()
    write_grades_csv(course, ledger)
    try:  # the scores, feedback and CSV are written already: a report that fails costs only itself
        class_report.write(course, ledger)
    except Exception as error:  # any failure of matplotlib or of the page
        problems = [*problems, f"the class report could not be written ({error!r}); grades.csv has the scores"]
    with Gradebook(course.db_url) as gradebook:
        rates = pass_rates(gradebook, plan.seen)
    entries = {key: entry for key, entry in ledger.entries.items() if key in plan.seen}
    report = summary(entries, rates, plan.skipped, problems, reruns)
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
class Execution:
    """Where submissions are executed: ``submit`` returns a future of :func:`worker.execute`'s result;
    ``slots`` submissions are kept there at once; ``restarts`` says how often a finished one was started
    again because its worker died (a Dask cluster re-runs it elsewhere)."""

    submit: Callable[[Task], Future]
    slots: int
    restarts: Callable[[Future], int] = lambda future: 0
    reruns: dict[str, int] = field(default_factory=dict)  # "student/assignment" → times run again


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
                    if future.exception():  # not in the ledger: the next run grades it again
                        problems.append(f"{task.key}: scored {entry.score:g} / {entry.max_score:g} in the gradebook, "
                                        f"but its feedback could not be written ({future.exception()}); run again to "
                                        "write it")
                        done(task, None)
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
