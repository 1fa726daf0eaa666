"""The seeds of hidden tests, without a kernel: each cell's seed is derived from the run's, the notebook and the
cell (:func:`hooklab.observations.cell_seed`), and a test cell's generators follow the seed it was sent
(:func:`hooklab.observations.next_seed`, through :func:`hooklab.checks.random_generator`). test_seeds.py grades a
class to show a logged seed drawing a run's inputs again and the kernel never seeing the run's seed."""

from __future__ import annotations

import itertools
import random
import re

import numpy
import pytest
import torch

from hooklab import checks, observations
from hooklab.observations import cell_seed

RUNS = ("4242", "4243")
NOTEBOOKS = ("forward_hooks", "backward_hooks")
CELLS = ("collect_hooks_test", "change_hooks_test")


def test_each_run_notebook_and_cell_gets_a_seed_of_its_own_and_the_same_one_again():
    seeds = {(run, nb, cell): cell_seed(run, nb, cell) for run, nb, cell in itertools.product(RUNS, NOTEBOOKS, CELLS)}
    assert len(set(seeds.values())) == len(seeds) == 8, "two cells, notebooks or runs got the same seed"
    assert all(cell_seed(*key) == seed for key, seed in seeds.items()), "a logged run's seed draws other seeds"
    assert all(re.fullmatch("[0-9a-f]{64}", seed) and key[0] not in seed for key, seed in seeds.items()), (
        "a cell's seed shows the run's")


@pytest.fixture
def graders_seed(monkeypatch: pytest.MonkeyPatch):
    """:func:`hooklab.observations.begin` as the grader calls it before a test cell, with the process's random
    states and the module's state put back afterwards."""
    monkeypatch.setattr(observations, "_state", {**observations._state, "seed": None, "draws": itertools.count(),
                                                 "seen": []})
    states = torch.random.get_rng_state(), numpy.random.get_state(), random.getstate()
    yield lambda seed: observations.begin(seed, True)
    torch.random.set_rng_state(states[0])
    numpy.random.set_state(states[1])
    random.setstate(states[2])


def draws() -> list[float]:
    """What a test cell's three hidden inputs would be: one number from each of three generators it makes."""
    return [float(torch.rand((), generator=checks.random_generator())) for _ in range(3)]


def test_a_test_cells_generators_follow_the_seed_it_was_sent_and_differ_from_each_other(graders_seed):
    graders_seed("12345")
    first = draws()
    graders_seed("12345")
    assert draws() == first, "the same cell seed drew other hidden inputs (a logged run cannot be drawn again)"
    assert len(set(first)) == 3, "a cell's generators drew the same inputs"
    graders_seed("12346")
    assert draws() != first, "another cell's seed drew the same hidden inputs"


def test_outside_grading_hidden_inputs_are_fresh_each_time(graders_seed):
    assert not observations.active()
    assert draws() != draws()
