"""The input space of an exercise: the dimensions its text allows, each with the condition on the calls its answer
receives under which the hidden tests are known to explore it.

Each notebook's module of :mod:`catalogues.exercises` maps an answer cell's grade_id to its :class:`Dimension`
list (shapes and sizes, dtypes, structure, state, side effects the text forbids, boundary values). A dimension
with a condition (``holds``) is checked by ``test_input_space.py``: the solution notebook runs with its hidden
tests as the grader runs it (:mod:`mutation.space`), under several seeds, each call of the answer's functions
and methods is shown to the condition before it runs, and the test fails when the condition never held under
some seed. A dimension that is not a property of one call (a model run twice, a handle left behind) names in
``reading`` the check of the tests that covers it, read rather than measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Call:
    """One call an answer received while the notebook ran, as it arrived (before the answer ran)."""

    target: str  # what was called: "freeze", "TwoHeadNet.forward", "LinearFunction.backward"
    args: tuple[Any, ...]  # the live arguments (read them; changing them changes the test)
    kwargs: dict[str, Any] = field(default_factory=dict)
    number: int = 0  # calls of this target before this one
    after_raise: bool = False  # the call of this exercise's answer just before this one raised
    test: str = ""  # the grade_id of the test cell that made the call ("" outside a test cell)


@dataclass(frozen=True)
class Dimension:
    """One dimension of what an exercise's text allows."""

    what: str  # "a model that is its own leaf", "a bfloat16 input", "a call after one that raised"
    holds: Callable[[Call], bool] | None = None  # true of a call that explores it; an exception counts as false
    reading: str = ""  # without a condition: which check of the tests covers it, and why no call shows it

    def __post_init__(self) -> None:
        if (self.holds is None) == (not self.reading):
            raise ValueError(f"{self.what!r}: a dimension has a condition or a reading, not both nor neither")


def space() -> dict[str, dict[str, list[Dimension]]]:
    """Notebook folder → answer cell's grade_id → its dimensions."""
    from catalogues import exercises

    return {folder: module.SPACE for folder, module in exercises.MODULES.items()}
