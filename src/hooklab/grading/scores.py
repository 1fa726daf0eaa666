"""What a test cell scores: :class:`SaveAutoGradesByErrors`, the nbgrader preprocessor that records it (a recorder:
it runs in the grading process, once a worker has executed the notebook with :mod:`hooklab.grading.execute`).

:class:`SaveAutoGradesByErrors` scores a test cell by its errors only: output on stderr (a
warning, a log line) shows in the feedback but no longer zeroes a passing test. It records a notebook's scores and
comments in one transaction.
"""

from __future__ import annotations

from typing import Any

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import SaveAutoGrades

SCORED = {"error"}  # the outputs a test cell is scored by (SaveAutoGradesByErrors)


class SaveAutoGradesByErrors(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, with a test cell's score decided by its errors alone: full points without any,
    none with one (the grader's verdict, the hold, or the kernel's own). nbgrader would also read a result the
    cell displays as partial credit, ahead of any error after it: the pack's tests give none, and a student's
    code that displays one (``sys.displayhook``) must not decide a score.

    nbgrader commits after every cell it records (about ten commits for a notebook of the pack, each one waiting for
    the disk); here the session of nbgrader's Gradebook joins one transaction of the notebook (SQLAlchemy's
    ``join_transaction_mode="rollback_only"``: the session's commits flush without committing), committed once its
    last cell is recorded, or rolled back, every cell with it, if recording fails. The same rows, written by
    nbgrader's own code; the notebook's scores are in the gradebook, on disk, when :meth:`preprocess` returns."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        self._transaction: Any = None
        try:
            nb, resources = super().preprocess(nb, resources)  # nbgrader's: its own Gradebook, a cell at a time
        except BaseException:
            self._end(commit=False)
            raise
        self._end(commit=True)
        return nb, resources

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        cell_index: int) -> tuple[NotebookNode, ResourcesDict]:
        if self._transaction is None:  # the first cell: nbgrader has opened its Gradebook
            self._transaction = _join(self.gradebook)
        return super().preprocess_cell(cell, resources, cell_index)

    def _add_score(self, cell: NotebookNode, resources: ResourcesDict) -> None:
        outputs = [o for o in cell.get("outputs", []) if o.output_type in SCORED]
        super()._add_score(NotebookNode({**cell, "outputs": outputs}), resources)

    def _end(self, *, commit: bool) -> None:
        transaction, self._transaction = self._transaction, None
        if transaction is None:
            return
        try:
            transaction.commit() if commit else transaction.rollback()
        finally:
            transaction.connection.close()


def _join(gradebook: Gradebook) -> Any:
    """Begin a transaction on a connection of ``gradebook``'s engine, and have its session work in it from now on
    (the session it had, which nbgrader committed, is closed); returns the transaction."""
    connection = gradebook.engine.connect()
    transaction = connection.begin()
    gradebook.db.remove()
    gradebook.db.configure(bind=connection, join_transaction_mode="rollback_only")
    return transaction
