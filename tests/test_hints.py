"""A blank exercise says in one line that it is not written yet, in every notebook; other errors are shown as usual."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import REPO, nbgrader_cells, notebook_id, solution_notebooks

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

RELEASES = [REPO / "notebooks" / path.relative_to(REPO / "solutions") for path in solution_notebooks()]
EXPLAINED = "is not written yet: replace `raise NotImplementedError()`"


def executed(nb: nbformat.NotebookNode, folder) -> nbformat.NotebookNode:
    NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def errors(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [output for output in cell.get("outputs", []) if output.output_type == "error"]


@pytest.mark.parametrize("release", RELEASES, ids=notebook_id)
def test_every_unwritten_exercise_a_test_meets_is_named_in_one_line_and_the_summary_lists_them(release, tmp_path):
    """In a kernel as JupyterLab starts it (a forked, sandboxed one sees no file of the test's folder): the last cell's
    summary reads the notebook beside it."""
    (tmp_path / release.name).write_bytes(release.read_bytes())  # beside the kernel, as in the student's folder
    nb = executed(nbformat.read(release, as_version=4), tmp_path)
    unwritten = [error for cell in nbgrader_cells(nb, "grade") for error in errors(cell)
                 if error.ename == "NotImplementedError"]
    for error in unwritten:
        text = "\n".join(error.traceback)
        assert EXPLAINED in text, f"a blank exercise raised NotImplementedError without saying which: {text[-500:]}"
        assert len(error.traceback) <= 3, f"a long traceback for a blank exercise: {len(error.traceback)} entries"
        assert "%tb" not in text, f"IPython's '%tb' line before a blank exercise's message: {text[:300]}"
    if release.parent.name != "08_backward_puzzles":  # 08's check_backward names the unwritten backward itself
        assert unwritten, f"no test cell of the blank {release.name} met an unwritten exercise"
    summary = "".join(output.get("text", "") for output in nb.cells[-1].outputs)
    tests = len(nbgrader_cells(nb, "grade"))
    assert summary.startswith(f"0 of {tests} exercises pass their visible tests"), ("the last cell's summary: "
                                                                                    f"{summary[:300]}")
    assert summary.count(" is not written yet") == tests, f"each blank exercise is listed as not written yet: {summary}"


def test_other_errors_are_shown_as_ipython_shows_them(forked_kernels, tmp_path):
    cells = [
        "from hooklab.hints import explain_errors\nexplain_errors()",
        "def answer():\n    # YOUR CODE HERE\n    raise NotImplementedError()",
        "answer()",
        "raise NotImplementedError()",
        "torch_like = NotImplementedError('not supported for this dtype')\nraise torch_like",
        "undefined_name + 1",
        "1 / 0",
    ]
    nb = executed(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells]), tmp_path)
    called, top_level, library, name, other = (errors(cell)[0] for cell in nb.cells[2:])
    assert ("answer is not written yet" in "\n".join(called.traceback)
            and "line 3 of its cell" in "\n".join(called.traceback))
    assert "This cell's answer is not written yet" in "\n".join(top_level.traceback)
    assert EXPLAINED not in "\n".join(library.traceback) and "Traceback" in "\n".join(library.traceback), (
        "an error not from a template keeps its traceback")
    assert "run that cell first" in "\n".join(name.traceback), "a NameError says to run the cell that defines the name"
    assert (other.ename == "ZeroDivisionError" and "is not written yet" not in "\n".join(other.traceback)
            and "run that cell" not in "\n".join(other.traceback))


def test_a_wrong_answer_shows_the_checkers_sentence_alone_and_a_students_own_error_its_frames(forked_kernels,
                                                                                               tmp_path):
    """In the lab a check that fails shows its sentence, no frame of the test or of the checkers and no '%tb' line;
    an error raised in the student's own function keeps the student's frames."""
    cells = [
        "from hooklab.checks import check_equal\n\n\ndef answer():\n    return 14",
        "check_equal(answer(), 11, 'output with both hooks')",
        "def hook(module, args, output):\n    return output.view(3, 3)",
        "import torch\n\nhook(None, (), torch.ones(4))",
    ]
    nb = executed(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells]), tmp_path)
    wrong, own = errors(nb.cells[1])[0], errors(nb.cells[3])[0]
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(wrong.traceback)).strip()
    assert shown == "AnswerError: output with both hooks should be 11, got 14", shown
    assert "return output.view(3, 3)" in re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(own.traceback)), (
        "the student's own error lost the line that raised it")


def test_readme_quotes_what_the_notebooks_print(forked_kernels, tmp_path):
    """The messages README's students section quotes are the ones a student sees."""
    import torch

    from hooklab.checks import AnswerError, check_answer

    readme = (REPO / "README.md").read_text()
    passed = "✓ MyLinear passes the visible tests"
    outputs = "".join(out.get("text", "") for cell in nbformat.read(solution_notebooks()[0], as_version=4).cells
                      for out in cell.get("outputs", []))
    assert f"`{passed}`" in readme and passed in outputs
    x1, x2 = torch.tensor([0.25]), torch.tensor([0.5])
    with pytest.raises(AnswerError) as wrong:
        check_answer([x1, x1, x1 + x2], {"x1": x1, "x2": x2, "output": x1 + x2}, same_object=True)
    assert f"`{wrong.value}`" in readme
    cells = ["from hooklab.hints import explain_errors\nexplain_errors()",
             "def pre_hook(module, args):\n    # YOUR CODE HERE\n    raise NotImplementedError()", "pre_hook(None, ())"]
    nb = executed(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells]), tmp_path)
    shown = "\n".join(errors(nb.cells[-1])[0].traceback).replace("`", "")
    quoted = re.search(r"ends with the line\s+`(pre_hook is not written yet: [^`]*?) …`", readme)
    last = shown.strip().splitlines()[-1]
    assert quoted and last.startswith(quoted.group(1)), (f"README quotes {quoted and quoted.group(1)!r}; the error "
                                                         f"ends with {last!r}")


def test_the_progress_summary_lists_each_exercise_with_its_last_outcome(tmp_path):
    def test_cell(grade_id: str, source: str) -> nbformat.NotebookNode:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata.nbgrader = {"grade": True, "solution": False, "grade_id": grade_id, "points": 1, "locked": True}
        return cell

    cells = [
        nbformat.v4.new_code_cell("from hooklab.hints import explain_errors, progress\nexplain_errors()"),
        nbformat.v4.new_markdown_cell("### Exercise 1 — collect the inputs (2 points)"),
        test_cell("collect_test", "print('✓ collect passes the visible tests')"),
        nbformat.v4.new_markdown_cell("### Exercise 2 — change the output (1 point)"),
        test_cell("change_test", "raise AssertionError('answer[1] should be x2; got a tensor equal to x1')"),
        nbformat.v4.new_markdown_cell("### Exercise 3 — not reached (1 point)"),
        test_cell("later_test", "print('never run here')"),
        nbformat.v4.new_markdown_cell("### Exercise 4 — blank (1 point)"),
        nbformat.v4.new_code_cell("def blank():\n    # YOUR CODE HERE\n    raise NotImplementedError()"),
        test_cell("blank_test", "blank()"),
        nbformat.v4.new_code_cell("progress('lesson.ipynb')"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(nb, tmp_path / "lesson.ipynb")
    runnable = nbformat.v4.new_notebook(cells=[cell for cell in cells if "never run" not in cell.source])
    summary = "".join(output.get("text", "") for output in executed(runnable, tmp_path).cells[-1].outputs)
    assert summary == ("1 of 4 exercises pass their visible tests (hidden tests run when it is graded).\n"
                       "✓ Exercise 1 — collect the inputs\n"
                       "✗ Exercise 2 — change the output: answer[1] should be x2; got a tensor equal to x1\n"
                       "· Exercise 3 — not reached: not run yet\n"
                       "· Exercise 4 — blank: blank is not written yet\n"), summary
    shown = summary.splitlines()[1:]
    quoted = re.findall(r"`([✓✗·]) Exercise \d+ — …([^`]*)`", (REPO / "README.md").read_text())
    def state(text: str) -> str:  # the function an unwritten exercise names is the notebook's
        return re.sub(r"[\w.]+ is not written yet$", "<function> is not written yet", text)

    assert len(set(quoted)) == 4, f"README quotes each state of the summary: {quoted}"
    for mark, end in quoted:
        assert any(line.startswith(mark) and state(line).endswith(state(end)) for line in shown), (
            f"README quotes {mark} … {end!r}; the summary: {shown}")


def test_the_progress_summary_says_what_to_do_when_the_notebook_is_not_beside_the_kernel(tmp_path, capsys, monkeypatch):
    from hooklab.hints import progress

    monkeypatch.chdir(tmp_path)
    progress("lesson.ipynb")
    said = capsys.readouterr().out
    assert said.count("\n") == 1 and "lesson.ipynb is not in this folder" in said, said
    assert ("put a copy of the notebook there under that name (on Colab: upload it in the Files panel), then run this "
            "cell again") in said


def test_the_progress_summary_in_a_graded_kernel_points_to_the_scores(tmp_path, capsys, monkeypatch):
    """The grader's kernel runs the graded test cells (hidden tests, blanked expected values), which the summary's
    record of the lab's cells cannot match: it says where the scores are instead of "not run yet"."""
    from hooklab import hints, observations

    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(observations._state, "channel", 99)  # what connect() leaves in a kernel the grader runs
    hints.progress("lesson.ipynb")
    assert capsys.readouterr().out == hints.GRADED + "\n"
