"""What students see in their feedback: test results, never the hidden tests."""

from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests


class HideHiddenTests(ClearHiddenTests):
    """Remove hidden tests from test cells, as the release does, and reduce errors to their message.

    nbgrader's ``generate_feedback`` renders the autograded notebook, whose test cells still hold
    the hidden tests; a traceback would also quote their lines. This keeps pass/fail and the message.
    """

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int) -> tuple[NotebookNode, ResourcesDict]:
        cell, resources = super().preprocess_cell(cell, resources, index)
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
