"""What a test cell hands the grader under ``hooklab autograde``: observations, not verdicts.

Before each code cell of a notebook whose tests are drivers, the grader's agent in the kernel
(:class:`hooklab.grading.kernels.agent.GradingKernel`) calls :func:`begin` with a seed the grader drew for that
cell from the run's secret seed: the global random states are reseeded with it, and in a test cell
:func:`hooklab.checks.random_generator` draws the hidden inputs from it, so nothing that ran before the test can
predict them. In a test cell the checkers then only *observe*: each encodes what the student's code produced (a
tensor's dtype, shape and bytes; plain values; types) as JSON and sends it at once on the kernel's observation
channel, a socket whose other end is the grader's (:class:`hooklab.grading.kernels.client.ObservationChannel`):
what an object held when it was checked is what the grader gets. The path from a checker to the socket goes
through references taken when the kernel started (:func:`connect`: the channel's descriptor, ``os.write`` and
the C JSON encoder), not through a name or a method of a class that later code could replace. The grader runs
the same cells on the reference solution, in a kernel of its own, and compares the two streams
(:mod:`hooklab.grading.judge`): the score is the grader's. Outside grading (the lab, ``nbgrader validate``)
nothing here is active and the checkers assert in the kernel as they always did; a process without a channel
(the mutation runner, the tests of this package) keeps its observations for :func:`collected`.

Plain data only: encoding runs no code of the student's objects (their types are compared by identity).
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import itertools
import json
import math
import os
import random
import sys
import types
from collections.abc import Callable
from json import encoder as json_encoder
from typing import Any

PLAIN_DEPTH = 32  # how deep plain values are encoded before they count as too deep
PLAIN_ITEMS = 10_000  # how many plain values one observation may hold
PLAIN_SCALARS = (str, int, float, bool, complex, type(None))  # with lists, tuples and dicts of them: plain data

# as they were when the checkers were imported, before any notebook code (read-only, as every table here)
_BUILTINS = types.MappingProxyType(dict(vars(builtins)))
CHANNEL = "HOOKLAB_OBSERVATIONS_FD"  # the environment variable that names the kernel's end of its channel
_state: dict[str, Any] = {"seed": None, "draws": itertools.count(), "seen": [], "channel": None, "send": None,
                          "kernels": None, "kernels_seen": (0, "")}


def connect(unchanged: Callable[[], bool] = lambda: True) -> tuple[Callable[[str], None], Callable[[], int]] | None:
    """Take the kernel's end of its observation channel (the descriptor :data:`CHANNEL` names, which the variable
    then no longer shows and a child process does not inherit): :func:`observe` sends on it from now on. Returns, for
    the grader's agent, the function that writes one line of its own on the channel (on a line of its own: whatever
    was left unfinished before it ends first) and the function that tells how many observations were sent so far;
    None where the kernel has no channel. ``unchanged``: the agent's question, asked before each observation is sent,
    whether what the checkers rely on is as it was (the probe's watched classes); an observation made while it is not
    is not sent. Called by the agent as the kernel starts, before any code of the notebook's: the functions hold every
    reference they use."""
    if CHANNEL not in os.environ:
        return None
    _readers()  # what the encoder reads tensors with, taken before any code of the notebook's runs
    import torch.library

    torch.func.vmap(torch.neg)(torch.zeros(1, 1))  # vmap registers kernels for aten as it first runs: now, not later
    _state.update(kernels=record_kernels(torch.library), kernels_seen=(0, ""))
    fd = int(os.environ.pop(CHANNEL))
    os.set_inheritable(fd, False)
    send, speak, sent = _senders(fd, unchanged)
    _state.update(channel=fd, send=send)
    return speak, sent


def _senders(fd: int, unchanged: Callable[[], bool] = lambda: True,
             ) -> tuple[Callable[[Any], None], Callable[[str], None], Callable[[], int]]:
    """Three functions on ``fd``, through references taken now (``os.write``, the C JSON encoder, the builtin types'
    own methods): one that sends an observation (plain data, as one JSON line) and counts it, one that writes a line
    of the agent's, and one that tells how many observations were sent. The first sends only what :func:`observe`
    hands it, while ``unchanged()``: a function put in its place that passes records on (rewritten), or a method of a
    watched class swapped while a check runs and put back before the cell ends, and nothing is sent; the grader,
    short of the test's observations, fails it."""
    write, encode_text, view, join, frame = os.write, str.encode, memoryview, "".join, sys._getframe
    observer = observe.__code__
    chunks = _json_chunks()
    count = [0]

    def emit(text: str) -> None:
        data = view(encode_text(text))
        while data:
            data = data[write(fd, data):]

    def send(record: Any) -> None:
        if frame(1).f_code is not observer or not unchanged():
            return
        count[0] += 1
        emit(join(chunks(record, 0)) + "\n")

    def speak(line: str) -> None:
        emit("\n" + line + "\n")

    def sent() -> int:
        return count[0]

    return send, speak, sent


def _json_chunks() -> Callable[[Any, int], Any]:
    """The C JSON encoder's function from a value to its text's pieces (compact, no check for cycles: observations
    are fresh trees of plain data), or the Python encoder's where the C one is missing."""
    if json_encoder.c_make_encoder is None:
        encode = json.JSONEncoder(separators=(",", ":")).encode
        return lambda value, _: (encode(value),)

    def refuse(value: Any) -> Any:
        raise TypeError(f"an observation holds a {type(value).__name__}")

    return json_encoder.c_make_encoder(None, refuse, json_encoder.encode_basestring_ascii, None, ":", ",", False,
                                       False, True)


def begin(seed: str, test: bool, builtins_read: tuple[str, ...] = ()) -> None:
    """The grader's agent's call before a code cell: reseed the global random states (torch, NumPy, ``random``)
    from ``seed``; in a test cell (``test``), observe and draw hidden inputs from it. ``builtins_read``: the
    builtins the test reads, put back as they were where code replaced them in the builtins module, and unshadowed
    where a notebook global of the same name (``def abs(value): ...`` in an answer) stood in for them."""
    import numpy
    import torch

    namespace = vars(sys.modules["__main__"])  # the notebook's (ipykernel runs cells in __main__)
    for name in builtins_read:
        real = _BUILTINS.get(name)
        if real is not None and getattr(builtins, name, None) is not real:  # replaced in the builtins module itself
            setattr(builtins, name, real)
        if name in namespace and namespace[name] is not real:
            del namespace[name]

    number = int(hashlib.sha256(seed.encode()).hexdigest()[:15], 16)
    if torch.accelerator.is_available():
        torch.manual_seed(number)  # every device's generators
    else:  # the CPU's alone: torch.manual_seed would also queue a seeding of each absent device type, with the
        torch.default_generator.manual_seed(number)  # stack formatted for each (1.5 ms per cell in a kernel)
    numpy.random.seed(number % 2**32)
    random.seed(number)
    _state.update(seed=seed if test else None, draws=itertools.count(), seen=[])


def cell_seed(run: str, notebook: str, cell: str) -> str:
    """The seed :func:`begin` gets for a cell: drawn from the run's seed, the notebook and the cell's key."""
    return hashlib.sha256(f"{run}:{notebook}:{cell}".encode()).hexdigest()


def graded() -> bool:
    """Whether this kernel is one the grader runs (it took the observation channel), whatever cell runs now."""
    return _state["channel"] is not None


def active() -> bool:
    """Whether the checkers observe (a test cell graded by ``hooklab autograde``) rather than assert."""
    return _state["seed"] is not None


def next_seed() -> int:
    """A seed for a hidden test's generator: from the grader's when it observes, else from the system."""
    if _state["seed"] is None:
        return int.from_bytes(os.urandom(8), "little") >> 1
    digest = hashlib.sha256(f"{_state['seed']}:{next(_state['draws'])}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def observe(kind: str, label: str, value: dict[str, Any], **options: Any) -> None:
    """Send the grader one observation: ``kind`` says how it is compared, ``label`` names it in messages,
    ``value`` is an encoded value (:func:`encode`), ``options`` are the comparison's (tolerances); the record also
    says which line of the cell made the check. Only a check made by the test cell's own code counts: a checker an
    answer calls for itself, inside a function the test calls, observes nothing."""
    line = _line_of_the_cell()
    if line is None:
        return
    record = {"kind": kind, "label": str(label), "value": value, "line": line, **options}
    if _state["send"] is None:
        _state["seen"].append(json.dumps(record))
    else:
        _state["send"](record)


def collected() -> str:
    """In a process without a channel: the observations kept since :func:`begin`, as one JSON list."""
    seen, _state["seen"] = _state["seen"], []
    return "[" + ",".join(seen) + "]"


def _line_of_the_cell() -> int | None:
    """Where in the cell being run the check was made: the line of the cell's own statement that led to it (a call
    of a function the cell defines counts where the cell calls it, so that a check of a hidden test's line is
    known as one). None where the checker's caller is not code of that cell."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _OWN_FILES:
        frame = frame.f_back
    caller = frame
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    if caller is None or frame is None or caller.f_code.co_filename != frame.f_code.co_filename:
        return None
    main = sys.modules.get("__main__")
    if _state["channel"] is not None and (main is None or frame.f_globals is not vars(main)):
        return None  # in a graded kernel a cell runs in the notebook's namespace: this "<module>" is no cell's
    return frame.f_lineno


def encode(value: Any, *, expected: bool = False) -> dict[str, Any]:
    """``value`` as plain JSON: a tensor by dtype, shape and bytes; str, numbers, None, lists, tuples and
    dicts of them by type and value; anything else by its type's name. A student's value read while a torch mode is
    entered, or once the notebook registered a kernel for one of aten's operators (:func:`kernel_added`), is not read:
    "unread", with the reason (an ``expected`` value, the test's own, is read)."""
    count = itertools.count()
    if not expected and mode_entered():
        return {"type": "unread", "reason": "a torch mode was still entered as it was read (leave every mode you "
                                            "enter before your function returns)"}
    added = "" if expected else kernel_added()
    if added:
        return {"type": "unread", "reason": f"it was computed after {added} (torch.library: register kernels only "
                                            "for operators you made with custom_op)"}
    return _encode(value, 0, count)


def kernel_added() -> str:
    """In a graded kernel, what the notebook did to one of aten's operators ("the notebook registered a kernel for
    torch's aten::detach (CPU)"), or "": a kernel of its own for such an operator runs inside every use of it, the
    test's own computations included, so nothing is read once one was there, even if it was removed since. (torch
    registers kernels of its other namespaces as it loads parts of itself.)"""
    added = _state["kernels"]
    if added is None:
        return ""
    seen, said = _state["kernels_seen"]
    new = added(seen)
    if new is None:
        return "the notebook replaced torch.library's record of kernels"
    if new:  # looked at only when a kernel was added
        aten = next((key for key in new if _aten_kernel(key)), None)
        if aten and not said:
            space, name, key = aten.split("/", 2)
            said = (f"the notebook made a library of kernels for torch's {space} operators" if name == LIBRARY else
                    f"the notebook registered a kernel for torch's aten::{name} ({key or 'no dispatch key'})")
        _state["kernels_seen"] = (seen + len(new), said)
    return said


def record_kernels(library: Any) -> Callable[[int], list[str] | None]:
    """Put in place of torch.library's record of the kernels registered from Python (``library._impls``, to which
    every registration of its adds the kernel's key, and from which a library destroyed takes its keys away) a set
    with the same keys that also notes each key added, for good; and in place of the function every library of kernels
    is made with (``torch._C._dispatch_library``, which Library calls with the file and line that made it) one that
    also notes a library the notebook's code makes for torch's own operators (:data:`TORCHS_LIBRARIES`; its handle
    registers kernels without the record hearing of them) as ``"aten/(library)/key"``. Returns the function that tells
    the keys noted from the ``since``-th on, in order, or None once either is no longer in place."""
    log: list[str] = []
    note, add, kind_of = log.append, set.add, type

    class Recorded(set):
        __slots__ = ()

        def add(self, key: Any) -> None:
            note(key)
            add(self, key)

    record, methods, namespace = Recorded(library._impls), vars(Recorded), vars(library)
    method = methods["add"]
    namespace["_impls"] = record
    c_namespace = vars(sys.modules["torch._C"])
    make, plain = c_namespace["_dispatch_library"], str.__add__

    def made(*args: Any, **kwargs: Any) -> Any:
        handle = make(*args, **kwargs)  # made: its arguments are strings
        kind, space, key = (plain("", value) for value in _library_arguments(*args, **kwargs))
        if space in TORCHS_LIBRARIES and (kind, space, key) not in _TORCHS_LAZY_LIBRARIES:
            note(f"{space}/{LIBRARY}/{key}")
        return handle

    c_namespace["_dispatch_library"] = made

    def added(since: int) -> list[str] | None:
        if (namespace.get("_impls") is not record or kind_of(record) is not Recorded or methods.get("add") is not method
                or c_namespace.get("_dispatch_library") is not made):
            return None
        return log[since:]

    return added


def _library_arguments(kind: str, name: str, dispatch: str = "", *_: Any, **__: Any) -> tuple[str, str, str]:
    """The kind, namespace and dispatch key ``torch._C._dispatch_library`` was called with, by position or keyword."""
    return kind, name, dispatch


def _aten_kernel(key: Any) -> bool:
    """Whether a key noted by :func:`record_kernels` names a kernel for one of aten's operators ("aten/clone/CPU"; any
    dispatch key, an empty or "Undefined" one included), or a library the notebook made for torch's operators
    ("aten/(library)/", "_/(library)/CPU")."""
    return isinstance(key, str) and (key.startswith("aten/") or f"/{LIBRARY}/" in key)


def mode_entered() -> str:
    """The torch function mode or dispatch mode entered as a checker reads a value, by its class's name ("" when there
    is none; the checkers' own guard, hooklab.checks._AutogradGuard, is none), or "PythonDispatcher" where torch's
    Python dispatcher is on (it runs the kernels ``OpOverload.py_impl`` gave operators): either could change what is
    read, so nothing is read then."""
    torch = sys.modules.get("torch")
    torch_c = getattr(torch, "_C", None)
    if torch_c is None:
        return ""
    if torch_c._dispatch_tls_is_dispatch_key_included(torch_c.DispatchKey.PythonDispatcher):
        return "PythonDispatcher"
    if torch_c._len_torch_dispatch_stack():
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        return _QUALNAME(type(_get_current_dispatch_mode_stack()[-1]))
    if not torch_c._len_torch_function_stack():
        return ""
    guard = getattr(sys.modules.get("hooklab.checks"), "_AutogradGuard", None)
    from torch.overrides import _get_current_function_mode_stack

    return next((_QUALNAME(type(mode)) for mode in _get_current_function_mode_stack() if type(mode) is not guard), "")


def _encode(value: Any, depth: int, count: Any) -> dict[str, Any]:
    import numpy
    import torch

    if next(count) > PLAIN_ITEMS or depth > PLAIN_DEPTH:
        return {"type": "too large"}
    kind = type(value)
    if kind is torch.Tensor or kind is torch.nn.Parameter:
        return _tensor(value)
    if kind is bool or value is None:
        return {"type": "bool" if kind is bool else "None", "value": value}
    if kind is int or (depth == 0 and kind in NUMPY_INTEGERS):  # as check_equal: a NumPy count, not inside a list
        return {"type": "int", "value": str(int(value))}
    if kind is float or kind is complex or kind is str:
        return {"type": kind.__name__, "value": repr(value) if kind is not str else value}
    if kind is list or kind is tuple:
        return {"type": kind.__name__, "items": [_encode(item, depth + 1, count) for item in value]}
    if kind is dict:
        return {"type": "dict",
                "items": [[_encode(k, depth + 1, count), _encode(v, depth + 1, count)] for k, v in value.items()]}
    if isinstance(value, torch.Tensor):
        return {"type": "other", "name": f"a torch.Tensor subclass ({kind.__qualname__})"}
    if kind is numpy.ndarray:
        return {"type": "other", "name": "a numpy.ndarray"}
    module = kind.__module__ if isinstance(kind.__module__, str) else "?"
    return {"type": "other",
            "name": f"a {kind.__qualname__}" if module == "builtins" else f"a {module}.{kind.__qualname__}"}


def _tensor(tensor: Any) -> dict[str, Any]:
    """A tensor as plain data. A CPU tensor's memory is read as it is, through torch's C tensor type (its data
    pointer, sizes and strides: none of them an operator, which a kernel registered for it or a mode could answer)
    and ctypes and NumPy (types no code can change), all taken once (:func:`_readers`); its conjugate and negative
    bits are applied in NumPy. A method or property set on ``torch.Tensor``, a mode, or a kernel of the answer's
    changes nothing of what is read. A meta tensor is not read; one on a GPU is first copied to the CPU."""
    import torch

    read = _readers()
    layout, dtype = read["layout"](tensor), read["dtype"](tensor)
    if layout != torch.strided or read["is_quantized"](tensor):
        return {"type": "other", "name": f"a {layout} tensor"}
    stored = _STORED.get(dtype)
    if stored is None:
        return {"type": "other", "name": f"a {str(dtype).removeprefix('torch.')} tensor"}
    device = read["device"](tensor)
    if device.type == "meta":  # no values, and no operator is called to read it (a kernel of the answer's could answer)
        return {"type": "other", "name": "a tensor on the meta device, which holds no values"}
    try:
        if device.type != "cpu":  # a GPU's, copied by torch's operators (no grading machine of the pack has one)
            tensor = read["to"](read["detach"](tensor), device="cpu")
        values = _memory(tensor, read, stored[0])
    except RuntimeError:  # no storage: a tensor only a mode or a compiler makes
        return {"type": "other", "name": "a tensor without storage"}
    if dtype == torch.bfloat16:  # the upper half of a float32
        values = read["view"](read["astype"](values, "<u4") << 16, "<f4")
    elif dtype == torch.complex32:  # pairs of float16
        values = values[..., 0] + 1j * read["astype"](values[..., 1], "<f8")
    wide = stored[1]
    values = read["astype"](values, _WIDE_NUMPY[wide])
    if read["is_conj"](tensor):
        values = read["conj"](values)
    if read["is_neg"](tensor):
        values = -values
    return {"type": "tensor", "dtype": str(dtype).removeprefix("torch."), "shape": list(read["shape"](tensor)),
            "stored": wide, "data": _BASE64(read["tobytes"](values)).decode()}


def _memory(tensor: Any, read: dict[str, Callable[..., Any]], item: str) -> Any:
    """A NumPy array of a CPU tensor's elements as stored (``item``: NumPy's type for one element; "<c2", complex32,
    gives a last axis of two float16), copied out of its memory by its data pointer, sizes and strides."""
    shape, strides = tuple(read["size"](tensor)), tuple(read["stride"](tensor))
    element = read["element_size"](tensor)
    numpy_shape, numpy_strides = shape, tuple(stride * element for stride in strides)
    if item == "<c2":
        numpy_shape, numpy_strides, item = shape + (2,), numpy_strides + (element // 2,), "<f2"
    if 0 in shape:
        return read["ndarray"](numpy_shape, item)
    span = sum((size - 1) * stride for size, stride in zip(shape, strides)) * element + element
    return read["ndarray"](numpy_shape, item, read["string_at"](read["data_ptr"](tensor), span), 0, numpy_strides)


def _readers() -> dict[str, Callable[..., Any]]:
    """What :func:`_tensor` reads with: the methods and properties of torch's C tensor type, ctypes' ``string_at``,
    NumPy's array type and its methods."""
    if not _READERS:
        import ctypes

        import numpy
        import torch

        base, array = vars(torch._C.TensorBase), vars(numpy.ndarray)
        _READERS.update({name: base[name] for name in ("detach", "to", "data_ptr", "size", "stride", "element_size",
                                                        "is_conj", "is_neg")})
        _READERS.update({name: base[name].__get__ for name in ("layout", "dtype", "is_quantized", "shape", "device")})
        _READERS.update({name: array[name] for name in ("tobytes", "astype", "view", "conj")})
        _READERS.update(ndarray=numpy.ndarray, string_at=ctypes.string_at)
        _STORED.update(_stored_types(torch))
    return _READERS


def _stored_types(torch: Any) -> dict[Any, tuple[str, str]]:
    """torch dtype → (NumPy's type of its elements as stored, the wide type its values are sent in)."""
    wide = {}
    for name, layout in (("float16", "<f2"), ("float32", "<f4"), ("float64", "<f8"), ("bfloat16", "<u2")):
        wide[getattr(torch, name)] = (layout, "float64")
    for name, layout in (("complex64", "<c8"), ("complex128", "<c16"), ("complex32", "<c2")):
        wide[getattr(torch, name)] = (layout, "complex128")
    for name, layout in (("int8", "|i1"), ("int16", "<i2"), ("int32", "<i4"), ("int64", "<i8"), ("uint8", "|u1"),
                         ("uint16", "<u2"), ("uint32", "<u4"), ("uint64", "<u8")):
        wide[getattr(torch, name)] = (layout, "int64")
    wide[torch.bool] = ("|b1", "uint8")
    return wide


def _numpy_integers() -> tuple[type, ...]:
    import numpy

    return tuple(numpy.dtype(code).type for code in numpy.typecodes["AllInteger"])


# the libraries torch makes for its operators as parts of it load after the channel opened: torch.compile's first
# call defines operators of prims (torch._inductor.inductor_prims), each in a fragment of prims, which holds prims
# operators only (a kernel for an aten operator registered through one is refused)
_TORCHS_LAZY_LIBRARIES = frozenset({("FRAGMENT", "prims", "")})
# the namespaces of torch's operators whose libraries the notebook may not make ("_": a library for any namespace)
TORCHS_LIBRARIES = frozenset({"aten", "prims", "_"})
LIBRARY = "(library)"  # how record_kernels notes a library made (its namespace/LIBRARY/dispatch key)
_QUALNAME = vars(type)["__qualname__"].__get__  # a class's name, read without its metaclass's code
_BASE64 = base64.b64encode  # taken as the checkers are imported: base64's own attribute is any code's to replace
_READERS: dict[str, Callable[..., Any]] = {}  # _readers()
_STORED: dict[Any, tuple[str, str]] = {}  # _stored_types(), with _readers()
_WIDE_NUMPY = {"float64": "<f8", "complex128": "<c16", "int64": "<i8", "uint8": "|u1"}
NUMPY_INTEGERS = _numpy_integers()  # a NumPy integer counts as the int it holds where a count is asked for
# frames skipped to find a check's caller
_OWN_FILES = frozenset({__file__, os.path.join(os.path.dirname(__file__), "checks.py")})


def _beyond(value: float, limit: float) -> bool:
    """``value > limit`` by more than rounding (a value read back from its text is not the one computed: 0.15 - 0.1
    is 0.04999999999999999, 1.05 / 1 - 1 is 0.050000000000000044)."""
    return value - limit > 1e-9 * abs(limit)


DISTRIBUTION = ("mean", "mean_atol", "std", "std_rtol", "kurtosis", "kurtosis_atol", "bound")  # what describes one


def distribution_problem(values: Any, what: str, spec: dict[str, float]) -> str:
    """Why ``values`` (a NumPy array) do not look drawn from the distribution ``spec`` describes, "" when they do:
    their mean within ``mean_atol`` of ``mean``, their standard deviation within ``std_rtol`` (relative) of ``std``,
    their kurtosis (E[(x - mean)⁴] / var²: 3 for a normal distribution, 1.8 for a uniform one) within
    ``kurtosis_atol`` of ``kurtosis``, every value within ±``bound``; what ``spec`` leaves out is not asked."""
    import numpy

    x = numpy.asarray(values, dtype=numpy.float64).ravel()
    statistics = {"mean", "std", "kurtosis"} & spec.keys()
    if x.size < (2 if statistics else 1) or not numpy.isfinite(x).all():
        return f"{what}: {x.size} value{'s' if x.size != 1 else ''}, not all finite or too few for the statistics asked"
    # each number shown with as many digits as it takes for the values read back to fail as the values did
    from hooklab.messages import told_apart

    if "bound" in spec and numpy.abs(x).max() > spec["bound"]:
        value, bound = told_apart((float(x[numpy.abs(x).argmax()]), spec["bound"]), lambda v, b: _beyond(abs(v), b), 4)
        return f"{what}: a value of {value} lies outside ±{bound}"
    if not statistics:
        return ""
    mean, std = x.mean(), x.std(ddof=1)
    if "mean" in spec and abs(mean - spec["mean"]) > spec["mean_atol"]:
        shown = told_apart((float(mean), spec["mean"], spec["mean_atol"]), lambda m, c, t: _beyond(abs(m - c), t),
                           (3, 6, 3))
        return f"{what}: mean {shown[0]}, expected {shown[1]} ± {shown[2]}"
    if "std" in spec and abs(std / spec["std"] - 1) > spec["std_rtol"]:
        shown = told_apart((float(std), spec["std"]), lambda s, e: _beyond(abs(s / e - 1), spec["std_rtol"]),
                           (3, 4))
        return f"{what}: standard deviation {shown[0]}, expected {shown[1]} (± {spec['std_rtol']:.0%})"
    if "kurtosis" in spec:
        centred = x - mean
        kurtosis = float((centred**4).mean() / (centred**2).mean() ** 2) if std > 0 else math.inf
        if abs(kurtosis - spec["kurtosis"]) > spec["kurtosis_atol"]:
            shown = told_apart((kurtosis, spec["kurtosis"], spec["kurtosis_atol"]),
                               lambda k, c, t: _beyond(abs(k - c), t), (2, 6, 6))
            return (f"{what}: kurtosis {shown[0]}, expected {shown[1]} ± {shown[2]} (3 "
                    "for a normal distribution, 1.8 for a uniform one)")
    return ""

