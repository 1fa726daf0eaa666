"""Throughput of `hooklab autograde` against plain sequential nbgrader, side by side.

hooklab autograde writes grades and feedback, so it is compared with what an instructor runs for
the same result, `nbgrader autograde` then `nbgrader generate_feedback`; the autograde step alone
is reported too. Both grade the same N submissions in two identical scratch courses; the scores must agree cell by
cell. The forward-hooks assignment gets solved, partly solved, blank and rewritten submissions
(tests/catalogues/corpus.py); another one (--assignment, make bench BENCH_ASSIGNMENT=06_applications) solved and blank
ones.
With --dask, hooklab also grades them on a local Dask cluster of as many workers (make bench BENCH_DASK=1).
Usage: python benchmarks/bench_autograde.py [N] [--dask] [--assignment NAME]   (make bench)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import nbformat  # noqa: E402 (below the sys.path line that puts tests/ first)
from nbclient import NotebookClient  # noqa: E402 (below the sys.path line that puts tests/ first)
from nbgrader.api import Gradebook  # noqa: E402 (below the sys.path line that puts tests/ first)

from catalogues import corpus  # noqa: E402 (below the sys.path line that puts tests/ first)
from conftest import make_course  # noqa: E402 (below the sys.path line that puts tests/ first)
from hooklab.grading.ledger import LAST_RUN  # noqa: E402 (below the sys.path line that puts tests/ first)

KINDS = ("full", "partial", "blank", "rewritten")


def nbgrader(course: Path, *args: str) -> None:
    """Run an nbgrader command in ``course``; what its kernels print (a warning each) is shown only if it fails."""
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(course)}
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args, "--log-level=ERROR"], cwd=course, env=env,
                            stderr=subprocess.PIPE, text=True)
    if result.returncode:
        sys.exit(f"nbgrader {args[0]} failed:\n{result.stderr[-3000:]}")


def scores(course: Path, assignment: str) -> dict[tuple[str, str], float]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {
            (submission.student_id, grade.name): grade.score
            for submission in gradebook.find_assignment(assignment).submissions
            for notebook in submission.notebooks
            for grade in notebook.grades
        }


def compute_floor(path: Path) -> float:
    """Seconds the solution notebook's cells take in a kernel that already ran them once (imports done)."""
    client = NotebookClient(nbformat.read(path, as_version=4), kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    with client.setup_kernel():
        for _ in range(2):  # the second pass is timed
            start = time.perf_counter()
            for index, cell in enumerate(client.nb.cells):
                client.execute_cell(cell, index)
            seconds = time.perf_counter() - start
    return seconds


def hooklab(course: Path, inbox: Path, *options: str) -> tuple[float, str]:
    """Seconds `hooklab autograde` takes on the inbox, and its summary."""
    start = time.perf_counter()
    report = subprocess.run(
        [sys.executable, "-m", "hooklab.cli", "autograde", "--config", str(course / "nbgrader_config.py"), *options,
         str(inbox)],
        check=True, stdout=subprocess.PIPE, text=True,
    ).stdout
    return time.perf_counter() - start, report


def submissions(assignment: str, count: int) -> list[corpus.Case]:
    if assignment == corpus.ASSIGNMENT:
        by_kind = {case.student: case.files for case in corpus.structural_cases() if case.student in KINDS}
    else:
        name = corpus.notebook_name(assignment)
        by_kind = {"full": {name: corpus.notebook(assignment, corpus.solutions(assignment))},
                   "blank": {name: corpus.notebook(assignment, {})}}
    kinds = [kind for kind in KINDS if kind in by_kind]
    return [corpus.Case(f"s{i:03d}", assignment, by_kind[kinds[i % len(kinds)]], {}) for i in range(count)]


def breakdown(timing: dict[str, float], total: float) -> str:
    """Where a submission's time goes, by who spends it: a worker (the kernel's start and cells, and the rest of
    nbgrader's autograde around them; then the feedback), the grading process (recording), the queue; and the
    run's seconds outside the pool."""
    ms = {stage: timing[f"{stage} (ms per submission)"] for stage in
          ("queue", "autograde", "kernel", "cells", "record", "feedback")}
    around = ms["autograde"] - ms["kernel"] - ms["cells"]
    run, plan = timing["run (s)"], timing.get("plan (s)", 0.0)
    return (
        f"Breakdown per submission, in ms: in a worker, autograde {ms['autograde']:.0f} = kernel start "
        f"{ms['kernel']:.0f} + cells {ms['cells']:.0f} + the worker's own work around them {around:.0f} (nbgrader's "
        f"autograde: gradebook, sanitising, reading and writing notebooks), then feedback {ms['feedback']:.0f}; in "
        f"the grading process, record {ms['record']:.0f}; waiting for a worker {ms['queue']:.0f}.\n"
        f"Run: {run:.1f} s of the {total:.1f} s (workers' start and the reference run included); plan {plan:.1f} s; "
        f"the other {total - run - plan:.1f} s: Python's start, the kernel server, the ledger, grades.csv and the "
        "class report."
    )


def main(count: int, dask: bool, assignment: str) -> int:
    students = submissions(assignment, count)
    with tempfile.TemporaryDirectory(prefix="hooklab-bench-") as scratch:
        plain, ours = make_course(Path(scratch) / "nbgrader"), make_course(Path(scratch) / "hooklab")
        on_dask = make_course(Path(scratch) / "dask") if dask else None
        for course in (plain, ours, *([on_dask] if on_dask else [])):
            nbgrader(course, "generate_assignment", assignment)
        corpus.write(plain / "autograder" / "submitted", students)
        inbox = corpus.write(Path(scratch) / "inbox", students)

        start = time.perf_counter()
        nbgrader(plain, "autograde", assignment, "--create")
        autograde_only = time.perf_counter() - start
        nbgrader(plain, "generate_feedback", assignment)
        sequential = time.perf_counter() - start

        parallel, report = hooklab(ours, inbox)
        timing = json.loads((ours / LAST_RUN).read_text())["timing"]
        distributed = hooklab(on_dask, inbox, "--dask")[0] if on_dask else 0.0
        floor = compute_floor(REPO / "solutions" / assignment / corpus.notebook_name(assignment))

        if scores(plain, assignment) != scores(ours, assignment) or (
                on_dask and scores(on_dask, assignment) != scores(ours, assignment)):
            print("scores differ between nbgrader and hooklab", file=sys.stderr)
            return 1
    print(f"{count} submissions of {assignment}, {os.cpu_count()} cores; scores identical")
    print(f"nbgrader autograde + generate_feedback: {count / sequential:5.2f} submissions/s ({sequential:.1f} s)")
    print(f"  (nbgrader autograde alone:            {count / autograde_only:5.2f} submissions/s, {autograde_only:.1f} "
          "s)")
    print(f"hooklab autograde ({os.cpu_count()} workers):           {count / parallel:5.2f} submissions/s "
          f"({parallel:.1f} s)")
    if dask:
        print(f"hooklab autograde --dask ({os.cpu_count()} workers):    {count / distributed:5.2f} submissions/s "
              f"({distributed:.1f} s, {parallel / distributed:.2f}x the local mode; cluster start included)")
    print(f"ratio: {sequential / parallel:.2f}x (autograde alone: {autograde_only / parallel:.2f}x)")
    print(next(line for line in report.splitlines() if line.startswith("Time per submission")))
    print(breakdown(timing, parallel))
    cells = timing["cells (ms per submission)"]
    print(f"Compute floor: the notebook's cells take {1000 * floor:.0f} ms in a warm kernel; a submission's cells took "
          f"{cells:.0f} ms in hooklab ({cells / (1000 * floor):.2f}x the floor; blank and partial submissions "
          "included).")
    return 0


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description="hooklab autograde vs sequential nbgrader")
    arguments.add_argument("count", type=int, nargs="?", default=24)
    arguments.add_argument("--dask", action="store_true", help="also grade on a local Dask cluster")
    arguments.add_argument("--assignment", default=corpus.ASSIGNMENT)
    options = arguments.parse_args()
    sys.exit(main(options.count, options.dask, options.assignment))
