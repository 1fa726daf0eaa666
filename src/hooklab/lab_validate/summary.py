"""What the student lab's Validate shows: nbgrader's validator results as a summary, in the words of the notebook's
last cell (:func:`hooklab.hints.progress`): how many exercises pass their visible tests, then one line per failing
exercise with its first message. No test source and no traceback.

Pure functions of a notebook and the results of ``nbgrader.validator.Validator.validate`` (a dict whose ``failed``,
``changed`` or ``type_changed`` lists hold each cell's ``source``, and for a failed cell its ``raw_error``: the
traceback's lines and any stderr, with ANSI colours), so that they are tested without a kernel.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from hooklab.exercises import test_cells, titled
from hooklab.hints import MESSAGE, NOT_WRITTEN

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The line an exception is reported on: its (qualified) class name, then ": message" if it has one.
_EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s?(.*))?$")
HEADER = "{passed} of {total} exercises pass their visible tests (hidden tests run when it is graded)."
NO_TESTS = ("This notebook has no tests of the course (no nbgrader test cells): Validate sums up the tests of the "
            "course's notebooks.")


def first_message(raw_error: str) -> str:
    """The first message of a failing test cell's error, one line without colours: an ``AnswerError``'s sentence
    alone; for an exercise not written yet, "<function> is not written yet" (the note :mod:`hooklab.hints` adds to the
    template's ``NotImplementedError``); otherwise "ExceptionName: message", cut to ``hints.MESSAGE`` characters."""
    lines = [line.rstrip() for line in _ANSI.sub("", raw_error).splitlines()]
    found = [match for match in map(_EXCEPTION.match, lines) if match]
    if not found:  # no exception: what the cell wrote to stderr (a test cell that writes there fails), or nbgrader's
        text = next((line.strip() for line in lines if line.strip()), "")
        if not text or text.startswith(("Partial credit", "You did not provide a response")):
            return text or "failed"
        return _cut(f"wrote to stderr, which fails a test: {text}")
    name, message = found[-1].group(1), (found[-1].group(2) or "").strip()
    kind = name.rpartition(".")[2]
    if kind == "NotImplementedError":
        where = next((line for line in lines if NOT_WRITTEN in line), "")
        return where.split(":")[0].strip() if where else NOT_WRITTEN
    if kind == "AnswerError":
        return _cut(message or kind)
    if kind in ("KeyboardInterrupt", "CellTimeoutError"):
        return "stopped: it ran past the time limit of a cell (an endless loop?)"
    return _cut(f"{kind}: {message}" if message else kind)


def summary(notebook: Mapping[str, Any], results: Mapping[str, Any]) -> list[str]:
    """The lines Validate shows for ``notebook`` (its cells as read from disk) and the validator's ``results`` for
    it: "N of M exercises pass their visible tests …", then ``✗ <exercise>: <first message>`` per failing test cell
    (``· <exercise>: <function> is not written yet`` for a blank one); or why the tests could not be judged (a test
    cell changed, or a cell's type); or that the notebook has no test cells."""
    cells = list(notebook.get("cells", []))
    tests = test_cells(cells)
    if not tests:
        return [NO_TESTS]
    names = _names(cells)
    if results.get("type_changed"):
        changed = results["type_changed"]
        return [f"Validate cannot judge this notebook: {_cells(len(changed))} of the course changed type (the grader "
                "gives them 0 points). Change each back:"] + [
            f"✗ {_name(names, item['source'])}: a {item['old_type']} cell that should be a {item['new_type']} cell"
            for item in changed]
    if results.get("changed"):
        changed = results["changed"]
        return [f"Validate cannot judge this notebook: {_cells(len(changed))} that you may not edit changed (the "
                "grader puts back its own copy, so results here would not be the graded ones). Undo the edits:"] + [
            f"✗ {_name(names, item['source'])}: this cell was changed" for item in changed]
    failed = list(results.get("failed", []))
    sources = Counter(cell["source"].strip() for _, cell in tests)
    failing = sum(min(count, sources[source]) for source, count in
                  Counter(item["source"].strip() for item in failed).items())
    lines = [HEADER.format(passed=len(tests) - failing, total=len(tests))]
    for item in failed:
        message = first_message(item.get("raw_error", ""))
        mark = "·" if message.endswith(NOT_WRITTEN) or message.startswith("You did not provide") else "✗"
        lines.append(f"{mark} {_name(names, item['source'])}: {message}")
    return lines


def could_not_validate(error: BaseException, timeout: float | None = None) -> list[str]:
    """One line saying why the validator stopped without results (its kernel died, a cell could not be stopped,
    the notebook's nbgrader metadata is of another version, …)."""
    kinds = {kind.__name__ for kind in type(error).__mro__}
    limit = f" ({timeout:g} s)" if timeout else ""
    if "DeadKernelError" in kinds:
        return ["Validate stopped: the notebook's kernel died while it ran (out of memory, or a crash in a cell). "
                "Kernel → Restart Kernel and Run All Cells shows which cell."]
    if kinds & {"CellTimeoutError", "TimeoutError"}:
        return [f"Validate stopped: a cell ran past the time limit{limit} and could not be interrupted. "
                "Kernel → Restart Kernel and Run All Cells shows which cell."]
    if kinds & {"SchemaTooOldError", "SchemaTooNewError"}:
        return ["Validate cannot read this notebook's nbgrader metadata (made by another version of nbgrader): "
                "take a fresh copy of the notebook from the course."]
    if "NotJSONError" in kinds or "ValidationError" in kinds:
        return ["Validate cannot read this notebook: it is not a valid notebook file."]
    text = str(error).strip().splitlines()
    return [_cut(f"Validate could not run the notebook: {type(error).__name__}" + (f": {text[0]}" if text else ""))]


def _names(cells: list[Any]) -> dict[str, str]:
    """A cell's stripped source → how Validate names it: its exercise's title, else its grade id."""
    names: dict[str, str] = {}
    for title, cell in titled(cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        names.setdefault(cell.get("source", "").strip(), title or grade_id or "a cell before the first exercise")
    return names


def _name(names: dict[str, str], source: str) -> str:
    return names.get(source.strip(), "a cell of the notebook")


def _cells(count: int) -> str:
    return f"{count} cell" if count == 1 else f"{count} cells"


def _cut(text: str) -> str:
    return text if len(text) <= MESSAGE else text[:MESSAGE - 1] + "…"
