"""The nbgrader preprocessor that scans a submission as it is sanitised and writes the findings into the
notebook's notes."""

from __future__ import annotations

from functools import lru_cache

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from hooklab.grading.integrity import syntax
from hooklab.grading.integrity.rules import allowed_for
from hooklab.grading.integrity.scan import definitions_of, imports_of, names_loaded, scan
from hooklab.grading.notes import Notes
from hooklab.grading.repair import source_notebook


class ScanSubmission(NbGraderPreprocessor):
    """nbgrader preprocessor (sanitising step): record the findings of :func:`scan` in the
    notebook's metadata, for the execution step to hold the notebook for review."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        source = source_notebook(self, resources)
        own = [c for c in source.cells if c.cell_type == "code" and not utils.is_solution(c)]
        given = tuple(c.source for c in own if not utils.is_grade(c))
        unchanged, imports, test_names, definitions = _given(given, tuple(c.source for c in own if utils.is_grade(c)))
        written = [
            (number, cell.source)
            for number, cell in enumerate(nb.cells, start=1)
            if cell.cell_type == "code"
            and (utils.is_solution(cell) or not (utils.is_grade(cell) or utils.is_locked(cell))
                 and syntax.code(cell.source) not in unchanged)
        ]
        assignment = resources.get("nbgrader", {}).get("assignment", "")
        findings = scan(written, imports, test_names, definitions, allowed_for(assignment))
        notes = Notes.read(nb)
        notes.findings = [str(finding) for finding in findings]
        notes.write(nb)
        return nb, resources


@lru_cache(maxsize=16)  # the source's: the same for every submission of the class
def _given(given: tuple[str, ...], tests: tuple[str, ...]) -> tuple[frozenset[str], dict[str, str], frozenset[str],
                                                                    frozenset[str]]:
    """What a source notebook's own cells say for the scan: the code of its given cells (one with comments or
    spacing of the student's is still given), what they import (a test's own imports are its own: it imports
    them again as it runs), the names its tests read, and what the given cells define. Callers only read it."""
    return (frozenset(map(syntax.code, given)), imports_of(given), frozenset(names_loaded(tests)),
            frozenset(definitions_of(given)))
