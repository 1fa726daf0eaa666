"""The errors the grader itself writes into a notebook's test cells, and how a failed cell is told apart."""

from __future__ import annotations

import re
from typing import Any

from nbformat import NotebookNode
from nbgrader import utils

HELD = "HeldForReview"  # the notebook is held for review: the cell's points wait for a person
NOT_RUN = "TestDidNotRun"  # the cell did not run to its end (skipped, rewritten, its error swallowed, stopped)
WRONG = "WrongAnswer"  # the cell's observations differ from the reference's
NOT_JUDGED = "NotJudged"  # the reference run could not judge the cell
NOT_WRITTEN = "NotWritten"  # the exercise the cell tests still raises its template's NotImplementedError


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # the colours (and cursor codes) of a kernel's error output
GRADERS = {HELD, NOT_RUN, WRONG, NOT_JUDGED, NOT_WRITTEN}  # the errors the grader writes, not the kernel


def error_output(ename: str, evalue: str) -> NotebookNode:
    """An error output as the grader writes it: one traceback line, nothing of the kernel's."""
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def errors(outputs: list[Any]) -> list[Any]:
    """A test cell's error outputs but the hold (which only defers the points): those that fail it."""
    return [o for o in outputs if o.get("output_type") == "error" and o.get("ename") != HELD]


def failed(outputs: list[Any]) -> bool:
    """Whether a test cell's outputs fail it."""
    return bool(errors(outputs))


def would_be(nb: NotebookNode) -> dict[str, float]:
    """A held notebook's points once released: each test cell's, where its outputs do not fail it (:func:`failed`:
    the hold itself does not)."""
    return {cell.metadata.nbgrader["grade_id"]: 0.0 if failed(cell.outputs) else float(cell.metadata.nbgrader["points"])
            for cell in nb.cells if cell.cell_type == "code" and utils.is_grade(cell)}
