"""``hooklab new-exercise`` (:mod:`hooklab.scaffold`): the cells it adds to a copy of a source notebook, in the pack's
shape and valid for nbgrader, and the notebooks and ids it refuses, with the reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.nbgraderformat import MetadataValidator
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions
from nbgrader.utils import is_grade, is_solution

from conftest import REPO
from hooklab import cli
from hooklab.grading.judge import without_expectations
from hooklab.scaffold import ScaffoldError, new_exercise
from test_exercise_text import HEADING, exercise_texts


def _copy(tmp_path: Path, relative: str) -> Path:
    """A copy of ``solutions/<relative>`` under ``tmp_path/solutions/``."""
    target = tmp_path / "solutions" / relative
    target.parent.mkdir(parents=True)
    shutil.copy(REPO / "solutions" / relative, target)
    return target


@pytest.fixture
def apply_copy(tmp_path: Path) -> Path:
    return _copy(tmp_path, "04_apply/apply.ipynb")


def _next_number(path: Path) -> int:
    """The number the next exercise of a notebook gets: one after its exercises' count (an instructor may add some)."""
    return len(exercise_texts(path)) + 1


def test_the_exercise_goes_before_the_summary_with_its_heading_answer_and_test_cells(apply_copy: Path):
    before, number = nbformat.read(apply_copy, as_version=4), _next_number(apply_copy)
    added = new_exercise(apply_copy, "count_children", "count the children", 2)
    nb = nbformat.read(apply_copy, as_version=4)
    assert len(nb.cells) == len(before.cells) + 3
    text, answer, test = nb.cells[added.index:added.index + 3]
    assert nb.cells[added.index + 3].source.startswith("## Summary")
    assert added.number == number
    assert text.source.startswith(f"### Exercise {number} — count the children (2 points)\n")
    assert answer.metadata == {"nbgrader": {"grade": False, "grade_id": "count_children", "locked": False,
                                            "schema_version": 3, "solution": True, "task": False}}
    assert test.metadata == {"nbgrader": {"grade": True, "grade_id": "count_children_test", "locked": True,
                                          "points": 2, "schema_version": 3, "solution": False, "task": False}}
    assert answer.source.startswith("def count_children(") and "    ### BEGIN SOLUTION\n" in answer.source
    visible, hidden = test.source.split("### BEGIN HIDDEN TESTS\n")
    assert "count_children(x)" in visible and "random_generator" not in visible
    assert hidden.startswith("from hooklab.checks import check_tensor, random_generator")
    assert "generator = random_generator()" in hidden and hidden.rstrip().endswith("### END HIDDEN TESTS")
    assert "### BEGIN REFERENCE" in hidden and "### END REFERENCE" in hidden
    ids = [cell.id for cell in nb.cells]
    assert len(set(ids)) == len(ids) and set(added.cell_ids) == {text.id, answer.id, test.id}
    assert not {text.id, answer.id, test.id} & {cell.id for cell in before.cells}
    assert [c for c in nb.cells if c not in (text, answer, test)] == before.cells, "the other cells are unchanged"
    assert added.notes == (), "04 imports check_tensor and random_generator"


def test_the_notebook_stays_valid_for_nbformat_and_nbgrader_and_nbgrader_releases_the_new_cells(apply_copy: Path):
    number = _next_number(apply_copy)
    added = new_exercise(apply_copy, "count_children", "count the children", 1)
    nb = nbformat.read(apply_copy, as_version=4)
    nbformat.validate(nb)
    MetadataValidator().validate_nb(nb)
    text, answer, test = nb.cells[added.index:added.index + 3]
    assert is_solution(answer) and not is_grade(answer) and is_grade(test) and not is_solution(test)
    assert text.source.startswith(f"### Exercise {number} — count the children (1 point)\n")
    released, _ = ClearHiddenTests().preprocess(*ClearSolutions().preprocess(nb, {}))
    stub, checks = released.cells[added.index + 1:added.index + 3]
    assert "raise NotImplementedError()" in stub.source and "BEGIN SOLUTION" not in stub.source
    assert "random_generator" not in checks.source and checks.source.startswith("x = ")


def test_graded_the_test_cell_calls_its_reference_only_where_expected_values_are_taken_out(apply_copy: Path):
    """The grader blanks the REFERENCE block in the student's kernel and takes out the checkers' expected arguments:
    a call of the block's function anywhere else would raise NameError there (the reference then fails its test)."""
    added = new_exercise(apply_copy, "count_children", "count the children", 2)
    test = nbformat.read(apply_copy, as_version=4).cells[added.index + 2]
    assert "expected_count_children" in test.source
    assert "expected_count_children" not in without_expectations(test.source)


def test_the_skeleton_has_the_shape_the_text_tests_ask_for(apply_copy: Path):
    new_exercise(apply_copy, "count_children", "count the children", 2)
    heading, text = exercise_texts(apply_copy)[-1]
    assert HEADING.match(heading)
    requirements, checked = text.split("**Requirements**", 1)[1].split("**Checked**", 1)
    assert "1. " in requirements and "2. " in requirements
    assert "- 1: " in checked and "- 2: " in checked


def test_a_notebook_without_a_summary_gets_it_before_your_progress(tmp_path: Path):
    copy = _copy(tmp_path, "05_autograd_function/autograd_function.ipynb")
    added = new_exercise(copy, "double_it", "double it", 1.5)
    nb = nbformat.read(copy, as_version=4)
    assert nb.cells[added.index + 3].source.startswith("## Your progress")
    assert nb.cells[added.index + 2].metadata.nbgrader.points == 1.5


@pytest.mark.parametrize(("grade_id", "message"), [
    ("apply_order", "already has a cell with grade_id 'apply_order'"),
    ("init_weights", "already has a cell with grade_id 'init_weights'"),
    ("apply_order_test2", "already has a cell with grade_id 'apply_order'"),  # read as a test cell of apply_order
    ("FunctionA", "already defines FunctionA"),
    ("count-children", "must be a Python name"),
    ("lambda", "must be a Python name"),
    ("count_test", "'_test' marks a test cell"),
])
def test_an_id_that_is_taken_or_no_python_name_is_refused_and_the_notebook_left_alone(apply_copy: Path, grade_id: str,
                                                                                     message: str):
    before = apply_copy.read_bytes()
    with pytest.raises(ScaffoldError, match=message):
        new_exercise(apply_copy, grade_id, "a title", 1)
    assert apply_copy.read_bytes() == before


def test_the_same_id_twice_is_refused(apply_copy: Path):
    new_exercise(apply_copy, "count_children", "count the children", 2)
    with pytest.raises(ScaffoldError, match="already has a cell with grade_id 'count_children'"):
        new_exercise(apply_copy, "count_children", "again", 1)


def test_a_missing_notebook_a_release_and_a_notebook_outside_solutions_are_refused(tmp_path: Path):
    with pytest.raises(ScaffoldError, match="no such notebook"):
        new_exercise(tmp_path / "solutions" / "04_apply" / "missing.ipynb", "count_children", "t", 1)
    release = tmp_path / "notebooks" / "04_apply" / "apply.ipynb"
    release.parent.mkdir(parents=True)
    shutil.copy(REPO / "notebooks" / "04_apply" / "apply.ipynb", release)
    with pytest.raises(ScaffoldError, match=r"generated from solutions/ by `make release`: never edit it by hand; add "
                                            r"the exercise to solutions/04_apply/apply.ipynb"):
        new_exercise(release, "count_children", "t", 1)
    elsewhere = tmp_path / "apply.ipynb"
    shutil.copy(REPO / "solutions" / "04_apply" / "apply.ipynb", elsewhere)
    with pytest.raises(ScaffoldError, match="not a source notebook"):
        new_exercise(elsewhere, "count_children", "t", 1)


@pytest.mark.parametrize(("title", "points", "message"), [("", 1, "one line"), ("a\nb", 1, "one line"),
                                                          ("t", 0, "more than 0")])
def test_an_empty_title_or_no_points_is_refused(apply_copy: Path, title: str, points: float, message: str):
    with pytest.raises(ScaffoldError, match=message):
        new_exercise(apply_copy, "count_children", title, points)


def test_the_command_adds_the_exercise_and_prints_the_catalogue_entries_or_says_why_not(apply_copy: Path, capsys):
    args = ["new-exercise", str(apply_copy), "--id", "count_children", "--title", "count the children", "--points", "2"]
    number = _next_number(apply_copy)
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Exercise {number} (count_children, count_children_test) added to ")
    assert '"count_children": [' in out and "Dimension(" in out and 'Wrong("count_children_' in out
    assert cli.main(args) == 2
    assert capsys.readouterr().err == (f"hooklab: {apply_copy.name} already has a cell with grade_id 'count_children': "
                                       "choose another --id\n")
