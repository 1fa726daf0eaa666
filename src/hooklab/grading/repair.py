"""Put a submission's cells back in the assignment's shape before nbgrader matches it.

nbgrader matches a submission to the gradebook cell by cell: a deleted answer cell or a pasted
copy of a cell makes the whole notebook fail, and ``add_missing_cells`` can put a deleted test
cell where it runs before the names it uses exist. :class:`RepairCells` rebuilds the notebook
in the source's order: each cell of the source takes the student's version (matched by nbgrader
id, notebook cell id, or identical text), a missing one is restored where it was (an answer cell
as the release's stub, a test or given code cell as the source has it), a second copy of a
locked cell is dropped and a second copy of an answer cell becomes a plain cell, and every cell
the student added stays after the cell it followed.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearSolutions, NbGraderPreprocessor

from hooklab.grading.notes import Notes


def source_notebook(preprocessor: NbGraderPreprocessor, resources: ResourcesDict) -> NotebookNode:
    """The assignment's source notebook (solutions and hidden tests) for the notebook being graded."""
    coursedir = CourseDirectory(parent=preprocessor)
    info = resources["nbgrader"]
    folder = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"]))
    path = folder / f"{info['notebook']}.ipynb"
    stat = path.stat()
    return copy.deepcopy(_read(path, stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=32)  # three preprocessors read it for every submission; an edited file is read again
def _read(path: Path, mtime_ns: int, size: int) -> NotebookNode:
    return nbformat.read(path, as_version=nbformat.NO_CONVERT)


def _grade_id(cell: NotebookNode) -> str | None:
    nbgrader = cell.metadata.get("nbgrader", {})
    if utils.is_grade(cell) or utils.is_solution(cell) or utils.is_locked(cell):
        return nbgrader.get("grade_id")
    return None


class RepairCells(NbGraderPreprocessor):
    """Restore deleted cells in place, drop pasted copies, keep the source's order (see module doc)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        source = source_notebook(self, resources)
        self._dropped: list[str] = []
        matched = self._match(nb.cells, source.cells)
        repairs = [f"dropped a copy of {grade_id}" for grade_id in self._dropped]
        cells: list[NotebookNode] = list(matched.get(None, []))  # cells added before any source cell
        for position, original in enumerate(source.cells):
            own = matched.get(position)
            if own:
                cells += own
            elif original.cell_type == "code":
                cells.append(self._restored(original))
                repairs.append(f"restored {_grade_id(original) or 'a given code cell'} (cell {len(cells)})")
        nb.cells = cells
        if repairs:
            self.log.warning("Repaired the notebook: %s", "; ".join(repairs))
        Notes(repairs=repairs).write(nb)  # replaces anything the submission put there
        return nb, resources

    def _match(self, cells: list[NotebookNode], source: list[NotebookNode]) -> dict[int | None, list[NotebookNode]]:
        """Source position (None: before the first) → the student's cells that go there, in order."""
        by_grade_id = {_grade_id(cell): i for i, cell in enumerate(source) if _grade_id(cell)}
        by_cell_id = {cell.get("id"): i for i, cell in enumerate(source) if cell.get("id")}
        by_text: dict[tuple[str, str], int] = {}
        for i, cell in enumerate(source):
            by_text.setdefault((cell.cell_type, cell.source), i)
        placed: dict[int | None, list[NotebookNode]] = {}
        taken: set[int] = set()
        anchor: int | None = None
        for cell in cells:
            grade_id = _grade_id(cell)
            if grade_id is not None:
                position = by_grade_id.get(grade_id)
            else:
                position = by_cell_id.get(cell.get("id"))
                if position is not None and (position in taken or source[position].cell_type != cell.cell_type
                                             or _grade_id(source[position])):
                    position = None
                if position is None:
                    position = by_text.get((cell.cell_type, cell.source))
            if position is not None and position in taken:
                if grade_id is not None and not utils.is_solution(cell):
                    self._dropped.append(grade_id)  # a pasted copy of a locked or test cell
                    continue
                position = None
                if grade_id is not None:  # a copy of an answer cell: the student's code, no longer graded
                    cell = copy.deepcopy(cell)
                    del cell.metadata["nbgrader"]
            if position is None:
                placed.setdefault(anchor, []).append(cell)
            else:
                taken.add(position)
                anchor = position
                placed.setdefault(position, []).insert(0, cell)
        return placed

    def _restored(self, original: NotebookNode) -> NotebookNode:
        cell = copy.deepcopy(original)
        cell.outputs = []
        cell.execution_count = None
        if utils.is_solution(cell):
            stub = ClearSolutions(parent=self)
            cell, _ = stub.preprocess_cell(cell, {"language": "python"}, 0)
        return cell
