"""What a test cell scores: :class:`SaveAutoGradesByErrors`, the nbgrader preprocessor that records it (a recorder:
it runs in the grading process, once a worker has executed the notebook with :mod:`hooklab.grading.execute`).

:class:`SaveAutoGradesByErrors` scores a test cell by its errors only: output on stderr (a
warning, a log line) shows in the feedback but no longer zeroes a passing test.
"""

from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import SaveAutoGrades

SCORED = {"error"}  # the outputs a test cell is scored by (SaveAutoGradesByErrors)


class SaveAutoGradesByErrors(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, with a test cell's score decided by its errors alone: full points without any,
    none with one (the grader's verdict, the hold, or the kernel's own). nbgrader would also read a result the
    cell displays as partial credit, ahead of any error after it: the pack's tests give none, and a student's
    code that displays one (``sys.displayhook``) must not decide a score."""

    def _add_score(self, cell: NotebookNode, resources: ResourcesDict) -> None:
        outputs = [o for o in cell.get("outputs", []) if o.output_type in SCORED]
        super()._add_score(NotebookNode({**cell, "outputs": outputs}), resources)
