"""The sentences a failed check says: one catalogue for the lab's checkers and the grader's judge.

A check compares what the student's code gave with what was expected, both encoded as observations encode them
(:func:`hooklab.observations.encode`: a tensor by dtype, shape and bytes; plain values by type and value). In the lab
(and ``nbgrader validate``) a checker encodes its own expected value and asserts with the sentence this module
makes; under ``hooklab autograde`` the grader's judge compares the student's observation with the reference
solution's and writes the same sentence into the feedback. Where the check is one of a test's *hidden* lines the
judge says it ``withheld``: the sentence then names no expected value ("should be another value"; a tensor's count
of wrong entries and largest error, not its entries). No torch here: the judge runs in the grading process.
"""

from __future__ import annotations

import base64
import json
import types
from typing import Any

import numpy

SHOWN = 200  # characters of a value shown in a sentence
_STORED = types.MappingProxyType({"float64": numpy.float64, "complex128": numpy.complex128, "int64": numpy.int64,
                                  "uint8": numpy.uint8})
NAN_HINT = "where a number is expected (are the parameters and inputs it is computed from finite?)"


def compare(got: Any, want: Any, label: str, *, atol: float = 1e-6, rtol: float = 1e-5, check_dtype: bool = True,
            equal_nan: bool = False, names: list[str] | None = None, withheld: bool = False) -> str:
    """Why the encoded value ``got`` is not ``want`` ("" when it is), as one sentence that begins with ``label``.
    Tensors compare within ``atol``/``rtol`` (a nan matches only where ``equal_nan`` and ``want`` has one), plain
    values exactly and by type. ``names``: what the items of an expected list are called ("x1", "output"), so that an
    item that holds another item's value says which."""
    if not isinstance(got, dict) or not isinstance(want, dict):
        return f"{label}: the test's observation is not readable"
    if said := unread(got, label):
        return said
    options = {"atol": atol, "rtol": rtol, "check_dtype": check_dtype, "equal_nan": equal_nan, "withheld": withheld}
    if not withheld and _plain(got) and _plain(want) and not _equal(got, want) and len(shown(want)) < SHOWN:
        return _should_be(got, want, label, withheld)  # values that differ, by value, as Python compares them
    kind = got.get("type")
    if kind != want.get("type"):
        listing = f" [{', '.join(names)}]" if names else ""
        return f"{label} is {describe(got)}, expected {describe(want)}{listing}"
    if kind == "tensor":
        return _tensors(got, want, label, **options)
    if kind == "too large":
        return f"{label} is too large to compare"
    if kind == "dict":
        return _dicts(got, want, label, **options)
    if kind in ("list", "tuple"):
        return _items(got, want, label, names, **options)
    if kind == "other":
        return "" if got.get("name") == want.get("name") else f"{label} is {describe(got)}, expected {describe(want)}"
    if got.get("value") == want.get("value"):
        return ""
    return _should_be(got, want, label, withheld)


def unread(got: Any, label: str) -> str:
    """The sentence for a value the checker did not read (:func:`hooklab.observations.encode`: a torch mode entered, a
    kernel for an operator of aten's registered), "" for any other."""
    if isinstance(got, dict) and got.get("type") == "unread":
        return f"{label} was not read: {cut(str(got.get('reason')))}"
    return ""


NOT_WRITTEN = "not written yet"  # how a sentence about an exercise still raising its template's error ends


def not_written(what: str) -> str:
    """The sentence for a function (``"Mul.backward"``) that still raises its template's ``NotImplementedError``."""
    return (f"{what} is {NOT_WRITTEN}: replace `raise NotImplementedError()` with your answer, run its cell, then "
            "this one")


def _should_be(got: dict[str, Any], want: dict[str, Any], label: str, withheld: bool) -> str:
    if withheld:
        return f"{label} should be another value, got {shown(got)}"
    if want.get("type") == "str" and "\n" in f"{want.get('value')}{got.get('value')}":
        return f"{label} differs.\nexpected:\n{want.get('value')}\ngot:\n{got.get('value')}"
    return f"{label} should be {shown(want)}, got {shown(got)}"


def _items(got: dict[str, Any], want: dict[str, Any], label: str, names: list[str] | None, **options: Any) -> str:
    items, expected = got.get("items"), want.get("items") or []
    if not isinstance(items, list):
        return f"{label}: the test's observation is not readable"
    if len(items) != len(expected):
        listing = f": [{', '.join(names)}]" if names and len(names) == len(expected) else ""
        if not listing and not options["withheld"] and _plain(want) and len(shown(want)) < SHOWN:
            return _should_be(got, want, label, False)
        count = f"{len(items)} item{'s' if len(items) != 1 else ''}"
        return f"{label} has {count}, expected {len(expected)}{listing}"
    named = names if names and len(names) == len(expected) else None
    for position, (item, reference) in enumerate(zip(items, expected)):
        where = f"{label}[{position}]"
        problem = compare(item, reference, f"{where} ({named[position]})" if named else where, **options)
        if problem and named:
            twin = next((named[other] for other, value in enumerate(expected)
                         if other != position and not compare(item, value, where, **options)), None)
            if twin is not None:
                return f"{where} should be {named[position]}; got a tensor equal to {twin}"
        if problem:
            return problem
    return ""


def _dicts(got: dict[str, Any], want: dict[str, Any], label: str, **options: Any) -> str:
    items, expected = got.get("items"), want.get("items") or []
    if not isinstance(items, list) or not all(isinstance(i, list) and len(i) == 2 for i in items):
        return f"{label}: the test's observation is not readable"
    keyed = {json.dumps(k, sort_keys=True): v for k, v in items}
    expected_keys = {json.dumps(k, sort_keys=True): (k, v) for k, v in expected}
    missing = [k for key, (k, _) in expected_keys.items() if key not in keyed]
    for key in missing:  # an equal key of another type (True for 1)
        twin = next((k for k, _ in items if _equal(k, key)), None)
        if twin is not None:
            return f"{label}: the key {shown(twin)} is {describe(twin)}, expected {describe(key)}"
    missing = [shown(k) for k in missing]
    if missing:
        return f"{label} is missing the key{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    extra = [shown(k) for k, _ in items if json.dumps(k, sort_keys=True) not in expected_keys]
    if extra or len(keyed) != len(items):
        return f"{label} has key{'s' if len(extra) > 1 else ''} it should not have: {', '.join(extra) or '(repeated)'}"
    for key, (name, reference) in expected_keys.items():
        problem = compare(keyed[key], reference, f"{label}[{shown(name)}]", **options)
        if problem:
            return problem
    return ""


def _tensors(got: dict[str, Any], want: dict[str, Any], label: str, *, atol: float, rtol: float, check_dtype: bool,
             equal_nan: bool, withheld: bool) -> str:
    shape = got.get("shape")
    if not (isinstance(shape, list) and all(type(size) is int for size in shape)):
        return f"{label}: the test's observation is not readable"
    if shape != want.get("shape"):
        return wrong_shape(label, tuple(want.get("shape") or ()), tuple(shape))
    if check_dtype and got.get("dtype") != want.get("dtype"):
        return f"{label} has dtype torch.{got.get('dtype')}, expected torch.{want.get('dtype')}"
    actual, expected = array(got), array(want)
    if actual is None or expected is None or actual.size != expected.size:
        return f"{label}: the test's observation is not readable"
    kind = numpy.complex128 if "c" in (actual.dtype.kind, expected.dtype.kind) else numpy.float64
    actual, expected = actual.astype(kind), expected.astype(kind)
    with numpy.errstate(all="ignore"):
        close = numpy.isclose(actual, expected, rtol=rtol, atol=atol) & ~numpy.isnan(actual)  # nan matches nothing,
        close |= actual == expected  # infinities of one sign
        if equal_nan:  # unless the test expects one there
            close |= numpy.isnan(actual) & numpy.isnan(expected)
    if close.all():
        return ""
    wrong = numpy.flatnonzero(~close)
    first = int(wrong[0])
    index = numpy.unravel_index(first, tuple(shape)) if shape else ()
    where = f" at index {tuple(int(i) for i in index)}" if index else ""
    if numpy.isnan(actual[first]):
        return f"{label} is nan{where}, {NAN_HINT}"
    count = f"{len(wrong)} of {actual.size} entries wrong" if actual.size > 1 else ""
    if not withheld:
        got_text, want_text = told_apart((actual[first], expected[first]), lambda a, e: a != e)
        return (f"{label} has the wrong values: {got_text} instead of {want_text}{where}"
                + (f" ({count})" if count else ""))
    with numpy.errstate(all="ignore"):
        errors = numpy.abs(actual[wrong] - expected[wrong])
    errors = errors[~numpy.isnan(errors)]
    # one significant figure: the size of the error, not (with the student's own value) the reference's entry
    largest = f"largest error {float(errors.max()):.1g}" if errors.size else "the errors are not finite"
    return f"{label} has the wrong values{where} ({count + '; ' if count else ''}{largest})"


def wrong_shape(label: str, expected: tuple[int, ...], got: tuple[int, ...]) -> str:
    return f"{label}: shape {expected} expected, got {got}"


def _number(value: Any, digits: int = 6) -> str:
    return (f"{complex(value):.{digits}g}" if isinstance(value, complex | numpy.complexfloating)
            else f"{float(value):.{digits}g}")


def told_apart(values: Any, differ: Any, digits: int | tuple[int, ...] = 6) -> list[str]:
    """``values`` (numbers) as a sentence shows them: with ``digits`` significant digits (one count for all, or one
    per value), or as many more as it takes for ``differ``, given the values read back from those texts, to hold, as
    it holds of the values themselves (two numbers that differ must not print alike: "0.839694 instead of
    0.839694"). From 17 digits on, every float64 reads back as itself."""
    values = list(values)
    starts = digits if isinstance(digits, tuple) else (digits,) * len(values)
    for more in range(18):
        texts = [_number(value, min(start + more, 17)) for value, start in zip(values, starts)]
        read = [complex(text) if isinstance(value, complex | numpy.complexfloating) else float(text)
                for text, value in zip(texts, values)]
        if differ(*read) or all(min(start + more, 17) == 17 for start in starts):
            return texts
    return texts


def names_problem(got: Any, want: Any, label: str, *, withheld: bool = False) -> str:
    """Why a list of names (``named_parameters()``'s, a log's) is not the expected one ("" when it is): the names
    missing, those it should not hold, or the order; ``withheld`` (a hidden test's check), without the expected
    names (how many are missing, the student's own names)."""
    if said := unread(got, label):
        return said
    if not (isinstance(got, dict) and got.get("type") == "list" and isinstance(got.get("items"), list)):
        return f"{label} is {describe(got) if isinstance(got, dict) else '?'}, expected a list of names"
    for item in got["items"]:
        if not (isinstance(item, dict) and item.get("type") == "str"):
            return f"{label} holds {describe(item) if isinstance(item, dict) else '?'}; expected names (str)"
    actual = [item["value"] for item in got["items"]]
    expected = [item.get("value") for item in (want or {}).get("items", [])]
    missing = [name for name in expected if name not in actual]
    if missing and withheld:
        return cut(f"{label} is missing {len(missing)} name{'s' if len(missing) > 1 else ''}; got {actual}")
    if missing:
        return cut(f"{label} is missing {', '.join(map(repr, missing))}; got {actual}")
    unexpected = [name for name in actual if name not in expected]
    if unexpected:
        return cut(f"{label} has unexpected {', '.join(map(repr, unexpected))}" +
                   ("" if withheld else f"; expected {expected}"))
    if actual != expected:
        return cut(f"{label} has the right names in the wrong order: " +
                   (f"got {actual}" if withheld else f"expected {expected}, got {actual}"))
    return ""


def cut(text: str, room: int = 3 * SHOWN) -> str:
    """``text`` whole, or its first ``room`` characters and "…"."""
    return text if len(text) <= room else text[:room] + "…"


def array(encoded: dict[str, Any]) -> numpy.ndarray | None:
    """An encoded tensor's values as a flat NumPy array, None where the encoding is not readable."""
    stored = _STORED.get(encoded.get("stored")) if isinstance(encoded.get("stored"), str) else None
    try:
        return numpy.frombuffer(base64.b64decode(encoded["data"], validate=True), dtype=stored) if stored else None
    except (KeyError, ValueError, TypeError):
        return None


def describe(encoded: dict[str, Any]) -> str:
    """What kind of value an encoded one is, in words ("a tensor of shape (2, 3)", "an int", "None")."""
    kind = encoded.get("type")
    if kind == "tensor":
        return f"a tensor of shape {tuple(encoded.get('shape') or ())}"
    if kind == "other":
        return str(encoded.get("name"))[:100]
    return "None" if kind == "None" else f"an {kind}" if kind == "int" else f"a {kind}"


def shown(encoded: Any, room: int = SHOWN) -> str:
    """An encoded value as Python would show it, cut to ``room`` characters."""
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
    items = encoded.get("items", [])
    if kind in ("list", "tuple") and isinstance(items, list):
        inner = ", ".join(_shown(item) for item in items)
        return f"[{inner}]" if kind == "list" else f"({inner}{',' if len(items) == 1 else ''})"
    if kind == "dict" and isinstance(items, list):
        return "{" + ", ".join(f"{_shown(k)}: {_shown(v)}" for k, v in items) + "}"
    return describe(encoded)


def _equal(a: Any, b: Any) -> bool:
    """Whether two plain encoded values are equal as Python compares them (True == 1, (1,) != [1])."""
    try:
        return _python(a) == _python(b)
    except (TypeError, ValueError, KeyError):
        return False


def _python(encoded: dict[str, Any]) -> Any:
    kind, value = encoded["type"], encoded.get("value")
    if kind in ("list", "tuple"):
        items = [_python(item) for item in encoded["items"]]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {_python(k): _python(v) for k, v in encoded["items"]}
    if kind in ("int", "float", "complex"):
        return {"int": int, "float": float, "complex": complex}[kind](value)
    if kind in ("str", "bool", "None"):
        return value
    raise TypeError(kind)


def _plain(encoded: Any) -> bool:
    """Whether an encoded value holds no tensor and nothing unreadable (it is shown whole)."""
    if not isinstance(encoded, dict):
        return False
    kind = encoded.get("type")
    if kind in ("int", "float", "complex", "bool", "None", "str"):
        return True
    if kind in ("list", "tuple"):
        return all(_plain(item) for item in encoded.get("items", []))
    if kind == "dict":
        return all(_plain(k) and _plain(v) for k, v in encoded.get("items", []))
    return False


MISSING = "missing"  # what check_parameter records for an attribute the module does not have


def parameter_problem(got: Any, want: Any, label: str) -> str:
    """Why a module's attribute ``label`` ("Affine.weight") is not a registered ``nn.Parameter`` of the expected shape
    ("" when it is); ``got`` and ``want`` encode [what it is, whether it is registered, its shape]."""
    if said := unread(got, label):
        return said
    try:
        (kind, registered, shape), (_, _, expected) = (_python(got), _python(want))
    except (TypeError, ValueError, KeyError):
        return f"{label}: the test's observation is not readable"
    owner, _, name = label.rpartition(".")
    if kind == MISSING:
        return f"{owner} has no attribute {name!r}"
    if kind != "nn.Parameter":
        return (f"{label} is {str(kind)[:100]}, not an nn.Parameter: parameters() does not list it, so no optimizer "
                "trains it")
    if registered is not True:
        return f"{label} is a Parameter but is not registered on the module"
    if shape != expected:
        return wrong_shape(label, tuple(expected or ()), tuple(shape or ()))
    return ""
