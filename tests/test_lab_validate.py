"""The student lab's Validate is a summary (hooklab.lab_validate.summary): "N of M exercises pass their visible tests",
then one line per failing exercise with its first message; no test source, no traceback.

Fast: the validator's results are written here as nbgrader's ``Validator.validate`` returns them (each failed test
cell's source and ``raw_error``, the traceback's lines with IPython's colours, as measured on real runs), for the test
cells of the release and solution notebooks; tests/test_browser.py runs the real one behind the lab's button.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from conftest import REPO, notebook_id, solution_notebooks
from hooklab import exercises
from hooklab.hints import MESSAGE
from hooklab.lab_validate.summary import NO_TESTS, could_not_validate, first_message, summary

RELEASES = [REPO / "notebooks" / path.relative_to(REPO / "solutions") for path in solution_notebooks()]
FORWARD_HOOKS = REPO / "notebooks" / "02_forward_hooks" / "forward_hooks.ipynb"

# raw_error as nbgrader's validator reports them (ANSI colours and all), from runs of 02_forward_hooks
NOT_WRITTEN = ("\x1b[31mNotImplementedError\x1b[39m\n{function} is not written yet: replace "
               "`raise NotImplementedError()` (line 3 of its cell) with your answer, run that cell, then run this one "
               "again.\n")
ANSWER_ERROR = ("\x1b[31mAnswerError\x1b[39m\x1b[31m:\x1b[39m what plus_five returns when called directly (the new "
                "output) is None, expected a tensor\n")
STUDENT_ERROR = (  # an error in the student's own code keeps its frames, the test's among them
    "\x1b[31m---------------------------------------------------------------------------\x1b[39m\n"
    "\x1b[31mKeyError\x1b[39m                                  Traceback (most recent call last)\n"
    "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[12]\x1b[39m\x1b[32m, line 9\x1b[39m\n"
    "\x1b[32m----> \x1b[39m\x1b[32m9\x1b[39m check_cap_scale(model, x1, x2, {\x1b[33m'scale'\x1b[39m: 3.0})\n\n"
    "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[11]\x1b[39m\x1b[32m, line 4\x1b[39m, in \x1b[36mcap_scale\x1b[39m"
    "\x1b[34m(module, args, kwargs)\x1b[39m\n"
    "\x1b[32m----> \x1b[39m\x1b[32m4\x1b[39m     \x1b[38;5;28;01mreturn\x1b[39;00m args, "
    "kwargs[\x1b[33m'missing'\x1b[39m]\n"
    "\n\x1b[31mKeyError\x1b[39m: 'missing'")
NAME_ERROR = (  # with the note hooklab.hints adds after the error's line
    "\x1b[31mNameError\x1b[39m                                 Traceback (most recent call last)\n"
    "\x1b[32m----> \x1b[39m\x1b[32m7\x1b[39m     \x1b[38;5;28;01mwith\x1b[39;00m "
    "capture(net, [\x1b[33m\"body.0\"\x1b[39m]):\n"
    "\n\x1b[31mNameError\x1b[39m: name 'capture' is not defined\n"
    "If 'capture' is defined in a cell above, run that cell first (or Run All Above), and fix the first cell that "
    "fails; otherwise check its spelling.")


def failed(cell: nbformat.NotebookNode, raw_error: str) -> dict[str, str]:
    """One entry of the validator's ``failed`` list (its ``error`` is the same text as HTML, unused here)."""
    return {"source": cell.source.strip(), "error": "", "raw_error": raw_error}


def notebook_and_tests(path: Path) -> tuple[nbformat.NotebookNode, list[nbformat.NotebookNode]]:
    nb = nbformat.read(path, as_version=4)
    return nb, [cell for _, cell in exercises.test_cells(nb.cells)]


def assert_no_source_nor_traceback(lines: list[str], nb: nbformat.NotebookNode) -> None:
    text = "\n".join(lines)
    assert "Traceback" not in text and "\x1b[" not in text, text
    assert "-->" not in text and "Cell In[" not in text, text
    for _, cell in exercises.test_cells(nb.cells):
        for line in cell.source.splitlines():
            if len(line.strip()) > 30:  # any line of a test's code long enough to be its own
                assert line.strip() not in text, f"a test's source in the summary: {line.strip()!r}"


@pytest.mark.parametrize("release", RELEASES, ids=notebook_id)
def test_a_blank_release_passes_nothing_and_each_exercise_reads_not_written_yet(release: Path):
    nb, tests = notebook_and_tests(release)
    results = {"failed": [failed(cell, NOT_WRITTEN.format(function=f"answer_{i}")) for i, cell in enumerate(tests)]}
    lines = summary(nb, results)
    assert lines[0] == f"0 of {len(tests)} exercises pass their visible tests (hidden tests run when it is graded)."
    assert len(lines) == 1 + len(tests)
    for i, line in enumerate(lines[1:]):
        assert line.startswith("· Exercise ") or line.startswith("· Puzzle "), line
        assert line.endswith(f": answer_{i} is not written yet"), line
    assert_no_source_nor_traceback(lines, nb)


@pytest.mark.parametrize("solution", solution_notebooks(), ids=notebook_id)
def test_a_solution_passes_every_exercise_and_says_nothing_more(solution: Path):
    nb, tests = notebook_and_tests(solution)
    assert summary(nb, {}) == [f"{len(tests)} of {len(tests)} exercises pass their visible tests (hidden tests run "
                               "when it is graded)."]


def test_each_failing_exercise_gets_one_line_with_its_first_message():
    nb, tests = notebook_and_tests(FORWARD_HOOKS)
    results = {"failed": [failed(tests[1], ANSWER_ERROR), failed(tests[2], STUDENT_ERROR),
                          failed(tests[3], NOT_WRITTEN.format(function="leaf_output_shapes")),
                          failed(tests[4], NAME_ERROR)]}
    lines = summary(nb, results)
    assert lines == [
        f"{len(tests) - 4} of {len(tests)} exercises pass their visible tests (hidden tests run when it is graded).",
        "✗ Exercise 2 — a hook that changes the data: what plus_five returns when called directly (the new output) is "
        "None, expected a tensor",
        "✗ Exercise 3 — record and rewrite keyword arguments: KeyError: 'missing'",
        "· Exercise 4 — record every leaf's output shape: leaf_output_shapes is not written yet",
        "✗ Exercise 5 — `capture(model, names)`: NameError: name 'capture' is not defined",
    ]
    assert_no_source_nor_traceback(lines, nb)


@pytest.mark.parametrize(("raw_error", "message"), [
    (ANSWER_ERROR, "what plus_five returns when called directly (the new output) is None, expected a tensor"),
    ("hooklab.checks.AnswerError: answer[1] should be x2; got x1", "answer[1] should be x2; got x1"),
    (NOT_WRITTEN.format(function="pre_hook"), "pre_hook is not written yet"),
    ("\x1b[31mNotImplementedError\x1b[39m", "not written yet"),  # a template without hooklab's note
    (STUDENT_ERROR, "KeyError: 'missing'"),
    (NAME_ERROR, "NameError: name 'capture' is not defined"),
    ("\x1b[0;31mCellTimeoutError\x1b[0m: No reply from kernel before timeout",
     "stopped: it ran past the time limit of a cell (an endless loop?)"),
    ("/work/answer.py:3: UserWarning: careful\n  warnings.warn('careful')\n",
     "wrote to stderr, which fails a test: /work/answer.py:3: UserWarning: careful"),
    ("Partial credit; passed some but not all of the tests", "Partial credit; passed some but not all of the tests"),
])
def test_the_first_message_is_the_errors_sentence_without_colours_or_frames(raw_error: str, message: str):
    assert first_message(raw_error) == message


def test_a_long_message_is_cut():
    message = first_message("\x1b[31mValueError\x1b[39m: " + "oops " * 100)
    assert len(message) == MESSAGE and message.startswith("ValueError: oops oops") and message.endswith("…")


def test_a_changed_test_cell_is_named_without_its_source():
    nb, tests = notebook_and_tests(FORWARD_HOOKS)
    lines = summary(nb, {"changed": [{"source": tests[0].source.strip()}]})
    assert lines[0].startswith("Validate cannot judge this notebook: 1 cell that you may not edit changed")
    assert lines[1:] == ["✗ Exercise 1 — collect `[x1, x2, output]` with hooks: this cell was changed"]
    assert_no_source_nor_traceback(lines, nb)


def test_a_notebook_without_test_cells_says_so_in_one_line():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    assert summary(nb, {}) == [NO_TESTS]


@pytest.mark.parametrize(("error", "start"), [
    (DeadKernelError("Kernel died"), "Validate stopped: the notebook's kernel died"),
    (CellTimeoutError("A cell timed out while it was being executed, after 30 seconds."),
     "Validate stopped: a cell ran past the time limit (30 s)"),
    (RuntimeError("Kernel didn't respond in 60 seconds\nmore"),
     "Validate could not run the notebook: RuntimeError: Kernel didn't respond in 60 seconds"),
])
def test_a_validator_that_stops_is_explained_in_one_line(error: BaseException, start: str):
    lines = could_not_validate(error, timeout=30)
    assert len(lines) == 1 and "\n" not in lines[0] and lines[0].startswith(start), lines
