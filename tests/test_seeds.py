"""Hidden tests draw fresh random inputs in every run, and a run's draws come back from the seed the grader logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from catalogues import corpus
from conftest import make_course
from hooklab import checks, observations
from hooklab.seeding import SEED_VARIABLE

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

A = "02_forward_hooks"
NOTEBOOK = corpus.notebook_name(A)
# the solution, telling what the tests hand it: the hidden tests' inputs show in the test cell's output
TELLING = corpus.solutions(A)["change_hooks"].replace(
    "def double_inputs(module, args):\n", "def double_inputs(module, args):\n    print(round(float(args[0].sum()), "
                                          "6))\n"
)


def grade(course: Path, submissions: Path, seed: str | None = None) -> None:
    env = {key: value for key, value in os.environ.items() if key != SEED_VARIABLE}
    env.update({SEED_VARIABLE: seed} if seed is not None else {})
    command = [sys.executable, "-m", "hooklab.cli", "autograde", "--force", "--config",
               str(course / "nbgrader_config.py"), str(submissions)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]


def drawn(course: Path) -> list[str]:
    """What the tests of change_hooks handed the answer, as its test cells printed it."""
    nb = nbformat.read(course / "autograder" / "autograded" / "ada" / A / NOTEBOOK, as_version=4)
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("change_hooks_test")]
    return ["".join(o.get("text", "") for o in c.outputs if o.output_type == "stream") for c in cells]


def test_a_logged_seed_draws_the_same_hidden_inputs_again(tmp_path):
    course = make_course(tmp_path / "course")
    submissions = tmp_path / "class"
    (submissions / "ada" / A).mkdir(parents=True)
    (submissions / "ada" / A / NOTEBOOK).write_bytes(corpus.notebook(A,
                                                                     {**corpus.solutions(A), "change_hooks": TELLING}))
    grade(course, submissions)
    seeds = json.loads((course / "grading.json").read_text())[f"ada/{A}"]["seeds"]
    first = drawn(course)
    grade(course, submissions, seeds[Path(NOTEBOOK).stem])
    again = drawn(course)
    grade(course, submissions)
    fresh = drawn(course)
    assert first[-1].strip(), "the test cell printed nothing: the answer was not called"
    assert again == first, "the logged seed did not draw the same inputs"
    assert fresh[-1] != first[-1], "two runs drew the same hidden inputs"


def test_generators_of_one_seed_follow_one_sequence_and_differ_from_each_other(monkeypatch):
    def draws(seed: str | None) -> list[float]:
        if seed is not None:
            observations.begin(seed, True)
        return [float(torch.rand((), generator=checks.random_generator())) for _ in range(3)]

    monkeypatch.setattr(observations, "_state",
                        {"seed": None, "draws": None, "seen": [], "channel": None, "send": None})
    first = draws("12345")
    assert draws("12345") == first and len(set(first)) == 3
    assert draws("12346") != first
    monkeypatch.setattr(observations, "_state",
                        {"seed": None, "draws": None, "seen": [], "channel": None, "send": None})
    assert not observations.active() and draws(None) != first


def test_the_kernel_gets_no_seed_of_the_run_only_the_seed_of_each_cell(tmp_path):
    """Nothing in the kernel's environment or files tells the run's seed: a test cell gets its own, at test time."""
    course = make_course(tmp_path / "course")
    submissions = tmp_path / "class"
    (submissions / "ada" / A).mkdir(parents=True)
    spy = corpus.solutions(A)["collect_hooks"] + "\nimport os\nprint('SEEN', os.environ.get('HOOKLAB_SEED'))\n"
    (submissions / "ada" / A / NOTEBOOK).write_bytes(corpus.notebook(A, {**corpus.solutions(A), "collect_hooks": spy}))
    grade(course, submissions, "4242")
    nb = nbformat.read(course / "autograder" / "autograded" / "ada" / A / NOTEBOOK, as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", [])
                      if o.get("output_type") == "stream")
    assert "SEEN None" in printed
    assert json.loads((course / "grading.json").read_text())[f"ada/{A}"]["seeds"] == {Path(NOTEBOOK).stem: "4242"}
