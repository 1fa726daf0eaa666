"""Size limits outside the sandbox (``c.Sandbox.notebook_size``, ``source_size``, ``output_size``, ``outputs_size``).

A notebook too large to read or to run is refused with its reason, before it is read or run; what a kernel
sends is cut or dropped as it arrives, so the autograded notebook and its feedback page stay within the
limits, and every test cell scores as in the honest twin beside it. The limits are set small here to keep
the class quick to grade.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import nbformat
import pytest
from traitlets.config import Config

from catalogues import corpus
from conftest import make_course
from hooklab.grading.execute import GuardedExecute
from hooklab.grading.kernels.sandbox import Sandbox
from hooklab.grading.notes import METADATA
from hooklab.grading.plan import unreadable
from test_autograde import grade, scores_in_gradebook

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

KiB = 1024
OUTPUT, OUTPUTS, NOTEBOOK, SOURCE = 64 * KiB, 512 * KiB, 256 * KiB, 128 * KiB
MARGIN = 8 * KiB  # what a few more cells, outputs and markers may add to a notebook or its page
A = corpus.ASSIGNMENT
NAME = corpus.notebook_name(A)
SOLVED = corpus.solutions(A)
# left as released
BLANK_LAST = {grade_id: source for grade_id, source in SOLVED.items() if grade_id != "predict_order"}
# the answer cell raises as it runs: its error leaves the kernel as Python prints it (an error a test's call of the
# student's code raises is one sentence of checks.calling, cut to a sentence's room before it leaves)
RAISES = "raise RuntimeError({message})\n"
PRINTS = "import sys\n\nfor _ in range(64):\n    print('x' * 1000)\n    print('y' * 1000, file=sys.stderr)\n"  # 125 KiB


def case(student: str, answers: dict[str, str], scores: dict[str, float], reason: str = "", **layout) -> corpus.Case:
    return corpus.Case(student, A, {NAME: corpus.notebook(A, answers, **layout)}, scores, reason=reason)


CASES = [
    case("honest", SOLVED, corpus.scores(A)),
    case("long_line", {**SOLVED, "collect_hooks": "print('x' * 2**20)\n" + SOLVED["collect_hooks"]}, corpus.scores(A)),
    case("print_loop",
         {**SOLVED, "collect_hooks": "for _ in range(10_000):\n    print('x' * 1023)\n" + SOLVED["collect_hooks"]},
         corpus.scores(A)),
    case("short_error", {**SOLVED, "change_hooks": RAISES.format(message="'oops'")}, corpus.scores(A, change_hooks=0)),
    case("long_error", {**SOLVED, "change_hooks": RAISES.format(message="'x' * 2**20")},
         corpus.scores(A, change_hooks=0)),
    case("last_blank", BLANK_LAST, corpus.scores(A, predict_order=0)),
    # after each test
    case("many_prints", BLANK_LAST, corpus.scores(A, predict_order=0), extra=[PRINTS] * len(corpus.points(A))),
    case("long_source", {**SOLVED, "collect_hooks": SOLVED["collect_hooks"] + "\n# " + "x" * SOURCE + "\n"},
         corpus.zero(A),
         reason="KiB of text in its cells, more than the 128 KiB a notebook may hold (c.Sandbox.source_size)"),
    corpus.Case("huge_file", A, {NAME: b'{"cells": [' + b" " * 2 * NOTEBOOK}, corpus.zero(A),
                reason=f"{NAME} is 512.0 KiB, more than the 256 KiB a notebook may be (c.Sandbox.notebook_size)"),
]
TWINS = {"long_line": "honest", "print_loop": "honest", "long_error": "short_error", "many_prints": "last_blank"}
CUT = "… [output cut: more than the 64 KiB an output may be (c.Sandbox.output_size)]"
DROPPED = ("… [output dropped from here on: more than the 512 KiB a notebook's outputs may be in all "
           "(c.Sandbox.outputs_size)]")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = make_course(tmp_path_factory.mktemp("course"))
    with open(course / "nbgrader_config.py", "a") as handle:
        handle.write(f"c.Sandbox.output_size = {OUTPUT}\nc.Sandbox.outputs_size = {OUTPUTS}\n"
                     f"c.Sandbox.notebook_size = {NOTEBOOK}\nc.Sandbox.source_size = {SOURCE}\n")
    grade(course, corpus.write(tmp_path_factory.mktemp("submissions"), CASES))
    return {"course": course, "ledger": json.loads((course / "grading.json").read_text()),
            "scores": scores_in_gradebook(course, CASES)}


def autograded(graded: dict, student: str) -> Path:
    return graded["course"] / "autograder" / "autograded" / student / A / NAME


def feedback(graded: dict, student: str) -> Path:
    return graded["course"] / "autograder" / "feedback" / student / A / NAME.replace(".ipynb", ".html")


def page_text(graded: dict, student: str) -> str:
    return html.unescape(feedback(graded, student).read_text())


def growth(graded: dict, student: str) -> tuple[int, int]:
    """Bytes the hostile case's autograded notebook and feedback page have over its honest twin's."""
    twin = TWINS[student]
    return tuple(path(graded, student).stat().st_size - path(graded, twin).stat().st_size
                 for path in (autograded, feedback))


def executed(graded: dict, student: str) -> nbformat.NotebookNode:
    return nbformat.read(autograded(graded, student), as_version=4)


def cell_of(graded: dict, student: str, grade_id: str) -> tuple[int, nbformat.NotebookNode]:
    """The cell's number (from 1, as notes count) and the cell."""
    cells = enumerate(executed(graded, student).cells, 1)
    return next((number, cell) for number, cell in cells
                if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def limits_noted(graded: dict, student: str) -> list[str]:
    return executed(graded, student).metadata[METADATA]["limits"]


@pytest.mark.parametrize("student", [c.student for c in CASES])
def test_every_test_cell_scores_as_expected_and_as_in_its_honest_twin(student: str, graded: dict):
    want = next(c.scores for c in CASES if c.student == student)
    assert graded["scores"][f"{student}/{A}"] == want
    if student in TWINS:
        assert graded["scores"][f"{TWINS[student]}/{A}"] == want and not graded["ledger"][f"{student}/{A}"]["held"]


def test_honest_twins_are_graded_without_a_limit_note(graded: dict):
    for student in set(TWINS.values()):
        entry = graded["ledger"][f"{student}/{A}"]
        assert entry["ok"] and not entry["held"] and not entry["notes"], entry
        assert limits_noted(graded, student) == []
        assert "output cut" not in page_text(graded, student) and "output dropped" not in page_text(graded, student)


@pytest.mark.parametrize("student", ["long_line", "print_loop"])
def test_a_long_output_is_cut_to_the_limit_with_a_marker(student: str, graded: dict):
    """One 1 MiB line, or 10 000 lines of 1 KiB: messages that nbclient merges into one output count together."""
    notebook, page = growth(graded, student)
    assert notebook <= OUTPUT + MARGIN and page <= OUTPUT + MARGIN, (notebook, page)
    assert CUT in page_text(graded, student)
    number, _ = cell_of(graded, student, "collect_hooks")
    assert limits_noted(graded, student) == [f"output cut to 64 KiB in cell {number} (c.Sandbox.output_size)"]


def test_a_long_error_is_cut_and_still_fails_its_test(graded: dict):
    notebook, page = growth(graded, "long_error")
    assert notebook <= OUTPUT + MARGIN and page <= OUTPUT + MARGIN, (notebook, page)
    number, answer = cell_of(graded, "long_error", "change_hooks")
    errors = [output for output in answer.outputs if output.output_type == "error"]
    assert [error.ename for error in errors] == ["RuntimeError"] and errors[0].evalue.endswith(CUT)
    assert limits_noted(graded, "long_error") == [f"output cut to 64 KiB in cell {number} (c.Sandbox.output_size)"]
    _, test = cell_of(graded, "long_error", "change_hooks_test")
    assert [output.ename for output in test.outputs if output.output_type == "error"] == ["NameError"]
    words = re.sub(r"<[^>]+>", "", page_text(graded, "long_error"))  # the traceback's colours are tags
    assert "RuntimeError: xxx" in words and CUT in words


def test_outputs_past_the_notebook_total_are_dropped_with_one_marker(graded: dict):
    """125 KiB printed after each test cell: from the fifth on, outputs are dropped, those of the later test cells
    too, but for the error of the test left blank, which still scores 0."""
    notebook, page = growth(graded, "many_prints")
    assert notebook <= OUTPUTS + MARGIN and page <= OUTPUTS + MARGIN, (notebook, page)
    shown = [output.data["text/plain"] for cell in executed(graded, "many_prints").cells
             for output in cell.get("outputs", [])
             if output.output_type == "display_data"]
    assert shown.count(DROPPED) == 1 and DROPPED in page_text(graded, "many_prints")
    outputs = cell_of(graded, "many_prints", "predict_order_test")[1].outputs
    assert [output.output_type for output in outputs] == ["error"]
    [note] = limits_noted(graded, "many_prints")
    assert note.startswith("output dropped from cell ") and note.endswith(" on: more than 512 KiB in all "
                                                                          "(c.Sandbox.outputs_size)")


@pytest.mark.parametrize("student", ["huge_file", "long_source"])
def test_a_notebook_too_large_is_refused_with_its_reason(student: str, graded: dict):
    """huge_file is not even JSON: its size is the reason, as it is never read."""
    entry, reason = graded["ledger"][f"{student}/{A}"], next(c.reason for c in CASES if c.student == student)
    assert not entry["ok"] and reason in entry["reason"], entry
    assert reason in page_text(graded, student)
    assert not autograded(graded, student).exists()


def test_a_notebook_that_is_a_link_is_refused_before_it_is_read(tmp_path: Path):
    """Its size on disk is the link's: what it points to is not read at all."""
    (tmp_path / "elsewhere.ipynb").write_bytes(corpus.notebook(A, SOLVED))
    (tmp_path / NAME).symlink_to(tmp_path / "elsewhere.ipynb")
    assert unreadable(tmp_path, [NAME], Sandbox()) == f"{NAME} is a link, not a notebook file"


def grade_cell(source: str, grade_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata.nbgrader = {"grade": True, "solution": False, "locked": True, "grade_id": grade_id, "points": 1,
                              "schema_version": 3}
    return cell


def test_a_display_updated_in_many_places_counts_in_each_and_tests_keep_what_scores_them(tmp_path: Path):
    """A display shown 21 times, then updated with 1 KiB, would put 21 KiB in the notebook: the update is
    dropped, and every output after it, but for a test cell's error (what it is scored by); a test cell's stderr
    and an answer cell's error stay dropped (nbgrader does not add the error back from the kernel's reply)."""
    config = Config()
    config.Sandbox.output_size, config.Sandbox.outputs_size = 4 * KiB, 8 * KiB
    config.GuardedExecute.spare_kernels = False
    code = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        code("from IPython.display import display\n\nshown = display('', display_id=True)\nfor _ in range(20):\n"
             "    display('', display_id=shown.display_id)\nshown.update('x' * 1000)"),
        code("raise ValueError('a wrong answer')"),
        grade_cell("print('dropped')\n1 / 0", "fails"),
        grade_cell("import sys\n\nprint('dropped', file=sys.stderr)", "warns"),
    ])
    GuardedExecute(config=config, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    display, answer, fails, warns = (cell.outputs for cell in nb.cells)
    assert [output.data["text/plain"] for output in display] == ["''"] * 21 + [DROPPED.replace("512 KiB", "8 KiB")]
    assert answer == [] and [(o.output_type, o.get("ename")) for o in fails] == [("error", "ZeroDivisionError")]
    assert warns == []
    assert nb.metadata[METADATA]["limits"] == ["output dropped from cell 1 on: more than 8 KiB in all "
                                               "(c.Sandbox.outputs_size)"]
