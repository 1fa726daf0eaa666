"""The class of tests/catalogues/trusted_class.py graded with the integrity layers on, as a class is graded by default:
every attack is held for review or scores 0 on the cell it attacks (and a review would release no point for it), plain
wrong answers of 01–08 (one change from the solution each; a notebook's, in as few submissions as one per exercise
allows) score 0 on their cell and are not held, the same answers made to display a result of their own while the test
runs (which nbgrader would read as partial credit) score 0 on it, held or not, and no honest answer is held.
test_trusted_grading.py grades the class without the layers.
"""

from __future__ import annotations

import pytest

from catalogues.trusted_class import ONE_CHANGED, TAMPERING, WITH_INTEGRITY, Student, graded, key

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, dict[str, float]]]:
    return graded(tmp_path_factory.mktemp("held"), WITH_INTEGRITY)


@pytest.mark.parametrize("student", WITH_INTEGRITY, ids=key)
def test_with_them_the_class_is_held_or_scores_0_where_attacked_and_no_honest_answer_is_held(run, student: Student):
    ledger, scores = run
    entry = ledger[key(student)]
    if student.honest or student in ONE_CHANGED:
        assert entry["ok"] and not entry["held"] and scores[key(student)] == student.scores, (student.members, entry)
    elif student.name.replace("-", "_") in TAMPERING:  # every one of them is found by the scan
        assert entry["held"] and not any(scores[key(student)].values()), entry
    else:
        assert all(scores[key(student)][cell] == 0.0 for cell in student.attacked), entry
        would_be = {cell.split("/")[-1]: points for cell, points in entry["would_be"].items()}
        assert all(would_be.get(cell, 0.0) == 0.0 for cell in student.attacked), ("a review would release points: "
                                                                                  f"{entry}")
