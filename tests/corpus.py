"""A class of submissions covering every way a submission can be right, wrong, broken or cheating.

Built from the releases and solutions, so it stays in step with them. Each case says what it
submits and what grading must make of it: the points of every test cell of its notebook, why it
could not be run, why it is held for review, or what note its grading carries. Three families:

- :func:`structural_cases`: careless and broken submissions of the forward-hooks notebook (blank,
  wrong, crashing, looping, deleted, pasted and moved cells, stderr output, scripts displayed, extra files);
- :func:`honest_cases`: every answer of ``honest_answers.py`` (all six notebooks, many styles)
  plus harmless extra cells: full points, never held;
- :func:`attack_cases`: every cheat of ``attacks.py`` (all six notebooks): held, 0 points.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import nbformat
from nbgrader import utils

from attacks import attacks
from conftest import REPO, solution_sources
from honest_answers import extra_cells, honest_answers

ASSIGNMENT = "02_forward_hooks"  # the structural cases' notebook
# An extra cell that displays what would run in the feedback page if it were shown as it is (no import needed:
# ``display`` is the kernel's, and any object may have rich representations).
SHOWS_SCRIPTS = """class Shown:
    def _repr_html_(self):
        return "<script>hacked(1)</script><img src=x onerror=hacked(2)><b>my hooks ran</b>"

    def _repr_javascript_(self):
        return "hacked(3)"


display(Shown())
"""
# Cheats that tamper with nothing but hand the checkers objects that claim to be equal to anything:
# the checkers compare plain data only, so these are just wrong answers (0 points, not held).
CAUGHT_BY_CHECKERS = {"list_of_always_equal_objects"}


@dataclass
class Case:
    student: str
    assignment: str
    files: dict[str, bytes]  # path inside the submission → content
    scores: dict[str, float]  # test cell grade_id → expected points, unless held (a held notebook scores 0)
    reason: str = ""  # expected in the summary when the submission cannot be run at all
    held: str | None = ""  # expected in the reasons it is held for review ("": must not be held; None: either)
    note: str = ""  # expected in the notes of its grading (a stopped kernel, a repair)
    why: str = field(default="", repr=False)


@cache
def notebook_name(assignment: str) -> str:
    return next((REPO / "solutions" / assignment).glob("*.ipynb")).name


def _read(step: str, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(REPO / step / assignment / notebook_name(assignment), as_version=4)


@cache
def points(assignment: str) -> dict[str, float]:
    """Test cell grade_id → its points."""
    return {c.metadata.nbgrader.grade_id: float(c.metadata.nbgrader.points) for c in _read("solutions", assignment).cells if utils.is_grade(c)}


@cache
def solutions(assignment: str) -> dict[str, str]:
    return solution_sources(_read("solutions", assignment))


def notebook(assignment: str, answers: dict[str, str], *, drop: tuple[str, ...] = (), edit_tests: str | None = None,
             extra: list[str] = (), move: tuple[str, str] | None = None, copy: str | None = None) -> bytes:
    """The release with answer cells filled (by grade_id), cells dropped, test cells edited,
    ``extra`` code cells added after each test cell (in turn), cell ``move[0]`` moved to just before
    ``move[1]``, and a pasted copy of cell ``copy`` right after it."""
    nb = _read("notebooks", assignment)
    extras = iter(extra)
    cells = []
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
        if grade_id in drop:
            continue
        if edit_tests is not None and utils.is_grade(cell):
            cell.source = edit_tests
        cells.append(cell)
        if copy is not None and grade_id == copy:
            twin = nbformat.from_dict(cell)
            twin.id = f"{cell.id}-copy"
            cells.append(twin)
        if utils.is_grade(cell):
            cells += [nbformat.v4.new_code_cell(source) for source in itertools.islice(extras, 1)]
    cells += [nbformat.v4.new_code_cell(source) for source in extras]
    if move is not None:
        moving = next(c for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") == move[0])
        cells.remove(moving)
        cells.insert(next(i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == move[1]), moving)
    nb.cells = cells
    return nbformat.writes(nb).encode()


def scores(assignment: str, **overrides: float) -> dict[str, float]:
    """Full points except where overridden (by exercise grade_id, without "_test")."""
    return {test: float(overrides.get(test.removesuffix("_test"), full)) for test, full in points(assignment).items()}


def zero(assignment: str) -> dict[str, float]:
    return dict.fromkeys(points(assignment), 0.0)


def from_on(assignment: str, exercise: str) -> dict[str, float]:
    """Overrides for :func:`scores`: 0 for ``exercise`` and every exercise after it in the notebook."""
    exercises = [test.removesuffix("_test") for test in points(assignment)]
    return dict.fromkeys(exercises[exercises.index(exercise):], 0)


def structural_cases() -> list[Case]:
    a = ASSIGNMENT
    solved = solutions(a)
    name = notebook_name(a)

    def case(student: str, answers: dict[str, str], expected: dict[str, float], why: str = "", **options) -> Case:
        layout = {k: options.pop(k) for k in ("drop", "edit_tests", "extra", "move", "copy") if k in options}
        return Case(student, a, {name: notebook(a, {**solved, **answers}, **layout)}, expected, why=why, **options)

    wrong_collect = solved["collect_hooks"].replace("answer.extend(args)", "pass")
    other = _read("solutions", "01_module_basics")
    return [
        case("full", {}, scores(a)),
        case("rewritten", {"collect_hooks": (
            "def pre_hook(module, args):\n    for x in args:\n        answer.append(x)\n\n\n"
            "def hook(module, args, output):\n    answer.insert(len(answer), output)\n"
        ), "change_hooks": (
            "def double_inputs(module, args):\n    return tuple(x + x for x in args)\n\n\n"
            "def plus_five(module, args, output):\n    return output.add(5)\n"
        )}, scores(a), "right answers written differently"),
        Case("partial", a, {name: notebook(a, {"collect_hooks": solved["collect_hooks"]})}, scores(a, **from_on(a, "change_hooks"))),
        Case("blank", a, {name: notebook(a, {})}, zero(a)),
        case("syntax_error", {"change_hooks": "def double_inputs(module, args)\n    return args\n"}, scores(a, change_hooks=0)),
        case("exception", {"collect_hooks": (
            "def pre_hook(module, args):\n    raise RuntimeError('oops')\n\n\ndef hook(module, args, output):\n    pass\n"
        )}, scores(a, collect_hooks=0), "an answer that raises"),
        case("infinite_loop", {"leaf_shapes": "while True:\n    pass\n"}, scores(a, leaf_shapes=0), "interrupted after the cell timeout"),
        case("stubborn_loop", {"change_hooks": (
            "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass\n"
        )}, scores(a, **from_on(a, "change_hooks")), note="still running",
            why="ignores the interrupt: the cells before keep their points, the rest score 0"),
        case("exits", {"collect_hooks": "import os\nos._exit(1)\n"}, zero(a), note="kernel died"),
        case("late_crash", {"leaf_shapes": "import faulthandler\nfaulthandler._sigsegv()\n"}, scores(a, **from_on(a, "leaf_shapes")),
             note="kernel died", why="a segfault in a late exercise: the tests that passed before keep their points"),
        case("memory_hog", {"change_hooks": "hog = bytearray(64 * 2**30)\n" + solved["change_hooks"]}, scores(a, change_hooks=0)),
        Case("invalid_json", a, {name: b'{"cells": [ this is not json'}, zero(a), reason="not a valid notebook"),
        Case("wrong_assignment", a, {name: nbformat.writes(other).encode()}, zero(a)),
        Case("edited_tests", a, {name: notebook(a, {}, edit_tests="print('all tests pass')")}, zero(a),
             why="locked test cells replaced: nbgrader restores them from the gradebook"),
        case("deleted_test", {"collect_hooks": wrong_collect}, scores(a, collect_hooks=0), drop=("collect_hooks_test",),
             note="restored collect_hooks_test", why="a wrong answer whose test cell was deleted: the test is put back"),
        case("deleted_test_right", {}, scores(a), drop=("change_hooks_test",), note="restored change_hooks_test",
             why="a right answer whose test cell was deleted: put back where it was, after the names it uses"),
        case("deleted_exercise", {}, scores(a, change_hooks=0), drop=("change_hooks", "change_hooks_test"),
             note="restored change_hooks", why="answer and test deleted: both restored, the rest graded normally"),
        case("pasted_test", {}, scores(a), copy="collect_hooks_test", note="dropped a copy of collect_hooks_test"),
        case("pasted_answer", {}, scores(a), copy="change_hooks", why="a second copy of an answer cell is plain code"),
        case("moved_test", {}, scores(a), move=("change_hooks_test", "change_hooks"),
             why="a test cell moved above its answer runs in the source's order"),
        case("hard_coded", {"change_hooks": (
            "def double_inputs(module, args):\n    return torch.tensor([2.0]), torch.tensor([4.0])\n\n\n"
            "def plus_five(module, args, output):\n    return output + 5\n"
        )}, scores(a, change_hooks=0), "the visible test's numbers typed in: hidden tests use fresh inputs"),
        case("stderr", {"collect_hooks": "import logging\nimport sys\n\n\n" + solved["collect_hooks"].replace(
            "answer.append(output)",
            "print('hook ran', file=sys.stderr)\n    logging.warning('still here')\n    answer.append(output)")},
             scores(a), "stderr from the student's own hooks during a passing test cell"),
        case("warns", {"collect_hooks": "import warnings\n\n\n" + solved["collect_hooks"].replace(
            "answer.append(output)", "warnings.warn('hooks are fun')\n    answer.append(output)")},
             scores(a), "a warning on stderr in a passing test cell"),
        case("shows_scripts", {}, scores(a), extra=[SHOWS_SCRIPTS],
             why="HTML with a script and an event handler, and JavaScript, displayed while graded: inert in the feedback"),
        Case("extra_files", a, {name: notebook(a, solved), "notes.txt": b"my notes\n", "data/cache.bin": bytes(range(256))}, scores(a)),
        Case("no_notebook", a, {"notes.txt": b"I forgot to upload it\n"}, zero(a), reason="no notebook"),
        case("flagged_but_honest", {}, scores(a), extra=["import gc\ngc.collect()\n"], held="searches the interpreter's objects (gc)",
             why="honest code that uses a flagged module: held, then released by the instructor"),
    ]


def honest_cases() -> list[Case]:
    """Every honest answer, in as few notebooks as one answer per cell allows, with extra cells."""
    by_cell: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for answer in honest_answers():
        by_cell[answer.assignment][answer.grade_id].append(answer.source)
    extras: dict[str, list[str]] = defaultdict(list)
    for assignment, _, source in extra_cells():
        extras[assignment].append(source)
    cases = []
    for assignment, alternatives in sorted(by_cell.items()):
        for variant in range(max(map(len, alternatives.values()))):
            answers = {**solutions(assignment), **{g: sources[variant] for g, sources in alternatives.items() if variant < len(sources)}}
            files = {notebook_name(assignment): notebook(assignment, answers, extra=extras[assignment] if variant == 0 else [])}
            cases.append(Case(f"honest{variant}", assignment, files, scores(assignment), why="honest answers in other styles"))
    return cases


def attack_cases() -> list[Case]:
    cases = []
    for attack in attacks():
        answers = {**solutions(attack.assignment), **attack.answers}
        files = {notebook_name(attack.assignment): notebook(attack.assignment, answers)}
        files.update({path: text.encode() for path, text in attack.files.items()})
        # a file shipped with the submission is held only where the kernel would import it
        held = "" if attack.name in CAUGHT_BY_CHECKERS else None if attack.files else " "
        expected = scores(attack.assignment, **{test.removesuffix("_test"): 0 for test in attack.attacked})
        cases.append(Case(f"attack-{attack.name}", attack.assignment, files, expected, held=held,
                          why=f"{attack.category}: {attack.note or attack.name}"))
    return cases


def cases() -> list[Case]:
    return structural_cases() + honest_cases() + attack_cases()


def write(root: Path, chosen: list[Case]) -> Path:
    """The cases in nbgrader's layout under ``root``: <student>/<assignment>/<files>."""
    for case in chosen:
        for name, content in case.files.items():
            path = root / case.student / case.assignment / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return root
