"""A wrong answer reads the same in the lab and in the graded feedback (issue 47).

A class of wrong answers (one per exercise of ``wrong_answers.py``, each notebook's in one submission) is graded by
``hooklab autograde`` with a fixed seed, and the same notebooks run as a student runs them in the lab: the release's
visible tests only, in a kernel, each cell's global random state seeded as the grader seeds it. Every visible check
that fails in the lab must fail in the feedback with the same sentence, and neither says ``Traceback``, ``%tb`` or an
exception's bare name.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader import utils

from catalogues import corpus
from catalogues.wrong_answers import wrong_answers
from conftest import REPO, make_course
from hooklab import observations
from hooklab.grading import judge
from hooklab.grading.execute import cell_key
from hooklab.messages import NOT_WRITTEN

pytestmark = pytest.mark.slow  # starts kernels and a grader (conftest: the fast tier)

SEED = "same-sentence"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S)

# Visible checks whose expected value the lab computes from the student's own earlier results (a property), where the
# grader compares with the reference's: a wrong answer then fails both, at other entries.
PROPERTIES = {"skip_nonfinite_test": "the step after handle.remove(), checked by a property of Adam's step"}
WORDLESS = re.compile(r"^\w+(Error|Exception)?:?$")  # an exception's name without a message


def answers() -> dict[str, dict[str, str]]:
    """assignment → grade_id → the first wrong answer the catalogue has for that exercise."""
    chosen: dict[str, dict[str, str]] = {}
    for wrong in wrong_answers():
        chosen.setdefault(wrong.assignment, {}).setdefault(wrong.grade_id, wrong.source)
    return chosen


def lab_run(assignment: str, submitted: bytes, source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The submission as the lab runs it: test cells without their hidden tests, each code cell after a cell that
    seeds the global random state as the grader's agent does for it."""
    nb = nbformat.reads(submitted.decode(), as_version=4)
    ids = {cell.get("id") for cell in source.cells}
    code = {cell.source: cell.get("id") for cell in source.cells if cell.cell_type == "code"}
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            seed = observations.cell_seed(SEED, corpus.stem(assignment), cell_key(cell, ids, code))
            cells.append(nbformat.v4.new_code_cell(
                f"import hooklab.observations as _seeding\n_seeding.begin({seed!r}, False)\ndel _seeding"))
            if utils.is_grade(cell):
                cell.source = HIDDEN.sub("", cell.source)
        cells.append(cell)
    nb.cells = cells
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True).execute(
        cwd=str(REPO / "notebooks" / assignment))
    return nb


def first_errors(nb: nbformat.NotebookNode) -> dict[str, tuple[str, str]]:
    """grade_id → (ename, evalue) of each test cell's first error; a template's NotImplementedError by the line the
    lab shows for it ("pre_hook is not written yet: replace …")."""
    found = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
            errors = [o for o in cell.outputs if o.output_type == "error" and o.ename != "HeldForReview"]
            if errors:
                error = errors[0]
                lines = [line for line in "\n".join(error.get("traceback", [])).splitlines() if NOT_WRITTEN in line]
                unwritten = error.ename == "NotImplementedError" and lines
                found[cell.metadata.nbgrader["grade_id"]] = (error.ename, ANSI.sub("", lines[0]) if unwritten
                                                             else error.evalue)
    return found


def test_a_wrong_answer_reads_the_same_in_the_lab_and_in_the_feedback(tmp_path: Path, forked_kernels):
    chosen = answers()
    course = make_course(tmp_path / "course")
    submissions = tmp_path / "class"
    submitted = {}
    for assignment, wrong in sorted(chosen.items()):
        submitted[assignment] = corpus.notebook(assignment, wrong)
        folder = submissions / f"wrong-{assignment[:2]}" / assignment
        folder.mkdir(parents=True)
        (folder / corpus.notebook_name(assignment)).write_bytes(submitted[assignment])
    result = subprocess.run(
        [sys.executable, "-m", "hooklab.cli", "autograde", "--timeout", str(corpus.TIMEOUT), "--no-integrity",
         "--config", str(course / "nbgrader_config.py"), str(submissions)],
        capture_output=True, text=True, timeout=1200, env={**os.environ, "HOOKLAB_SEED": SEED})
    assert result.returncode == 0, result.stderr[-3000:]

    compared, differ, unclear = 0, [], []
    for assignment in sorted(chosen):
        name = corpus.notebook_name(assignment)
        source = nbformat.read(REPO / "solutions" / assignment / name, as_version=4)
        lab = first_errors(lab_run(assignment, submitted[assignment], source))
        autograded = course / "autograder" / "autograded" / f"wrong-{assignment[:2]}" / assignment / name
        graded = first_errors(nbformat.read(autograded, as_version=4))
        for grade_id, (ename, evalue) in lab.items():
            shown = graded.get(grade_id)
            for text in (evalue, shown[1] if shown else "(passed)"):
                if "Traceback" in text or "%tb" in text or not text.strip() or WORDLESS.match(text.strip()):
                    unclear.append(f"{assignment} {grade_id}: {ename} {text!r}")
            if ename == "NotImplementedError":  # not written yet: the feedback names the function as the lab does
                compared += 1
                if shown is None or shown[0] != "NotWritten" or not evalue.startswith(shown[1] + ":"):
                    differ.append(f"{assignment} {grade_id}:\n  lab:      {evalue}\n  feedback: {shown}")
                continue
            if ename != "AnswerError" or grade_id in PROPERTIES:  # the student's own error (its frames are theirs)
                continue
            compared += 1
            if shown is None or shown[1].removesuffix(judge.STOPPED) != evalue:  # the feedback may add that the rest
                # of the test did not run
                differ.append(f"{assignment} {grade_id}:\n  lab:      {evalue}\n  feedback: {shown}")
    assert compared >= len(chosen), f"only {compared} visible checks failed in the lab"
    assert differ == [] and unclear == [], "\n".join(differ + unclear)
