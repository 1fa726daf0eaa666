"""What students see in their feedback: test results, never the hidden tests."""

from __future__ import annotations

import re

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

HIDDEN_TESTS = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[ \t]*\n?", re.DOTALL | re.MULTILINE)


class HideHiddenTests(NbGraderPreprocessor):
    """Remove hidden tests from test cells and reduce errors to their message.

    nbgrader's ``generate_feedback`` renders the autograded notebook, whose test cells still hold
    the hidden tests; a traceback would also quote their lines. This keeps pass/fail and the message.
    """

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = HIDDEN_TESTS.sub("", cell.source).rstrip("\n")
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
