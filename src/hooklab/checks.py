"""Answer checkers for the notebooks' test cells.

Every checker returns ``None`` when the answer is right and raises :class:`AnswerError`
(an ``AssertionError``) with a message that says what is wrong otherwise.

Values are read through functions captured when this module is imported and compared in
plain Python, so a notebook that patches ``torch.allclose``, ``torch.equal`` or
``Tensor.__eq__``, or hands in a tensor subclass, cannot make a wrong answer pass.

Graded by ``hooklab autograde``, a test cell's checkers do not judge: they send what they were given to
check to the grader (:mod:`hooklab.observations`), which compares it with what the reference solution
gives; the grader does not send them the expected values at all.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import itertools
import linecache
import math
import os
import secrets
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, NamedTuple

import torch
from torch.overrides import TorchFunctionMode

from hooklab import messages, observations
from hooklab.observations import PLAIN_SCALARS, encode, observe

__all__ = [
    "AnswerError",
    "check_answer",
    "check_backward",
    "check_distribution",
    "check_equal",
    "check_names",
    "check_no_hooks_left",
    "check_no_model_run",
    "check_parameter",
    "check_tensor",
    "calling",
    "random_generator",
    "returning_a_future",
]

# Captured at import: later monkeypatching of torch cannot change how answers are read.
_PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
# a tensor's copy and gradient read through torch's C tensor type (immutable), not through torch.Tensor, on which an
# answer can set a method of its own
_clone, _grad_of = vars(torch._C.TensorBase)["clone"], vars(torch._C.TensorBase)["grad"].__get__
_size = torch.Tensor.size
_detach = torch.Tensor.detach
_to = torch.Tensor.to
_reshape = torch.Tensor.reshape
_tolist = torch.Tensor.tolist
_float64 = torch.float64
_cpu = torch.device("cpu")
_isclose = math.isclose
_isnan = math.isnan
_equal = torch.equal
_is_grad_enabled = torch.is_grad_enabled
_no_grad = torch.no_grad
_enable_grad = torch.enable_grad
_autograd_grad = torch.autograd.grad
_gradcheck = torch.autograd.gradcheck
_Function = torch.autograd.Function
_FunctionMeta = type(_Function)
_TORCH_DIR = os.path.dirname(torch.__file__)
_CONTEXTLIB = contextlib.__file__  # its frames (a @contextmanager that returns, not yields) are not the student's


class AnswerError(AssertionError):
    """A student's answer is wrong; the message says how."""

    def _render_traceback_(self) -> list[str]:
        """IPython's hook for showing an error: the checker's sentence alone. The frames of the test that called the
        checker, and the checker's own, say nothing about the answer (an error raised in the student's own code is
        not an AnswerError, and keeps its traceback)."""
        from IPython import get_ipython  # here, not at import: the checkers work outside IPython

        shell = get_ipython()
        if shell is None:
            return [f"{type(self).__name__}: {self}"]
        return shell.InteractiveTB.get_exception_only(type(self), self)


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
    actual: list[float], expected: list[float], atol: float, rtol: float, equal_nan: bool = False
) -> tuple[int, float, float] | None:
    for index, (a, e) in enumerate(zip(actual, expected)):  # nan matches nothing, unless a test expects one there
        if equal_nan and _isnan(a) and _isnan(e):
            continue
        if _isnan(a) or not _isclose(a, e, rel_tol=rtol, abs_tol=atol):
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


def _require_tensor(value: Any, name: str) -> None:
    if _is_one_of(value, _PLAIN_TENSOR_TYPES):
        return
    if isinstance(value, torch.Tensor):
        raise AnswerError(
            f"{name} is {_describe_type(value)} (a torch.Tensor subclass), expected a plain tensor"
        )
    raise AnswerError(f"{name} is {_describe_type(value)}, expected a tensor")


def check_tensor(
    actual: Any,
    expected: torch.Tensor,
    name: str = "answer",
    *,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    check_dtype: bool = True,
    equal_nan: bool = False,
) -> None:
    """Check that ``actual`` is a tensor with ``expected``'s shape, dtype and values (a nan matches only where
    ``equal_nan`` and ``expected`` has one)."""
    if observations.active():
        return observe("value", name, encode(actual), atol=atol, rtol=rtol, check_dtype=check_dtype,
                       **({"equal_nan": True} if equal_nan else {}))
    problem = messages.compare(encode(actual), encode(expected, expected=True), name, atol=atol, rtol=rtol,
                               check_dtype=check_dtype, equal_nan=equal_nan)
    if problem:
        raise AnswerError(problem)


def check_answer(
    answer: Any,
    expected: Mapping[str, torch.Tensor],
    *,
    same_object: bool = False,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    check_dtype: bool = True,
    name: str = "answer",
) -> None:
    """Check an answer list item by item against named references, in order.

    ``expected`` maps a name used in messages (e.g. ``"x1"``) to its reference tensor.
    With ``same_object=True`` every item must be the reference tensor itself, not a copy.
    ``name`` is what the answer is called in messages.
    """
    names = [str(key) for key in expected] if type(expected) is dict else None  # the grader keeps an inline dict's keys
    answer = list(answer) if type(answer) is tuple else answer  # a tuple is as good a list of items
    if observations.active():  # identity is observed as behaviour by the test (an input changed in place)
        return observe("value", name, encode(answer), atol=atol, rtol=rtol, check_dtype=check_dtype,
                       **({"names": names} if names else {}))
    problem = messages.compare(encode(answer), encode(list(expected.values()), expected=True), name, atol=atol,
                               rtol=rtol, check_dtype=check_dtype, names=list(expected))
    if problem:
        raise AnswerError(problem)
    for position, (key, item) in enumerate(zip(expected, answer)):
        reference = expected[key]
        if not same_object or item is reference:
            continue
        twin = _matching_name(item, expected, key)
        if twin is not None:
            raise AnswerError(f"{name}[{position}] should be {key}; got {twin}")
        raise AnswerError(f"{name}[{position}] should be {key} itself; got a copy with the same values (append the "
                          "tensor you received, not a clone)")


def _matching_name(item: torch.Tensor, expected: Mapping[str, torch.Tensor], skip: str) -> str | None:
    """The name of another expected tensor that ``item`` is (by identity)."""
    return next((other for other, tensor in expected.items() if other != skip and item is tensor), None)


def check_names(actual: Iterable[Any], expected: Sequence[str], what: str) -> None:
    """Check a sequence of names (e.g. from ``named_parameters()``) against the expected order."""
    got = encode(list(actual) if isinstance(actual, Iterable) and not isinstance(actual, (str, bytes)) else actual)
    if observations.active():
        return observe("names", what, got)
    problem = messages.names_problem(got, encode(list(expected), expected=True), what)
    if problem:
        raise AnswerError(problem)


def check_parameter(module: torch.nn.Module, name: str, shape: Sequence[int]) -> None:
    """Check that ``module.<name>`` is a registered ``nn.Parameter`` of the given shape."""
    label = f"{type(module).__name__}.{name}"
    if not isinstance(module, torch.nn.Module):
        raise AnswerError(f"{label}: the module is {_describe_type(module)}, expected an nn.Module")
    value = getattr(module, name, messages.MISSING)
    found = encode(["nn.Parameter" if type(value) is torch.nn.Parameter else
                    messages.MISSING if value is messages.MISSING else _describe_type(value),
                    name in dict(module.named_parameters(recurse=False)),
                    list(_shape(value)) if isinstance(value, torch.Tensor) else None])
    if observations.active():
        return observe("parameter", label, found)
    problem = messages.parameter_problem(found, encode(["nn.Parameter", True, list(shape)], expected=True), label)
    if problem:
        raise AnswerError(problem)


def check_equal(actual: Any, expected: Any, what: str) -> None:
    """Check exact equality of plain Python values (strings, numbers, lists), showing both.

    A NumPy integer counts as the int it holds (``np.prod`` of a shape is an honest count)."""
    if observations.active():
        return observe("value", what, encode(actual))
    problem = messages.compare(encode(actual), encode(expected, expected=True), what)
    if problem:
        raise AnswerError(problem)


# Hooks are read from the modules' own dicts, by functions captured at import: an answer can set attributes on the
# model it is given (a ``named_modules`` that hides its modules once) but not change what these read.
_MODULE_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")
_HOOK_REGISTRIES = (dict, collections.OrderedDict)  # what torch keeps hooks in; anything else counts as a hook left
_vars = vars
_dict_get = dict.get
_dict_items = dict.items
_dict_keys = dict.keys


def _modules(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """``model``'s modules and their names, as ``named_modules`` gives them, read from each module's ``_modules``."""
    found, seen, stack = [], set(), [("", model)]
    while stack:
        name, module = stack.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        found.append((name, module))
        children = _dict_get(_vars(module), "_modules", {})
        children = _dict_items(children) if isinstance(children, dict) else ()
        stack.extend(reversed([(f"{name}.{child_name}" if name else child_name, child)
                               for child_name, child in children if child is not None]))
    return found


def _hook_ids(registries: Iterable[Any]) -> set[Any]:
    """The ids of the hooks in some hook registries; a registry that is not a plain dict counts as one hook."""
    ids: set[Any] = set()
    for registry in registries:
        ids.update(_dict_keys(registry) if type(registry) in _HOOK_REGISTRIES else {("a registry", id(registry))})
    return ids


def _module_hook_ids(module: torch.nn.Module) -> set[Any]:
    return _hook_ids(_dict_get(_vars(module), kind, {}) for kind in _MODULE_HOOKS)


def _global_hook_ids() -> set[Any]:
    return _hook_ids(getattr(torch.nn.modules.module, f"_global{kind}") for kind in _MODULE_HOOKS)


class check_no_hooks_left:  # noqa: N801 - used as a checker: ``with check_no_hooks_left(model, what): …``
    """On leaving its block without an error, check that no module of ``model`` holds a hook it did not hold on entering
    it, and that no hook for every module was added (hooks are told apart by their ids, not counted); ``what`` names
    the check in its message. Hooks a module held before the block (a student's own experiment) are not its concern."""

    def __init__(self, model: torch.nn.Module, what: str) -> None:
        self._model, self._what = model, what
        self._modules: list[tuple[str, torch.nn.Module, set[Any]]] = []
        self._global: set[Any] = set()

    def __enter__(self) -> check_no_hooks_left:
        self._modules = [(name, module, _module_hook_ids(module)) for name, module in _modules(self._model)]
        self._global = _global_hook_ids()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            left = [name or "<model>" for name, module, before in self._modules if _module_hook_ids(module) - before]
            check_equal(left + ["a global hook"] * len(_global_hook_ids() - self._global), [], self._what)


def _describe_input(name: str, value: Any) -> str:
    """How a sentence names one input of a call: "x of shape (1, 3), float64", "dim=1"."""
    if isinstance(value, torch.Tensor):
        return f"{name} of shape {_shape(value)}, {str(value.dtype).removeprefix('torch.')}"
    if isinstance(value, torch.nn.Module):
        return f"{name} (a {type(value).__qualname__})"
    if type(value) in (tuple, list) and any(isinstance(item, torch.Tensor) for item in value):
        items = ", ".join(f"a {str(item.dtype).removeprefix('torch.')} tensor of shape {_shape(item)}"
                          if isinstance(item, torch.Tensor) else _describe_type(item) for item in value)
        return f"{name}=({items},)" if type(value) is tuple and len(value) == 1 else (
            f"{name}=({items})" if type(value) is tuple else f"{name}=[{items}]")
    return f"{name}={messages.cut(repr(value), messages.SHOWN)}"


class calling:  # noqa: N801 - used as a checker: ``with calling("MyLinear(3, 1)(x)", x=x): output = model(x)``
    """Run the student's code in its block and say, as one sentence, an error it raises: ``what`` names the call,
    ``inputs`` (name=value) what it was given. ``with calling("MyLinear(3, 1)(x)", x=x): model(x)`` fails with
    "MyLinear(3, 1)(x), with x of shape (1, 3), float64, raised RuntimeError: mat1 and mat2 shapes cannot be
    multiplied (1x3 and 1x1) (line 5: return x @ self.weight)": the line is the deepest of the error's frames outside
    hooklab, torch and the cell the block is in (a test's own lines are never quoted).

    A checker's own AnswerError, and the template's NotImplementedError (an exercise not written yet, which the lab
    and the grader say as such), pass through. Graded by ``hooklab autograde``, the error is observed as it is raised,
    as :class:`check_no_model_run` observes what it refuses."""

    def __init__(self, what: str, **inputs: Any) -> None:
        self._what = what
        self._inputs = ", ".join(_describe_input(name, value) for name, value in inputs.items())
        self._cell = ""

    def __enter__(self) -> calling:
        self._cell = sys._getframe(1).f_code.co_filename  # the test's cell: its lines are not the student's
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if not isinstance(error, Exception) or isinstance(error, AnswerError) or _templates_error(error):
            return
        if isinstance(error, NameError) and _raised_in(error, self._cell):  # the answer's name is not defined (its
            return  # cell not run, or failed): the notebook's hint says which cell to run and fix (hooklab.hints)
        said = f": {error}" if str(error) else ""
        text = messages.cut(f"{type(error).__name__}{said}{_student_line(error, self._cell)}")
        where = f"{self._what}, with {self._inputs}," if self._inputs else self._what
        if observations.active():
            observe("raised", where, encode(text))
        raise AnswerError(f"{where} raised {text}") from None


def returning_a_future(hook: Callable[[Any, Any], Any], name: str) -> Callable[[Any, Any], Any]:
    """A DDP communication hook as DDP should call it: ``hook``, what it returns checked to be a Future before DDP
    reads it (given anything else, None included, DDP ends the process: torch 2.13 with gloo), failing with a
    sentence that names ``name`` instead."""
    future_type = torch._C.Future  # what Future.then() returns (torch.futures.Future subclasses it)

    def call(state, bucket):  # not annotated: DDP refuses a bucket annotated as anything but GradBucket
        future = hook(state, bucket)
        if not isinstance(future, future_type):
            raise AnswerError(f"{name} returned {_describe_type(future)}, expected a torch.futures.Future (the future "
                              "of the bucket's reduced gradients)")
        return future

    return call


# values of a larger tensor the grader gets (standard errors: std 0.5 %, a normal kurtosis 0.035)
DISTRIBUTION_SAMPLE = 20_000


def check_distribution(values: torch.Tensor, what: str, *, mean: float | None = None, mean_atol: float = 0.0,
                       std: float | None = None, std_rtol: float = 0.0, kurtosis: float | None = None,
                       kurtosis_atol: float = 0.0, bound: float | None = None) -> None:
    """Check that the entries of ``values`` look drawn from a distribution: mean within ``mean_atol`` of ``mean``,
    standard deviation within ``std_rtol`` of ``std``, kurtosis within ``kurtosis_atol`` of ``kurtosis``, every
    entry within ±``bound`` (each only if given). Graded by ``hooklab autograde``, the values are observed and the
    grader computes their statistics (``observations.distribution_problem``), with the reference test's targets."""
    _require_tensor(values, what)
    given = {"mean": mean, "mean_atol": mean_atol, "std": std, "std_rtol": std_rtol, "kurtosis": kurtosis,
             "kurtosis_atol": kurtosis_atol, "bound": bound}
    spec = {key: float(given[key]) for key in observations.DISTRIBUTION
            if given[key] is not None and given[key.split("_")[0]] is not None}
    # a sample of the values at places drawn from the grader's seed: enough for the statistics
    if observations.active():
        flat = _reshape(_detach(values), (-1,))
        if flat.numel() > DISTRIBUTION_SAMPLE:
            generator = torch.Generator().manual_seed(observations.next_seed())
            flat = flat[torch.randperm(flat.numel(), generator=generator)[:DISTRIBUTION_SAMPLE]]
        return observe("distribution", what, encode(flat), **spec)
    problem = observations.distribution_problem(_values(values), what, spec)
    if problem:
        raise AnswerError(problem)


def random_generator() -> torch.Generator:
    """A generator for hidden tests' fresh random inputs: seeded from the operating system, or in a test cell
    graded by ``hooklab autograde`` from the seed the grader sent for it and how many generators the cell made
    before (:func:`hooklab.observations.next_seed`), so that the reference run draws the same inputs and a
    run is drawn again from the seed the grader logged."""
    return torch.Generator().manual_seed(observations.next_seed())


# check_backward ------------------------------------------------------------------------------
# A backward puzzle: a Function whose forward is given and whose backward the student writes. The
# checker calls that backward itself (not through autograd's engine, which would quietly sum a
# gradient of the wrong shape down to the input's shape), checks what it returns input by input,
# and compares it with a gradient it computes independently: finite differences in float64 (the
# method of torch.autograd.gradcheck), or autograd's gradient of a reference PyTorch operation
# where finite differences cannot decide (ties) or are too imprecise (float32).

# Calls that compute a gradient with autograd rather than with a formula: the puzzles forbid them.
_AUTOGRAD_CALLS = frozenset({"grad", "backward", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "jacobian", "vhp",
                             "hvp"})
# What forward-mode autograd calls to attach and read tangents (torch.autograd.forward_ad, torch.func.jvp, jacfwd).
_FORWARD_MODE_CALLS = frozenset({"_make_dual", "_unpack_dual", "make_dual", "unpack_dual"})
_FORWARD_MODE_OPS = frozenset({"_make_dual", "_unpack_dual", "_fw_primal"})  # the operators they run


class _AutogradGuard(TorchFunctionMode):
    """Watches every torch call of the student's Function and notes the ones that use autograd:
    gradient recording turned on, autograd's own entry points, PyTorch's backward kernels.
    It only notes them, through ``note`` (an exception could be caught by the student's code); the
    checker fails the answer afterwards."""

    def __init__(self, note: Callable[[str], None]) -> None:
        super().__init__()
        self.note = note

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "") or ""
        kwargs = kwargs or {}
        if name == "_set_grad_enabled" or name == "set_grad_enabled":
            if (args[0] if args else next(iter(kwargs.values()), None)) is True:
                self.note("turns gradient recording on (as torch.enable_grad and torch.func do)")
        elif name in _AUTOGRAD_CALLS:
            self.note(f"calls autograd ({name})")
        elif name in _FORWARD_MODE_CALLS:
            self.note(f"uses forward-mode autograd ({name}: dual tensors, as torch.autograd.forward_ad and "
                      "torch.func.jvp make)")
        elif "backward" in name:
            self.note(f"calls PyTorch's own backward function ({name})")
        elif _is_grad_enabled():
            self.note(f"records a graph ({name} with gradient recording on)")
        result = func(*args, **kwargs)
        if any(isinstance(value, torch.Tensor) and value.dtype.is_complex for value in _tensors_of(result)):
            self.note(f"computes with complex numbers ({name}), as a derivative by the complex step does")
        return result


def _tensors_of(result: Any) -> tuple[Any, ...]:
    """A torch call's result as a tuple of what it returned (a tensor, or the items of a tuple or list)."""
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


# The mode above sees the calls made on the thread it was entered on, while it is not itself running. What a
# Function's method does on any thread of the process, in callbacks torch makes from inside an operator, or with
# torch's function handling switched off, torch's profiler still records: the second watch reads its events.
# The profiler is driven through torch's C functions, taken at import, and its events read through its C event type:
# torch.profiler.profile builds Python objects (FunctionEvent) from them, whose class code of the answer's could change.
_prepare_profiler = torch._C._autograd._prepare_profiler
_enable_profiler = torch._C._autograd._enable_profiler
_disable_profiler = torch._C._autograd._disable_profiler
_result_events = vars(torch._C._autograd._ProfilerResult)["events"]
_result_start_ns = vars(torch._C._autograd._ProfilerResult)["trace_start_ns"]
_event_name = vars(torch._C._autograd._KinetoEvent)["name"]
_event_sequence_nr = vars(torch._C._autograd._KinetoEvent)["sequence_nr"]
# torch.profiler.profile's own start and stop steps besides: the flag that makes torch.compile's code mark itself
_on_profiler_start, _on_profiler_stop = torch.autograd.profiler._run_on_profiler_start, \
    torch.autograd.profiler._run_on_profiler_stop
_record_function = torch.profiler.record_function
_time_ns = time.time_ns  # the clock of the profiler's session start
_get_num_threads = torch.get_num_threads
_set_num_threads = torch.set_num_threads
_STOPPED = "stops the profiler that watches it"
# CPU operators on every thread of the process (not only the one that starts the profiler); no shapes, memory,
# stacks, flops or modules
_EVERY_THREAD = (torch._C._profiler.ProfilerConfig(
    torch._C._profiler.ProfilerState.KINETO, False, False, False, False, False,
    torch._C._profiler._ExperimentalConfig(profile_all_threads=True), ""), {torch._C._profiler.ProfilerActivity.CPU})
_started: list[bool] = []  # whether the profiler has been started in this process
_forks = [0]  # processes this one has forked (multiprocessing, a DataLoader's workers): their work is unwatched
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_parent=lambda: _forks.__setitem__(0, _forks[0] + 1))
_fork_rng = torch.random.fork_rng
_COMPILED = "runs code compiled by torch.compile, which cannot be watched"
# what the profiler records of torch.compile: compiling (Dynamo), and running what it compiled
_COMPILING = ("dynamo", "entire_frame_compile", "TorchDynamo", "Torch-Compiled Region", "## Call CompiledFxGraph",
              "CompiledFunction")


def warm_up() -> None:
    """Start and stop the watch's profiler once: its first start takes about a second, which a process that forks
    kernels (the grader's kernel server) spends once for all of them."""
    _start_profiler()
    _stop_profiler()


def _start_profiler() -> None:
    """Start the watch's profiler. Its first start reads its log level from the environment, once: it is set for
    that start only (else the profiler logs each start and stop into the cell), and the environment left as it was."""
    quiet = not _started and "KINETO_LOG_LEVEL" not in os.environ
    if quiet:
        os.environ["KINETO_LOG_LEVEL"] = "6"
    try:
        _prepare_profiler(*_EVERY_THREAD)
        _on_profiler_start()
        _enable_profiler(*_EVERY_THREAD)
    finally:
        _started[:] = [True]
        if quiet:
            del os.environ["KINETO_LOG_LEVEL"]


def _stop_profiler() -> Any:
    """Stop the profiler; what it recorded (torch's C result)."""
    try:
        return _disable_profiler()
    finally:
        _on_profiler_stop()


class _Event(NamedTuple):
    """What the watch reads of one event the profiler recorded."""

    name: str
    sequence_nr: int


_FORKED = "starts a process (a DataLoader's workers, multiprocessing), which no watch sees"


class _Span:
    """What torch's profiler recorded over a span of a check: its events (None where the watched code stopped it or
    started a profiler of its own in its place), and whether this process forked in the span."""

    events: list[Any] | None = None
    forked: bool = False


@contextlib.contextmanager
def _profiled_span() -> Iterator[_Span]:
    """Torch's profiler on every thread of the process over the block, its events in the :class:`_Span` yielded once
    the block ends. One intra-op thread while watched: torch's own worker threads start with gradient recording on, so
    an op they run for an allowed function (conv_transpose1d in float64) would look like a graph being recorded."""
    span = _Span()
    threads = _get_num_threads()
    _set_num_threads(1)
    _start_profiler()  # a profiler the student left on stops recording
    mark = f"hooklab-watch-{secrets.token_hex(8)}"  # in the events of this profiler, not of one started later
    with _record_function(mark):
        pass
    begun = _time_ns()  # this profiler's session began before now; one the watched code starts, after
    forks = _forks[0]
    try:
        yield span
    finally:
        _set_num_threads(threads)
        try:
            result = _stop_profiler()
            events = [_Event(_event_name(event), _event_sequence_nr(event)) for event in _result_events(result)]
            own = _result_start_ns(result) <= begun and any(event.name == mark for event in events)
            span.events = events if own else None
        except Exception:  # stopped by the code it watched
            span.events = None
        span.forked = _forks[0] != forks


def _autograd_seen(events: Iterable[Any], nodes: Iterable[str] = ()) -> str | None:
    """What the profiler recorded that only automatic differentiation (or compiled code, which it cannot see into)
    does, or None; autograd's engine running one of ``nodes`` is the checker's own backward pass. The checker runs a
    Function's methods with gradient recording off, as autograd does."""
    events, nodes = list(events), set(nodes)
    if any(event.name.startswith(_COMPILING) for event in events):
        return _COMPILED
    for event in events:
        name = event.name
        if name.startswith("autograd::engine::evaluate_function"):
            if name.rpartition(": ")[2] in nodes:
                continue
            return f"runs autograd's engine ({name.rpartition(': ')[2]})"
        if not name.startswith("aten::"):
            continue
        op = name.removeprefix("aten::")
        if "backward" in op:
            return f"calls PyTorch's own backward function ({op})"
        if op in _FORWARD_MODE_OPS:
            return f"uses forward-mode autograd ({op})"
        if event.sequence_nr >= 0:
            return f"records a graph ({op} with gradient recording on)"
    return None


def _snapshot(result: Any) -> Any:
    """Copies of the tensors a backward returns, taken while it is watched: code it left running cannot write the
    right gradient into them later. Anything but a tensor, None, a plain number or a tuple or list of them is refused
    here, in the watch: the checker reads what backward returned after the watch ends, and reading an object of the
    answer's own class (a tuple with an ``__iter__`` of its own) would run its code unwatched."""
    if result is None or _is_one_of(result, PLAIN_SCALARS):
        return result
    if _is_one_of(result, _PLAIN_TENSOR_TYPES):
        return _clone(result)
    if _is_one_of(result, (tuple, list)):
        return type(result)(_snapshot(item) for item in result)
    raise AnswerError(f"backward returned {_describe_type(result)}: return a tensor, or a tuple of tensors and None, "
                      "one per input of forward")


def _guarded(function: type) -> tuple[type, Callable[[], tuple[str, ...]], Callable[[str], Any],
             tuple[list[Any], list[bool]]]:
    """A subclass of ``function`` whose forward, setup_context and backward run watched (the mode and the profiler),
    what the watches noted, and ``window(stage, nodes=())``: a context in which the profiler watches a whole span of
    the check (``apply``, with the hooks torch runs between the methods, such as saved-tensor hooks; a direct backward;
    a backward pass through autograd's engine, which runs the ``nodes`` named, with every hook the answer registered),
    the methods called in it watched by the mode alone. The notes are kept where the Function's code cannot reach
    them. Last, ``(returned, recording)``: graded, each call of backward fails where it leaves a mode entered, and while
    ``recording`` holds an item, appends to ``returned`` what it returned and the grad_outputs it was given, encoded as
    it returns, before any other code runs."""
    notes: list[str] = []
    running = ["forward"]
    windows = [0]  # profiler windows open (one profiler at a time: a method called in one is watched by it)

    def note(what: str) -> None:
        notes.append(f"{running[0]} {what}")

    guard = _AutogradGuard(note)

    @contextlib.contextmanager
    def profiled(stage: str, nodes: Iterable[str] = ()) -> Iterator[None]:
        windows[0] += 1
        try:
            with _profiled_span() as span:
                yield
        finally:
            windows[0] -= 1
            seen = _autograd_seen(span.events, nodes) if span.events is not None else _STOPPED
            if span.forked:
                seen = seen or _FORKED
            running[0] = stage
            if seen == _COMPILED:  # which explains whatever the mode saw compiling do
                notes.insert(0, f"{stage} {seen}")
            elif seen:
                note(seen)

    returned: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    recording: list[bool] = []  # non-empty while a direct call of backward is to be recorded in ``returned``

    def watched(method: Callable, name: str) -> staticmethod:
        def run(*args: Any) -> Any:
            running[0] = name
            # what it draws leaves the test's own draws as they were (_fork_rng)
            with contextlib.nullcontext() if windows[0] else profiled(name), guard, _fork_rng(devices=[]):
                result = method(*args)
                if name != "backward":
                    return result
                if observations.active():
                    _no_mode_left(f"{function.__name__}.backward")
                if recording:  # a direct call of the check's own (direct())
                    items = list(result) if type(result) is tuple or type(result) is list else [result]
                    returned.append(([encode(item) for item in items], encode(list(args[1:]))))
                return _snapshot(result)
        return staticmethod(run)

    # Making the watched subclass below runs the classes' own __init_subclass__ and metaclass, before any watch
    if not all(type(klass) is type or type(klass) is _FunctionMeta for klass in function.__mro__) or any(
            "__init_subclass__" in _vars(klass) for klass in function.__mro__ if klass not in _Function.__mro__):
        raise AnswerError(f"{function.__name__} has a metaclass or an __init_subclass__ of its own, which run where no "
                          "watch sees them: define forward, setup_context and backward as plain static methods of a "
                          "plain Function")
    overridden = [name for name in ("apply", "__call__")
                  if inspect.getattr_static(function, name, None) is not inspect.getattr_static(_Function, name, None)]
    if overridden:
        raise AnswerError(f"{function.__name__} defines its own {' and '.join(overridden)}, which the check would run "
                          "unwatched: leave apply as torch.autograd.Function has it, and write forward, setup_context "
                          "and backward")
    own = _own_methods(function)
    # backward, or its alias vjp (autograd takes whichever the class defines); the subclass defines backward only
    backward = own["backward"] if own["backward"] is not _Function.backward else own["vjp"]
    methods = {"forward": watched(own["forward"], "forward"), "backward": watched(backward, "backward"),
               "vjp": inspect.getattr_static(_Function, "vjp")}
    if own["setup_context"] is not _Function.setup_context:
        methods["setup_context"] = watched(own["setup_context"], "setup_context")
    checked = type(function.__name__, (function,), methods)
    return checked, lambda: tuple(notes), profiled, (returned, recording)


APPLY_STAGE = "apply (forward, setup_context, or a hook torch runs with them)"
ENGINE_STAGE = "backward through autograd's engine (with any hook it registered)"


def _engine_nodes(checked: type) -> tuple[str, ...]:
    """The nodes autograd's engine runs in a backward pass through ``checked`` from fresh leaves: its own backward
    node, and the accumulation of each leaf's gradient."""
    return (checked._backward_cls.__name__, "torch::autograd::AccumulateGrad")


def _autograd_used(call: str, name: str, notes: tuple[str, ...]) -> AnswerError:
    return AnswerError(
        f"{call}: {name}.{notes[0]}. Write the gradient as a formula of tensor operations: "
        "no autograd, torch.func or PyTorch backward functions inside the Function"
    )


_METHODS = ("forward", "setup_context", "backward", "vjp")
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType)


def _own_methods(function: type) -> dict[str, Callable]:
    """The functions behind ``function``'s forward, setup_context, backward and vjp, read without running any code of
    the answer's: each must be a static method of a plain function (a descriptor or a callable object of the
    answer's own would run its code where no watch sees it, as the checker reads the class)."""
    found = {}
    for name in _METHODS:
        method = inspect.getattr_static(function, name)
        inner = method.__func__ if _is_one_of(method, (staticmethod,)) else method
        if not _is_one_of(inner, _FUNCTION_TYPES):
            raise AnswerError(f"{function.__name__}.{name} is {_describe_type(method)}: define forward, setup_context "
                              "and backward as plain static methods (@staticmethod def …)")
        found[name] = inner
    return found


def _input_names(function: type, count: int) -> list[str]:
    """The names of forward's parameters, for messages ("grad of input x"), read from its code object (a signature
    of the answer's own, ``__signature__`` or ``__wrapped__``, would run its code)."""
    try:
        forward = _own_methods(function)["forward"]
    except AnswerError:
        forward = None
    parameters = (list(forward.__code__.co_varnames[:forward.__code__.co_argcount])
                  if _is_one_of(forward, (types.FunctionType,)) else [])
    if (inspect.getattr_static(function, "setup_context") is inspect.getattr_static(_Function, "setup_context")
        and parameters[:1] == ["ctx"]):
        parameters = parameters[1:]  # the older forward(ctx, ...) style
    names = parameters[:count]
    return names + [f"input {i}" for i in range(len(names), count)]


def _describe_argument(name: str, value: Any) -> str:
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{name}: {_shape(value)} {dtype}"
    return f"{name}={value!r}"


def _raised_in(error: BaseException, filename: str) -> bool:
    """Whether ``error`` was raised by the code of ``filename`` itself (its traceback's last frame)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename == filename


def _templates_error(error: BaseException) -> bool:
    """Whether ``error`` is an exercise's template error: a NotImplementedError raised by a line of the student's own
    code, not torch's (a Module without forward, a Function without forward or backward), which calling says."""
    if type(error) is not NotImplementedError:
        return False
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and not tb.tb_frame.f_code.co_filename.startswith(_TORCH_DIR)


def _student_line(error: BaseException, test: str = "") -> str:
    """' (line N: code)' for the deepest frame of the error outside hooklab, torch and the file ``test`` (a test
    cell's, whose lines are not the student's)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if f.filename not in (__file__, test, _CONTEXTLIB) and not f.filename.startswith(_TORCH_DIR)]
    if not frames:
        return ""
    frame = frames[-1]
    code = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    return f" (line {frame.lineno}: {code})" if code else f" (line {frame.lineno})"


def _as_outputs(output: Any) -> tuple[torch.Tensor, ...]:
    return tuple(output) if isinstance(output, (tuple, list)) else (output,)


def _differentiable(tensor: Any) -> bool:
    return isinstance(tensor, torch.Tensor) and (tensor.is_floating_point() or tensor.is_complex())


def _fresh_leaves(args: tuple[Any, ...]) -> list[Any]:
    """Copies of a Function's arguments for one more call: each tensor a new leaf, requiring grad if differentiable."""
    return [a.detach().clone().requires_grad_(_differentiable(a)) if isinstance(a, torch.Tensor) else a for a in args]


def _scattered(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of ``tensor`` that is not contiguous in memory (when it has more than one element), as autograd's engine
    hands backward the gradient of an output used through a transpose or a slice: its dimensions laid out in reverse
    order where two have more than one element (a view that merges them fails), else, along its longest dimension,
    every other element of a buffer twice as long."""
    if sum(size > 1 for size in tensor.shape) >= 2:
        order = list(reversed(range(tensor.dim())))
        return tensor.permute(order).contiguous().permute(order)
    if tensor.numel() > 1:
        dim = max(range(tensor.dim()), key=lambda d: tensor.shape[d])
        doubled = list(tensor.shape)
        doubled[dim] *= 2
        every_other = tuple(slice(None, None, 2 if d == dim else 1) for d in range(tensor.dim()))
        return torch.empty(doubled, dtype=tensor.dtype, device=tensor.device)[every_other].copy_(tensor)
    return tensor.clone()


def _scattered_leaves(args: tuple[Any, ...]) -> list[Any]:
    """As :func:`_fresh_leaves`, each tensor laid out as :func:`_scattered` lays it out."""
    return [_scattered(a.detach()).requires_grad_(_differentiable(a)) if isinstance(a, torch.Tensor) else a
            for a in args]


def _other_values(args: Sequence[Any], generator: torch.Generator) -> list[Any]:
    """``args`` with each floating-point tensor's values in reverse order along every dimension, each scaled by a
    factor drawn from ``generator`` between 0.75 and 1.25 (values of the same kind and sign that no earlier call
    had: a graph made from them differs from one made from ``args``); the other arguments as they are."""
    return [a.detach().flip(list(range(a.dim())))
            * (0.75 + 0.5 * torch.rand(a.shape, generator=generator, dtype=_float64)).to(a.dtype)
            if _differentiable(a) else a for a in args]


def _needing_subsets(positions: list[int]) -> list[tuple[int, ...]]:
    """Every non-empty set of the differentiable inputs' positions, all of them first: the inputs that need a gradient
    in one use of a Function (the others frozen, as a frozen parameter is)."""
    return [needing for size in range(len(positions), 0, -1) for needing in itertools.combinations(positions, size)]


def _leaves_needing(values: Sequence[Any], needing: tuple[int, ...], scattered: bool) -> list[Any]:
    """As :func:`_fresh_leaves`, only the arguments at ``needing`` requiring grad; laid out as :func:`_scattered` lays
    them out where ``scattered``."""
    return [(_scattered(a.detach()) if scattered else a.detach().clone()).requires_grad_(i in needing)
            if isinstance(a, torch.Tensor) else a for i, a in enumerate(values)]


def _in_model_leaves(values: Sequence[Any], positions: list[int]) -> list[tuple[tuple[int, ...], list[Any]]]:
    """For each set of inputs that need a gradient (:func:`_needing_subsets`), the leaves of a pass run as in a model,
    laid out contiguously and not, in turn."""
    return [(needing, _leaves_needing(values, needing, scattered=bool(index % 2)))
            for index, needing in enumerate(_needing_subsets(positions))]


def _in_use(names: list[str], positions: list[int], needing: tuple[int, ...]) -> str:
    """How a Function is used in a pass of :func:`check_backward` run as in a model: the class itself, on other values,
    its graph made while another was waiting for its backward, grad_output not contiguous, some inputs frozen."""
    frozen = [names[i] for i in positions if i not in needing]
    said = f"; {' and '.join(frozen)} needing no gradient, as a frozen parameter: see ctx.needs_input_grad"
    return f"through autograd's engine as in a model (other values, grad_output not contiguous{said if frozen else ''})"


def _in_a_model(function: type) -> type:
    """The class a pass run as in a model applies: the answer's own (a backward cannot tell it from a model's use by
    its ctx's class). ``Function.apply`` reads forward's signature, which follows ``__wrapped__``: through plain
    functions only (no ``__signature__``, which would run or choose what it reads)."""
    forward = _own_methods(function)["forward"]
    while _is_one_of(forward, (types.FunctionType,)) and "__signature__" not in _vars(forward):
        forward = _vars(forward).get("__wrapped__")
        if forward is None:
            return function
    raise AnswerError(f"{function.__name__}.forward carries a __signature__ or wraps something other than a plain "
                      "function: write forward as a plain static method")


def _changed_input(call: str, name: str, input_name: str) -> str:
    return f"{call}: {name}.backward changed input {input_name} in place ({INPUTS_KEPT})"


def _tracked(outputs: Iterable[Any], grad_outputs: Iterable[Any]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(output, its grad_output) for each output autograd tracks that is given one: what a backward pass starts from."""
    return [(o, g) for o, g in zip(outputs, grad_outputs) if g is not None and isinstance(o, torch.Tensor)
            and o.requires_grad]


def _raised(error: Exception) -> str:
    """What the student's code raised, with its line: "IndexError: index 7 is out of bounds … (line 3: …)"."""
    said = f": {error}" if str(error) else ""
    return f"{type(error).__name__}{said}{_student_line(error)}"


def _changed_grad_output(call: str, name: str) -> str:
    return f"{call}: {name}.backward changed grad_output in place ({GRAD_OUTPUT_KEPT})"


def _compare_gradient(label: str, got: torch.Tensor, want: torch.Tensor, atol: float, rtol: float) -> None:
    problem = messages.compare(encode(got), encode(want, expected=True), label, atol=atol, rtol=rtol,
                               check_dtype=False)
    if problem:
        raise AnswerError(problem)


def _numeric_gradients(function: type, args: list[Any], positions: list[int], grad_outputs: list[torch.Tensor | None],
                       eps: float = 1e-6) -> list[torch.Tensor]:
    """d/d(input) of sum(output · grad_output) by central differences of the given forward (through ``apply``,
    which gives a forward of the older ``forward(ctx, ...)`` style its ctx)."""

    def value() -> float:
        outputs = _as_outputs(function.apply(*args))
        total = 0.0
        for output, weight in zip(outputs, grad_outputs):
            if weight is not None:
                total += float((output.to(_float64) * weight.to(_float64)).sum())
        return total

    gradients = []
    with _no_grad():
        for position in positions:
            tensor = args[position]
            flat = tensor.view(-1)
            gradient = torch.zeros(tensor.numel(), dtype=_float64)
            for i in range(tensor.numel()):
                kept = float(flat[i])
                flat[i] = kept + eps
                plus = value()
                flat[i] = kept - eps
                minus = value()
                flat[i] = kept
                gradient[i] = (plus - minus) / (2 * eps)
            gradients.append(gradient.view(_shape(tensor)))
    return gradients


GRAD_OUTPUT_KEPT = "leave it as it is: it may be the very tensor the caller passed to backward()"
INPUTS_KEPT = "leave the inputs and ctx's saved tensors as they were: they are the caller's tensors"
SAVED_KEPT = "backward may run again with retain_graph=True: leave ctx's saved tensors as they were"
# the first backward pass through autograd's engine runs on inputs and grad_outputs laid out so (_scattered)
SCATTERED = "inputs and grad_output not contiguous in memory, as for tensors used through a transpose"
BETWEEN = "another graph of the Function made before it ran (keep what backward needs on ctx: it belongs to one call)"


def check_backward(
    function: Any,
    *args: Any,
    reference: Callable[..., Any] | None = None,
    generator: torch.Generator | None = None,
    atol: float | None = None,
    rtol: float | None = None,
) -> None:
    """Check the ``backward`` of a ``torch.autograd.Function`` on one set of arguments.

    ``args`` are what ``function.apply`` receives; every floating-point tensor among them is an
    input whose gradient is checked. ``backward`` is called with random output gradients (from
    ``generator``, or a fixed seed), must leave them as they are and return one gradient per argument:
    a tensor of that input's shape and dtype, or ``None`` for arguments that are not floating-point tensors.

    The expected gradient is autograd's gradient of ``reference`` (the same operation written with
    PyTorch, e.g. ``lambda x, y: x * y``) when one is given: right at ties, and for float32.
    Otherwise it is computed by finite differences of ``function.forward``, which needs float64
    inputs at which the operation is smooth; ``torch.autograd.gradcheck`` then runs as well.

    It then runs the Function through autograd's engine twice, the graph kept, on inputs and output
    gradients laid out as through a transpose (the second pass adds the same gradients, and neither
    changes a ``grad_output``), and once per floating-point input with that input needing no gradient
    (the others' gradients stay right).

    ``backward`` must compute gradients with tensor operations: a Function whose methods record
    a graph, call autograd or ``torch.func``, or call PyTorch's own backward kernels fails.
    """
    if not (isinstance(function, type) and issubclass(function, _Function)):
        raise AnswerError(f"{_describe_type(function)} was given, expected a torch.autograd.Function subclass")
    if observations.active():
        return _observe_backward(function, args, generator, atol, rtol)
    name = function.__name__
    names = _input_names(function, len(args))
    inputs = _fresh_leaves(args)
    positions = [i for i, arg in enumerate(inputs) if _differentiable(arg)]
    call = f"{name}.apply({', '.join(_describe_argument(n, a) for n, a in zip(names, args))})"
    checked, notes, window, _ = _guarded(function)

    def failing(stage: str, error: Exception) -> AnswerError:
        if type(error) is NotImplementedError:  # the template's
            return AnswerError(messages.not_written(stage))
        return AnswerError(f"{call}: {stage} raised {_raised(error)}")

    try:
        with window(APPLY_STAGE):
            output = checked.apply(*inputs)
    except Exception as error:  # the student's code: say what it raised, without hooklab's frames
        if notes():
            raise _autograd_used(call, name, notes()) from None
        raise failing(f"{name}.forward", error) from None
    outputs = _as_outputs(output)
    if reference is not None:
        with _no_grad():
            expected_outputs = _as_outputs(reference(*[a.detach() if isinstance(a, torch.Tensor) else a for a in args]))
        if len(outputs) != len(expected_outputs):
            raise AnswerError(f"{call} returned {len(outputs)} outputs, expected {len(expected_outputs)}: leave "
                              "forward as it was given")
        for index, (got, want) in enumerate(zip(outputs, expected_outputs)):
            label = f"output {index} of {call}" if len(outputs) > 1 else f"the output of {call}"
            check_tensor(got, want, f"{label} (leave forward as it was given)", atol=1e-5, rtol=1e-4)
    node = next((o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn is not None), None)
    if node is None:
        raise AnswerError(f"{call} returned no output that autograd tracks: call the Function through .apply and leave "
                          "forward as it was given")

    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    grad_outputs = [torch.randn(_shape(o), generator=generator, dtype=o.dtype) if _differentiable(o) else None
                    for o in outputs]
    given = [g.clone() if g is not None else torch.zeros_like(o) for g, o in zip(grad_outputs, outputs)]
    try:
        with window("backward"), _no_grad():
            returned = checked.backward(node, *given)
    except Exception as error:
        if notes():  # what it tried matters more than how it failed
            raise _autograd_used(call, name, notes()) from None
        raise failing(f"{name}.backward", error) from None
    if notes():
        raise _autograd_used(call, name, notes())
    for kept, original in zip(given, grad_outputs):
        if original is not None and not (kept.shape == original.shape and _equal(kept, original)):
            raise AnswerError(_changed_grad_output(call, name))

    gradients = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    if len(gradients) != len(args):
        listed = ", ".join(names)
        none_for = [n for n, a in zip(names, args) if not _differentiable(a)]
        extra = f", None for {', '.join(none_for)}" if none_for else ""
        raise AnswerError(
            f"{call}: {name}.backward returned {len(gradients)} gradient{'s' if len(gradients) != 1 else ''}, "
            f"expected {len(args)}: one per input of forward ({listed}){extra}"
        )
    for arg_name, arg, gradient in zip(names, args, gradients):
        if not _differentiable(arg):
            if gradient is not None:
                raise AnswerError(f"{call}: the gradient for {arg_name} should be None ({arg_name} is not a "
                                  f"floating-point tensor); got {_describe_type(gradient)}")
            continue
        if gradient is None:
            raise AnswerError(f"{call}: the gradient of input {arg_name} is None, expected a tensor of shape "
                              f"{_shape(arg)}")
        _require_tensor(gradient, f"{call}: the gradient of input {arg_name}")
        if _shape(gradient) != _shape(arg):  # the shape of the input itself
            raise AnswerError(messages.wrong_shape(f"{call}: grad of input {arg_name}", _shape(arg), _shape(gradient)))
        if gradient.dtype != arg.dtype:
            raise AnswerError(f"{call}: the gradient of input {arg_name} has dtype {gradient.dtype}, expected "
                              f"{arg.dtype} (the dtype of {arg_name})")

    def expected_for(values: Sequence[Any]) -> list[torch.Tensor]:
        """The gradient of each differentiable input at ``values`` for ``grad_outputs``: the reference's or numeric."""
        if reference is None:
            numeric_args = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in values]
            return _numeric_gradients(function, numeric_args, positions, grad_outputs)
        leaves = [a.detach().clone().requires_grad_() if i in positions else a for i, a in enumerate(values)]
        with _enable_grad():
            pairs = _tracked(_as_outputs(reference(*leaves)), grad_outputs)
            found = _autograd_grad([o for o, _ in pairs], [leaves[i] for i in positions], [g for _, g in pairs],
                                   allow_unused=True)
        return [torch.zeros_like(leaves[i]) if e is None else e for i, e in zip(positions, found)]

    if reference is not None:
        single = all(args[i].dtype == torch.float32 for i in positions)
        default_atol, default_rtol = (1e-4, 1e-3) if single else (1e-7, 1e-6)
    else:
        not_double = [names[i] for i in positions if args[i].dtype != _float64]
        if not_double:
            raise AnswerError(f"check_backward without a reference needs float64 inputs; "
                              f"{', '.join(not_double)} is not")
        default_atol, default_rtol = 1e-5, 1e-4
    tolerance = (default_atol if atol is None else atol, default_rtol if rtol is None else rtol)
    expected = expected_for(args)
    for position, want in zip(positions, expected):
        _compare_gradient(f"{call}: grad of input {names[position]}", gradients[position], want, *tolerance)

    if reference is None:  # the same backward, through autograd's engine
        try:
            passed = _gradcheck(checked.apply, tuple(inputs), raise_exception=False, fast_mode=True)
        except Exception as error:
            raise failing("torch.autograd.gradcheck", error) from None
        if not passed:
            raise AnswerError(
                f"{call}: each gradient is right when backward is called once on fresh tensors, but "
                "torch.autograd.gradcheck fails through autograd's engine: does backward change grad_output or a saved "
                "tensor in place, return a view of an input, or keep state between calls?"
            )

    def kept_as_given(given_seeds: list[torch.Tensor], given_pairs: list[Any], leaves: list[Any], values: Sequence[Any]
                      ) -> None:
        if not all(torch.equal(seed, g) for seed, (_, g) in zip(given_seeds, given_pairs)):
            raise AnswerError(_changed_grad_output(call, name))  # as after the direct call, and as graded
        changed = [names[i] for i, (leaf, value) in enumerate(zip(leaves, values))
                   if isinstance(value, torch.Tensor) and not _equal(leaf.detach(), value)]
        if changed:
            raise AnswerError(_changed_input(call, name, changed[0]))

    engine_inputs = _scattered_leaves(args)
    in_model = _in_a_model(function)
    in_use_values = _other_values(args, generator)
    in_use_leaves = _in_model_leaves(in_use_values, positions)
    try:
        with window(APPLY_STAGE):
            pairs = _tracked(_as_outputs(checked.apply(*engine_inputs)), grad_outputs)
            # made before the first graph's backward runs: a backward must read what its own forward saved
            with _fork_rng(devices=[]):  # what it draws leaves the test's own draws as they were
                in_use = [(needing, leaves, _tracked(_as_outputs(in_model.apply(*leaves)), grad_outputs))
                          for needing, leaves in in_use_leaves]
    except Exception as error:
        if notes():
            raise _autograd_used(call, name, notes()) from None
        raise failing(f"{name}.forward", error) from None
    if notes():
        raise _autograd_used(call, name, notes())

    def twice_through_the_engine(stage: str, klass: type, given: list[tuple[Any, Any]], leaves: list[Any],
                                 values: Sequence[Any], wants: list[torch.Tensor], needing: Iterable[int]) -> None:
        """Backward through the engine from ``given``'s outputs, the graph kept, grad_outputs not contiguous, then
        again with contiguous ones: the leaves' .grad right, then doubled; grad_outputs and inputs left alone."""
        needing = list(needing)
        first: list[torch.Tensor] = []
        for again, seeds in enumerate(([_scattered(g) for _, g in given], [g.clone() for _, g in given])):
            try:
                with window(ENGINE_STAGE, _engine_nodes(klass)), _fork_rng(devices=[]):
                    torch.autograd.backward([o for o, _ in given], seeds, retain_graph=not again)
            except Exception as error:
                if notes():
                    raise _autograd_used(call, name, notes()) from None
                said = f"a second backward {stage} ({SAVED_KEPT})" if again else f"backward {stage}"
                raise failing(said, error) from None
            if notes():
                raise _autograd_used(call, name, notes())
            kept_as_given(seeds, given, leaves, values)
            for position, want in zip(positions, wants):
                if position not in needing:
                    continue
                label = f"{call}: {names[position]}.grad {'after a second backward ' if again else ''}{stage}"
                gradient = leaves[position].grad
                if gradient is None:
                    raise AnswerError(f"{label} is None, expected a tensor of shape {_shape(args[position])}")
                if not again:
                    _compare_gradient(label, gradient, want, *tolerance)
                    first.append(gradient.clone())
                elif not _same_values(gradient, 2 * first[needing.index(position)], 1e-6, 1e-5):
                    raise AnswerError(f"{label}, the graph kept, does not add the same gradients again ({SAVED_KEPT})")

    twice_through_the_engine(f"through autograd's engine ({SCATTERED}), {BETWEEN}", checked, pairs, engine_inputs,
                             args, expected, positions)
    expected_in_use = expected_for(in_use_values)
    for needing, leaves, in_use_pairs in reversed(in_use):
        twice_through_the_engine(_in_use(names, positions, needing), in_model, in_use_pairs, leaves, in_use_values,
                                 expected_in_use, needing)


# what a backward pass through autograd's engine observes: the leaves' .grad, the grad_outputs given, the inputs
_Seen = tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]


def _no_mode_left(stage: str) -> None:
    """Fail the check where a torch mode the answer entered is still entered once ``stage`` returned: it could change
    what the checker reads (a dispatch mode sees every copy the checker takes)."""
    mode = observations.mode_entered()
    if mode:
        raise AnswerError(f"{stage} left a torch mode entered ({mode}): exit every mode you enter before it returns")


def _observe_backward(function: type, args: tuple[Any, ...], generator: torch.Generator | None,
                      atol: float | None, rtol: float | None) -> None:
    """:func:`check_backward` graded by ``hooklab autograde``: observe what the Function's forward returns, what
    its backward returns for random output gradients, and the inputs' ``.grad`` through autograd's engine. In
    float64 the grader compares gradients more tightly than finite differences can reach; using autograd
    inside the Function still fails here, in the kernel (a rule about method, not value)."""
    name = function.__name__
    names = _input_names(function, len(args))
    call = f"{name}.apply({', '.join(_describe_argument(n, a) for n, a in zip(names, args))})"
    double = all(a.dtype == _float64 for a in args if _differentiable(a))
    tolerance = {"atol": (1e-12 if double else 1e-4) if atol is None else atol,
                 "rtol": (1e-10 if double else 1e-3) if rtol is None else rtol}
    checked, notes, window, record = _guarded(function)

    def attempt(stage: str, run: Callable[[], Any]) -> tuple[bool, Any]:
        try:
            result = run()
        except AnswerError:  # the checker's own sentence (a mode left entered, a value backward may not return)
            raise
        except Exception as error:  # the student's code: what it raised is the observation
            if notes():
                raise _autograd_used(call, name, notes()) from None
            observe("raised", f"{call}: {stage}", encode(_raised(error)))
            return False, None
        if notes():
            raise _autograd_used(call, name, notes())
        return True, result

    inputs = _fresh_leaves(args)
    # Every value observed below is encoded inside the window it was made in (bytes, a copy no code can reach):
    # code of the answer's that runs as a window closes (torch's profiler calls Python as it reads its events) finds
    # nothing of the check's left to write into; a value read while a mode of the answer's is entered is not read.
    def apply() -> tuple[Any, dict[str, Any]]:
        with window(APPLY_STAGE):
            output = checked.apply(*inputs)
            _no_mode_left(f"{call}: {name}.apply")
            with _no_grad():
                return output, encode(list(_as_outputs(output)))

    ran, applied = attempt(f"{name}.forward", apply)
    if not ran:
        return
    output, seen_output = applied
    outputs = _as_outputs(output)
    observe("value", f"the output of {call} (leave forward as it was given)", seen_output, atol=1e-5, rtol=1e-4)
    node = next((o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn is not None), None)
    if node is None:
        raise AnswerError(f"{call} returned no output that autograd tracks: call the Function through .apply and leave "
                          "forward as it was given")
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    grad_outputs = [torch.randn(_shape(o), generator=generator, dtype=o.dtype) if _differentiable(o) else None
                    for o in outputs]

    given = [g.clone() if g is not None else torch.zeros_like(o) for g, o in zip(grad_outputs, outputs)]

    def direct() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        returned, recording = record
        returned.clear()
        recording.append(True)
        try:
            with window("backward"), _no_grad():
                checked.backward(node, *given)
        finally:
            recording.clear()
        return returned[0]  # encoded as backward returned

    ran, backward = attempt(f"{name}.backward", direct)
    if not ran:
        return
    gradients, seen_given = backward
    observe("value", f"{call}: the grad_output {name}.backward was given, once it returned ({GRAD_OUTPUT_KEPT})",
            seen_given, says=_changed_grad_output(call, name))
    observe("value", f"{call}: how many gradients {name}.backward returns (one per input of forward)",
            encode(len(gradients)))
    for input_name, gradient in zip(names, gradients):
        observe("value", f"{call}: grad of input {input_name}", gradient, **tolerance)
    engine_inputs = _scattered_leaves(args)
    positions = [i for i, a in enumerate(args) if _differentiable(a)]
    in_model = _in_a_model(function)
    in_use_leaves = _in_model_leaves(_other_values(args, generator), positions)
    in_use: list[tuple[tuple[int, ...], list[Any], list[tuple[Any, Any]]]] = []
    pairs: list[tuple[Any, Any]] = []

    def engine_pass(leaves: list[Any], given: list[tuple[Any, Any]], seeds: list[torch.Tensor], klass: type,
                    **options: Any) -> _Seen:
        """One backward pass from ``given``'s outputs: the leaves' .grad, the seeds and the tensor inputs, encoded."""
        with window(ENGINE_STAGE, _engine_nodes(klass)), _fork_rng(devices=[]):
            torch.autograd.backward([o for o, _ in given], seeds, **options)
            _no_mode_left(f"{call}: a backward pass through autograd's engine")
            with _no_grad():
                return ([encode(_grad_of(a) if isinstance(a, torch.Tensor) and _differentiable(a) else None)
                         for a in leaves], encode(seeds),
                        [encode(a.detach() if isinstance(a, torch.Tensor) else None) for a in leaves])

    def apply_all() -> None:
        with window(APPLY_STAGE):
            pairs.extend(_tracked(_as_outputs(checked.apply(*engine_inputs)), grad_outputs))
            # made before the first graph's backward runs: a backward must read what its own forward saved
            with _fork_rng(devices=[]):
                in_use.extend((needing, leaves, _tracked(_as_outputs(in_model.apply(*leaves)), grad_outputs))
                              for needing, leaves in in_use_leaves)

    def observe_pass(seen: _Seen, stage: str, gradient_label: str, needing: Iterable[int]) -> None:
        gradients, seen_seeds, seen_inputs = seen
        observe("value", f"{call}: the grad_output {name}.backward was given {stage}, once it returned "
                f"({GRAD_OUTPUT_KEPT})", seen_seeds, says=_changed_grad_output(call, name))
        for input_name, value, arg in zip(names, seen_inputs, args):
            if isinstance(arg, torch.Tensor):
                observe("value", f"{call}: input {input_name} once {name}.backward returned {stage} ({INPUTS_KEPT})",
                        value, says=_changed_input(call, name, input_name))
        for position in needing:
            observe("value", gradient_label.format(names[position]), gradients[position], **tolerance)

    def twice_through_the_engine(stage: str, klass: type, given: list[tuple[Any, Any]], leaves: list[Any],
                                 needing: Iterable[int]) -> None:
        """As check_backward's: the graph kept, grad_outputs not contiguous, then again with contiguous ones."""
        ran, seen = attempt(f"backward {stage}", lambda: engine_pass(
            leaves, given, [_scattered(g) for _, g in given], klass, retain_graph=True))
        if not ran:
            return
        observe_pass(seen, stage, f"{call}: {{}}.grad {stage}", needing)
        again = f"in a second backward {stage}, the graph kept"
        ran, seen = attempt(f"a second backward {stage} ({SAVED_KEPT})", lambda: engine_pass(
            leaves, given, [g.clone() for _, g in given], klass))
        if ran:
            observe_pass(seen, again, f"{call}: {{}}.grad after a second backward {stage}, which adds the same "
                         f"gradients ({SAVED_KEPT})", needing)

    ran, _ = attempt(f"{name}.forward", apply_all)
    if not ran:
        return
    twice_through_the_engine(f"through autograd's engine ({SCATTERED}), {BETWEEN}", checked, pairs, engine_inputs,
                             positions)
    for needing, leaves, in_use_pairs in reversed(in_use):
        twice_through_the_engine(_in_use(names, positions, needing), in_model, in_use_pairs, leaves, needing)


# check_no_model_run ---------------------------------------------------------------------------
# A method rule: an answer that must *predict* what a model does (which hooks fire, how often) may not run one. A
# function mode cannot enforce it: it is off while its own handler runs, and code called back from inside an operator
# (Tensor.map_ with a Python function, a hook) or run on another thread is not under it. The watch below is torch's
# profiler on every thread over the whole call, with a dispatch mode and a global module hook on the calling thread.

# aten operators that run a layer of a model: matrix products and convolutions (as the profiler and a dispatch mode
# name them, composite ones included)
_MODEL_OPS = frozenset({
    "linear", "bilinear", "matmul", "mm", "addmm", "_addmm_activation", "bmm", "baddbmm", "addbmm", "mv", "addmv",
    "dot", "vdot", "einsum", "tensordot", "chain_matmul", "linalg_multi_dot", "_int_mm", "_scaled_mm",
    "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "mkldnn_convolution", "_slow_conv2d_forward", "scaled_dot_product_attention",
})
_pop_dispatch_mode = torch.utils._python_dispatch._pop_mode
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._len_torch_function_stack
_current_dispatch_mode = torch.utils._python_dispatch._get_current_dispatch_mode
_module_globals = vars(torch.nn.modules.module)
_register_module_pre_hook = torch.nn.modules.module.register_module_forward_pre_hook
NO_MODEL = "nothing of a model"  # what a watched call that ran no model observes


def _model_op(op: str) -> str | None:
    """Why running the aten operator ``op`` (its short name) is running a model, or None."""
    if "backward" in op:
        return f"calls PyTorch's own backward function ({op})"
    if op in _MODEL_OPS:
        return f"runs a matrix product or a convolution ({op}), as a model's layers do"
    return None


def _model_run_seen(events: Iterable[Any]) -> str | None:
    """What the profiler recorded that only running a model does, the most telling first: compiled code (which it
    cannot see into), a backward pass through autograd's engine, a layer's operator; else None. (Not a graph being
    recorded: torch gives ops that record none, ``torch.tensor``'s ``detach_``, a sequence number too.)"""
    events = list(events)
    if any(event.name.startswith(_COMPILING) for event in events):
        return _COMPILED
    engine = [event.name for event in events if event.name.startswith("autograd::engine::evaluate_function")]
    if engine:
        return f"runs a backward pass (autograd's engine ran {engine[0].rpartition(': ')[2]})"
    return next((_model_op(event.name.removeprefix("aten::")) for event in events
                 if event.name.startswith("aten::") and _model_op(event.name.removeprefix("aten::"))), None)


class _ModelOpGuard(torch.utils._python_dispatch.TorchDispatchMode):
    """Notes, through ``note``, every aten operator of a model that reaches the dispatcher on the thread it is entered
    on (an exception could be caught by the watched code: the watch fails the call once it returns)."""

    def __init__(self, note: Callable[[str], None]) -> None:
        super().__init__()
        self.note = note

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        seen = _model_op(func.overloadpacket.__name__)
        if seen:
            self.note(seen)
        return func(*args, **(kwargs or {}))


def _thread_ids() -> set[str]:
    """The ids of this process's threads, those torch or C code started included (Linux), else Python's."""
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return {str(thread.ident) for thread in threading.enumerate()}


class check_no_model_run:  # noqa: N801 - used as a checker: ``with check_no_model_run(what): answer(...)``
    """Check that the code in its block runs no model: no module is called, no matrix product or convolution runs and
    no backward pass runs, on any thread of the process, in callbacks from inside an
    operator (``Tensor.map_``) or in hooks included; the block also leaves no thread running, starts no process, and
    leaves torch's modes and the watch as it found them. ``what`` names the call in the message.

    Torch's profiler watches every thread over the whole block, a dispatch mode and a global module hook the calling
    thread. A rule about method, not value: graded by ``hooklab autograde`` it still fails the test in the kernel,
    and it also observes what ran (:data:`NO_MODEL` when nothing did), which the grader compares with the reference's.
    """

    def __init__(self, what: str) -> None:
        self._what = what
        self._notes: list[str] = []

    def __enter__(self) -> check_no_model_run:
        self._notes = []
        self._modes = (_dispatch_modes(), _function_modes())
        self._registry = _module_globals["_global_forward_pre_hooks"]
        self._hook = _register_module_pre_hook(
            lambda module, args: self._notes.append(f"calls a module ({type(module).__qualname__})"))
        self._span = _profiled_span()
        self._profiled = self._span.__enter__()
        self._threads = _thread_ids()  # once the profiler runs (its first start starts a thread of its own)
        self._guard = _ModelOpGuard(self._notes.append)
        self._guard.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        notes = self._notes
        guard_on_top = _current_dispatch_mode() is self._guard
        if guard_on_top:
            _pop_dispatch_mode()
        if not guard_on_top or (_dispatch_modes(), _function_modes()) != self._modes:
            notes.append("changes the torch modes entered around it (enters, leaves or pops one)")
        left = _thread_ids() - self._threads
        self._span.__exit__(None, None, None)
        hooks = _module_globals["_global_forward_pre_hooks"]
        kept = hooks is self._registry and self._hook.id in hooks
        self._hook.remove()
        if not kept:
            notes.append("removes the watch's module hook")
        if self._profiled.events is None:
            notes.append(_STOPPED)
        else:
            seen = _model_run_seen(self._profiled.events)
            if seen:
                notes.insert(0, seen)  # the profiler saw first what ran on any thread
        if self._profiled.forked:
            notes.append(_FORKED)
        if left:
            notes.append("leaves a thread running when it returns, which no watch sees")
        seen = notes[0] if notes else NO_MODEL
        if observations.active():
            observe("value", f"what {self._what} ran (it must run no model)", encode(seen))
        if notes:
            raise AnswerError(f"{self._what} {seen}: it must answer without running a model (no module, matrix "
                              "product or backward pass)") from None
