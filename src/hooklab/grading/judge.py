"""The grader's verdict on a test cell: what the student's code showed, compared with what the reference showed.

A notebook whose source says its tests are drivers (``"hooklab_drivers": true`` in its metadata) is graded
so that no score depends on anything the student's kernel decides:

- its test cells are sent with every expected value taken out (:func:`without_expectations`): the checkers'
  expected arguments and every ``expected=`` argument become ``None``, and the lines between
  ``### BEGIN REFERENCE`` and ``### END REFERENCE`` (the test's own oracles: functions that compute expected
  values, checks of the test's tables) are left blank, so the kernel never holds an expected value nor the
  means to compute one; the checkers only observe (:mod:`hooklab.observations`);
- the same cells run on the reference solution, with the same seeds, in a kernel of their own that no student
  code runs in (:func:`hooklab.grading.worker.reference`), once per run for the whole class;
- :func:`verdict` compares the two streams of observations, with the tolerances the reference's test gave, in
  the grading process. A test cell passes when it raised nothing and its observations match, item by item.

The scan and the runtime probe still hold a notebook for review; the scores do not depend on them.
"""

from __future__ import annotations

import ast
import builtins
import math
import re
from functools import lru_cache
from typing import Any

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests

from hooklab import hints, messages, observations
from hooklab.grading.outputs import ANSI, GRADERS, NOT_JUDGED, NOT_WRITTEN, WRONG, error_output, errors, failed
from hooklab.grading.redaction import LINE, hidden_lines_by_number

DRIVERS = "hooklab_drivers"  # the key, in a source notebook's metadata, that says its tests are drivers
# Where each checker takes its expected value: (position, keyword). Any call's ``expected=`` is taken out too.
EXPECTATIONS = {
    "check_tensor": (1, "expected"),
    "check_answer": (1, "expected"),
    "check_equal": (1, "expected"),
    "check_names": (1, "expected"),
    "check_parameter": (2, "shape"),
    "check_backward": (None, "reference"),
}
REFERENCE = ("### BEGIN REFERENCE", "### END REFERENCE")  # code that only the kernel's own checks run
PASSED = "✓"  # how a test cell's printed line says its checks passed (the notebooks' convention)
# nbgrader's hidden-test delimiters, matched anywhere in a line as its ClearHiddenTests matches them
_HIDDEN_TESTS = tuple(ClearHiddenTests.class_traits()[name].default_value
                      for name in ("begin_test_delimeter", "end_test_delimeter"))
# after the first check that differed, where the test's later lines then raised on the wrong data (what they raised
# is test code's, and may name a hidden test's objects)
STOPPED = " (the rest of this test did not run)"


def has_drivers(source: NotebookNode) -> bool:
    """Whether a source notebook's tests are drivers, judged by comparison with the reference."""
    return bool(source.metadata.get(DRIVERS))


@lru_cache(maxsize=256)
def builtins_read(source: str) -> tuple[str, ...]:
    """The builtins a test cell's code reads by name (``abs``, ``sorted``, ``len``): an answer's global of the same
    name would stand in for them (:func:`hooklab.observations.begin` removes it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return tuple(sorted(name for name in read if hasattr(builtins, name) and not name.startswith("_")))


@lru_cache(maxsize=256)  # a class's test cells are the source's: the same few sources, every submission
def without_expectations(source: str) -> str:
    """A test cell's code with its :data:`REFERENCE` blocks blank and every expected value replaced by ``None`` (but
    the string keys of ``check_answer``'s inline dict: the items' names, not values), lines kept so that tracebacks
    point at the cell's own lines; the rest unchanged if it is not Python."""
    source = _without_reference(source)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = (node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if isinstance(node.func, ast.Attribute) else "")
        position, keyword = EXPECTATIONS.get(name, (None, "expected"))
        if (position is not None and len(node.args) > position
            and not any(isinstance(a, ast.Starred) for a in node.args[: position + 1])):
            given = node.args[position]
            named = name == "check_answer" and isinstance(given, ast.Dict) and all(
                isinstance(key, ast.Constant) and isinstance(key.value, str) for key in given.keys)
            spans += given.values if named else [given]  # an inline dict's keys name the items in messages
        spans += [k.value for k in node.keywords if k.arg in (keyword, "expected")]
    encoded = [line.encode() for line in LINE.findall(source)]
    for node in sorted(_outermost(spans), key=lambda n: (n.lineno, n.col_offset), reverse=True):
        first, last = node.lineno - 1, node.end_lineno - 1
        head, tail = encoded[first][: node.col_offset], encoded[last][node.end_col_offset :]
        encoded[first : last + 1] = [head + b"None" + b"\n" * (last - first) + tail]
    return b"".join(encoded).decode()


def _without_reference(source: str) -> str:
    lines, inside = LINE.findall(source), False
    for number, line in enumerate(lines):
        marker = line.strip()
        if marker in REFERENCE or inside:
            lines[number] = "\n" if line.endswith("\n") else ""
        inside = (inside or marker == REFERENCE[0]) and marker != REFERENCE[1]
    return "".join(lines)


def _outermost(nodes: list[ast.AST]) -> list[ast.AST]:
    """The nodes not inside another of them."""
    def inside(a: ast.AST, b: ast.AST) -> bool:
        return (a is not b and (b.lineno, b.col_offset) <= (a.lineno, a.col_offset)
                and (a.end_lineno, a.end_col_offset) <= (b.end_lineno, b.end_col_offset))

    return [n for n in nodes if not any(inside(n, other) for other in nodes)]


def verdict(observed: list[Any], reference: list[dict[str, Any]], hidden: frozenset[int] = frozenset()) -> str:
    """Why the student's observations are not the reference's ("" when they match), in the words of
    :mod:`hooklab.messages`; a check made on one of the test's ``hidden`` lines (the reference's record says which
    line of the cell it came from) names no expected value. The student's are whatever its kernel sent: anything that
    is not an observation as the checkers make them fails the test, never the grader."""
    try:
        return _verdict(observed, reference, hidden)
    except Exception:  # a payload shaped to break the comparison
        return "the test's observations are not readable"


def _verdict(observed: list[Any], reference: list[dict[str, Any]], hidden: frozenset[int]) -> str:
    for index, expected in enumerate(reference):
        label = str(expected.get("label", f"check {index + 1}"))
        if index >= len(observed):
            return (f"{label}: this check observed nothing ({index} of {len(reference)} checks made): the test "
                    "stopped, or its checkers were changed")
        got = observed[index]
        if not isinstance(got, dict):
            return f"{label}: the test's observation is not readable"
        if said := messages.unread(got.get("value"), label):  # a mode or an aten kernel as it was made
            return said
        if got.get("kind") == "raised" and expected.get("kind") != "raised":  # said where it was raised
            where = (got.get("label") if isinstance(got.get("label"), str) else label)[:messages.SHOWN]
            # the template's, whose line the observation quotes (not torch's own, for a method left undefined)
            if _error_type(got.get("value")) == "NotImplementedError" and "raise NotImplementedError" in _error(got):
                return messages.not_written(where.rsplit(": ", 1)[-1])  # "Mul.apply(…): Mul.backward"
            return f"{where} raised {_error(got)}"
        if expected.get("kind") == "raised":
            if got.get("kind") != "raised":
                return f"{label}: expected an error, but it ran"
            if _error_type(got.get("value")) != _error_type(expected.get("value")):
                return f"{label} raised {_error(got)}, expected another kind of error"
            continue
        problem = _problem(got.get("value"), expected, label, expected.get("line") in hidden or "line" not in expected)
        if problem and got.get("label") != expected.get("label"):
            return (f"{label}: this check was not made (the test's checks differ from the reference's from check "
                    f"{index + 1} on)")
        if problem:  # in the words the reference's check gave for it, where it gave some
            return str(expected["says"]) if isinstance(expected.get("says"), str) else problem
    if len(observed) > len(reference):
        return f"the test made {len(observed)} checks; the reference's made {len(reference)}"
    return ""


def _problem(got: Any, expected: dict[str, Any], label: str, withheld: bool) -> str:
    """One check's difference, by its kind (how the checker that made it compares)."""
    kind = expected.get("kind")
    if kind == "distribution":  # the reference's targets, the student's values
        return _compare_distribution(got, expected, label)
    if kind == "names":
        return messages.names_problem(got, expected.get("value"), label, withheld=withheld)
    if kind == "parameter":
        return messages.parameter_problem(got, expected.get("value"), label)
    options = {k: expected[k] for k in ("atol", "rtol", "check_dtype", "equal_nan") if k in expected}
    names = expected.get("names")
    names = [str(name) for name in names] if isinstance(names, list) else None
    return messages.compare(got, expected.get("value"), label, names=names, withheld=withheld, **options)


def _error(observation: dict[str, Any]) -> str:
    """What a "raised" observation says was raised ("TypeError: message (line 3: code)"), as the lab says it: whole
    unless it is longer than a sentence has room for, then cut with "…" (the line it came from is at its end)."""
    value = observation.get("value")
    text = value.get("value") if isinstance(value, dict) else None
    return messages.cut(text) if isinstance(text, str) else "?"


def _compare_distribution(got: Any, expected: dict[str, Any], label: str) -> str:
    """The statistics of the values a test observed (``check_distribution``), computed here, against the targets the
    reference's test gave."""
    want = expected.get("value") or {}
    if not isinstance(got, dict) or got.get("type") != "tensor":
        return (f"{label} is {messages.describe(got) if isinstance(got, dict) else '?'}, expected "
                f"{messages.describe(want)}")
    if got.get("shape") != want.get("shape"):
        return messages.wrong_shape(label, tuple(want.get("shape") or ()), tuple(got.get("shape") or ()))
    values = messages.array(got)
    if values is None or values.size != math.prod(want.get("shape") or ()):
        return f"{label}: the test's observation is not readable"
    return observations.distribution_problem(values, label,
                                             {k: float(expected[k]) for k in observations.DISTRIBUTION
                                              if k in expected})


def _error_type(encoded: Any) -> str:
    """The exception's type name of a "raised" observation (its value: "TypeError: message")."""
    text = encoded.get("value") if isinstance(encoded, dict) else None
    found = re.match(r"\w+", text) if isinstance(text, str) else None
    return found.group() if found else "?"


def hidden_lines(source: str) -> frozenset[int]:
    """The numbers of a test cell's lines between nbgrader's hidden-test delimiters
    (:func:`redaction.hidden_lines_by_number`)."""
    return frozenset(hidden_lines_by_number(source, *_HIDDEN_TESTS))


def judge(nb: NotebookNode, reference: dict[str, Any] | None, observed: dict[str, list[Any]]) -> list[str]:
    """Give each test cell of an executed notebook the grader's verdict: a cell that raised nothing (but the hold)
    and whose observations differ from ``reference``'s (grade_id → the reference run's observations and error)
    gets a :data:`WRONG` error; one that raised has its error said in the student's terms where it can be
    (:func:`_say_why_it_stopped`). A cell the reference could not judge (it failed its own
    test, or did not run) gets a :data:`NOT_JUDGED` error: never the kernel's own word. Returns notes on those."""
    notes = []
    for cell in nb.cells:
        if not (cell.cell_type == "code" and utils.is_grade(cell)):
            continue
        grade_id = cell.metadata.nbgrader["grade_id"]
        expected = (reference or {}).get(grade_id)
        if expected is None or expected.get("error"):
            why = (f"the reference solution fails it ({expected['error']})" if expected
                   else "the reference solution was not run")
            notes.append(f"{grade_id} not judged: {why}")
            _unpassed(cell)
            cell.outputs.append(error_output(NOT_JUDGED, f"not judged: {why}"))
            continue
        if failed(cell.outputs):  # it failed in the kernel already: said in the student's terms where it can be
            _unpassed(cell)
            _say_why_it_stopped(cell, observed.get(grade_id, []), expected["observed"])
            continue
        problem = verdict(observed.get(grade_id, []), expected["observed"], hidden_lines(cell.source))
        if problem:
            _unpassed(cell)
            cell.outputs.append(error_output(NOT_WRITTEN if _unwritten(problem) else WRONG, problem))
    return notes


def _say_why_it_stopped(cell: NotebookNode, observed: list[Any], reference: list[dict[str, Any]]) -> None:
    """A test cell that raised in the kernel: an exercise not written yet says so (:data:`NOT_WRITTEN`, from the note
    :mod:`hooklab.hints` gave the template's error); else, where a check the test made before the error already
    differs from the reference's, that difference is the message, then :data:`STOPPED` (the test's later lines
    crashed on the wrong data: a missing key, an index). A checker's own AnswerError keeps its sentence, as a
    :data:`WRONG` error."""
    raised = [output for output in errors(cell.outputs) if output.get("ename") not in GRADERS]
    if len(raised) != 1:
        return
    error = raised[0]
    position = cell.outputs.index(error)
    unwritten = _not_written(error)
    if unwritten:
        cell.outputs[position] = error_output(NOT_WRITTEN, unwritten)
        return
    made = [item for item in observed if isinstance(item, dict)]
    answer_error = error.get("ename") == "AnswerError"
    # a rule the checkers judge in the kernel (no model run, no autograd in a Function, a student call that raised),
    # observed as it raised: its sentence stands, unless an earlier check differed
    if answer_error:
        made = made[:-1]
    problem = ""
    if made and len(made) == len(observed) - answer_error and len(made) <= len(reference):
        problem = verdict(made, reference[:len(made)], hidden_lines(cell.source))
    if problem:
        cell.outputs[position] = error_output(WRONG, problem + STOPPED)
    elif answer_error:  # said as every wrong answer is said, not under the checkers' class name and with no traceback
        cell.outputs[position] = error_output(WRONG, str(error.get("evalue", "")))


def _unwritten(sentence: str) -> bool:
    """Whether a verdict says that the exercise is not written yet."""
    return f" is {messages.NOT_WRITTEN}:" in sentence.removesuffix(STOPPED)


def _not_written(error: NotebookNode) -> str:
    """What an exercise's template error says is not written yet ("pre_hook is not written yet"), or ""."""
    if error.get("ename") != "NotImplementedError":
        return ""
    for line in ANSI.sub("", "\n".join(map(str, error.get("traceback", [])))).splitlines():
        if hints.NOT_WRITTEN in line:
            return line.split(":")[0].strip()
    return ""


def _unpassed(cell: NotebookNode) -> None:
    """Take out the lines a test cell printed to say it passed (``✓ …``, printed once its checks had observed
    without raising): the grader's verdict says otherwise."""
    for output in cell.outputs:
        if (output.get("output_type") == "stream" and output.get("name") == "stdout"
            and isinstance(output.get("text"), str)):
            output["text"] = "".join(line for line in output["text"].splitlines(keepends=True)
                                     if not line.startswith(PASSED))
    cell.outputs = [o for o in cell.outputs if not (o.get("output_type") == "stream" and o.get("text") == "")]
