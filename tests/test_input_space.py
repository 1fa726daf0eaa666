"""Each exercise's input space (``catalogues/exercises``): its dimensions name exercises that exist, and the hidden
tests explore every dimension that has a condition, under each of several seeds (:mod:`mutation.space`)."""

from __future__ import annotations

from collections import Counter

import nbformat
import pytest

from catalogues.exercises import MODULES
from catalogues.input_space import Call, Dimension, space
from conftest import REPO
from mutation.runner import exercises
from mutation.space import SEEDS, _Exercise, explored

SPACES = space()


def _answer_ids(folder: str) -> set[str]:
    nb = nbformat.read(next((REPO / "solutions" / folder).glob("*.ipynb")), as_version=4)
    return {ex["grade_id"] for ex in exercises(nb)}


def test_every_notebook_has_its_catalogue_and_every_space_names_an_exercise_of_it():
    folders = {path.name for path in (REPO / "solutions").iterdir() if path.is_dir()}
    assert set(MODULES) == folders, "catalogues/exercises lists a module per notebook of solutions/"
    unknown = {folder: sorted(set(dimensions) - _answer_ids(folder)) for folder, dimensions in SPACES.items()}
    assert not any(unknown.values()), f"spaces of answer cells that do not exist: {unknown}"


def test_every_exercise_has_its_input_space_and_three_wrong_readings():
    from catalogues.wrong_readings import readings

    counts = Counter((wrong.assignment, wrong.grade_id) for wrong in readings())
    short = {f"{folder}/{grade_id}": f"{counts[folder, grade_id]} readings, {len(SPACES[folder].get(grade_id, []))} "
                                     "dimensions"
             for folder in MODULES for grade_id in sorted(_answer_ids(folder))
             if counts[folder, grade_id] < 3 or not SPACES[folder].get(grade_id)}
    assert not short, f"exercises without their input space or three wrong readings: {short}"


def test_a_dimension_has_a_condition_or_a_reading():
    with pytest.raises(ValueError, match="not both nor neither"):
        Dimension("a bfloat16 input")
    with pytest.raises(ValueError, match="not both nor neither"):
        Dimension("a bfloat16 input", lambda call: True, reading="the dtype check")


def test_a_condition_sees_each_call_as_it_arrives_and_one_that_raises_is_not_held():
    exercise = _Exercise([Dimension("a second call after one that raised", lambda c: c.number == 1 and c.after_raise),
                          Dimension("an argument it cannot read", lambda c: c.args[5] > 0)])

    def answer(x):
        if x < 0:
            raise ValueError(x)
        return x

    recorded = exercise.wrap(answer, "answer", ["answer_test"])
    with pytest.raises(ValueError):
        recorded(-1)
    assert recorded(2) == 2 and exercise.counts["answer"] == 2
    assert exercise.held == {"a second call after one that raised": True, "an argument it cannot read": False}
    assert Call("answer", (1,)).number == 0


@pytest.mark.slow  # runs each notebook's solution with its hidden tests, under each seed
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("folder", sorted(folder for folder, found in SPACES.items() if found))
def test_the_hidden_tests_explore_every_dimension_under_each_seed(folder, seed):
    result = explored(folder, seed)
    assert not result["failed"], f"the solution failed its own tests under {seed}: {result['failed']}"
    never = {grade_id: [what for what, held in dimensions.items() if not held]
             for grade_id, dimensions in result["held"].items()}
    assert not any(never.values()), f"no call of the answer showed these dimensions under seed {seed}: {never}"
