"""Similar answers: a disguised copy is flagged, independently written answers are not, the template and short
answers count for nothing, and a class of 300 takes seconds (no kernel, no grader)."""

from __future__ import annotations

import random
import time
from collections import defaultdict
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_notebook

from catalogues.honest_answers import honest_answers
from catalogues.similar_answers import answer, disguised_copy
from hooklab.grading.class_data import ClassData, SubmissionResult, aggregate
from hooklab.grading.class_report import SIMILARITY_CSV, render, write_similarity_csv
from hooklab.grading.redaction import REDACTED
from hooklab.grading.similarity import answer_cells, class_similarity, compare, template_of

SOLUTIONS = Path(__file__).parent.parent / "solutions"


def a_class(size: int, seed: int = 0) -> dict[str, str]:
    """``size`` independently written answers, and a renamed, reformatted, reordered copy of the first."""
    rng = random.Random(seed)
    answers = {f"student{index:03d}": answer(rng) for index in range(size - 1)}
    answers["copier"] = disguised_copy(answers["student000"], rng)
    return answers


@pytest.mark.parametrize("seed", range(5))
def test_a_renamed_reformatted_reordered_copy_is_the_one_pair_flagged_in_a_class_of_30(seed: int):
    answers = a_class(30, seed)
    assert answers["copier"] != answers["student000"]
    exercise = compare("hw", "ex", answers)
    assert exercise.compared == 30 and not exercise.short
    assert [(pair.first, pair.second) for pair in exercise.flagged] == [("copier", "student000")]
    assert len(exercise.scores) == 30 * 29 // 2


def test_independently_written_honest_answers_are_never_flagged():
    reference = {}
    for notebook in SOLUTIONS.glob("*/*.ipynb"):
        for grade_id, source in answer_cells(notebook).items():
            reference[notebook.parent.name, grade_id] = source
    by_exercise: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for index, honest in enumerate(honest_answers()):
        by_exercise[honest.assignment, honest.grade_id][f"{honest.style} ({index})"] = honest.source
    compared = 0
    for (assignment, grade_id), answers in sorted(by_exercise.items()):
        exercise = compare(assignment, grade_id, answers, template_of(reference.get((assignment, grade_id), "")))
        assert not exercise.flagged, (assignment, grade_id, exercise.flagged[0])
        compared += exercise.compared
    assert compared > 150  # most of the 204 answers are long enough to tell


def test_the_template_and_answers_of_a_line_or_two_count_for_nothing():
    given = "\n".join(f"given_{index} = compute({index}, scale={index * 3}, name='part {index}')"
                      for index in range(12))
    template = f"{given}\n# YOUR CODE HERE\nraise NotImplementedError()"
    rng = random.Random(7)
    answers = {f"s{index}": f"{given}\n{answer(rng)}" for index in range(6)}
    answers["one line"] = f"{given}\nresult = [value * 2 for value in given_1 if value > 0]"
    answers["one line too"] = f"{given}\nresult = [item * 2 for item in given_2 if item > 0]"
    exercise = compare("hw", "ex", answers, template)
    assert not exercise.flagged and sorted(exercise.short) == ["one line", "one line too"]
    assert exercise.compared == 6 and max(exercise.scores) < 0.2  # the given lines shared by all count for nothing


def test_a_class_of_300_is_compared_within_seconds():
    answers = a_class(300)
    start = time.perf_counter()
    exercise = compare("hw", "ex", answers)
    elapsed = time.perf_counter() - start
    assert [(pair.first, pair.second) for pair in exercise.flagged] == [("copier", "student000")]
    assert elapsed < 10, f"{elapsed:.1f} s for 300 answers"


def _notebook(path: Path, answer_source: str, test_source: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    cells = [new_code_cell(answer_source, metadata={"nbgrader": {"solution": True, "grade": False, "grade_id": "ex",
                                                                  "locked": False}})]
    if test_source:
        cells.append(new_code_cell(test_source, metadata={"nbgrader": {"solution": False, "grade": True,
                                                                        "grade_id": "ex_test", "points": 1,
                                                                        "locked": True}}))
    nbformat.write(new_notebook(cells=cells), path)
    return path


def test_the_report_shows_the_distribution_and_the_flagged_pair_side_by_side_without_hidden_lines(tmp_path: Path):
    hidden = "assert secret_expected_value == 12345"
    _notebook(tmp_path / "source" / "hw" / "nb.ipynb", "### BEGIN SOLUTION\npass\n### END SOLUTION",
              f"check()\n### BEGIN HIDDEN TESTS\n{hidden}\n### END HIDDEN TESTS")
    answers = a_class(12, seed=3)
    answers["copier"] += f"\n{hidden}\nprint({hidden!r})"  # a line holding a hidden test's line is not shown
    for student, text in answers.items():
        _notebook(tmp_path / "submitted" / student / "hw" / "nb.ipynb", text)
    similar = class_similarity(tmp_path / "source", tmp_path / "submitted", [(s, "hw") for s in answers])
    [exercise] = similar
    [pair] = exercise.flagged
    assert (pair.first, pair.second) == ("copier", "student000") and REDACTED in pair.first_answer
    data = ClassData({"hw": {"nb/ex_test": 1.0}},
                     [SubmissionResult(student, "hw", 1.0, 1.0, {"nb/ex_test": 1.0}) for student in answers])
    page = render(aggregate(data), None, [], None, similar)
    soup = BeautifulSoup(page, "html.parser")
    section = soup.find(id="similar")
    assert section is not None and hidden not in page
    text = soup.get_text(" ")
    assert "hw / ex" in text and "copier · student000" in text
    sides = [pre.get_text() for pre in soup.find_all("pre")]
    assert sides[1] == answers["student000"] and sides[0].startswith(answers["copier"].splitlines()[0])
    write_similarity_csv(similar, tmp_path)
    rows = (tmp_path / SIMILARITY_CSV).read_text().splitlines()
    assert rows[0] == "assignment,exercise,first,second,score,threshold"
    assert rows[1].startswith("hw,ex,copier,student000,") and len(rows) == 2


def test_the_corpus_answers_shown_side_by_side_quote_no_hidden_test_line(tmp_path: Path):
    import html

    from catalogues import corpus
    from hooklab.grading.class_report import _similar
    from test_autograde import hidden_only_lines

    cases = corpus.cases()
    folder = corpus.write(tmp_path / "class", cases)
    similar = class_similarity(SOLUTIONS, folder, sorted({(case.student, case.assignment) for case in cases}))
    assert sum(len(exercise.flagged) for exercise in similar) > 100  # the corpus's many copies of the reference
    text = html.unescape("".join(_similar(similar)))
    assert "HIDDEN TESTS" not in text and not [line for line in hidden_only_lines() if line in text]


def test_a_hidden_line_the_notebook_also_shows_elsewhere_is_not_redacted_in_an_answer(tmp_path: Path):
    """A line of a hidden test that a solution or a visible test also holds is no secret: a student's own line that
    holds it stays in the side-by-side view (only the hidden tests' own lines are taken out)."""
    common, secret = "with torch.no_grad():", "assert secret_expected_value == 12345"
    _notebook(tmp_path / "source" / "hw" / "nb.ipynb", f"### BEGIN SOLUTION\n{common}\n    pass\n### END SOLUTION",
              f"check()\n### BEGIN HIDDEN TESTS\n{common}\n    {secret}\n### END HIDDEN TESTS")
    answers = a_class(12, seed=3)
    answers["copier"] += f"\n{common}\n    {secret}"
    for student, text in answers.items():
        _notebook(tmp_path / "submitted" / student / "hw" / "nb.ipynb", text)
    [exercise] = class_similarity(tmp_path / "source", tmp_path / "submitted", [(s, "hw") for s in answers])
    [pair] = exercise.flagged
    shown = pair.first_answer.splitlines()
    assert common in shown and secret not in pair.first_answer and REDACTED in shown
