"""RepairCells on its own (no kernel): a submission's cells put back in the source's shape before nbgrader
matches them, and the repairs noted for the parent."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from traitlets.config import Config

from hooklab.grading.notes import Notes
from hooklab.grading.repair import RepairCells


def marked(cell: nbformat.NotebookNode, grade_id: str, *, solution: bool = False, grade: bool = False,
           points: float = 0.0) -> nbformat.NotebookNode:
    cell.metadata.nbgrader = {"grade_id": grade_id, "solution": solution, "grade": grade, "locked": not solution,
                              "points": points, "schema_version": 3}
    return cell


def source_cells() -> list[nbformat.NotebookNode]:
    """intro · given code · answer · its test · a second answer · its test."""
    return [
        new_markdown_cell("# Exercise", id="intro"),
        marked(new_code_cell("import math", id="given"), "given"),
        marked(new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
                             id="answer"), "f", solution=True),
        marked(new_code_cell("assert f(1) == 2", id="test"), "f_test", grade=True, points=1.0),
        marked(new_code_cell("def g(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION",
                             id="answer2"), "g", solution=True),
        marked(new_code_cell("assert g(1) == 1", id="test2"), "g_test", grade=True, points=1.0),
    ]


def student(*edits) -> nbformat.NotebookNode:
    """The release as a student got it (answers filled in), then ``edits`` applied to its cell list."""
    cells = copy.deepcopy(source_cells())
    cells[2].source, cells[4].source = "def f(x):\n    return x + x", "def g(x):\n    return x"
    for edit in edits:
        cells = edit(cells)
    return new_notebook(cells=cells)


def repaired(tmp_path: Path, nb: nbformat.NotebookNode) -> tuple[list[str], list[str], Notes]:
    """The repaired notebook's cells (grade_id, or the first line) and its notes."""
    (tmp_path / "source" / "hw").mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=source_cells()), tmp_path / "source" / "hw" / "nb.ipynb")
    config = Config({"CourseDirectory": {"root": str(tmp_path)}})
    resources = {"nbgrader": {"assignment": "hw", "notebook": "nb", "student": "ann"}}
    nb, _ = RepairCells(config=config).preprocess(nb, resources)
    names = [cell.metadata.get("nbgrader", {}).get("grade_id") or cell.source.splitlines()[0] for cell in nb.cells]
    return names, [cell.source for cell in nb.cells], Notes.read(nb)


ORDER = ["# Exercise", "given", "f", "f_test", "g", "g_test"]


def test_an_untouched_submission_is_left_as_it_is_with_no_repair(tmp_path: Path):
    names, sources, notes = repaired(tmp_path, student())
    assert names == ORDER and sources[2] == "def f(x):\n    return x + x"
    assert notes.repairs == []


def test_a_deleted_test_cell_is_restored_where_it_was_not_at_the_end(tmp_path: Path):
    names, sources, notes = repaired(tmp_path, student(lambda cells: [c for c in cells if c.id != "test"]))
    assert names == ORDER and sources[3] == "assert f(1) == 2"
    assert notes.repairs == ["restored f_test (cell 4)"]


def test_a_deleted_answer_cell_comes_back_as_the_release_stub_and_the_other_answers_stay(tmp_path: Path):
    names, sources, notes = repaired(tmp_path, student(lambda cells: [c for c in cells if c.id != "answer"]))
    assert names == ORDER
    assert "return 2 * x" not in sources[2] and "raise NotImplementedError" in sources[2], "the stub, not the solution"
    assert sources[4] == "def g(x):\n    return x"
    assert notes.repairs == ["restored f (cell 3)"]


def test_deleted_given_code_is_restored_from_the_source(tmp_path: Path):
    names, sources, notes = repaired(tmp_path, student(lambda cells: [c for c in cells if c.id != "given"]))
    assert names == ORDER and sources[1] == "import math"
    assert notes.repairs == ["restored given (cell 2)"]


def test_a_pasted_copy_of_a_test_cell_is_dropped_and_a_copy_of_an_answer_becomes_a_plain_cell(tmp_path: Path):
    def paste(cells):
        test, answer = copy.deepcopy(cells[3]), copy.deepcopy(cells[2])
        test.id, answer.id = "pasted-test", "pasted-answer"
        answer.source = "def f(x):\n    return 3 * x"
        return [*cells, test, answer]

    names, sources, notes = repaired(tmp_path, student(paste))
    assert names == [*ORDER, "def f(x):"], "the test's copy is gone; the answer's stays, ungraded, at the end"
    assert sources[-1] == "def f(x):\n    return 3 * x"
    assert notes.repairs == ["dropped a copy of f_test"]


def test_moved_cells_go_back_in_the_source_order_and_added_cells_stay_after_the_cell_they_followed(tmp_path: Path):
    def shuffle(cells):
        first, added = new_code_cell("import torch", id="first"), new_code_cell("print(f(3))", id="mine")
        return [first, cells[0], cells[1], cells[4], cells[5], cells[2], added, cells[3]]

    names, _, notes = repaired(tmp_path, student(shuffle))
    assert names == ["import torch", *ORDER[:3], "print(f(3))", *ORDER[3:]], ("a cell added before all others stays "
                                                                             "first; one that followed f's answer, too")
    assert notes.repairs == []


@pytest.mark.parametrize("matched_by", ["cell id", "text"])
def test_a_cell_that_lost_its_nbgrader_marks_is_matched_by_its_id_or_its_text(tmp_path: Path, matched_by: str):
    def unmark(cells):
        given = cells[1]
        del given.metadata["nbgrader"]
        if matched_by == "text":
            given.id = "renamed"
        return cells

    names, _, notes = repaired(tmp_path, student(unmark))
    assert names == ["# Exercise", "import math", *ORDER[2:]], "no second copy of the given cell is restored"
    assert notes.repairs == []


def test_notes_a_submission_wrote_into_its_own_metadata_are_replaced(tmp_path: Path):
    nb = student()
    Notes(repairs=["nothing to see"], held=[], would_be={"nb/f_test": 1.0}).write(nb)
    _, _, notes = repaired(tmp_path, nb)
    assert notes == Notes(repairs=[])
