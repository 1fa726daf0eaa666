"""``hooklab new-exercise``: a new graded exercise in a source notebook of ``solutions/``, in the pack's shape.

Three cells go in after the notebook's last exercise's content, before its ``## Summary`` (or, without one, its
``## Your progress``): the heading ``### Exercise N — title (P points)`` with a **Requirements** and a **Checked**
skeleton, an answer cell (nbgrader solution, ``grade_id`` the id, a stub function between the solution
delimiters) and a test cell (nbgrader grade, ``grade_id`` ``<id>_test``, the points, a visible check and a hidden
block drawing its inputs from ``random_generator()``). The instructor then writes the text, the solution and the
tests (docs/new_exercise.md); the catalogue entries under ``tests/catalogues/exercises/`` are printed, not written,
as an input-space dimension must be a real one.
"""

from __future__ import annotations

import keyword
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell

HEADING = re.compile(r"^### (Exercise|Puzzle) (\d+) — ", re.M)
CHECKERS = ("check_tensor", "random_generator")  # what the scaffold's test cell calls


class ScaffoldError(ValueError):
    """Why the exercise cannot be added, in one sentence."""


@dataclass(frozen=True)
class Scaffolded:
    """What :func:`new_exercise` added: the heading's number, where the cells went, what is left to do by hand."""

    number: int
    index: int  # the markdown cell's index in the notebook
    cell_ids: tuple[str, str, str]
    notes: tuple[str, ...]


def _points(points: float) -> int | float:
    return int(points) if float(points).is_integer() else float(points)


def _heading(word: str, number: int, title: str, points: int | float) -> str:
    return f"### {word} {number} — {title} ({points:g} point{'' if points == 1 else 's'})"


def markdown_source(word: str, number: int, grade_id: str, title: str, points: int | float) -> str:
    return f"""{_heading(word, number, title, points)}

Write `{grade_id}(x)`: TODO say what to produce, in the student's terms.

**Requirements**

1. TODO a property of the answer that a test can check.
2. TODO another one (a requirement no test can check says so: "(not checked: …)").

**Checked** (hidden tests: TODO what they draw afresh):

- 1: TODO the visible example, and what the hidden tests vary;
- 2: TODO which check of the test cell covers it."""


def answer_source(grade_id: str) -> str:
    return f'''def {grade_id}(x: torch.Tensor) -> torch.Tensor:
    ### BEGIN SOLUTION
    raise NotImplementedError("TODO: the reference solution of {grade_id}")
    ### END SOLUTION'''


def test_source(grade_id: str) -> str:
    return f'''x = torch.arange(6.0).reshape(2, 3)  # TODO the visible example
check_tensor({grade_id}(x), x, "{grade_id}(x)")  # TODO its expected value, written out
print("✓ {grade_id} passes the visible tests")
### BEGIN HIDDEN TESTS
from hooklab.checks import check_tensor, random_generator  # the real checkers, even if an answer cell redefined them


### BEGIN REFERENCE
# graded, these lines are blank in the student's kernel: call what they define only in a checker's expected argument
def expected_{grade_id}(x: torch.Tensor) -> torch.Tensor:
    """TODO the expected value, computed without the student's answer."""
    return x
### END REFERENCE


generator = random_generator()
for _ in range(3):  # TODO draw over the exercise's input space: sizes, dtypes, structure, boundary values
    x = torch.randn(int(torch.randint(1, 5, (), generator=generator)), 3, generator=generator)
    check_tensor({grade_id}(x), expected_{grade_id}(x), f"{grade_id}(x) for x of shape {{tuple(x.shape)}}")
### END HIDDEN TESTS'''


def _grade_ids(nb: nbformat.NotebookNode) -> list[str]:
    return [cell.metadata["nbgrader"].get("grade_id", "") for cell in nb.cells if "nbgrader" in cell.metadata]


def _insertion_index(nb: nbformat.NotebookNode) -> int:
    """Before the ``## Summary`` cell, else before ``## Your progress``, else at the end."""
    for title in ("## Summary", "## Your progress"):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown" and cell.source.lstrip().startswith(title):
                return index
    return len(nb.cells)


def _fresh_id(taken: set[str]) -> str:
    while (cell_id := uuid.uuid4().hex[:8]) in taken:
        pass
    taken.add(cell_id)
    return cell_id


def _check_target(notebook: Path) -> None:
    if "notebooks" in notebook.resolve().parts[-3:-2]:
        source = Path("solutions", *notebook.resolve().parts[-2:])
        raise ScaffoldError(f"{notebook} is the student release, generated from solutions/ by `make release`: never "
                            f"edit it by hand; add the exercise to {source}")
    if not notebook.is_file():
        raise ScaffoldError(f"no such notebook: {notebook}")
    if notebook.suffix != ".ipynb" or notebook.resolve().parent.parent.name != "solutions":
        raise ScaffoldError(f"{notebook} is not a source notebook: give solutions/<assignment>/<notebook>.ipynb")


def new_exercise(notebook: Path, grade_id: str, title: str, points: float) -> Scaffolded:
    """Add the exercise ``grade_id`` to ``notebook`` (a ``solutions/<assignment>/<notebook>.ipynb``), in place."""
    _check_target(notebook)
    if not grade_id.isidentifier() or keyword.iskeyword(grade_id) or not grade_id.isascii():
        raise ScaffoldError(f"--id {grade_id!r} must be a Python name (it names the answer's function): letters, "
                            "digits and underscores, not starting with a digit")
    if grade_id.endswith("_test"):
        raise ScaffoldError(f"--id {grade_id!r}: '_test' marks a test cell's grade_id (<id>_test…); choose another")
    if not title.strip() or "\n" in title:
        raise ScaffoldError("--title must be one line of text")
    if not points > 0:
        raise ScaffoldError(f"--points must be more than 0 (a test cell needs points), not {points:g}")
    nb = nbformat.read(notebook, as_version=4)
    taken = _grade_ids(nb)
    clash = [existing for existing in taken if existing in (grade_id, f"{grade_id}_test")
             or existing.startswith(f"{grade_id}_test") or grade_id.startswith(f"{existing}_test")]
    if clash:
        raise ScaffoldError(f"{notebook.name} already has a cell with grade_id {clash[0]!r}: choose another --id")
    if re.search(rf"^(def|class) {grade_id}\b", "\n".join(c.source for c in nb.cells if c.cell_type == "code"), re.M):
        raise ScaffoldError(f"{notebook.name} already defines {grade_id}: choose another --id")
    headings = [match for cell in nb.cells if cell.cell_type == "markdown" for match in HEADING.finditer(cell.source)]
    word = headings[-1].group(1) if headings else "Exercise"
    number = max((int(match.group(2)) for match in headings), default=0) + 1
    points = _points(points)
    cell_ids = {cell.get("id", "") for cell in nb.cells}
    text = new_markdown_cell(markdown_source(word, number, grade_id, title.strip(), points), id=_fresh_id(cell_ids))
    answer = new_code_cell(answer_source(grade_id), id=_fresh_id(cell_ids), metadata={"nbgrader": {
        "grade": False, "grade_id": grade_id, "locked": False, "schema_version": 3, "solution": True, "task": False}})
    test = new_code_cell(test_source(grade_id), id=_fresh_id(cell_ids), metadata={"nbgrader": {
        "grade": True, "grade_id": f"{grade_id}_test", "locked": True, "points": points, "schema_version": 3,
        "solution": False, "task": False}})
    index = _insertion_index(nb)
    nb.cells[index:index] = [text, answer, test]
    nbformat.validate(nb)
    nbformat.write(nb, notebook)
    code = "\n".join(cell.source for cell in nb.cells[:index] if cell.cell_type == "code")
    notes = tuple(f"the notebook does not import {name} before the exercise: add it to its `from hooklab.checks "
                  "import …` line" for name in CHECKERS if not re.search(rf"^from hooklab\.checks import .*\b{name}\b",
                                                                         code, re.M))
    return Scaffolded(number, index, (text.id, answer.id, test.id), notes)


def catalogue_hint(notebook: Path, grade_id: str) -> str:
    """What to add to the notebook's module of ``tests/catalogues/exercises/``, to paste and fill in."""
    module = notebook.resolve().parent.parent.parent / "tests" / "catalogues" / "exercises" / f"{notebook.stem}.py"
    where = module if module.is_file() else f"tests/catalogues/exercises/{notebook.stem}.py (a new module: list it " \
        "in that package's __init__.py)"
    return f'''In {where}, add to SPACE (one Dimension per thing the text allows, each a real condition on a call or
a reading that names the check covering it; see tests/catalogues/input_space.py):

    "{grade_id}": [
        Dimension("<what the text allows>", lambda c: c.target == "{grade_id}" and <a property of c.args>),
        Dimension("<what no single call shows>", reading="{grade_id}_test's hidden <check> covers it"),
    ],

and to readings() one Wrong per plausible misreading of the requirements (it must fail {grade_id}_test):

        Wrong("{grade_id}_<the misreading>", "{notebook.resolve().parent.name}", "{grade_id}", _cell(\'\'\'
            def {grade_id}(x):
                ...
        \'\'\'), "<words of the failure message>"),'''
