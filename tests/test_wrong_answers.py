"""Each plausible wrong answer of ``wrong_answers.py`` fails its test cell, hidden tests included,
and the error says what is wrong."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient

from catalogues.corpus import notebook_name
from catalogues.wrong_answers import Wrong, wrong_answers
from conftest import REPO

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

WRONG = wrong_answers()


HIDDEN = re.compile(r"^### BEGIN HIDDEN TESTS$.*?^### END HIDDEN TESTS$", re.M | re.S)


def run_until(wrong: Wrong) -> nbformat.NotebookNode:
    """The solution notebook with the wrong answer, executed up to and including its test cell; the test cells
    before it without their hidden tests, as the student's release has them (they test other answers)."""
    nb = nbformat.read(REPO / "solutions" / wrong.assignment / notebook_name(wrong.assignment), as_version=4)
    ids = [cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells]
    nb.cells = nb.cells[: ids.index(wrong.test_id) + 1]
    for cell in nb.cells[:-1]:
        cell.source = HIDDEN.sub("", cell.source)
    nb.cells[ids.index(wrong.grade_id)].source = wrong.source
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True)
    client.execute(cwd=str(REPO / "solutions" / wrong.assignment))
    return nb


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.assignment}/{w.name}")
def test_a_plausible_wrong_answer_fails_with_a_message_that_says_why(wrong: Wrong, forked_kernels):
    nb = run_until(wrong)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == wrong.grade_id)
    assert not [o for o in answer.outputs if o.output_type == "error"], f"{wrong.name}: the answer cell itself raised"
    errors = [o for o in nb.cells[-1].outputs if o.output_type == "error"]
    assert errors, f"{wrong.name} passed {wrong.test_id}: the test accepts this wrong answer"
    text = f"{errors[0].ename}: {errors[0].evalue}"
    assert wrong.message in text, f"{wrong.name}: expected {wrong.message!r} in the error, got {text!r}"
