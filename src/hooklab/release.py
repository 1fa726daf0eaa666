"""What nbgrader's release adds for students: "Run All" goes past open exercises."""

from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

USES_ANSWER = "uses-answer"  # source tag: a cell that runs a student's answer (a demo or plot of it)
RAISES = "raises-exception"  # JupyterLab's Run All (and nbclient) go on past such a cell's error


class RunPastOpenExercises(NbGraderPreprocessor):
    """Tag the release's answer cells, test cells and ``uses-answer`` cells ``raises-exception``.

    A blank exercise raises ``NotImplementedError``; without the tag "Run All" stops there and the
    demos and widgets after it never show. Grading is unchanged: nbgrader's ``Execute`` runs every
    cell whatever its tags.
    """

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and (utils.is_solution(cell) or utils.is_grade(cell) or USES_ANSWER in tags):
            tags = [tag for tag in tags if tag != USES_ANSWER]
            cell.metadata["tags"] = tags if RAISES in tags else [*tags, RAISES]
        return cell, resources
