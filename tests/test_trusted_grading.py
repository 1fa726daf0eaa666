"""Scores decided outside the student's interpreter (notebooks whose tests are drivers: hooklab.grading.judge).

The class of tests/catalogues/trusted_class.py is graded with ``--no-integrity``: no scan, no probe, no proof of run, so
nothing holds a submission for review and the tampering runs unhindered in the kernel. Each attack leaves a wrong
answer behind its tampering (patched checkers, patched torch functions, a TorchFunctionMode left entered, an aten
kernel registered again, pinned randomness with a table of answers for the pinned inputs, the checkers' module
replaced in sys.modules or through builtins, the probe replaced, the observations silenced, a backward written
with finite differences, which the kernel's own check accepts in float64 but the grader's comparison, tighter
than finite differences can reach, does not, and 08's backwards that use autograd where the kernel's mode cannot
see it; and attacks on the protocol: globals that shadow the builtins the grader's expressions once used, the
classes on the observations' old way to the socket patched to rewrite them, a flood of short lines): every attacked
wrong answer still scores 0, because its points come from the grader's comparison with the reference run.
Unusual honest answers (a seed of their own, given cells edited, no cell ids) keep every point,
whatever they draw, print or save (each notebook's solutions are graded with the layers on).
09's plausible wrong answers score 0 on their cell (one that leaves a mode entered, on every cell from its own on;
the others packed, one per exercise in a submission).
test_trusted_grading_held.py grades the class with the integrity layers on.
"""

from __future__ import annotations

import pytest

from catalogues.trusted_class import FINITE_DIFFERENCES, WITHOUT_INTEGRITY, Student, graded, key
from hooklab import checks

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, dict[str, float]]]:
    return graded(tmp_path_factory.mktemp("trusted"), WITHOUT_INTEGRITY, "--no-integrity")


@pytest.mark.parametrize("student", WITHOUT_INTEGRITY, ids=key)
def test_without_the_integrity_layers_every_attacked_wrong_answer_scores_0_and_every_honest_answer_keeps_its_points(
        run, student: Student):
    ledger, scores = run
    entry = ledger[key(student)]
    assert entry["ok"] and not entry["held"], entry
    assert scores[key(student)] == student.scores, f"{student.name} {student.members}: {entry}"


def test_the_kernels_own_check_accepts_the_finite_difference_backward_that_the_grader_fails():
    """Why 08's comparison is tight: the in-kernel check (finite differences itself) cannot tell this backward apart."""
    import torch
    from torch.autograd import Function

    namespace = {"torch": torch, "Function": Function}
    exec(FINITE_DIFFERENCES, namespace)  # the test's own source
    generator = torch.Generator().manual_seed(0)
    x, y = (torch.randn(3, 4, dtype=torch.float64, generator=generator) for _ in range(2))
    checks.check_backward(namespace["Mul"], x, y)  # raises nothing: the kernel alone would give the points
