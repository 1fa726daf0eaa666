"""A broken answer fails its test cell with one sentence that says what the student's code did, never with the test
code's own exception nor a traceback through it.

For every exercise of 01–07 and 10, answers are broken as students break them, generated from the solution: each body
between the solution's markers in turn replaced by one that raises, returns None, returns a list, returns a tensor of
the wrong shape, or deleted with the method or function that holds it (a class whose method is missing). Each broken
answer runs in a fork of one process that ran the notebook up to its answer cell, twice: as the lab runs the visible
tests (the checkers raise), and as ``hooklab autograde`` runs the whole test cell (the checkers observe; the judge
compares with the reference's observations and says what the cell raised in the student's terms,
:func:`hooklab.grading.judge.judge`). The first error of each failing test cell must be a checker's sentence: an
``AnswerError`` in the lab, the judge's ``WrongAnswer`` or ``NotWritten`` in the feedback (a ``NameError`` of the
test's own line and the template's ``NotImplementedError`` pass through to the notebook's hints, which say them in one
line; torch's own ``NotImplementedError``, a method left undefined, must not be said as an exercise not written).
Where one fails, the message names the answer, the cell and the exception that reached the student.

Run as a script, ``python tests/test_failure_sentences.py FOLDER OUT_JSON [KIND ...]`` writes each broken answer's
outcome in both runs (the test runs it so, one process per notebook).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("01_module_basics", "02_forward_hooks", "03_backward_hooks", "04_apply", "05_autograd_function",
           "06_applications", "07_memory_hooks", "10_hooks_inside_pytorch")
# how a student's body is broken: what replaces it ("missing": the def that holds it is deleted)
KINDS = {
    "raise": "raise RuntimeError('the answer failed')",
    "none": "return None",
    "list": "return []",
    "tensor": "return torch.zeros(1)",
    "missing": None,
}
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S)
SEED = "failure-sentences"
TORCH = os.path.dirname(torch.__file__)  # where torch's own frames are
# said by the notebook's hints (hooklab.hints) in the lab, as one line: the answer's name not defined (which cell to
# run), the template's NotImplementedError (an exercise not written yet; the feedback says NotWritten). Not torch's
# own (a Module or Function whose forward or backward is left undefined), which the hints would misname.
PASSED_THROUGH = {"NameError", "NotImplementedError"}
LAB_SENTENCES = {"AnswerError"}
GRADED_SENTENCES = {"WrongAnswer", "NotWritten", "NameError"}
def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def broken_answers(source: str, kinds: list[str]) -> dict[str, str]:
    """"r<region>:<kind>" → the answer cell with that body of the solution broken so (the others kept). Bodies at the
    cell's top level (nothing to return from) are left alone."""
    lines = source.splitlines()
    regions, start = [], None
    for i, line in enumerate(lines):
        if line.strip() == BEGIN:
            start = i
        elif line.strip() == END and start is not None:
            regions.append((start, i, line[: _indent(line)]))
            start = None
    found = {}
    for number, (begin, end, indent) in enumerate(regions):
        if not indent:
            continue
        for kind in kinds:
            if KINDS[kind] is not None:
                new = lines[:begin] + [indent + KINDS[kind]] + lines[end + 1:]
            else:  # the def that holds the body, and its decorators, deleted (a method of a class only)
                holder = next((i for i in range(begin - 1, -1, -1)
                               if lines[i].lstrip().startswith("def ") and _indent(lines[i]) < len(indent)), None)
                if holder is None or _indent(lines[holder]) == 0:
                    continue
                while holder > 0 and lines[holder - 1].lstrip().startswith("@"):
                    holder -= 1
                new = lines[:holder] + lines[end + 1:]
            found[f"r{number}:{kind}"] = "\n".join(line for line in new if line.strip() not in (BEGIN, END))
    return found


def lab_outcome(tests: dict[str, dict]) -> tuple[str, str]:
    """(the first failing test cell's error name, "grade_id: message"), or ("", "") if every cell passed."""
    for grade_id, ran in tests.items():
        if ran["raised"] is not None:  # torch's own NotImplementedError (a method left undefined) is not the template's
            torchs = ran["raised"]["type"] == "NotImplementedError" and ran["raised"]["in_torch"]
            return ran["raised"]["type"] + (" from torch" if torchs else ""), f"{grade_id}: {ran['raised']['message']}"
    return "", ""


def graded_outcome(tests: dict[str, dict], reference: dict[str, dict], sources: dict[str, str]) -> tuple[str, str]:
    """What the feedback shows for the first failing test cell, as the judge writes it: (ename, "grade_id: evalue")."""
    import nbformat

    from hooklab.grading import judge

    for grade_id, ran in tests.items():
        raised = ran["raised"]
        cell = nbformat.v4.new_code_cell(sources[grade_id])
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "solution": False, "points": 1}
        if raised is not None:
            cell.outputs = [nbformat.NotebookNode(output_type="error", ename=raised["type"], evalue=raised["message"],
                                                  traceback=raised["traceback"])]
        nb = nbformat.v4.new_notebook(cells=[cell])
        judge.judge(nb, {grade_id: {"observed": reference[grade_id]["observed"], "error": None}},
                    {grade_id: ran["observed"]})
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        torchs = raised is not None and raised["type"] == "NotImplementedError" and raised["in_torch"]
        if errors:  # "not written yet" said of torch's own NotImplementedError misnames a torch method as the exercise
            return errors[0]["ename"] + (" from torch" if torchs else ""), f"{grade_id}: {errors[0]['evalue']}"
    return "", ""


def main(folder: str, out: str, *kinds: str) -> None:
    """Each broken answer of ``folder``'s exercises, run in the lab's way and the grader's: its outcome in each,
    written to ``out`` as JSON ({"grade_id|r0:kind": {"lab": [ename, text], "graded": [ename, text]}})."""
    import torch
    from nbgrader import utils

    from hooklab import observations
    from hooklab.grading import judge
    from hooklab.grading.execute import cell_key
    from mutation.runner import _forked, _Spare, _unforkable, exercises, notebook_shell

    torch.set_num_threads(1)  # no thread pool before the forks
    kinds = list(kinds or KINDS)
    path = next((REPO / "solutions" / folder).glob("*.ipynb"))
    nb, shell, ids = notebook_shell(path)
    sources = {cell.metadata.nbgrader["grade_id"]: cell.source for cell in nb.cells
               if cell.cell_type == "code" and utils.is_grade(cell)}

    def run(index: int, source: str | None = None, graded: bool = True) -> tuple[dict | None, list | None]:
        cell = nb.cells[index]
        test = utils.is_grade(cell)
        observations.begin(observations.cell_seed(SEED, path.stem, cell_key(cell, ids)), test and graded)
        if source is None:
            source = cell.source if not test else judge.without_expectations(cell.source) if graded else HIDDEN.sub(
                "", cell.source)
        result = shell.run_cell(source, store_history=False, silent=True)
        error = result.error_before_exec or result.error_in_exec
        raised = None if error is None else {
            "type": type(error).__name__, "message": str(error)[:1000],
            "traceback": traceback.format_exception(type(error), error, error.__traceback__)[-20:],
            "in_torch": list(traceback.walk_tb(error.__traceback__))[-1][0].f_code.co_filename.startswith(TORCH)}
        return raised, (json.loads(observations.collected()) if test and graded else None)

    def exercise(ex: dict, answer: str, graded: bool) -> dict:
        tests = {}
        for index in range(ex["index"], ex["last"] + 1):
            cell = nb.cells[index]
            if cell.cell_type != "code":
                continue
            raised, seen = run(index, answer if index == ex["index"] else None, graded)
            if index == ex["index"] and raised is not None:
                return {"answer": raised}
            grade_id = cell.metadata.nbgrader["grade_id"] if utils.is_grade(cell) else ""
            if grade_id.startswith(f"{ex['grade_id']}_test"):
                tests[grade_id] = {"raised": raised, "observed": seen}
        return {"tests": tests}

    def replayed(start: int, request: dict) -> list:
        """In the spare (a copy of the process before cell ``start`` ran): each item in a fork that first runs the
        cells from ``start`` up to the exercise's answer cell, as mutation.runner's spare does."""
        ex = request["exercise"]

        def work(item: list) -> dict:
            for index in range(start, ex["index"]):
                if nb.cells[index].cell_type == "code":
                    run(index)
            return exercise(ex, item[1], item[2])

        return _forked(request["items"], work, quiet, request["timeout"])

    results: dict[str, dict[str, list[str]]] = {}
    position, spare = 0, None
    quiet = os.open(os.devnull, os.O_WRONLY)
    for ex in exercises(nb):
        if not _unforkable():  # a copy of the process here, for an exercise after a cell that made a process group
            if spare is not None:
                spare.stop()
            spare = _Spare(position, lambda request, start=position: replayed(start, request))
        for index in range(position, ex["index"]):
            if nb.cells[index].cell_type == "code":
                run(index)
        answers = broken_answers(nb.cells[ex["index"]].source, kinds)
        items = [(key, answer, graded) for key, answer in answers.items() for graded in (False, True)]
        if not _unforkable():
            outcomes = _forked(items, lambda item, ex=ex: exercise(ex, item[1], item[2]), quiet)
        else:  # a fork of this process would hang on the group's first collective: the spare's forks replay the cells
            outcomes = spare.run({"exercise": ex, "items": items, "timeout": 180})
        reference = exercise(ex, nb.cells[ex["index"]].source, True)["tests"]
        position = ex["last"] + 1
        for (key, _, graded), outcome in zip(items, outcomes):
            mode = "graded" if graded else "lab"
            if isinstance(outcome, str):  # the fork died or ran past its time
                said = ["died", outcome]
            elif "answer" in outcome:  # the broken answer cell itself failed to run: not the tests' concern
                said = ["answer", outcome["answer"]["type"]]
            elif graded:
                said = list(graded_outcome(outcome["tests"], reference, sources))
            else:
                said = list(lab_outcome(outcome["tests"]))
            results.setdefault(f"{ex['grade_id']}|{key}", {})[mode] = said
    if spare is not None:
        spare.stop()
    Path(out).write_text(json.dumps(results, indent=1))


def unclear(results: dict[str, dict[str, list[str]]]) -> list[str]:
    """The broken answers whose failure reached the student as anything but a checker's sentence."""
    found = []
    for key, said in sorted(results.items()):
        for mode, sentences in (("lab", LAB_SENTENCES), ("graded", GRADED_SENTENCES)):
            ename, text = said.get(mode, ["missing", "not run"])
            misnamed = ename == "NotWritten from torch"  # a torch method left undefined, said as an exercise unwritten
            ename = ename.removesuffix(" from torch") if mode == "graded" else ename  # the lab's must be a sentence
            if ename in ("", "answer") or (ename in PASSED_THROUGH and mode == "lab"):  # passed, or the answer cell
                # itself failed
                continue
            if misnamed or ename not in sentences or "Traceback" in text or not text.split(": ", 1)[-1].strip():
                found.append(f"{key} ({mode}): {ename}: {text[:300]}")
    return found


@pytest.mark.slow  # starts a process per notebook that forks one per broken answer (conftest: the fast tier)
@pytest.mark.parametrize("folder", FOLDERS)
def test_a_broken_answer_fails_with_a_sentence_not_a_traceback_of_the_test(folder: str, tmp_path: Path):
    out = tmp_path / "outcomes.json"
    env = {**os.environ, "MPLBACKEND": "agg", "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "src")])}
    subprocess.run([sys.executable, __file__, folder, str(out)], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, timeout=900)
    results = json.loads(out.read_text())
    failing = [key for key, said in results.items() if said.get("lab", [""])[0] not in ("", "answer")]
    assert len(failing) >= 5, f"only {len(failing)} broken answers of {folder} failed its visible tests"
    said = unclear(results)
    assert said == [], "\n".join(said)


def test_broken_answers_break_each_body_in_turn_and_delete_only_methods():
    source = "\n".join([
        "class Net(nn.Module):",
        "    def forward(self, x):",
        f"        {BEGIN}",
        "        return x * 2",
        f"        {END}",
        "",
        "def helper():",
        f"    {BEGIN}",
        "    return 1",
        f"    {END}",
    ])
    answers = broken_answers(source, list(KINDS))
    expected = [f"r0:{kind}" for kind in KINDS] + [f"r1:{kind}" for kind in KINDS if kind != "missing"]
    assert sorted(answers) == sorted(expected)
    assert "def forward" not in answers["r0:missing"] and "return 1" in answers["r0:missing"]
    assert "return x * 2" in answers["r1:none"] and "    return None" in answers["r1:none"]
    assert BEGIN not in answers["r0:raise"] and "raise RuntimeError" in answers["r0:raise"]


if __name__ == "__main__":
    sys.path[:0] = [str(REPO)]
    main(*sys.argv[1:])
