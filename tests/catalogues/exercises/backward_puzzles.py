"""08_backward_puzzles: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

from catalogues.honest_answers import BACKWARD_PUZZLES, _cell  # noqa: F401 (the readings to come use them)
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

SPACE: dict[str, list[Dimension]] = {}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
    return []
