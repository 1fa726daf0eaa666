"""Answer checkers for the notebooks' test cells.

Every checker returns ``None`` when the answer is right and raises :class:`AnswerError`
(an ``AssertionError``) with a message that says what is wrong otherwise.

Values are read through functions captured when this module is imported and compared in
plain Python, so a notebook that patches ``torch.allclose``, ``torch.equal`` or
``Tensor.__eq__``, or hands in a tensor subclass, cannot make a wrong answer pass.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import numpy
import torch

__all__ = [
    "AnswerError",
    "check_answer",
    "check_equal",
    "check_names",
    "check_parameter",
    "check_tensor",
    "random_generator",
]

# Captured at import: later monkeypatching of torch cannot change how answers are read.
_PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
_PLAIN_SCALARS = (str, int, float, bool, complex, type(None))
_NUMPY_INTEGERS = tuple(numpy.dtype(code).type for code in numpy.typecodes["AllInteger"])
_size = torch.Tensor.size
_detach = torch.Tensor.detach
_to = torch.Tensor.to
_reshape = torch.Tensor.reshape
_tolist = torch.Tensor.tolist
_float64 = torch.float64
_cpu = torch.device("cpu")
_isclose = math.isclose
_isnan = math.isnan


class AnswerError(AssertionError):
    """A student's answer is wrong; the message says how."""

    def _render_traceback_(self) -> list[str]:
        """IPython's hook for showing an error: the traceback up to the checker's call, then the
        message, without the frames inside this module (they say nothing about the answer)."""
        from IPython import get_ipython  # here, not at import: the checkers work outside IPython

        shell = get_ipython()
        tb = _outside_checks(self.__traceback__)
        if shell is None:
            return [f"{type(self).__name__}: {self}"]
        return shell.InteractiveTB.structured_traceback(type(self), self, tb)


def _outside_checks(tb: TracebackType | None) -> TracebackType | None:
    """The traceback cut before its first frame in this module."""
    head, last = tb, None
    while tb is not None and tb.tb_frame.f_code.co_filename != __file__:
        last, tb = tb, tb.tb_next
    if last is None:
        return None
    last.tb_next = None
    return head


def _describe_type(value: Any) -> str:
    kind = type(value)
    if kind in (bool, int, float, complex, str):
        return f"a Python {kind.__name__}"
    if value is None:
        return "None"
    return f"a {kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else f"a {kind.__name__}"


def _shape(tensor: torch.Tensor) -> tuple[int, ...]:
    return tuple(_size(tensor))


def _values(tensor: torch.Tensor) -> list[float]:
    flat = _reshape(_to(_detach(tensor), device=_cpu, dtype=_float64), (-1,))
    return _tolist(flat)


def _first_mismatch(
    actual: list[float], expected: list[float], atol: float, rtol: float
) -> tuple[int, float, float] | None:
    for index, (a, e) in enumerate(zip(actual, expected)):
        if _isnan(a) and _isnan(e):
            continue
        if not _isclose(a, e, rel_tol=rtol, abs_tol=atol):
            return index, a, e
    return None


def _same_values(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> bool:
    if _shape(actual) != _shape(expected):
        return False
    return _first_mismatch(_values(actual), _values(expected), atol, rtol) is None


def _is_one_of(value: Any, kinds: tuple[type, ...]) -> bool:
    """``type(value)`` is exactly one of ``kinds`` (by identity: a metaclass cannot claim equality)."""
    kind = type(value)
    return any(kind is plain for plain in kinds)


def _require_plain(value: Any, what: str) -> None:
    """Plain Python data all the way down, so comparing it runs no code of the student's."""
    if _is_one_of(value, _PLAIN_SCALARS):
        return
    if _is_one_of(value, (list, tuple)):
        for item in value:
            _require_plain(item, what)
        return
    if _is_one_of(value, (dict,)):
        for key, item in value.items():
            _require_plain(key, what)
            _require_plain(item, what)
        return
    raise AnswerError(f"{what} holds {_describe_type(value)}; expected plain Python values (str, numbers, lists, tuples, dicts)")


def _require_tensor(value: Any, name: str) -> None:
    if _is_one_of(value, _PLAIN_TENSOR_TYPES):
        return
    if isinstance(value, torch.Tensor):
        raise AnswerError(
            f"{name} is {_describe_type(value)} (a torch.Tensor subclass), expected a plain tensor"
        )
    raise AnswerError(f"{name} is {_describe_type(value)}, expected a tensor")


def _index_text(shape: tuple[int, ...], flat_index: int) -> str:
    if not shape:
        return ""
    index = []
    for size in reversed(shape):
        index.append(flat_index % size)
        flat_index //= size
    return f" at index {tuple(reversed(index))}"


def check_tensor(
    actual: Any,
    expected: torch.Tensor,
    name: str = "answer",
    *,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    check_dtype: bool = True,
) -> None:
    """Check that ``actual`` is a tensor with ``expected``'s shape, dtype and values."""
    _require_tensor(value=actual, name=name)
    if _shape(actual) != _shape(expected):
        raise AnswerError(f"{name}: shape {_shape(expected)} expected, got {_shape(actual)}")
    if check_dtype and actual.dtype != expected.dtype:
        raise AnswerError(f"{name} has dtype {actual.dtype}, expected {expected.dtype}")
    mismatch = _first_mismatch(_values(actual), _values(expected), atol, rtol)
    if mismatch is not None:
        index, got, want = mismatch
        raise AnswerError(
            f"{name} has the wrong values: {got:.6g} instead of {want:.6g}"
            f"{_index_text(_shape(expected), index)}"
        )


def check_answer(
    answer: Any,
    expected: Mapping[str, torch.Tensor],
    *,
    same_object: bool = False,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    check_dtype: bool = True,
) -> None:
    """Check an answer list item by item against named references, in order.

    ``expected`` maps a name used in messages (e.g. ``"x1"``) to its reference tensor.
    With ``same_object=True`` every item must be the reference tensor itself, not a copy.
    """
    names = list(expected)
    listing = f"[{', '.join(names)}]"
    if not isinstance(answer, (list, tuple)):
        raise AnswerError(f"answer is {_describe_type(answer)}, expected a list {listing}")
    if len(answer) != len(names):
        raise AnswerError(
            f"answer has {len(answer)} item{'s' if len(answer) != 1 else ''}, "
            f"expected {len(names)}: {listing}"
        )
    for position, (name, item) in enumerate(zip(names, answer)):
        label = f"answer[{position}]"
        reference = expected[name]
        if same_object:
            if item is reference:
                continue
            _require_tensor(item, label)
            twin = _matching_name(item, expected, name, atol, rtol, by_identity=True)
            if twin is not None:
                raise AnswerError(f"{label} should be {name}; got {twin}")
            if _same_values(item, reference, atol, rtol):
                raise AnswerError(
                    f"{label} should be {name} itself; got a copy with the same values "
                    "(append the tensor you received, not a clone)"
                )
            raise AnswerError(f"{label} should be {name} itself; got a different tensor")
        _require_tensor(item, label)
        if not _same_values(item, reference, atol, rtol):
            twin = _matching_name(item, expected, name, atol, rtol, by_identity=False)
            if twin is not None:
                raise AnswerError(f"{label} should equal {name}; got a tensor equal to {twin}")
        check_tensor(item, reference, f"{label} ({name})", atol=atol, rtol=rtol, check_dtype=check_dtype)


def _matching_name(
    item: torch.Tensor,
    expected: Mapping[str, torch.Tensor],
    skip: str,
    atol: float,
    rtol: float,
    *,
    by_identity: bool,
) -> str | None:
    for other, tensor in expected.items():
        if other == skip:
            continue
        if by_identity and item is tensor:
            return other
        if not by_identity and _same_values(item, tensor, atol, rtol):
            return other
    return None


def check_names(actual: Iterable[Any], expected: Sequence[str], what: str) -> None:
    """Check a sequence of names (e.g. from ``named_parameters()``) against the expected order."""
    got = list(actual)
    for name in got:
        if not _is_one_of(name, (str,)):
            raise AnswerError(f"{what} holds {_describe_type(name)}; expected names (str)")
    missing = [name for name in expected if name not in got]
    if missing:
        raise AnswerError(f"{what} is missing {', '.join(map(repr, missing))}; got {got}")
    unexpected = [name for name in got if name not in expected]
    if unexpected:
        raise AnswerError(f"{what} has unexpected {', '.join(map(repr, unexpected))}; expected {list(expected)}")
    if got != list(expected):
        raise AnswerError(f"{what} has the right names in the wrong order: expected {list(expected)}, got {got}")


def check_parameter(module: torch.nn.Module, name: str, shape: Sequence[int]) -> None:
    """Check that ``module.<name>`` is a registered ``nn.Parameter`` of the given shape."""
    owner = type(module).__name__
    if not hasattr(module, name):
        raise AnswerError(f"{owner} has no attribute {name!r}")
    value = getattr(module, name)
    if type(value) is not torch.nn.Parameter:
        raise AnswerError(
            f"{owner}.{name} is {_describe_type(value)}, not an nn.Parameter: "
            "parameters(), state_dict() and the optimizer will not see it"
        )
    if name not in dict(module.named_parameters(recurse=False)):
        raise AnswerError(f"{owner}.{name} is a Parameter but is not registered on the module")
    if _shape(value) != tuple(shape):
        raise AnswerError(f"{owner}.{name}: shape {tuple(shape)} expected, got {_shape(value)}")


def check_equal(actual: Any, expected: Any, what: str) -> None:
    """Check exact equality of plain Python values (strings, numbers, lists), showing both.

    A NumPy integer counts as the int it holds (``np.prod`` of a shape is an honest count)."""
    if type(expected) is int and _is_one_of(actual, _NUMPY_INTEGERS):
        actual = int(actual)
    if type(actual) is not type(expected):
        raise AnswerError(f"{what} is {_describe_type(actual)}, expected {_describe_type(expected)}")
    _require_plain(actual, what)
    if actual != expected:
        if isinstance(expected, str) and "\n" in expected + actual:
            raise AnswerError(f"{what} differs.\nexpected:\n{expected}\ngot:\n{actual}")
        raise AnswerError(f"{what} should be {expected!r}, got {actual!r}")


def random_generator() -> torch.Generator:
    """A generator seeded from the operating system, for hidden tests' fresh random inputs."""
    return torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
