"""What a student sees of the tests hands out no answer (issue 47): no visible test cell of the release holds a
REFERENCE block, defines a name its exercise asks for, or subclasses the mode or Function class its exercise's answer
subclasses; and no exercise's answer is an earlier demo cell copied. Fast: reads the .ipynb files, starts nothing."""

from __future__ import annotations

import ast
import difflib
import io
import keyword
import re
import textwrap
import tokenize
from pathlib import Path

import nbformat
import pytest

from conftest import REPO, belongs_to_exercise, nbgrader_cells, notebook_id, solution_notebooks, solution_sources

SOLUTIONS = solution_notebooks()
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.S | re.M)
REFERENCE_MARKER = re.compile(r"###\s*(BEGIN|END) REFERENCE")
# The classes an answer implements by subclassing: a visible test may not subclass the one its exercise's answer does.
IMPLEMENTED_BY_SUBCLASSING = ("TorchDispatchMode", "TorchFunctionMode", "Function")
# What a student writes of an answer (its SOLUTION regions), or one definition in it, whose normalised tokens match an
# earlier demo cell's (or one of its definitions' or function bodies') this closely (difflib's ratio) is that demo
# copied. Measured when this test was written: 09 Exercise 1's recording mode, before issue 47, was cell 5's OpLog
# renamed, 1.00; with the shapes the exercise now asks for, 0.69; every other answer of the pack 0.52 or less
# (run this file as a script for the closest pairs).
COPIED = 0.8
SHORTEST = 40  # tokens: shorter definitions (a one-line forward, a hook that appends) are alike by nature


def visible(source: str) -> str:
    """A test cell as the release shows it: without its hidden tests."""
    return HIDDEN.sub("", source)


def released(source: Path) -> nbformat.NotebookNode:
    return nbformat.read(REPO / "notebooks" / source.relative_to(REPO / "solutions"), as_version=4)


def exercise_of(test_id: str, answers: dict[str, str]) -> str | None:
    """The grade_id of the answer cell a test cell checks (the longest that names it)."""
    owners = [answer for answer in answers if belongs_to_exercise(test_id, answer)]
    return max(owners, key=len) if owners else None


def defined_names(tree: ast.AST, top_level_only: bool) -> set[str]:
    """The functions and classes a cell defines (anywhere in it, or at its top level), and the names its top level
    assigns."""
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    names = {node.name for node in nodes if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def subclassed(tree: ast.AST) -> set[str]:
    """Which of IMPLEMENTED_BY_SUBCLASSING the classes defined anywhere in ``tree`` name as a base."""
    bases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
                if name in IMPLEMENTED_BY_SUBCLASSING:
                    bases.add(name)
    return bases


def visible_test_problems(source: Path) -> list[str]:
    """What the release's visible test cells of ``source`` hand out."""
    solution_nb, release_nb = nbformat.read(source, as_version=4), released(source)
    answers = {gid: ast.parse(code) for gid, code in solution_sources(solution_nb).items()}
    stubs = {cell.metadata.nbgrader.grade_id: ast.parse(cell.source) for cell in nbgrader_cells(release_nb, "solution")}
    problems = []
    for cell in nbgrader_cells(release_nb, "grade"):
        if cell.cell_type != "code" or cell.metadata.nbgrader.get("solution"):
            continue
        test_id, shown = cell.metadata.nbgrader.grade_id, visible(cell.source)
        if REFERENCE_MARKER.search(shown):
            problems.append(f"{test_id}: a REFERENCE block in the visible test (put it in the hidden tests)")
        exercise = exercise_of(test_id, answers)
        if exercise is None:
            continue
        tree = ast.parse(shown)
        asked = defined_names(stubs.get(exercise, answers[exercise]), top_level_only=True)
        for name in sorted(asked & defined_names(tree, top_level_only=False)):
            problems.append(f"{test_id}: the visible test defines {name}, which exercise {exercise} asks for")
        for base in sorted(subclassed(answers[exercise]) & subclassed(tree)):
            problems.append(f"{test_id}: the visible test subclasses {base}, as exercise {exercise}'s answer does "
                            "(an implementation of the exercise)")
    return problems


def normalised(code: str) -> list[str]:
    """``code``'s tokens without comments, docstrings, blank lines and layout, each name the code binds (defines,
    assigns, takes as a parameter, or sets as an attribute) renamed by the order it first appears: a copy with other
    names and comments is the same list."""
    tree = ast.parse(code)
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            bound.add(node.attr)
    docstrings = {(node.body[0].lineno, node.body[0].col_offset) for node in ast.walk(tree)
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module))
                  and docstring_of(node)}
    renamed: dict[str, str] = {}
    tokens = []
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type in skip or (token.type == tokenize.STRING and token.start in docstrings):
            continue
        text = token.string
        if token.type == tokenize.NAME and not keyword.iskeyword(text) and text in bound:
            text = renamed.setdefault(text, f"v{len(renamed)}")
        tokens.append(text)
    return tokens


def units(code: str) -> list[tuple[str, list[str]]]:
    """Code, each function or class it defines (at any depth) and each such function's body, normalised, with what
    each is."""
    tree = ast.parse(code)
    lines = code.splitlines()
    found = [("the code", normalised(code))]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.name, normalised(textwrap.dedent(ast.get_source_segment(code, node) or ""))))
            body = node.body[1:] if docstring_of(node) else node.body
            if body and not isinstance(node, ast.ClassDef):
                text = textwrap.dedent("\n".join(lines[body[0].lineno - 1 : body[-1].end_lineno]))
                found.append((f"the body of {node.name}", normalised(text)))
    return [(what, tokens) for what, tokens in found if len(tokens) >= SHORTEST]


def docstring_of(node: ast.AST) -> bool:
    return bool(node.body) and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) \
        and isinstance(node.body[0].value.value, str)


def written(source: str) -> str:
    """What a student writes of an answer cell: its SOLUTION regions, each dedented, one after another (the whole
    cell when it has none). The code around them, the release's stub, is handed out, and alike across exercises."""
    regions, inside = [], None
    for line in source.splitlines():
        if line.strip() == "### BEGIN SOLUTION":
            inside = []
        elif line.strip() == "### END SOLUTION" and inside is not None:
            regions.append(textwrap.dedent("\n".join(inside)))
            inside = None
        elif inside is not None:
            inside.append(line)
    return "\n".join(regions) + "\n" if regions else source


def similarities(source: Path) -> list[tuple[float, str]]:
    """For each exercise's answer (the solution), how close its closest part is to a part of an earlier code cell
    that is neither an answer nor a test (a demo), with what they are."""
    nb = nbformat.read(source, as_version=4)
    found, demos = [], []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        grader = cell.metadata.get("nbgrader", {})
        if not grader.get("solution") and not grader.get("grade"):
            demos.append((index, units(cell.source)))
            continue
        if not grader.get("solution"):
            continue
        best = (0.0, "")
        for what, tokens in units(written(cell.source)):
            for demo_index, demo_units in demos:
                for demo_what, demo_tokens in demo_units:
                    ratio = difflib.SequenceMatcher(None, tokens, demo_tokens, autojunk=False).ratio()
                    if ratio > best[0]:
                        best = (ratio, f"{grader.grade_id} ({what}) and cell {demo_index} ({demo_what})")
        if best[1]:
            found.append(best)
    return found


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_no_visible_test_holds_a_reference_or_an_answer(source: Path):
    problems = visible_test_problems(source)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("source", SOLUTIONS, ids=notebook_id)
def test_no_answer_is_an_earlier_demo_copied(source: Path):
    copied = [f"{what}: {ratio:.2f}" for ratio, what in similarities(source) if ratio >= COPIED]
    assert copied == [], ("an exercise's answer is nearly an earlier demo cell (ask for a step beyond it):\n"
                          + "\n".join(copied))


def test_the_checks_see_what_they_look_for():
    """The checks find the faults of issue 47 in small cells built to have them, and nothing in their honest twins."""
    mode = ("class Recorder(TorchDispatchMode):\n    def __init__(self):\n        super().__init__()\n"
            "        self.names = []\n\n    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
            "        self.names.append(func.overloadpacket.__name__)  # the short name\n"
            "        return func(*args, **(kwargs or {}))\n")
    renamed = mode.replace("Recorder", "OpLog").replace("names", "ops").replace("  # the short name", "")
    assert normalised(mode) == normalised(renamed)
    assert subclassed(ast.parse(mode)) == {"TorchDispatchMode"}
    assert subclassed(ast.parse(mode.replace("TorchDispatchMode", "LinearFunction"))) == set()
    assert defined_names(ast.parse("def log_ops(m, x):\n    pass\ncalls = []\n"), top_level_only=True) == {"log_ops",
                                                                                                          "calls"}
    assert visible("a = 1\n### BEGIN HIDDEN TESTS\nb = 2\n### END HIDDEN TESTS\n") == "a = 1\n"
    shapes = mode.replace("        self.names.append(func.overloadpacket.__name__)  # the short name\n"
                          "        return func(*args, **(kwargs or {}))\n",
                          "        out = func(*args, **(kwargs or {}))\n"
                          "        self.names.append((func.overloadpacket.__name__, tuple(out.shape)))\n"
                          "        return out\n")
    ratio = difflib.SequenceMatcher(None, normalised(shapes), normalised(renamed), autojunk=False).ratio()
    assert ratio < COPIED, ratio  # a step beyond the demo is not a copy


if __name__ == "__main__":  # python tests/test_visible_tests.py: every answer's closest demo, closest first
    for path in SOLUTIONS:
        for ratio, what in sorted(similarities(path), reverse=True)[:3]:
            print(f"{ratio:.2f}  {path.parent.name}: {what}")
        for problem in visible_test_problems(path):
            print(f"      {path.parent.name}: {problem}")
