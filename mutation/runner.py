"""Run one notebook's mutants under one seed, as the grader judges them, in forks of one process.

The process runs the solution notebook cell by cell in an IPython shell, each cell readied as ``hooklab autograde``
readies it (:func:`hooklab.observations.begin` with a seed drawn from the run's for that cell; test cells sent
without their expected values, :func:`hooklab.grading.judge.without_expectations`). At each answer cell it forks
once per mutant: the fork runs the mutant and the cells after it up to the exercise's last test, and hands back
what each test raised and observed. The process then runs the solution's own answer and the same cells: the
reference. A test fails a mutant as the grader fails a submission: it raised, or :func:`judge.verdict` finds its
observations differ from the reference's. A fork that runs past ``TIMEOUT`` or dies fails (a kernel stopped); its
verdict then begins with :data:`TIMED_OUT` (or says it died), so that :mod:`mutation.score` can tell such kills apart.

Some state does not survive a fork: a process group of ``torch.distributed`` (gloo's threads and sockets) or CUDA. A
fork taken while the notebook holds it would hang on the exercise's first collective. So at the start of each
exercise, while the process holds none of it, the process forks a spare copy of itself, which waits. When an answer
cell comes after a cell that made such state, the mutants are run in forks of the spare instead: each first runs
the cells from the spare's place up to the answer cell (each earlier answer with the solution, as the process ran
them), so that it makes that state itself, then the mutant and its tests. The reference still runs in the process.

With READINGS_JSON ({grade_id: {name: answer source}}: the catalogue's wrong readings) it runs those answers in
place of the mutants, each keyed ``grade_id|reading: name``.

Usage (by :mod:`mutation.score`): python -m mutation.runner NOTEBOOK SEED KEYS_JSON OUT_JSON [READINGS_JSON]
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

TIMEOUT = 60.0  # seconds a fork may take (its answer and tests)
MEMORY = 6 << 30  # bytes of address space a fork may use
JOBS = os.cpu_count() or 1  # forks at once
NOT_JUDGED = "not judged"  # how a verdict begins when the reference failed its own test: the mutant is not killed
TIMED_OUT = "still running after"  # how a verdict begins when the fork ran past its time and was stopped


def exercises(nb: Any) -> list[dict[str, Any]]:
    """Each answer cell with tests: its index, grade_id, and the index of the exercise's last test cell."""
    from nbgrader import utils

    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and utils.is_solution(cell) and not utils.is_grade(cell):
            grade_id = cell.metadata.nbgrader["grade_id"]
            tests = [i for i, c in enumerate(nb.cells) if utils.is_grade(c)
                     and c.metadata.nbgrader["grade_id"].startswith(f"{grade_id}_test")]
            if tests:
                found.append({"index": index, "grade_id": grade_id, "last": max(tests)})
    return found


def notebook_shell(path: Path) -> tuple[Any, Any, set[Any]]:
    """The notebook at ``path``, read, with the working folder made its own; an IPython shell that keeps no history,
    to run its cells in this process as a grading kernel runs them; and its cells' ids (as
    :func:`hooklab.grading.execute.cell_key` takes them)."""
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    nb = nbformat.read(path, as_version=4)
    os.chdir(path.parent)
    config = Config()
    config.HistoryManager.enabled = False
    return nb, InteractiveShell.instance(config=config), {cell.get("id") for cell in nb.cells}


def main(notebook: str, seed: str, keys_file: str, out_file: str, readings_file: str = "") -> None:
    import torch
    from nbgrader import utils

    from hooklab import observations
    from hooklab.grading import judge
    from hooklab.grading.execute import cell_key
    from mutation.mutate import mutants, solution_lines

    torch.set_num_threads(1)  # no thread pool before the forks: a fork keeps only the thread that forked
    wanted = set(json.loads(Path(keys_file).read_text()))  # "grade_id|key" of the mutants to run; empty: all
    readings = json.loads(Path(readings_file).read_text()) if readings_file else None
    path = Path(notebook)
    nb, shell, source_ids = notebook_shell(path)  # the runner runs the source itself
    name = path.stem

    def run(index: int, source: str | None = None) -> tuple[str, list[Any] | None]:
        """Run cell ``index`` (with ``source`` instead of its own) as the grader does: what it raised, what it
        observed."""
        cell = nb.cells[index]
        test = utils.is_grade(cell)
        observations.begin(observations.cell_seed(seed, name, cell_key(cell, source_ids)), test)
        code = source if source is not None else judge.without_expectations(cell.source) if test else cell.source
        result = shell.run_cell(code, store_history=False, silent=True)
        error = result.error_before_exec or result.error_in_exec
        raised = f"{type(error).__name__}: {error}"[:200] if error is not None else ""
        return raised, json.loads(observations.collected()) if test else None

    def exercise_run(ex: dict[str, Any], answer: str) -> dict[str, Any]:
        tests = {}
        for index in range(ex["index"], ex["last"] + 1):
            cell = nb.cells[index]
            if cell.cell_type != "code":
                continue
            raised, seen = run(index, answer if index == ex["index"] else None)
            if utils.is_grade(cell) and cell.metadata.nbgrader["grade_id"].startswith(f"{ex['grade_id']}_test"):
                tests[cell.metadata.nbgrader["grade_id"]] = {"raised": raised, "observed": seen}
        return tests

    def replayed(start: int, request: dict[str, Any]) -> list[dict[str, Any] | str]:
        """In the spare (a copy of the process before cell ``start`` ran): the request's answers, each in a fork that
        first runs the cells from ``start`` up to the exercise's answer cell as the process ran them."""
        ex, answered = request["exercise"], {int(index): code for index, code in request["answered"].items()}

        def work(answer: str) -> dict[str, Any]:
            for index in range(start, ex["index"]):
                if nb.cells[index].cell_type == "code":
                    run(index, answered.get(index))
            return exercise_run(ex, answer)

        return _forked(request["answers"], work, quiet, request["timeout"])

    results: dict[str, str] = {}
    quiet, position = os.open(os.devnull, os.O_WRONLY), 0
    spare: _Spare | None = None
    answered: dict[int, str] = {}  # the answer cells the process ran with the solution's source: index → source
    since_spare = 0.0  # seconds the process spent running cells since the spare was forked
    try:
        for ex in exercises(nb):
            if ex["index"] < position:  # its answer ran already, with an earlier exercise's tests after it
                results[f"{ex['grade_id']}|"] = "not run: its answer comes before the last test of an earlier exercise"
                continue
            if not _unforkable():  # a copy of the process here, for the exercises a fork of the process cannot run
                if spare is not None:
                    spare.stop()
                spare, since_spare = _Spare(position, lambda request, start=position: replayed(start, request)), 0.0
            started = time.monotonic()
            for index in range(position, ex["index"]):
                if nb.cells[index].cell_type == "code":
                    run(index)
            since_spare += time.monotonic() - started
            source, lines = solution_lines(nb.cells[ex["index"]].source)
            if readings is not None:
                chosen = [_Reading(f"reading: {name}", answer)
                          for name, answer in readings.get(ex["grade_id"], {}).items()]
            else:
                chosen = [m for m in mutants(source, lines) if not wanted or f"{ex['grade_id']}|{m.key}" in wanted]
            if not chosen:
                outcomes = []
            elif not _unforkable():
                outcomes = _forked([m.source for m in chosen], lambda answer, ex=ex: exercise_run(ex, answer), quiet)
            else:  # the spare runs them, each fork replaying the cells since the spare's place (twice their time more)
                assert spare is not None  # one is forked before the first cell runs
                outcomes = spare.run({"exercise": ex, "answers": [m.source for m in chosen],
                                      "answered": {i: code for i, code in answered.items() if i >= spare.position},
                                      "timeout": TIMEOUT + 2 * since_spare})
            started = time.monotonic()
            reference = exercise_run(ex, source)  # the process goes on from here with the solution
            since_spare += time.monotonic() - started
            answered[ex["index"]] = source
            position = ex["last"] + 1
            for mutant, outcome in zip(chosen, outcomes):
                results[f"{ex['grade_id']}|{mutant.key}"] = _judged(outcome, reference)
    finally:
        if spare is not None:
            spare.stop()
    Path(out_file).write_text(json.dumps(results))


class _Reading(NamedTuple):
    """A wrong reading's answer, run where a mutant would be."""

    key: str
    source: str


def _unforkable() -> str:
    """What this process holds that a fork of it cannot use ("" if nothing): state kept by threads, which a fork
    does not have (the forked child hangs on the first collective or CUDA call)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return ""
    distributed = getattr(torch, "distributed", None)
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        return "a torch.distributed process group"
    if torch.cuda.is_initialized():
        return "CUDA"
    return ""


class _Spare:
    """A fork of the process, taken where it could still be forked, waiting to run answers for it: each request
    (JSON, one line) is answered with the outcomes (JSON, one line) of ``serve(request)``, run in the copy."""

    def __init__(self, position: int, serve: Any) -> None:
        self.position = position  # the first cell the copy has not run
        requests, inbox = os.pipe()
        outbox, replies = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the copy: serve until the process closes its end (or dies)
            os.close(inbox)
            os.close(outbox)
            try:
                with os.fdopen(requests, "rb") as reader, os.fdopen(replies, "wb") as writer:
                    for line in reader:
                        writer.write(json.dumps(serve(json.loads(line))).encode() + b"\n")
                        writer.flush()
            finally:
                os._exit(0)
        os.close(requests)
        os.close(replies)
        self.writer, self.reader = os.fdopen(inbox, "wb"), os.fdopen(outbox, "rb")

    def run(self, request: dict[str, Any]) -> list[dict[str, Any] | str]:
        """The copy's outcomes for ``request``."""
        self.writer.write(json.dumps(request).encode() + b"\n")
        self.writer.flush()
        line = self.reader.readline()
        if not line:
            return [f"not run: the copy of the process stopped ({self.stop()})"] * len(request["answers"])
        return json.loads(line)

    def stop(self) -> str:
        """End the copy; how it ended."""
        for stream in (self.writer, self.reader):
            try:
                stream.close()
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(self.pid, 0)
        return f"status {status}"


def _judged(outcome: dict[str, Any] | str, reference: dict[str, Any]) -> str:
    """Why the mutant fails its exercise's tests ("" if it passes them all)."""
    from hooklab.grading import judge

    if isinstance(outcome, str):
        return outcome
    for grade_id, expected in reference.items():
        if expected["raised"]:
            return f"{NOT_JUDGED}: the reference raised in {grade_id} ({expected['raised']})"
        got = outcome.get(grade_id)
        if got is None:
            return f"{grade_id} did not run"
        if got["raised"]:
            return f"{grade_id}: raised {got['raised']}"
        problem = judge.verdict(got["observed"] or [], expected["observed"] or [])
        if problem:
            return f"{grade_id}: {problem}"
    return ""


def _forked(items: list[Any], work: Any, quiet: int, timeout: float = TIMEOUT) -> list[dict[str, Any] | str]:
    """``work(item)`` for each item, each in a fork of this process (``JOBS`` at once, each stopped after ``timeout``
    seconds), its output silenced."""
    results: list[dict[str, Any] | str] = ["not run"] * len(items)
    running: dict[int, tuple[int, int, float]] = {}  # pid → (item, read end, started)
    pending = list(range(len(items)))
    buffers: dict[int, bytes] = {}
    while pending or running:
        while pending and len(running) < JOBS:
            item = pending.pop(0)
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                os.dup2(quiet, 1)
                os.dup2(quiet, 2)
                resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
                try:
                    payload = json.dumps(work(items[item])).encode()
                except BaseException as error:  # the mutant's: it fails
                    payload = json.dumps(f"the run failed: {type(error).__name__}: {error}"[:300]).encode()
                with os.fdopen(write, "wb") as pipe:
                    pipe.write(payload)
                os._exit(0)
            os.close(write)
            os.set_blocking(read, False)
            running[pid] = (item, read, time.monotonic())
            buffers[pid] = b""
        time.sleep(0.002)
        for pid, (item, read, started) in list(running.items()):
            try:
                while chunk := os.read(read, 1 << 16):
                    buffers[pid] += chunk
            except BlockingIOError:
                pass
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == 0 and time.monotonic() - started > timeout:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                results[item] = f"{TIMED_OUT} {timeout:.0f} s (a timeout fails the test)"
            elif done == 0:
                continue
            else:
                try:
                    while chunk := os.read(read, 1 << 16):
                        buffers[pid] += chunk
                except BlockingIOError:
                    pass
                try:
                    results[item] = json.loads(buffers[pid])
                except ValueError:
                    results[item] = f"the run died (status {status})"
            os.close(read)
            del running[pid], buffers[pid]
    return results


if __name__ == "__main__":
    main(*sys.argv[1:6])
