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
import base64
import builtins
import json
import math
import re
from functools import lru_cache
from typing import Any

import numpy
from nbformat import NotebookNode
from nbgrader import utils

from hooklab import hints, observations
from hooklab.grading.outputs import GRADERS, NOT_JUDGED, NOT_WRITTEN, WRONG, error_output, errors, failed

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
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of IPython's tracebacks
_STORED = {"float64": numpy.float64, "complex128": numpy.complex128, "int64": numpy.int64, "uint8": numpy.uint8}


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
    """A test cell's code with its :data:`REFERENCE` blocks blank and every expected value replaced by ``None``
    (lines kept, so that tracebacks point at the cell's own lines); the rest unchanged if it is not Python."""
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
            spans.append(node.args[position])
        spans += [k.value for k in node.keywords if k.arg in (keyword, "expected")]
    lines = source.splitlines(keepends=True)
    encoded = [line.encode() for line in lines]
    for node in sorted(_outermost(spans), key=lambda n: (n.lineno, n.col_offset), reverse=True):
        first, last = node.lineno - 1, node.end_lineno - 1
        head, tail = encoded[first][: node.col_offset], encoded[last][node.end_col_offset :]
        encoded[first : last + 1] = [head + b"None" + b"\n" * (last - first) + tail]
    return b"".join(encoded).decode()


def _without_reference(source: str) -> str:
    lines, inside = source.splitlines(keepends=True), False
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


def verdict(observed: list[Any], reference: list[dict[str, Any]]) -> str:
    """Why the student's observations are not the reference's ("" when they match). The student's are whatever
    its kernel sent: anything that is not an observation as the checkers make them fails the test, never the
    grader."""
    try:
        return _verdict(observed, reference)
    except Exception:  # a payload shaped to break the comparison
        return "the test's observations are not readable"


def _verdict(observed: list[Any], reference: list[dict[str, Any]]) -> str:
    for index, expected in enumerate(reference):
        label = str(expected.get("label", f"check {index + 1}"))
        if index >= len(observed):
            return (f"{label}: this check observed nothing ({index} of {len(reference)} checks made): the test "
                    "stopped, or its checkers were changed")
        got = observed[index]
        if not isinstance(got, dict):
            return f"{label}: the test's observation is not readable"
        if got.get("kind") == "raised" and expected.get("kind") != "raised":
            return f"{label}: raised {_plain(got.get('value'))}"
        if expected.get("kind") == "raised":
            if got.get("kind") != "raised":
                return f"{label}: expected an error, but it ran"
            if _error_type(got.get("value")) != _error_type(expected.get("value")):
                return f"{label}: raised {_plain(got.get('value'))}, expected another kind of error"
            continue
        if expected.get("kind") == "distribution":  # the reference's targets, the student's values
            problem = _compare_distribution(got.get("value"), expected, label)
        else:
            options = {k: expected[k] for k in ("atol", "rtol", "check_dtype", "equal_nan") if k in expected}
            problem = _compare(got.get("value"), expected.get("value"), label, **options)
        if problem and got.get("label") != expected.get("label"):
            return (f"{label}: this check was not made (the test's checks differ from the reference's from check "
                    f"{index + 1} on)")
        if problem:
            return problem
    if len(observed) > len(reference):
        return f"the test made {len(observed)} checks; the reference's made {len(reference)}"
    return ""


def _compare_distribution(got: Any, expected: dict[str, Any], label: str) -> str:
    """The statistics of the values a test observed (``check_distribution``), computed here, against the targets the
    reference's test gave."""
    want = expected.get("value") or {}
    if not isinstance(got, dict) or got.get("type") != "tensor":
        return f"{label} is {_describe(got) if isinstance(got, dict) else '?'}, expected {_describe(want)}"
    if got.get("shape") != want.get("shape"):
        return f"{label}: shape {tuple(want.get('shape') or ())} expected, got {tuple(got.get('shape') or ())}"
    values = _array(got)
    if values is None or values.size != math.prod(want.get("shape") or ()):
        return f"{label}: the test's observation is not readable"
    return observations.distribution_problem(values, label,
                                             {k: float(expected[k]) for k in observations.DISTRIBUTION
                                              if k in expected})


def _error_type(encoded: Any) -> str:
    """The exception's type name of a "raised" observation (its value: "TypeError: message")."""
    text = encoded.get("value") if isinstance(encoded, dict) else None
    return text.split(":", 1)[0] if isinstance(text, str) else "?"


def _compare(got: Any, want: Any, label: str, atol: float = 1e-6, rtol: float = 1e-5, check_dtype: bool = True,
             equal_nan: bool = False) -> str:
    if not isinstance(got, dict) or not isinstance(want, dict):
        return f"{label}: the test's observation is not readable"
    kind, expected_kind = got.get("type"), want.get("type")
    if kind != expected_kind:
        return f"{label} is {_describe(got)}, expected {_describe(want)}"
    if kind == "tensor":
        return _compare_tensors(got, want, label, atol, rtol, check_dtype, equal_nan)
    if kind == "too large":
        return f"{label} is too large to compare"
    if kind == "dict":  # by key, as == compares dicts
        return _compare_dicts(got, want, label, atol, rtol, check_dtype, equal_nan)
    if kind in ("list", "tuple"):
        items, expected_items = got.get("items"), want.get("items")
        if not isinstance(items, list) or len(items) != len(expected_items):
            return f"{label} has {len(items) if isinstance(items, list) else '?'} items, expected {len(expected_items)}"
        for position, (item, expected) in enumerate(zip(items, expected_items)):
            problem = _compare(item, expected, f"{label}[{position}]", atol, rtol, check_dtype, equal_nan)
            if problem:
                return problem
        return ""
    if kind == "other":
        return "" if got.get("name") == want.get("name") else f"{label} is {_describe(got)}, expected {_describe(want)}"
    if got.get("value") != want.get("value"):
        return f"{label} is not the expected value: got {_plain(got)}"
    return ""


def _compare_dicts(got: dict[str, Any], want: dict[str, Any], label: str, atol: float, rtol: float, check_dtype: bool,
                   equal_nan: bool = False) -> str:
    items, expected_items = got.get("items"), want["items"]
    if not isinstance(items, list) or not all(isinstance(i, list) and len(i) == 2 for i in items):
        return f"{label}: the test's observation is not readable"
    keyed = {json.dumps(k, sort_keys=True): v for k, v in items}
    expected_keys = {json.dumps(k, sort_keys=True): (k, v) for k, v in expected_items}
    if len(keyed) != len(items) or set(keyed) != set(expected_keys):
        missing = [_plain(k) for key, (k, _) in expected_keys.items() if key not in keyed]
        return f"{label} is missing the key {missing[0]}" if missing else (f"{label} has keys it should not have: got "
                                                                           f"{_plain(got)}")
    for key, (shown, expected) in expected_keys.items():
        problem = _compare(keyed[key], expected, f"{label}[{_plain(shown)}]", atol, rtol, check_dtype, equal_nan)
        if problem:
            return problem
    return ""


def _compare_tensors(got: dict[str, Any], want: dict[str, Any], label: str, atol: float, rtol: float, check_dtype: bool,
                     equal_nan: bool = False) -> str:
    shape = got.get("shape")
    if not (isinstance(shape, list) and all(type(size) is int for size in shape)):
        return f"{label}: the test's observation is not readable"
    if shape != want["shape"]:
        return f"{label}: shape {tuple(want['shape'])} expected, got {tuple(shape)}"
    if check_dtype and got.get("dtype") != want["dtype"]:
        return f"{label} has dtype torch.{got.get('dtype')}, expected torch.{want['dtype']}"
    actual, expected = _array(got), _array(want)
    if actual is None or expected is None or actual.size != expected.size:
        return f"{label}: the test's observation is not readable"
    if actual.dtype.kind == "c" or expected.dtype.kind == "c":
        actual, expected = actual.astype(numpy.complex128), expected.astype(numpy.complex128)
    else:
        actual, expected = actual.astype(numpy.float64), expected.astype(numpy.float64)
    with numpy.errstate(all="ignore"):
        close = numpy.isclose(actual, expected, rtol=rtol, atol=atol) & ~numpy.isnan(actual)  # nan matches nothing,
        close |= (actual == expected)  # infinities of one sign
        if equal_nan:  # unless the reference's test expects one there
            close |= numpy.isnan(actual) & numpy.isnan(expected)
    if close.all():
        return ""
    wrong = numpy.flatnonzero(~close)
    with numpy.errstate(all="ignore"):
        errors = numpy.abs(actual[wrong] - expected[wrong])
        errors = errors[~numpy.isnan(errors)]
        worst = float(errors.max()) if errors.size else math.nan
    index = numpy.unravel_index(int(wrong[0]), tuple(want["shape"])) if want["shape"] else ()
    where = f" at index {tuple(int(i) for i in index)}" if index else ""
    return (f"{label} has the wrong values{where} ({len(wrong)} of {actual.size} entries wrong, max abs error "
            f"{worst:.3g})")


def _array(encoded: dict[str, Any]) -> numpy.ndarray | None:
    stored = _STORED.get(encoded.get("stored")) if isinstance(encoded.get("stored"), str) else None
    try:
        return numpy.frombuffer(base64.b64decode(encoded["data"], validate=True), dtype=stored) if stored else None
    except (KeyError, ValueError, TypeError):
        return None


def _describe(encoded: dict[str, Any]) -> str:
    kind = encoded.get("type")
    if kind == "tensor":
        return f"a tensor of shape {tuple(encoded.get('shape') or ())}"
    if kind == "other":
        return str(encoded.get("name"))[:100]
    return "None" if kind == "None" else f"an {kind}" if kind == "int" else f"a {kind}"


def _plain(encoded: Any, room: int = 200) -> str:
    """An encoded value as Python would show it (cut to ``room`` characters)."""
    text = _shown(encoded)
    return text if len(text) <= room else text[:room] + "…"


def _shown(encoded: Any) -> str:
    if not isinstance(encoded, dict):
        return "?"
    kind = encoded.get("type")
    if kind in ("int", "float", "complex", "bool", "None"):
        return str(encoded.get("value"))
    if kind == "str":
        return repr(encoded.get("value"))
    if kind in ("list", "tuple"):
        inner = ", ".join(_shown(item) for item in encoded.get("items", []))
        return f"[{inner}]" if kind == "list" else f"({inner}{',' if len(encoded.get('items', [])) == 1 else ''})"
    if kind == "dict":
        return "{" + ", ".join(f"{_shown(k)}: {_shown(v)}" for k, v in encoded.get("items", [])) + "}"
    return _describe(encoded)


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
            _say_why_it_stopped(cell, observed.get(grade_id, []), expected["observed"])
            continue
        problem = verdict(observed.get(grade_id, []), expected["observed"])
        if problem:
            _unpassed(cell)
            cell.outputs.append(error_output(WRONG, problem))
    return notes


def _say_why_it_stopped(cell: NotebookNode, observed: list[Any], reference: list[dict[str, Any]]) -> None:
    """A test cell that raised in the kernel: an exercise not written yet says so (:data:`NOT_WRITTEN`, from the note
    :mod:`hooklab.hints` gave the template's error); else, where a check the test made before the error already
    differs from the reference's, that difference is the message, the error said after it (the test's later lines
    crashed on the wrong data: a missing key, an index)."""
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
    if not made or len(made) != len(observed) or len(made) > len(reference):
        return
    problem = verdict(made, reference[:len(made)])
    if problem:
        stopped = f"{error.get('ename', '')} {error.get('evalue', '')}".strip()
        cell.outputs[position] = error_output(WRONG, f"{problem} (the test then stopped: {stopped})")


def _not_written(error: NotebookNode) -> str:
    """What an exercise's template error says is not written yet ("pre_hook is not written yet"), or ""."""
    if error.get("ename") != "NotImplementedError":
        return ""
    for line in _ANSI.sub("", "\n".join(map(str, error.get("traceback", [])))).splitlines():
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
