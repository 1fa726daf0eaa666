"""A class of submissions covering every way a submission can be right, wrong, broken or cheating.

Built from the forward-hooks assignment's release and solutions, so it stays in step with them.
Each case says what it submits and the points nbgrader must give every test cell (or why the
submission cannot be run at all).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from conftest import REPO, solution_sources

ASSIGNMENT = "02_forward_hooks"
NOTEBOOK = "forward_hooks.ipynb"
POINTS = {"collect_hooks_test": 3, "change_hooks_test": 2, "leaf_shapes_test": 3}


@dataclass
class Case:
    student: str
    files: dict[str, bytes]  # path inside the submission → content
    scores: dict[str, float]  # test cell → expected points
    reason: str = ""  # expected in the summary when the submission cannot be run
    why: str = field(default="", repr=False)


def _release() -> nbformat.NotebookNode:
    return nbformat.read(REPO / "notebooks" / ASSIGNMENT / NOTEBOOK, as_version=4)


def _solutions() -> dict[str, str]:
    return solution_sources(nbformat.read(REPO / "solutions" / ASSIGNMENT / NOTEBOOK, as_version=4))


def notebook(answers: dict[str, str], *, drop_tests: tuple[str, ...] = (), edit_tests: str | None = None) -> bytes:
    """The release with some answer cells filled (by grade_id) and test cells deleted or edited."""
    nb = _release()
    kept = []
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
        if grade_id in drop_tests:
            continue
        if edit_tests is not None and cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = edit_tests
        kept.append(cell)
    nb.cells = kept
    return nbformat.writes(nb).encode()


def scores(**overrides: float) -> dict[str, float]:
    """Full points except where overridden."""
    return {test: float(overrides.get(test.removesuffix("_test"), points)) for test, points in POINTS.items()}


def cases() -> list[Case]:
    solved = _solutions()
    everything = dict(solved)
    zero = {name.removesuffix("_test"): 0 for name in POINTS}

    def with_(**answers: str) -> dict[str, str]:
        return {**everything, **answers}

    def wrong_collect_hooks(student: str, answer: str, why: str) -> Case:
        """Everything solved except collect_hooks, answered with ``answer``, which must score 0."""
        return Case(student, {NOTEBOOK: notebook(with_(collect_hooks=answer))}, scores(collect_hooks=0), why=why)

    other = nbformat.read(REPO / "solutions" / "01_module_basics" / "module_basics.ipynb", as_version=4)
    return [
        Case("full", {NOTEBOOK: notebook(everything)}, scores()),
        Case("rewritten", {NOTEBOOK: notebook(with_(collect_hooks=(
            "def pre_hook(module, args):\n    for x in args:\n        answer.append(x)\n\n\n"
            "def hook(module, args, output):\n    answer.insert(len(answer), output)\n"
        ), change_hooks=(
            "def double_inputs(module, args):\n    return tuple(x + x for x in args)\n\n\n"
            "def plus_five(module, args, output):\n    return output.add(5)\n"
        )))}, scores(), why="right answers written differently"),
        Case("partial", {NOTEBOOK: notebook({"collect_hooks": solved["collect_hooks"]})}, scores(change_hooks=0, leaf_shapes=0)),
        Case("blank", {NOTEBOOK: notebook({})}, scores(**zero)),
        Case("syntax_error", {NOTEBOOK: notebook(with_(change_hooks="def double_inputs(module, args)\n    return args\n"))},
             scores(change_hooks=0)),
        wrong_collect_hooks("exception", (
            "def pre_hook(module, args):\n    raise RuntimeError('oops')\n\n\ndef hook(module, args, output):\n    pass\n"
        ), why="an answer that raises"),
        Case("infinite_loop", {NOTEBOOK: notebook(with_(leaf_shapes="while True:\n    pass\n"))}, scores(leaf_shapes=0)),
        Case("exits", {NOTEBOOK: notebook(with_(collect_hooks="import os\nos._exit(1)\n"))}, scores(**zero), reason="kernel died"),
        Case("segfault", {NOTEBOOK: notebook(with_(collect_hooks="import ctypes\nctypes.string_at(0)\n"))}, scores(**zero),
             reason="kernel died"),
        Case("memory_hog", {NOTEBOOK: notebook(with_(change_hooks="hog = bytearray(64 * 2**30)\n" + solved["change_hooks"]))},
             scores(change_hooks=0)),
        Case("invalid_json", {NOTEBOOK: b'{"cells": [ this is not json'}, scores(**zero), reason="not a valid notebook"),
        Case("wrong_assignment", {NOTEBOOK: nbformat.writes(other).encode()}, scores(**zero)),
        Case("edited_tests", {NOTEBOOK: notebook({}, edit_tests="print('all tests pass')")}, scores(**zero),
             why="locked test cells replaced: nbgrader restores them from the gradebook"),
        Case("deleted_test", {NOTEBOOK: notebook(with_(collect_hooks=solved["collect_hooks"].replace("answer.extend(args)", "pass")),
                                                  drop_tests=("collect_hooks_test",))},
             scores(collect_hooks=0), why="a wrong answer whose test cell was deleted: the test is put back"),
        Case("hard_coded", {NOTEBOOK: notebook(with_(change_hooks=(
            "def double_inputs(module, args):\n    return torch.tensor([2.0]), torch.tensor([4.0])\n\n\n"
            "def plus_five(module, args, output):\n    return output + 5\n"
        )))}, scores(change_hooks=0), why="the visible test's numbers typed in: hidden tests use fresh inputs"),
        wrong_collect_hooks("fake_checker", (
            "def pre_hook(module, args):\n    pass\n\n\ndef hook(module, args, output):\n    pass\n\n\n"
            "check_answer = check_tensor = lambda *args, **kwargs: None\n"
        ), why="checkers redefined in the notebook"),
        wrong_collect_hooks("monkeypatch", (
            "torch.allclose = torch.equal = lambda *args, **kwargs: True\n"
            "torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)\n\n\n"
            "def pre_hook(module, args):\n    answer.extend(torch.zeros(1) for _ in args)\n\n\n"
            "def hook(module, args, output):\n    answer.append(torch.zeros(1))\n"
        ), why="torch's comparisons patched to always agree"),
        wrong_collect_hooks("subclass", (
            "class Anything(torch.Tensor):\n    def __eq__(self, other):\n        return True\n\n\n"
            "def pre_hook(module, args):\n    answer.extend(torch.zeros(1).as_subclass(Anything) for _ in args)\n\n\n"
            "def hook(module, args, output):\n    answer.append(torch.zeros(1).as_subclass(Anything))\n"
        ), why="a tensor subclass equal to anything"),
        Case("warns", {NOTEBOOK: notebook(with_(collect_hooks="import warnings\n\n\n" + solved["collect_hooks"].replace(
            "answer.append(output)", "warnings.warn('hooks are fun')\n    answer.append(output)")))},
             scores(), why="a warning on stderr in a passing test cell"),
        Case("extra_files", {NOTEBOOK: notebook(everything), "notes.txt": b"my notes\n", "data/cache.bin": bytes(range(256))}, scores()),
        Case("no_notebook", {"notes.txt": b"I forgot to upload it\n"}, scores(**zero), reason="no notebook"),
    ]


def write(root: Path, chosen: list[Case]) -> Path:
    """The cases in nbgrader's layout under ``root``: <student>/<assignment>/<files>."""
    for case in chosen:
        for name, content in case.files.items():
            path = root / case.student / ASSIGNMENT / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return root
