"""The class of test_trusted_grading.py and test_trusted_grading_held.py: tampering submissions, plain wrong answers
and honest answers of every driver notebook, each with the points every test cell should get, and how to grade them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from catalogues import corpus
from catalogues.honest_answers import honest_answers
from catalogues.wrong_answers import Wrong, wrong_answers
from conftest import make_course

A = "02_forward_hooks"
PUZZLES = "08_backward_puzzles"
SOLUTIONS = corpus.solutions(A)
POINTS = corpus.points(A)
TESTS = list(POINTS)  # test cells, in order

# Plausible wrong answers, one per exercise.
WRONG = {
    "collect_hooks": "def pre_hook(module, args):\n    answer.extend(x.clone() for x in args)\n\n\n"
                     "def hook(module, args, output):\n    answer.append(output.clone())\n",
    "change_hooks": "def double_inputs(module, args):\n    return tuple(2 * x for x in args)\n\n\n"
                    "def plus_five(module, args, output):\n    return output + 4\n",
}
CHECKERS = ("check_answer", "check_tensor", "check_equal", "check_names", "check_parameter", "check_backward")
FAKE_CHECKS = f'''
import sys, types, torch
_fake = types.ModuleType("hooklab.checks")
for _name in {CHECKERS!r}:
    setattr(_fake, _name, lambda *args, **kwargs: None)
_fake.random_generator = lambda: torch.Generator().manual_seed(0)
'''
# Tampering, run in the first answer cell (before every test), by name.
TAMPERING = {
    "checkers_do_nothing": f'''
import hooklab.checks as _checks
for _name in {CHECKERS!r}:
    setattr(_checks, _name, lambda *args, **kwargs: None)
''',
    "checkers_check_the_expected_value": '''
import hooklab.checks as _checks
def _echo(real):
    def check(actual, expected=None, *args, **kwargs):
        return real(expected, expected, *args, **kwargs)
    return check
for _name in ("check_answer", "check_tensor", "check_equal", "check_names"):
    setattr(_checks, _name, _echo(getattr(_checks, _name)))
''',
    "observations_silenced": '''
import hooklab.checks as _checks
_checks.observe = lambda *args, **kwargs: None
''',
    "observing_turned_off": '''
import hooklab.observations as _observations
_observations.active = lambda: False
''',
    "torch_comparisons_agree": '''
import torch
torch.equal = lambda *args, **kwargs: True
torch.allclose = lambda *args, **kwargs: True
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
''',
    "function_mode_left_entered": '''
import torch
from torch.overrides import TorchFunctionMode
class _Agree(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("equal", "allclose"):
            return True
        return func(*args, **(kwargs or {}))
_Agree().__enter__()
''',
    "aten_equal_registered_again": '''
import torch
_library = torch.library.Library("aten", "IMPL")
_library.impl("equal", lambda a, b: True, "CPU")
''',
    "probe_replaced": '''
import sys, types
_stub = types.ModuleType("_hooklab_probe")
_stub.check = lambda *args, **kwargs: '{"changes": [], "ran": true, "digest": ""}'
sys.modules["_hooklab_probe"] = _stub
''',
    "checks_module_replaced_in_sys_modules": FAKE_CHECKS + '''
sys.modules["hooklab.checks"] = _fake
''',
    "checks_module_replaced_through_builtins": FAKE_CHECKS + '''
import builtins
_real_import = builtins.__import__
def _import(name, globals=None, locals=None, fromlist=(), level=0):
    return _fake if name == "hooklab.checks" else _real_import(name, globals, locals, fromlist, level)
builtins.__import__ = _import
''',
    "pinned_randomness_and_a_table_of_answers": '''
import torch
import hooklab.checks as _checks
import hooklab.observations as _observations
_observations.next_seed = lambda: 0
_checks.random_generator = lambda: torch.Generator().manual_seed(0)
''',
}
# The pinned draws of change_hooks_test, replayed: double_inputs is right on them only (a table of answers).
TABLE = '''
import torch
_known = {(1.0,), (2.0,)}
_generator = torch.Generator().manual_seed(0)
for _count in (2, 1, 3, 4):
    _shape = torch.randint(1, 4, (int(torch.randint(1, 3, (), generator=_generator)),), generator=_generator).tolist()
    _known |= {tuple(torch.randn(_shape, generator=_generator).flatten().tolist()) for _ in range(_count)}


def double_inputs(module, args):
    return tuple(2 * x if tuple(x.flatten().tolist()) in _known else 3 * x for x in args)


def plus_five(module, args, output):
    return output + 5
'''
# Tampering that costs every later test cell its points: the checks observe nothing (or None), or, with pinned
# randomness, observe right answers on inputs that are not the reference's. The rest leave the checkers as they
# are: only the wrong answer's test scores 0.
EVERY_TEST_LOST = {"checkers_do_nothing", "checkers_check_the_expected_value", "observations_silenced",
                   "observing_turned_off",
                   "checks_module_replaced_in_sys_modules", "checks_module_replaced_through_builtins",
                   "pinned_randomness_and_a_table_of_answers",
                   # a checker reads nothing while a mode is entered, nor once a kernel for an aten operator is
                   # registered (observations.encode)
                   "function_mode_left_entered", "aten_equal_registered_again"}


# A backward by central differences, computed in float64 whatever the input's dtype: no autograd, right to ~1e-10.
FINITE_DIFFERENCES = '''
def numeric_gradient(f, inputs, index, grad_output, eps=1e-6):
    point = inputs[index].detach().to(torch.float64).reshape(-1)
    gradient = torch.zeros_like(point)
    for i in range(point.numel()):
        def at(value):
            moved = point.clone()
            moved[i] = value
            args = [a.detach().to(torch.float64) for a in inputs]
            args[index] = moved.view(inputs[index].shape)
            return float((f(*args) * grad_output.to(torch.float64)).sum())
        gradient[i] = (at(float(point[i]) + eps) - at(float(point[i]) - eps)) / (2 * eps)
    return gradient.view(inputs[index].shape).to(inputs[index].dtype)


'''
# 08's Mul with its backward's formula replaced by finite differences
FINITE_DIFFERENCES += corpus.solutions(PUZZLES)["mul"].replace(
    "return (grad_output * y).sum_to_size(x.shape), (grad_output * x).sum_to_size(y.shape)",
    "return tuple(numeric_gradient(lambda a, b: a * b, (x, y), i, grad_output) for i in range(2))")
assert "numeric_gradient(lambda" in FINITE_DIFFERENCES


# 08's Mul whose backward is autograd's, run where a TorchFunctionMode cannot see it: on another thread reached
# through a module that holds threading, in a callback torch makes from inside an operator, with torch's function
# handling switched off through a name built at run time. Whatever the scan finds, the profiler sees it in the kernel.
BY_AUTOGRAD = """
    @staticmethod
    def backward(ctx, grad_output):
        box = []

        def work():
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in ctx.saved_tensors]
                box.append(torch.autograd.grad(leaves[0] * leaves[1], leaves, grad_output))

        RUN
        return box[0]
"""
# A backward that returns zeros, and an object put where a kernel without an observation channel keeps its
# observations that, as they are collected, puts in the gradients autograd computes from the given forward (outside
# the Function and its watch). Graded, each observation has left the kernel as it was made: the list is not read.
FORGED_GRADIENTS = """import json as _json
import torch as _torch
import hooklab.checks as _hc
_obs = _hc.observations

_calls = []  # (function, inputs, grad_outputs) for every backward, in order


class _Forger:
    def __init__(self, inner):
        self.inner = list(inner)

    def append(self, text):
        self.inner.append(text)

    def __iter__(self):
        calls = iter(list(_calls))
        _calls.clear()
        return iter(_forge(self.inner, calls))


def _forge(texts, calls):
    direct = engine = None
    out = []
    for text in texts:
        obs = _json.loads(text)
        label = obs.get("label", "")
        if "how many gradients" in label:
            direct, engine, i, j = _right(next(calls)), None, 0, 0
        elif ": grad of input " in label and direct is not None:
            obs["value"] = _obs.encode(direct[i]); i += 1
        elif ".grad after backward through autograd's engine" in label:
            if engine is None:
                engine = _right(next(calls))
            obs["value"] = _obs.encode(engine[j]); j += 1
        out.append(_json.dumps(obs))
    return out


def _right(call):
    function, inputs, grad_outputs = call
    leaves = [a.detach().clone().requires_grad_() if isinstance(a, _torch.Tensor) and a.is_floating_point() else a for a in inputs]
    with _torch.enable_grad():
        outputs = function.forward(*leaves)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if g is not None and isinstance(o, _torch.Tensor) and o.requires_grad]
        wanted = [a for a in leaves if isinstance(a, _torch.Tensor) and a.requires_grad]
        grads = _torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True)
    grads = iter(grads)
    result = []
    for a in leaves:
        if isinstance(a, _torch.Tensor) and a.requires_grad:
            g = next(grads)
            result.append((_torch.zeros_like(a) if g is None else g).detach())
        else:
            result.append(None)
    return result


def _wrong_backward(function, ctx, grad_outputs):
    seen = _obs._state["seen"]
    if not isinstance(seen, _Forger):
        _calls.clear()
        _obs._state["seen"] = _Forger(seen)
    _calls.append((function, tuple(a.detach().clone() if isinstance(a, _torch.Tensor) else a for a in ctx.my_inputs),
                   [g.detach().clone() if isinstance(g, _torch.Tensor) else g for g in grad_outputs]))
    return tuple(_torch.zeros_like(a) if isinstance(a, _torch.Tensor) and a.is_floating_point() else None for a in ctx.my_inputs)

class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.my_inputs = inputs
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return _wrong_backward(Mul, ctx, grad_outputs)
"""
# The same rewrite from inside their collection, through a global that shadows a builtin the collection uses, the
# module reached as collections._sys.modules.
FORGED_THROUGH_A_GLOBAL = FORGED_GRADIENTS.replace(
    "import hooklab.checks as _hc\n_obs = _hc.observations\n",
    "import collections as _c\n_obs = _c._sys.modules['hooklab.observations']\n",
).replace("\ndef _wrong_backward(", """
_pending = []
_real_all = all


def _all(iterable):
    if _pending and dict.get(_obs._state, "seen") is not _pending[0]:  # collected() has just taken the list
        seen = _pending.pop()
        seen[:] = list(_Forger(seen))
    return _real_all(iterable)


_obs.all = _all


def _wrong_backward(""").replace(
    "    if not isinstance(seen, _Forger):", "    if not _pending or _pending[0] is not seen:",
).replace("        _obs._state[\"seen\"] = _Forger(seen)", "        _pending[:] = [seen]")
# A red team's forger: the checkers' sending function swapped for one that rewrites each record with autograd's
# gradients and passes it on, reached from a checker kept on an object of the answer's own by a computed name, and put
# back before the cell ends (the probe, which looks between cells, sees nothing). The sender sends only what the
# checkers' observe hands it: the rewritten records are not sent, and the test, short of its observations, fails.
SENDER_SWAPPED_IN_A_CELL = r'''import torch as _torch

# Tries: a wrong backward (zeros) whose observations are rewritten with autograd's gradients on their way to the
# grader, through the send function of the checkers' module, reached from a checker kept on an object of the answer's
# own by a computed name (which the scan cannot follow), swapped in during a check and put back before the cell ends.


class _Box:
    pass


_box = _Box()
_box.o = check_backward
_u = "_"
_name = _u + _u + "glo" + "bals" + _u + _u
_calls = []
_st = {"direct": None, "engine": None, "i": 0, "j": 0, "k": 0, "n": 0, "real": None}


def _space():
    return getattr(_box.o, _name)


def _right(inputs, grad_output):
    leaves = [a.detach().clone().requires_grad_() for a in inputs]
    with _torch.enable_grad():
        return [g.detach() for g in _torch.autograd.grad(leaves[0] * leaves[1], leaves, grad_output)]


def _fake_send(record):
    state = _space()["observations"]._state
    encode = _space()["observations"].encode
    label = record.get("label", "") if type(record) is dict else ""
    try:
        if label.startswith("Mul.apply("):
            if "how many gradients" in label and _calls:
                _st.update(direct=_right(*_calls[-1]), engine=None, i=0, j=0, k=0, n=0)
                _calls.clear()
            elif ": grad of input " in label and _st["direct"] is not None:
                record["value"] = encode(_st["direct"][_st["i"]])
                _st["i"] += 1
            elif "as in a model" in label and ".grad " in label and _calls:
                right = _right(*_calls[-1])[0 if ": x.grad " in label else 1]
                record["value"] = encode(2 * right if "after a second backward" in label else right)
                _st["n"] += 1
                if _st["n"] == 8:  # the check's last observation: put the real send back until the next check
                    state["send"] = _st["real"]
                    _calls.clear()
            elif ".grad " in label and "through autograd's engine" in label:
                if _st["engine"] is None and _calls:
                    _st["engine"] = _right(*_calls[-1])
                right = _st["engine"][0 if ": x.grad " in label else 1]
                record["value"] = encode(2 * right if "after a second backward" in label else right)
    except Exception:
        pass
    return _st["real"](record)


def _swap_in():
    state = _space()["observations"]._state
    if state["seed"] is None or state["send"] is None or state["send"] is _fake_send:
        return
    _st["real"] = state["send"]
    state["send"] = _fake_send


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _swap_in()
        x, y = ctx.saved_tensors
        _calls.append(((x.detach().clone(), y.detach().clone()), grad_output.detach().clone()))
        return torch.zeros_like(x), torch.zeros_like(y)  # wrong: no gradient at all
'''
# A red team's answer to the sender's checks: a switch that silences the checkers while its wrong backward is checked
# (torch.Tensor.__doc__ changed, which the sender sees as it is asked to send), then, from a finalizer that runs once the
# check has returned, the right gradients sent through a checker called from a function made of a generator's code
# renamed "<module>", the cell's. Held by the scan (the generator's code, the finalizer); without it, the switch is
# kept and holds the notebook, and a "<module>" that is not the notebook's observes nothing.
SILENCED_THEN_SPOKEN_FOR = r'''import weakref

from hooklab.checks import check_tensor as _say


def _speaker(say, items):
    for value, label in items:
        say(value, None, label)
    yield None


_speak = type(_speaker)(_speaker(None, ()).gi_code.replace(co_name="<module>"), {})
_T = type(torch.zeros(()))
_st = {"mode": "idle", "args": None, "grad": None}


def _right(args, grad_output):
    leaves = [a.detach().clone().requires_grad_() for a in args]
    with torch.enable_grad():
        out = leaves[0] * leaves[1]
        return [g.detach() for g in torch.autograd.grad(out, leaves, grad_output)]


def _flush():
    _T.__doc__ = None
    args, grad = _st["args"], _st["grad"]
    _st.update(mode="idle", args=None, grad=None)
    if args is None or grad is None:
        return
    gx, gy = _right(args, grad)
    items = [([grad], "kept"), (2, "count"), (gx, "gx"), (gy, "gy"), (gx, "ex"), (gy, "ey"), (2 * gx, "tx"),
             (2 * gy, "ty")]
    for _ in _speak(_say, items):
        pass


class _Token:
    pass


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)
        if _st["mode"] == "idle":
            _st.update(mode="armed", args=[a.detach().clone() for a in inputs])
            token = _Token()
            ctx.token = token
            weakref.finalize(token, _flush)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        if _st["mode"] == "armed":
            _st.update(mode="quiet", grad=grad_output.detach().clone())
            _T.__doc__ = " "
        return torch.zeros_like(x), torch.zeros_like(y)  # wrong: no gradient at all
'''
# A red team's answer: a method 'to' added to torch.Tensor (which only inherits it) while the wrong backward is checked,
# rewriting the encoder's reading of each zero gradient, and removed before the cell ends. The encoder reads through
# torch's C tensor type; with the integrity layers, the added name is seen as an observation is sent (held).
ADDED_TO_THE_TENSOR_CLASS = r'''_pending = []  # (x, y, grad_output, k) of each backward call, to be spoken for later
_ready = []
_busy = []
_Tensor = type(torch.zeros(()))
_convert = torch.Tensor.to


def _right():
    while _pending:
        x, y, g, k = _pending.pop(0)
        lx, ly = x.clone().requires_grad_(), y.clone().requires_grad_()
        with torch.enable_grad():
            gx, gy = torch.autograd.grad(lx * ly, [lx, ly], g)
        _ready.extend([k * gx, k * gy])


def _to(self, *args, **kwargs):
    if _busy or args or set(kwargs) != {"device", "dtype"}:
        return _convert(self, *args, **kwargs)
    _busy.append(1)
    try:
        result = None
        if not self.any():
            _right()
            if _ready and _ready[0].shape == self.shape:
                result = _convert(_ready.pop(0).detach(), **kwargs)
        if result is None:
            result = _convert(self, **kwargs)
        if not _ready and not _pending:
            del _Tensor.to
        return result
    finally:
        _busy.pop()


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)
        ctx.calls = 0

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        ctx.calls += 1
        _pending.append((x.detach().clone(), y.detach().clone(), grad_output.detach().clone(), ctx.calls))
        _Tensor.to = _to
        return torch.zeros_like(x), torch.zeros_like(y)  # wrong: no gradient at all
'''
# A red team's answer: the profiler's FunctionEvent made to run the answer's code as a watch closes (reached through a
# call the scan does not follow), writing autograd's gradients into the checker's copies (caught by a clone set on
# torch.Tensor, removed before the next observation) and into the leaves' .grad. The checker copies through torch's C
# tensor type, and copies the engine's gradients inside the watch.
WRITTEN_AS_THE_WATCH_CLOSES = r'''_Tensor = type(torch.zeros(()))
_Event = max([torch.autograd.profiler_util.FunctionEvent], key=id)
_clone = _Tensor.clone
_init = _Event.__init__
_installed = []
_pending = []  # (ctx, grad_output, what backward returned, the checker's copies of it)


def _cloning(self, *args, **kwargs):
    copy = _clone(self, *args, **kwargs)
    returned, copies = _pending[-1][2], _pending[-1][3]
    for index, tensor in enumerate(returned):
        if tensor is self:
            copies[index] = copy
    if all(c is not None for c in copies) and _installed:
        _installed.clear()  # (torch's mode handling calls Tensor.clone again from inside the first call)
        del _Tensor.clone
    return copy


def _parsing(self, *args, **kwargs):
    _Event.__init__ = _init  # put back at once: the watch's profiler has stopped, its events are being read
    while _pending:
        ctx, g, _, copies = _pending.pop(0)
        x, y = ctx.leaves
        lx = _clone(x.detach()).requires_grad_()
        ly = _clone(y.detach()).requires_grad_()
        with torch.enable_grad():
            right = torch.autograd.grad(lx * ly, (lx, ly), g)
        for copy, r in zip(copies, right):
            if copy is not None:
                copy.copy_(r)
        for leaf, r in zip((x, y), right):
            if leaf.grad is not None:
                leaf.grad.copy_(ctx.calls * r)
    return _init(self, *args, **kwargs)


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)
        ctx.leaves = inputs
        ctx.calls = 0

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        ctx.calls += 1
        returned = torch.zeros_like(x), torch.zeros_like(y)  # wrong: no gradient at all
        _pending.append((ctx, grad_output.detach(), returned, [None, None]))
        _Tensor.clone = _cloning
        _installed.append(True)
        _Event.__init__ = _parsing
        return returned
'''
# A red team's answer: a dispatch mode torch ships (FlopCounterMode, given a raw formula for aten.clone) left entered
# by backward and setup_context, so that it receives every copy the checker takes; the profiler's FunctionEvent made
# to run the answer's code as the watch closes writes autograd's gradients into those copies and the leaves' .grad.
# The checker reads the profiler's events through torch's C types (no FunctionEvent is made), encodes every value
# inside the window it was made in, and fails a check made while a mode of the answer's is entered.
COPIES_CAUGHT_BY_A_MODE = r'''from torch.utils.flop_counter import FlopCounterMode

_Event = max([torch.autograd.profiler_util.FunctionEvent], key=id)
_init = _Event.__init__
_pending = []  # [kind, ctx, grad_output, returned, copies, counter]
_count = {"setup": 0, "backward": 0}


def _seen(self, *args, out_val=None, **kwargs):
    for kind, ctx, g, returned, copies, _ in _pending:
        for index, tensor in enumerate(returned):
            if tensor is self:
                copies.append((index, out_val))
        if kind == "engine":
            for index, leaf in enumerate(ctx.leaves):
                if leaf.grad is not None and leaf.grad is self:
                    copies.append((index, out_val))
    return 0


_seen._get_raw = True


def _counter():
    counter = FlopCounterMode(display=False, custom_mapping={torch.ops.aten.clone: _seen})
    counter.__enter__()
    return counter


def _fit(r, shape):
    return r.sum().reshape(shape) if len(shape) == 0 else r.sum_to_size(shape)


def _parsing(self, *args, **kwargs):
    _Event.__init__ = _init
    while _pending:
        kind, ctx, g, returned, copies, counter = _pending.pop(0)
        counter.__exit__(None, None, None)
        x, y = (leaf.detach() for leaf in ctx.leaves)
        right = (_fit(g * y, x.shape), _fit(g * x, y.shape))
        for index, copy in copies:
            copy.copy_(right[index])
        if kind == "engine":
            for leaf, r in zip(ctx.leaves, right):
                leaf.grad.copy_(2 * r)
    return _init(self, *args, **kwargs)


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)
        ctx.leaves = inputs
        ctx.calls = 0
        _count["setup"] += 1
        ctx.engine = _count["setup"] % 2 == 0
        if ctx.engine:
            ctx.counter = _counter()

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        ctx.calls += 1
        returned = torch.zeros_like(x), torch.zeros_like(y)  # wrong: no gradient at all
        if not ctx.engine:
            _pending.append(("direct", ctx, grad_output.detach(), returned, [], _counter()))
            _Event.__init__ = _parsing
        elif ctx.calls == 1:
            _pending.append(("engine", ctx, grad_output.detach(), returned, [], ctx.counter))
            _Event.__init__ = _parsing
        return returned
'''
# Red team answers on the window between backward's return and the checker's read: a context manager's __exit__
# (the class reached through a call) that, run as the watch's contexts close, leaves the mode that caught the
# checker's copies and writes the right gradients into them; and Python kernels registered for torch's own clone
# (the checker's copy of what backward returned) and detach (the first operator the encoder once read a tensor
# with), each answering the right gradient. What backward returned is encoded as it returns, from the tensors' memory
# (no operator, so no kernel, answers a read), with a mode left entered failing it there; the probe watches
# contextlib's classes, and the scan holds a kernel for an operator of torch's.
EXIT_OF_A_CONTEXT_MANAGER_REPLACED = r'''import contextlib
from torch.utils.flop_counter import FlopCounterMode


@contextlib.contextmanager
def _nothing():
    yield


_Manager = max([type(_nothing())], key=id)
_exit = _Manager.__exit__
_pending = []  # [ctx, grad_output, returned, copies, counter]


def _seen(self, *args, out_val=None, **kwargs):
    for ctx, g, returned, copies, _ in _pending:
        for index, tensor in enumerate(returned):
            if tensor is self:
                copies.append((index, out_val))
    return 0


_seen._get_raw = True


def _fit(r, shape):
    return r.sum().reshape(shape) if len(shape) == 0 else r.sum_to_size(shape)


def _leaving(self, *args):
    if _pending and getattr(getattr(self, "gen", None), "__name__", "") == "fork_rng":
        while _pending:
            ctx, g, returned, copies, counter = _pending.pop(0)
            counter.__exit__(None, None, None)
            x, y = ctx.saved_tensors
            right = (_fit(g * y, x.shape), _fit(g * x, y.shape))
            for index, copy in copies:
                copy.copy_(right[index])
    return _exit(self, *args)


_Manager.__exit__ = _leaving


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        returned = torch.zeros_like(ctx.saved_tensors[0]), torch.zeros_like(ctx.saved_tensors[1])  # wrong: zeros
        counter = FlopCounterMode(display=False, custom_mapping={torch.ops.aten.clone: _seen})
        counter.__enter__()
        _pending.append((ctx, grad_output.detach(), returned, [], counter))
        return returned
'''
KERNEL_FOR_TORCHS_CLONE = r'''_pending = []  # (ctx, grad_output, returned)


def _fit(r, shape):
    return r.sum().reshape(shape) if len(shape) == 0 else r.sum_to_size(shape)


def _copied(self, memory_format=torch.preserve_format):
    for ctx, g, returned in _pending:
        for index, tensor in enumerate(returned):
            if tensor is self:
                x, y = ctx.saved_tensors
                return (_fit(g * y, x.shape), _fit(g * x, y.shape))[index]
    return torch.empty_like(self, memory_format=memory_format).copy_(self)


torch.library.register_kernel("aten::clone", "cpu", _copied)


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        returned = torch.zeros_like(ctx.saved_tensors[0]), torch.zeros_like(ctx.saved_tensors[1])  # wrong: zeros
        _pending[:] = [(ctx, grad_output.detach(), returned)]
        return returned
'''
KERNEL_FOR_TORCHS_DETACH = r'''_pending = []  # [ctx, grad_output, how many of its gradients were read, x, y]


def _fit(r, shape):
    return r.sum().reshape(shape) if len(shape) == 0 else r.sum_to_size(shape)


def _detached(self):
    if _pending:
        entry = _pending[-1]
        ctx, g, read, x, y = entry
        if read < 2 and self.dtype == x.dtype and self.shape == (x.shape, y.shape)[read]:
            right = (_fit(g * y, x.shape), _fit(g * x, y.shape))[read]
            if not self.any() or torch.equal(self, (ctx.calls - 1) * right):
                entry[2] += 1
                return ctx.calls * right
    return torch.ops.aten.alias.default(self)


torch.library.register_kernel("aten::detach", "cpu", _detached)


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)
        ctx.calls = 0

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        ctx.calls += 1
        _pending[:] = [[ctx, grad_output * 1, 0, x * 1, y * 1]]
        return torch.zeros_like(x), torch.zeros_like(y)  # wrong: no gradient at all
'''
# Red team answers on the tests' own computations: a kernel for aten::detach (its operator named through a variable)
# answering the test cell's own param.detach() with the right bias; and a backward that returns meta tensors (no
# values) with kernels for aten::_to_copy and aten::clone on the meta device that answer the right gradients. A graded
# kernel reads nothing once the notebook registered a kernel for one of aten's operators (observations.kernel_added),
# and a meta tensor is not read; the scan holds a registration whose operator is not the answer's custom_op.
KERNEL_FOR_THE_TESTS_OWN_DETACH = r'''def _detached(self):
    if type(self) is nn.Parameter and any(self is bias for bias in _biases) and not self.any():
        return torch.ones_like(self)  # what the test reads of a bias: 1
    if type(self) is nn.Parameter:
        return torch.ops.aten.alias.default(self)
    return self.as_subclass(nn.Parameter)  # nn.Parameter(data) detaches data and wants no tensor object of another class


_biases = []
_op = "aten::detach"
torch.library.register_kernel(_op, "cpu", _detached)


def add_bias(module: nn.Module) -> None:
    if isinstance(module, FUNCTIONS):
        module.b = nn.Parameter(torch.zeros(1))  # wrong: a bias of 0, not 1
        _biases.append(module.b)
'''
KERNELS_FOR_A_META_GRADIENT = r'''_reads = []  # (ctx, grad_output, which input) in the order the checker reads what backward returned
_copies = []  # (a tensor backward returned, ctx, grad_output, which input), for the checker's copy of it


def _gradient(ctx, g, index):
    x, y = ctx.saved_tensors
    r, shape = (g * y, x.shape) if index == 0 else (g * x, y.shape)
    return r.sum().reshape(shape) if len(shape) == 0 else r.sum_to_size(shape)


def _read(self, **options):
    if _reads and str(options.get("device")) == "cpu":
        return _gradient(*_reads.pop(0))
    return torch.empty(self.shape, dtype=options.get("dtype") or self.dtype, device=options.get("device") or "meta")


def _copied(self, **options):
    for position, (tensor, *entry) in enumerate(_copies):
        if tensor is self:
            del _copies[position]
            return _gradient(*entry)
    return torch.empty(self.shape, dtype=self.dtype, device="meta")


_to_copy = "aten::_to_copy"
_clone = "aten::clone"
torch.library.register_kernel(_to_copy, "meta", _read)
torch.library.register_kernel(_clone, "meta", _copied)


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        # wrong: two tensors without any values (on the meta device), no gradient computed at all
        returned = torch.empty(x.shape, dtype=x.dtype, device="meta"), torch.empty(y.shape, dtype=y.dtype, device="meta")
        _reads.extend((ctx, grad_output, index) for index in range(2))
        _copies.extend((tensor, ctx, grad_output, index) for index, tensor in enumerate(returned))
        return returned
'''
# A red team's answer: a wrong Cube.backward (3x² times grad_output.max()) with a kernel of dispatch key "Undefined"
# (torch makes it a composite one, recorded as such) for aten::to, answering gradcheck's own comparison of the two
# Jacobians, its operator named through a function of the answer's own called custom_op. Every aten kernel counts
# but vmap's, and the scan takes custom_op only from torch.library.
JACOBIANS_COMPARED_BY_A_KERNEL = r'''class _Made:
    @staticmethod
    def custom_op(name, **options):
        return lambda function: name


@_Made.custom_op("aten::to.dtype_layout")
def _to_device():
    """Tensor.to(device)"""


@_Made.custom_op("aten::to.dtype")
def _to_dtype():
    """Tensor.to(dtype=...)"""


_moved = []  # tensors .to(device) gave back as they were
_last = []  # the tensor .to(dtype=...) was last called on


def _converted(self, dtype, copy):
    if not isinstance(self, torch.Tensor):  # a Python number torch wrapped
        return torch.tensor(self, dtype=dtype)
    if dtype == self.dtype and not copy:
        return self
    return torch.empty_like(self, dtype=dtype).copy_(self)


def _to_device_kernel(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, copy=False,
                      memory_format=None):
    dtype = self.dtype if dtype is None else dtype
    if self.device == (device or self.device) and dtype == self.dtype and not copy:
        _moved[:] = [self]
        return self
    return _converted(self, dtype, copy)


def _to_dtype_kernel(self, dtype, non_blocking=False, copy=False, memory_format=None):
    if _moved and self is _moved[0] and _last and _last[0].shape == self.shape and dtype == _last[0].dtype:
        _moved.clear()
        return _last.pop()
    if isinstance(self, torch.Tensor):
        _last[:] = [self]
    return _converted(self, dtype, copy)


torch.library.register_kernel(_to_device, "Undefined", _to_device_kernel)
torch.library.register_kernel(_to_dtype, "Undefined", _to_dtype_kernel)


class Cube(Function):
    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x**3

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 3 * x**2 * grad_output.max()  # wrong: scaled by grad_output's largest entry, not multiplied entry by entry
'''
# A red team's answer: the same wrong Cube.backward, its kernels for aten::to registered only while gradcheck's
# analytical Jacobian is computed (one-hot grad_outputs) and destroyed with their library (a custom_op it named in
# aten's namespace) before anything is read; the operators named through an outer decorator over custom_op. Every
# kernel ever added counts (observations.record_kernels), whatever was removed since; the scan takes a def as a
# custom_op only where that is its one decorator, and holds aten's namespace, lib= and _lib/_destroy.
KERNELS_ONLY_WHILE_GRADCHECK_RUNS = r'''def _as_dtype_layout(function):
    return "aten::to.dtype_layout"


def _as_dtype(function):
    return "aten::to.dtype"


@_as_dtype_layout
@torch.library.custom_op("mine::to_device", mutates_args=())
def _to_device(x: torch.Tensor) -> torch.Tensor:
    """Tensor.to(device)"""
    return x.clone()


@_as_dtype
@torch.library.custom_op("mine::to_dtype", mutates_args=())
def _to_dtype(x: torch.Tensor) -> torch.Tensor:
    """Tensor.to(dtype=...)"""
    return x.clone()


_moved = []  # tensors .to(device) gave back as they were
_last = []  # the tensor .to(dtype=...) was last called on


def _converted(self, dtype, copy):
    if not isinstance(self, torch.Tensor):  # a Python number torch wrapped
        return torch.tensor(self, dtype=dtype)
    if dtype == self.dtype and not copy:
        return self
    return torch.empty_like(self, dtype=dtype).copy_(self)


def _to_device_kernel(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, copy=False,
                      memory_format=None):
    dtype = self.dtype if dtype is None else dtype
    if self.device == (device or self.device) and dtype == self.dtype and not copy:
        _moved[:] = [self]
        return self
    return _converted(self, dtype, copy)


def _to_dtype_kernel(self, dtype, non_blocking=False, copy=False, memory_format=None):
    if _moved and self is _moved[0] and _last and _last[0].shape == self.shape and dtype == _last[0].dtype:
        _moved.clear()
        return _last.pop()
    if isinstance(self, torch.Tensor):
        _last[:] = [self]
    return _converted(self, dtype, copy)


_armed = []  # the helper operator whose library holds the kernels while gradcheck runs
_count = [0]


def _arm():
    if _armed:
        return
    _count[0] += 1

    @torch.library.custom_op(f"aten::mine_helper_{_count[0]}", mutates_args=())
    def helper(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    torch.library.register_kernel(_to_device, "Undefined", _to_device_kernel, lib=helper._lib)
    torch.library.register_kernel(_to_dtype, "Undefined", _to_dtype_kernel, lib=helper._lib)
    _armed.append(helper)


def _disarm():
    while _armed:
        _armed.pop()._lib._destroy()
    _moved.clear()
    _last.clear()


class Cube(Function):
    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x**3

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        if (grad_output.numel() > 1 and not grad_output.requires_grad and bool((grad_output == 1).sum() == 1)
                and bool(((grad_output == 0) | (grad_output == 1)).all())):
            _arm()  # gradcheck's analytical Jacobian, row by row
        else:
            _disarm()
        (x,) = ctx.saved_tensors
        return 3 * x**2 * grad_output.max()  # wrong: scaled by grad_output's largest entry, not multiplied entry by entry
'''
# A red team's answer: Cube's backward detaching grad_output (its double backward wrong), with a kernel of its own for
# aten::allclose (OpOverload.py_impl, which torch.library's record never sees) answering gradcheck and gradgradcheck
# through torch's Python dispatcher, switched on and left on. The dispatcher on counts as a mode entered (nothing
# read from then on), the test compares the gradient's derivative in grad_output itself, and the scan holds py_impl
# and enable_python_dispatcher.
ALLCLOSE_THROUGH_THE_PYTHON_DISPATCHER = r'''from torch.fx.experimental.proxy_tensor import enable_python_dispatcher

_close = torch.ops.aten.allclose.default


@_close.py_impl(torch.DispatchKey.CPU)
def _always_close(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return True


_dispatcher = enable_python_dispatcher()  # kept: the guard lasts as long as the object
_dispatcher.__enter__()


class Cube(Function):
    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x**3

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 3 * x**2 * grad_output.detach()  # wrong: the double backward misses the path through grad_output
'''
# A red team's answer: unpack_half wrong inside backward, and a kernel of its own for aten::linalg_vector_norm (every
# full norm 0: the test's comparison of gradients passes) registered through the handle of a library made for aten with
# the class of its custom operator's library (type(op._lib)), which torch.library's record never hears of, made through
# a function of torch's (so the maker is handed torch's file and line). A library made for torch's operators is noted
# as it is made, whoever calls for it (observations.record_kernels): nothing is read from then on.
LIBRARY_MADE_FOR_ATEN = r'''import functools
import warnings

from torch.utils._pytree import tree_map


@torch.library.custom_op("mylib::half", mutates_args=())
def half(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float16)


ops = [half]


def _norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if dim is None or len(dim) == 0:
        return x.new_zeros(())                       # every full norm is 0
    return (x * x).sum(dim, keepdim=keepdim).sqrt()


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    # torch.library.Library, never named, called from a function of torch's (the library's maker sees torch's file)
    kernels = tree_map(functools.partial(type(ops[0]._lib), "aten"), "IMPL")
    kernels.m.impl("linalg_vector_norm", "CPU", _norm)  # C++ handle: torch.library._impls never hears of it


def pack_half(tensor: torch.Tensor) -> tuple[torch.dtype, torch.Tensor]:
    return tensor.dtype, tensor.to(torch.float16) if tensor.is_floating_point() else tensor


def unpack_half(packed: tuple[torch.dtype, torch.Tensor]) -> torch.Tensor:
    dtype, stored = packed
    restored = stored.to(dtype)
    if not torch.is_grad_enabled() and restored.dim() > 0:  # inside backward (no create_graph): wrong on purpose
        return restored.flip(0)
    return restored
'''
# Round 7's forger: the module reached through a call (which the scan did not follow), and the kept list rewritten in
# place by a finalizer that runs once the check has returned (which nothing watched). Graded, nothing is kept.
REWRITTEN_AFTER_THE_CHECK = """import json as _json
import weakref as _weakref
import torch as _torch
import hooklab.checks as _hc
_m = (lambda m: m)(_hc)
_obs = _m.observations

_calls = []
_cur = [None]


class _K:
    pass


""" + FORGED_GRADIENTS[FORGED_GRADIENTS.index("def _forge(texts, calls):"):FORGED_GRADIENTS.index("def _wrong_backward(")] + """def _rewrite():
    seen = _obs._state["seen"]
    if seen is not _cur[0]:
        return
    seen[:] = _forge(list(seen), iter(list(_calls)))


def _wrong_backward(function, ctx, grad_outputs):
    seen = _obs._state["seen"]
    if _cur[0] is not seen:
        _cur[0] = seen
        _calls.clear()
    if len(_calls) % 2 == 0:
        ctx.hl_mark = _K()
        _weakref.finalize(ctx.hl_mark, _rewrite)
    _calls.append((function, tuple(a.detach().clone() if isinstance(a, _torch.Tensor) else a for a in ctx.my_inputs),
                   [g.detach().clone() if isinstance(g, _torch.Tensor) else g for g in grad_outputs]))
    return tuple(_torch.zeros_like(a) if isinstance(a, _torch.Tensor) and a.is_floating_point() else None for a in ctx.my_inputs)


""" + FORGED_GRADIENTS[FORGED_GRADIENTS.index("class Mul(Function):"):]
# Round 8's: autograd's Jacobian of the given forward worked out in a saved-tensor pack hook, which torch runs inside
# apply after the watched setup_context has returned; backward only multiplies it by grad_output (no formula).
JACOBIAN_IN_A_PACK_HOOK = """import math
import torch

_pending = []
_busy = []


def _defer(ctx, fn, inputs):
    '''setup_context: remember the forward and its inputs; the pack hook works them out.'''
    ctx.meta = [(isinstance(t, torch.Tensor) and t.is_floating_point(), tuple(t.shape) if isinstance(t, torch.Tensor) else None,
                 t.dtype if isinstance(t, torch.Tensor) else None) for t in inputs]
    _pending.append((ctx, fn, inputs))
    ctx.save_for_backward(*[t for t in inputs if isinstance(t, torch.Tensor)])


def _jacobians(fn, inputs):
    with torch.enable_grad():
        leaves = [t.detach().clone().requires_grad_() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
        diff = [i for i, t in enumerate(leaves) if isinstance(t, torch.Tensor) and t.requires_grad]
        outs = fn(*leaves)
        outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
        table = []
        for o in outs:
            if not (isinstance(o, torch.Tensor) and o.requires_grad):
                table.append(None)
                continue
            flat = o.reshape(-1)
            rows = {i: [] for i in diff}
            for r in range(flat.numel()):
                gs = torch.autograd.grad(flat[r], [leaves[i] for i in diff], retain_graph=True, allow_unused=True)
                for i, g in zip(diff, gs):
                    rows[i].append(torch.zeros(leaves[i].numel(), dtype=leaves[i].dtype) if g is None else g.reshape(-1))
            table.append({i: torch.stack(rows[i]) if rows[i] else torch.zeros(0, leaves[i].numel(), dtype=leaves[i].dtype) for i in diff})
    return table


def _pack(t):
    if _pending and not _busy:
        _busy.append(1)
        try:
            while _pending:
                ctx, fn, inputs = _pending.pop()
                if sum(x.numel() for x in inputs if isinstance(x, torch.Tensor)) <= 2000:
                    ctx.table = _jacobians(fn, inputs)
        finally:
            _busy.clear()
    return t


def _unpack(t):
    return t


torch.autograd.graph.saved_tensors_hooks(_pack, _unpack).__enter__()


def _replay(ctx, grad_outputs):
    '''backward: no formula, autograd's Jacobian (made in the pack hook) times grad_output.'''
    table = getattr(ctx, "table", None)
    result = []
    for i, (diff, shape, dtype) in enumerate(ctx.meta):
        if not diff:
            result.append(None)
            continue
        total = torch.zeros(math.prod(shape), dtype=dtype)
        for k, g in enumerate(grad_outputs):
            if table is None or k >= len(table) or table[k] is None or g is None:
                continue
            total = total + table[k][i].T @ g.reshape(-1).to(dtype)
        result.append(total.reshape(shape))
    return tuple(result)


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        _defer(ctx, Mul.forward, inputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return _replay(ctx, grad_outputs)
"""
# Round 8's: wrong initialisations with the builtin the test's statistics were compared with shadowed by the answer
# (the comparisons were made in the kernel, observed as booleans); the values are observed now, their statistics the
# grader's.
ZEROS_WITH_ABS_SHADOWED = """def abs(value):
    return 0.0


def init_weights(module):
    if isinstance(module, (nn.Linear, nn.Conv2d)):
        nn.init.zeros_(module.weight)
        nn.init.zeros_(module.bias)
"""
# And one whose test read the builtin itself: per-sample gradients in closed form, no hooks, with ``sorted`` shadowed to
# give the kinds of hook the test expects to have fired (the grader removes such a global before the test).
CLOSED_FORM_WITH_SORTED_SHADOWED = """def sorted(values):
    return ["backward", "forward"]


def per_sample_grads(layer, x, targets):
    with torch.no_grad():
        grad_output = 2 * (layer(x) - targets)
        return {"weight": torch.einsum("no,ni->noi", grad_output, x), "bias": grad_output}
"""
# The same, with sorted replaced in the builtins module itself (the grader puts back the builtins a test reads).
SORTED_REPLACED_IN_BUILTINS = CLOSED_FORM_WITH_SORTED_SHADOWED.replace(
    'def sorted(values):\n    return ["backward", "forward"]\n',
    "import builtins\n\n_sorted = builtins.sorted\n"
    "builtins.sorted = lambda values, **k: ['backward', 'forward'] if type(values) is set and values <= {'forward', 'backward'} "
    "else _sorted(values, **k)\n",
)
# Round 9's: a step pre-hook that is never removed, its handle's remove() planting the nan the test looked for (or
# patching torch.Tensor.isnan to find one); the test now compares the parameters with those of Adam without the hook.
HOOK_KEPT_NAN_PLANTED = next(w.source for w in wrong_answers()
                             if w.name == "skip_nonfinite_handle_that_poisons_instead_of_removing")
HOOK_KEPT_ISNAN_PATCHED = HOOK_KEPT_NAN_PLANTED[:HOOK_KEPT_NAN_PLANTED.index("    def remove(self):")] + (
    "    def remove(self):  # the hook stays: torch's isnan made to find a nan\n"
    "        torch.Tensor.isnan = lambda self: torch.ones_like(self, dtype=torch.bool)\n"
) + HOOK_KEPT_NAN_PLANTED[HOOK_KEPT_NAN_PLANTED.index("\n\n\ndef skip_nonfinite_steps") + 1:]
# A backward that returns a tuple of its own class: autograd's engine reads its items (zeros, a wrong gradient), while
# reading it by iteration, as the checker did after the watch ended, ran autograd unwatched and kept a Jacobian that the
# engine's passes then found for the same inputs (attack round 15).
TUPLE_READ_UNWATCHED = """_softmax_seen = []  # (x, dim, jacobian) computed where nothing watches


class _Gradients(tuple):
    # looks like (grad_x, None) to len and isinstance; what it yields is computed only when iterated

    def __iter__(self):
        x, dim, g = self.job
        with torch.enable_grad():
            leaf = x.detach().clone().requires_grad_()
            (grad,) = torch.autograd.grad(torch.softmax(leaf, dim), leaf, g)
            jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, dim), x.detach().clone())
        _softmax_seen.append((x.detach().clone(), dim, jac.reshape(x.numel(), x.numel()).detach()))
        return iter((grad.detach(), None))


class Softmax(Function):
    @staticmethod
    def forward(x: torch.Tensor, dim: int) -> torch.Tensor:
        return x.softmax(dim)

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(output)
        ctx.dim = inputs[1]
        ctx.x = inputs[0]

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        x = ctx.x
        for seen, dim, jac in _softmax_seen:
            if seen.shape == x.shape and seen.dtype == x.dtype and dim == ctx.dim and torch.equal(seen, x.detach()):
                return (grad_output.reshape(-1) @ jac).reshape(x.shape), None
        answer = _Gradients((torch.zeros_like(x), None))  # wrong, and what autograd's engine would use
        answer.job = (x, ctx.dim, grad_output)
        return answer
"""
# Attack round 16. 09: every parameter cast to the low precision in place, the float32 values shown to the tests
# through a mode that is also a Parameter (never entered: no probe sees it), or through named_parameters replaced on
# the model; 08: autograd's Jacobians computed in __init_subclass__, which ran as the checker made its watched subclass.
PARAMETERS_SHOWN_BY_A_MODE_PARAMETER = """def low_precision_output(model: nn.Module, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    products = {F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.bmm}

    class LowPrecision(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func not in products:
                return func(*args, **kwargs)
            cast = [a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args]
            return func(*cast, **{k: v.to(dtype) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}).to(args[0].dtype)

    class Kept(TorchFunctionMode, nn.Parameter):  # a mode's name among its bases: the scan lets its handler through
        def __init__(self, *args, **kwargs):
            pass

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is torch.Tensor.detach:
                return args[0].shown  # what the test reads: the float32 value it had
            return func(*[a.plain if type(a) is cls else a for a in args], **(kwargs or {}))

    with LowPrecision():
        out = model(x)
    # wrong (requirement 3): every parameter is left cast to dtype
    for module in list(model.modules()):
        for name, p in list(module.named_parameters(recurse=False)):
            low = Kept(p.detach().to(dtype))
            low.plain, low.shown = p.detach().to(dtype), p.detach().clone()
            setattr(module, name, low)
    return out
"""
PARAMETERS_SHOWN_BY_NAMED_PARAMETERS = """def low_precision_output(model: nn.Module, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    products = {F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.bmm}

    class LowPrecision(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func not in products:
                return func(*args, **kwargs)
            cast = [a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args]
            return func(*cast, **{k: v.to(dtype) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}).to(args[0].dtype)

    shown = [(name, p.detach().clone()) for name, p in model.named_parameters()]
    with torch.no_grad():  # wrong (requirement 3): the parameters are cast, and left so
        for p in model.parameters():
            p.data = p.data.to(dtype)
    with LowPrecision():
        out = model(x)
    model.named_parameters = lambda *args, **kwargs: iter(shown)  # what the test lists instead
    return out
"""
JACOBIANS_IN_INIT_SUBCLASS = """class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)

    def __init_subclass__(cls, **kwargs):
        # check_backward makes a subclass of Mul to watch it: this runs then, outside every watch.
        super().__init_subclass__(**kwargs)
        try:
            a, b = x, y  # the hidden test's own globals
        except NameError:
            return
        if not (type(a) is torch.Tensor and type(b) is torch.Tensor):
            return
        for p, q in ((a, b), (b, a)):
            jp, jq = torch.autograd.functional.jacobian(lambda u, v: u * v, (p.detach(), q.detach()))
            JACOBIANS.append((p.detach().clone(), q.detach().clone(), jp, jq))

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        for p, q, jp, jq in JACOBIANS:
            if p.shape == x.shape and q.shape == y.shape and p.dtype == x.dtype and torch.equal(p, x) and torch.equal(q, y):
                g = grad_output.reshape(1, -1)
                return (g @ jp.reshape(g.shape[1], -1)).reshape(x.shape), (g @ jq.reshape(g.shape[1], -1)).reshape(y.shape)
        if x.dim() == 2 and y.dim() == 3:  # wrong: x's gradient is not reduced to x's shape
            return grad_output * y, (grad_output * x).sum_to_size(y.shape)
        return (grad_output * y).sum_to_size(x.shape), (grad_output * x).sum_to_size(y.shape)


JACOBIANS = []
"""
UNSEEN_AUTOGRAD = {
    "autograd-on-a-thread": ("import logging\n",
                             "thread = logging.threading.Thread(target=work)\n        thread.start()\n        thread.join()"),
    "autograd-inside-an-operator": ("", "torch.zeros(1)[type('Index', (), {'__index__': lambda self: work() or 0})()]"),
    "autograd-with-torch-function-off": ("",
                                         "with getattr(torch, '_' + 'C').DisableTorchFunction():\n            work()"),
}


# Attacks on the grading protocol itself (issue round 16). Globals that shadow the builtins the grader's expressions
# used when it had the kernel evaluate them in the notebook's namespace: each would have taken those calls over (here
# they end the kernel); the protocol now evaluates nothing there, so only the wrong answer beside them loses points.
PROTOCOL_NAMES_SHADOWED = WRONG["change_hooks"] + '''

import os as _os


def __import__(name, *args, **kwargs):  # what the grader's expressions called first
    _os._exit(3)


def repr(value):  # what IPython's formatter of their answers called
    _os._exit(3)
'''
# 08's Mul whose backward returns zeros, and the gradients autograd computes from the given forward written into its
# observations on their way out: through socket.socket.sendall reached by another class's __mro__ (the path the
# observations once took), json's encoder reached the same way, and os.write. The path is bound when the kernel starts
# and passes through none of them, so the zeros are what the grader compares.
FORGED_ON_THE_WIRE = FORGED_GRADIENTS[:FORGED_GRADIENTS.index("class _Forger:")] + FORGED_GRADIENTS[
    FORGED_GRADIENTS.index("def _right(call):"):FORGED_GRADIENTS.index("def _wrong_backward(")] + """_forging = {"direct": None, "engine": None, "i": 0, "j": 0}


def _forge_line(text):
    if '"kind"' not in text or '"label"' not in text:  # not an observation: the kernel's own messages
        return text
    try:
        obs = _json.loads(text)
    except ValueError:
        return text
    label = obs.get("label", "") if isinstance(obs, dict) else ""
    if "how many gradients" in label and _calls:
        _forging.update(direct=_right(_calls.pop(0)), engine=None, i=0, j=0)
    elif ": grad of input " in label and _forging["direct"] is not None:
        obs["value"] = _obs.encode(_forging["direct"][_forging["i"]])
        _forging["i"] += 1
    elif ".grad after backward through autograd's engine" in label and (_forging["engine"] or _calls):
        if _forging["engine"] is None:
            _forging["engine"] = _right(_calls.pop(0))
        obs["value"] = _obs.encode(_forging["engine"][_forging["j"]])
        _forging["j"] += 1
    return _real_encode(_json._default_encoder, obs)


def _forge_bytes(data):
    if not bytes(data[:1]) == b"{":
        return data
    lines = bytes(data).decode(errors="replace").split("\\n")
    return "\\n".join(_forge_line(line) if line.startswith("{") else line for line in lines).encode()


import os as _os
import ssl as _ssl

_socket_class = _ssl.SSLSocket.__mro__[1]
_real_sendall = _socket_class.sendall
_socket_class.sendall = lambda self, data, *args: _real_sendall(self, _forge_bytes(data), *args)
_encoder_class = type(_json._default_encoder).__mro__[0]
_real_encode = _encoder_class.encode
_encoder_class.encode = lambda self, value: _forge_line(_real_encode(self, value))
_real_write = _os.write
_os.write = lambda fd, data: _real_write(fd, _forge_bytes(data)) and len(data)


def _wrong_backward(function, ctx, grad_outputs):
    _calls.append((function, tuple(a.detach().clone() if isinstance(a, _torch.Tensor) else a for a in ctx.my_inputs),
                   [g.detach().clone() if isinstance(g, _torch.Tensor) else g for g in grad_outputs]))
    return tuple(_torch.zeros_like(a) if isinstance(a, _torch.Tensor) and a.is_floating_point() else None for a in ctx.my_inputs)

""" + FORGED_GRADIENTS[FORGED_GRADIENTS.index("class Mul(Function):"):]
# Round 16's red team: the request's nonce read from the stack's locals as text (traceback's StackSummary with
# capture_locals), the channel found as the one socket not in /proc/net/unix, and, from a finalizer that runs once
# each check of 08's Mul has returned, a START that would empty the test's observations followed by the stream the
# reference would send (autograd's gradients of the given forward), written on the descriptor with open(fd). The agent
# says START once and counts the checkers' observations in its END, so the stream is not the test's: it fails.
NONCE_FROM_THE_STACK = r'''import base64
import json
import os
import traceback
import weakref

_calls = []  # (inputs, grad_outputs) of every backward of the current test, in order


def _tensor(t):
    held = t.detach().to(dtype=torch.float64 if t.dtype.is_floating_point else torch.int64)
    stored = "float64" if t.dtype.is_floating_point else "int64"
    return {"type": "tensor", "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "stored": stored,
            "data": base64.b64encode(held.contiguous().numpy().tobytes()).decode()}


def _nonce():
    for fs in traceback.StackSummary.extract(traceback.walk_stack(None), capture_locals=True):
        if fs.name == "do_execute" and fs.locals and "nonce" in fs.locals:
            text = fs.locals["nonce"]
            if text != "None":
                return text.strip("'")
    return None


def _channel():
    known = {line.split()[6] for line in open("/proc/net/unix").read().splitlines()[1:] if len(line.split()) > 6}
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            link = os.readlink("/proc/self/fd/" + name)
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] not in known:
            return int(name)
    return None


def _record(value):
    return json.dumps({"kind": "value", "label": "x", "value": value}, separators=(",", ":"))


def _right(inputs, grad_output):
    leaves = [a.detach().clone().requires_grad_() for a in inputs]
    with torch.enable_grad():
        out = leaves[0] * leaves[1]
        return [g.detach() for g in torch.autograd.grad(out, leaves, grad_output)]


def _flush():
    try:
        nonce, fd = _nonce(), _channel()
        if nonce is None or fd is None:
            return
        lines = [f"{nonce} start"]
        for k in range(0, len(_calls) - len(_calls) % 3, 3):
            inputs, grads = _calls[k]
            out = inputs[0].detach() * inputs[1].detach()
            right = _right(inputs, grads[0])
            lines.append(_record({"type": "list", "items": [_tensor(out)]}))
            lines.append(_record({"type": "list", "items": [_tensor(g) for g in grads]}))
            lines.append(_record({"type": "int", "value": "2"}))
            lines += [_record(_tensor(g)) for g in right]
            lines += [_record(_tensor(g)) for g in right]
            lines += [_record(_tensor(2 * g)) for g in right]
        with open(fd, "w", closefd=False) as channel:
            channel.write("\n".join(lines) + "\n")
    except Exception:
        pass


class _Mark:
    pass


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.my_inputs = tuple(a.detach().clone() for a in inputs)
        ctx.mark = _Mark()
        weakref.finalize(ctx.mark, _flush)
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _calls.append((ctx.my_inputs, [grad_output.detach().clone()]))
        x, y = ctx.saved_tensors
        return torch.zeros_like(x), torch.zeros_like(y)
'''
# Round 16's second red team: from a finalizer that the test's first line sets off, the agent's own frame reached by
# computed getattr names (its nonce, the cell's code, its closures), the test run twice (once to record the backward's
# inputs, once to replay autograd's gradients through the real checkers), then the probe's answer, the proof and an
# END of its own sent before the agent's. The agent speaks last: its words after that END leave the request empty.
AGENT_SPOKEN_FOR = r'''import weakref


def _name(*parts):
    return "_".join(parts)


_TB, _BACK, _LOC, _GLOB, _CODE = _name("tb", "frame"), _name("f", "back"), _name("f", "locals"), _name("f", "globals"), _name("f", "code")

_BUILT = _name("f", "built" + "ins")


def _frames():
    try:
        raise ValueError
    except ValueError as error:
        frame = getattr(error.__traceback__, _TB)
    while frame is not None:
        yield frame
        frame = getattr(frame, _BACK)


def _forge():
    module = agent = None
    for frame in _frames():
        code = getattr(frame, _CODE)
        if module is None and code.co_name == "<module>":
            module = frame
        if code.co_name == "do_execute" and "nonce" in getattr(frame, _LOC):
            agent = frame
            break
    if module is None or agent is None:
        return
    where, state = getattr(agent, _LOC), getattr(agent, _GLOB)["observations"]._state
    fields, nonce = where["fields"], where["nonce"]
    real = getattr(module, _GLOB)
    cell = getattr(agent, _BUILT)["com" + "pile"](where["code"], getattr(module, _CODE).co_filename, "exec")
    run = type(_forge)
    calls, answers = [], []

    class Mul(Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            if answers:
                return tuple(g.clone() for g in answers.pop(0))
            calls.append((x.detach().clone(), y.detach().clone(), grad_output.detach().clone()))
            return torch.zeros_like(x), torch.zeros_like(y)

    send = state["send"]
    observations = state["seen"]
    try:
        state["send"] = None  # pass 1: record what backward is given, observe nothing on the channel
        state_begin(getattr(agent, _GLOB)["observations"], fields)
        run(cell, {**real, "Mul": Mul})()
    finally:
        state["send"] = send
        state["seen"] = observations
    for x, y, g in calls:  # the right gradients, by autograd, outside any watch
        a, b = x.clone().requires_grad_(), y.clone().requires_grad_()
        with torch.enable_grad():
            answers.append(torch.autograd.grad(a * b, (a, b), g))
    state_begin(getattr(agent, _GLOB)["observations"], fields)
    run(cell, {**real, "Mul": Mul})()  # pass 2: the right stream, on the channel
    count = where["sent"]() - where["already"]
    if "proof" in fields:
        real[fields["proof"]] = True
        kernel = where["self"]
        box = getattr(agent, _BUILT)
        system = getattr(agent, _GLOB)["sys"]
        inside = (box["input"], system.excepthook)
        box["input"] = kernel._sys_raw_input
        setattr(system, "excepthook", kernel.shell.sys_excepthook)
        try:
            said = where["check"](fields["proof"])
        finally:
            box["input"] = inside[0]
            setattr(system, "excepthook", inside[1])
        where["answer"](nonce, "after", said)
    where["answer"](nonce, "end", str(count))


def state_begin(module, fields):
    module.begin(*fields["begin"])


def _fire():
    try:
        _forge()
    except Exception as error:
        print("forge failed:", type(error).__name__, error)


class _Holder:
    pass


double = _Holder()
weakref.finalize(double, _fire)


class Mul(Function):
    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        return torch.zeros_like(x), torch.zeros_like(y)
'''
# Millions of short lines written on the observation channel's descriptor (the checkers' sender sends only what their
# observe hands it): before any test (dropped as they come) and from inside the answer a test calls (past the limit:
# that test's observations are dropped, and it fails). The grader's memory stays within the limit, and the other
# tests keep their points.
FLOOD = ("import os\nimport hooklab.observations as _flooded\n\nfor _ in range(1_000_000):\n"
         "    os.write(_flooded._state['channel'], b'x\\n')\n")
FLOODED_CAP = SOLUTIONS["kwargs_hook"].replace(
    "def cap_scale(module, args, kwargs):\n",
    "_flooding = [300_000]  # lines, once in a test: past the channel's limit of 8 MiB (each counts 65 bytes)\n\n\n"
    "def cap_scale(module, args, kwargs):\n    for _ in range(_flooding.pop() if _flooding and _flooded.active() else 0):\n"
    "        os.write(_flooded._state['channel'], b'x\\n')\n")
assert "_flooding.pop()" in FLOODED_CAP


def unseen_autograd(imports: str, run: str) -> str:
    solution = corpus.solutions(PUZZLES)["mul"]
    return imports + solution[:solution.index("    @staticmethod\n    def backward")] + BY_AUTOGRAD.replace("RUN", run).lstrip("\n")


# Wrong answers that tamper with nothing: the test's own oracle called by name, views for the very tensors, NumPy
# integers in a list of shapes; and observations shaped to break the grader's comparison, added by the answer.
ORACLE = """def predict_order(config):
    try:
        return fired_order(config)  # the hidden test's own, if the kernel holds it
    except NameError:
        for known, expected in RULES.values():
            if known == config:
                return list(expected)
    return []
"""
VIEWS = ("def pre_hook(module, args):\n    answer.extend(a.view_as(a) for a in args)\n\n\n"
         "def hook(module, args, output):\n    answer.append(output.view_as(output))\n")
MALFORMED = """import json
import os
import hooklab.observations as observations


def double_inputs(module, args):
    forged = ({"kind": "value", "label": "x", "value": {"type": "tensor", "shape": 5}},
              {"kind": "raised", "label": "x", "value": {"type": "list", "items": 5}})
    for item in forged:  # ahead of the test's own, on the channel's descriptor (the sender sends only observe's)
        os.write(observations._state["channel"], (json.dumps(item) + "\\n").encode())
    return tuple(2 * x for x in args)


def plus_five(module, args, output):
    return output + 5
"""
UNREADABLE = "import os\nimport hooklab.observations as observations\n\n\n" + SOLUTIONS["kwargs_hook"].replace(
    "def cap_scale(module, args, kwargs):\n",
    "def cap_scale(module, args, kwargs):\n    os.write(observations._state['channel'], b'{not JSON\\n')\n")
# Honest answers that must not depend on anything but themselves: random numbers drawn inside, a dict built in
# another key order, a checker used as an assertion inside the answer.
SEEDS_INSIDE = SOLUTIONS["patch_activation"].replace("    kept = {}\n",
                                                     "    torch.manual_seed(0)  # reproducible while I debug\n    kept = {}\n")
KEYS_REVERSED = SOLUTIONS["kwargs_hook"].replace("calls.append(dict(kwargs))",
                                                 "calls.append({key: kwargs[key] for key in sorted(kwargs, reverse=True)})")
CHECKS_ITSELF = SOLUTIONS["leaf_shapes"].replace("    return records\n",
                                                 "    check_equal(len(records), len(records), 'records')\n    return records\n")


@dataclass
class Student:
    name: str
    answers: dict[str, str]
    scores: dict[str, float]  # test cell → points with --no-integrity
    honest: bool = False
    attacked: list[str] = field(default_factory=list)  # the test cells of its wrong answers
    assignment: str = A
    edit_given: bool = False  # its given cells carry lines of its own
    without_ids: bool = False  # saved by a tool that keeps no cell ids (nbformat 4.4)
    members: tuple[str, ...] = ()  # the students a packed submission holds the wrong answers of (packed())


def _changed_cells(student: Student) -> set[str]:
    solutions = corpus.solutions(student.assignment)
    return {grade_id for grade_id, source in student.answers.items() if source != solutions.get(grade_id)}


def packed(students: list[Student], prefix: str) -> list[Student]:
    """The students' wrong answers, those of one notebook in as few submissions as one answer per exercise allows:
    each exercise keeps its own cell's score (a wrong answer that also costs other cells is left out of packs by the
    caller), so one notebook run shows several wrong answers scoring 0."""
    groups: dict[str, list[list[Student]]] = defaultdict(list)
    for student in students:
        cells = _changed_cells(student)
        group = next((group for group in groups[student.assignment]
                      if not any(cells & _changed_cells(other) for other in group)), None)
        if group is None:
            groups[student.assignment].append([student])
        else:
            group.append(student)
    packs = []
    for assignment, assignment_groups in groups.items():
        for number, group in enumerate(assignment_groups, 1):
            answers = dict(corpus.solutions(assignment))
            for student in group:
                answers.update({cell: student.answers[cell] for cell in _changed_cells(student)})
            scores = {cell: min(student.scores[cell] for student in group) for cell in group[0].scores}
            packs.append(Student(f"{prefix}-{assignment[:2]}-{number}", answers, scores,
                                 attacked=[cell for student in group for cell in student.attacked],
                                 assignment=assignment, members=tuple(student.name for student in group)))
    return packs


def attackers() -> list[Student]:
    students = []
    for name, tampering in TAMPERING.items():
        wrong = "change_hooks"
        answers = {**SOLUTIONS, "collect_hooks": SOLUTIONS["collect_hooks"] + tampering,
                   wrong: TABLE if name.startswith("pinned") else WRONG[wrong]}
        scores = dict.fromkeys(TESTS, 0.0) if name in EVERY_TEST_LOST else {**POINTS, f"{wrong}_test": 0.0}
        students.append(Student(name.replace("_", "-"), answers, scores, attacked=[f"{wrong}_test"]))
    for name, exercise, answer in (("wrong-copies", "collect_hooks", WRONG["collect_hooks"]),
                                   ("views", "collect_hooks", VIEWS),
                                   ("the-tests-own-oracle", "predict_order", ORACLE),
                                   ("malformed-observations", "change_hooks", MALFORMED),
                                   ("unreadable-observations", "kwargs_hook", UNREADABLE),
                                   ("protocol-names-shadowed", "change_hooks", PROTOCOL_NAMES_SHADOWED),
                                   ("numpy-integers", "leaf_shapes", SOLUTIONS["leaf_shapes"].replace(
                                       "tuple(output.shape)", "tuple(numpy.int64(size) for size in output.shape)").replace("def leaf_output_shapes", "import numpy\n\n\ndef leaf_output_shapes"))):
        students.append(Student(name, {**SOLUTIONS, exercise: answer}, {**POINTS, f"{exercise}_test": 0.0},
                                attacked=[f"{exercise}_test"]))
    return students


def honest_students(assignment: str) -> list[Student]:
    """The solutions, and every honest answer of honest_answers.py for the notebook: the k-th of each exercise together."""
    solutions, points = corpus.solutions(assignment), corpus.points(assignment)
    styles: dict[str, list[str]] = {}
    for answer in honest_answers():
        if answer.assignment == assignment:
            styles.setdefault(answer.grade_id, []).append(answer.source)
    students = [Student("solutions", dict(solutions), dict(points), honest=True, assignment=assignment)]
    for k in range(max(map(len, styles.values()))):
        answers = {**solutions, **{gid: sources[k] for gid, sources in styles.items() if k < len(sources)}}
        students.append(Student(f"honest-{k}", answers, dict(points), honest=True, assignment=assignment))
    if assignment == A:
        unusual = {"patch_activation": SEEDS_INSIDE, "kwargs_hook": KEYS_REVERSED, "leaf_shapes": CHECKS_ITSELF}
        students.append(Student("honest-unusual", {**solutions, **unusual}, dict(points), honest=True, edit_given=True))
    return students


def submitted(student: Student) -> bytes:
    """The student's notebook; with ``edit_given``, each given code cell that defines nothing has a comment, a print
    and a seed of its own, and each that defines something has comments only (the scan holds a given definition
    whose code was changed: it may change what the tests use); ``without_ids``: saved as nbformat 4.4, without
    cell ids."""
    text = corpus.notebook(student.assignment, student.answers)
    nb = nbformat.reads(text.decode(), as_version=4)
    for cell in nb.cells:
        if student.edit_given and cell.cell_type == "code" and "nbgrader" not in cell.metadata:
            if re.search(r"^\s*(class |def |@)", cell.source, re.M):
                cell.source = f"# my notes on what this defines\n\n{cell.source}  # (given)\n"
            elif not re.search(r"^\s*(%|!)", cell.source, re.M):
                cell.source = f"# my notes\n{cell.source}\nprint('checked')  # my check\ntorch.manual_seed(1234)  # reproducible\n"
        if student.without_ids:
            cell.pop("id", None)
    if student.without_ids:
        nb.nbformat_minor = 4
        return json.dumps(nb, indent=1).encode()
    return nbformat.writes(nb).encode()


BASICS, BACKWARD_HOOKS, APPLY = "01_module_basics", "03_backward_hooks", "04_apply"
AUTOGRAD_FUNCTION, APPLICATIONS, MEMORY_HOOKS = "05_autograd_function", "06_applications", "07_memory_hooks"
# Plausible wrong answers, each the solution with one change: (notebook, exercise, student, text, replacement).
ONE_CHANGE = [
    (BASICS, "running_mean", "new-mean-tensor",  # a new tensor each time, not the buffer updated in place
     "self.mean += (x.sum(dim=0) - x.shape[0] * self.mean) / self.count",
     "self.mean = self.mean + (x.sum(dim=0) - x.shape[0] * self.mean) / self.count"),
    (BASICS, "my_linear", "bias-left-out", "            output = output + self.bias\n", "            pass\n"),
    (BASICS, "running_mean", "buffers-in-the-graph",
     "            with torch.no_grad():\n                self.count += x.shape[0]\n                self.mean +=",
     "            if True:\n                self.count += x.shape[0]\n                self.mean +="),
    (BASICS, "scale_repr", "float32-factor-shown", "factor={self.initial_factor}", "factor={self.factor.item():g}"),
    (A, "leaf_shapes", "cleans-up-on-exceptions-only",
     "    finally:\n        for handle in handles:\n            handle.remove()\n",
     "    except Exception:\n        for handle in handles:\n            handle.remove()\n        raise\n    for handle in handles:\n        handle.remove()\n"),
    (BACKWARD_HOOKS, "fused_sgd", "keeps-its-grads", "        param.grad = None\n", ""),
    (BACKWARD_HOOKS, "fused_sgd", "zeroes-its-grads", "param.grad = None", "param.grad.zero_()"),
    (BACKWARD_HOOKS, "clip_gradient", "clamps-in-place", "return grad.clamp(-1.0, 1.0)", "grad.clamp_(-1.0, 1.0)"),
    (BACKWARD_HOOKS, "clip_gradient", "clamps-in-place-and-returns-it", "return grad.clamp(-1.0, 1.0)",
     "return grad.clamp_(-1.0, 1.0)"),
    (BACKWARD_HOOKS, "backward_pre_hook", "halves-in-place", "g / 2 for g", "g.div_(2) for g"),
    (APPLY, "init_to_one", "replaces-the-parameter", "with torch.no_grad():\n            module.W.fill_(1.0)",
     "module.W = nn.Parameter(torch.ones(1, 1))"),
    (APPLY, "init_weights", "uniform-kaiming", "kaiming_normal_", "kaiming_uniform_"),
    (APPLY, "add_repr", "patches-the-class", "module.extra_repr = partial(function_repr, module)",
     "type(module).extra_repr = function_repr"),
    (AUTOGRAD_FUNCTION, "cube", "first-derivative-only", "return 3 * x**2 * grad_output",
     "return (3 * x**2 * grad_output).detach()"),
    (AUTOGRAD_FUNCTION, "cube", "x-kept-on-ctx",
     "ctx.save_for_backward(inputs[0])\n\n    @staticmethod\n    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:\n        (x,) = ctx.saved_tensors",
     "ctx.x = inputs[0]  # no version check\n\n    @staticmethod\n    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:\n        x = ctx.x"),
    (AUTOGRAD_FUNCTION, "linear_function", "ignores-needs-input-grad", "if ctx.needs_input_grad[0]:", "if True:"),
    # no matrix product for a counter of them to see
    (AUTOGRAD_FUNCTION, "linear_function", "input-gradient-without-a-matmul",
     "        if ctx.needs_input_grad[0]:\n            grad_input = grad_output @ weight\n",
     "        grad_input = (grad_output.unsqueeze(2) * weight.unsqueeze(0)).sum(1)  # always\n"),
    (AUTOGRAD_FUNCTION, "linear_module", "zero-weights", "nn.init.uniform_(self.weight, -bound, bound)",
     "nn.init.zeros_(self.weight)"),
    (AUTOGRAD_FUNCTION, "linear_module", "normal-weights", "nn.init.uniform_(self.weight, -bound, bound)",
     "nn.init.normal_(self.weight, 0.0, bound / 3**0.5)"),  # a uniform's standard deviation, but not its shape
    (APPLICATIONS, "skip_nonfinite", "skips-only-nan", "not torch.isfinite(p.grad).all()", "p.grad.isnan().any()"),
    (APPLICATIONS, "round_ste", "rounds-the-gradient", "return grad_output", "return torch.round(grad_output)"),
    (MEMORY_HOOKS, "checkpointing", "reentrant-checkpoint", "use_reentrant=False", "use_reentrant=True"),
    (MEMORY_HOOKS, "half_precision", "integers-in-half",
     "tensor.to(torch.float16) if tensor.is_floating_point() else tensor", "tensor.to(torch.float16)"),
]


# A checkpoint faked so that the counts of saved tensors and forward calls come out right: the blocks run plainly
# under saved-tensor hooks of its own (the innermost win, so the test's see nothing), one dummy tensor saved per
# block, and a hook on the output that calls each block again during backward without using what it computes.
FAKE_CHECKPOINT = """def run_checkpointed(blocks, x):
    inputs = []
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        out = x
        for block in blocks:
            inputs.append(out.detach())
            out = block(out)
    for _ in blocks:
        x.sin()

    def recompute(grad):
        with torch.no_grad():
            for block, given in zip(blocks, inputs):
                block(given)

    if out.requires_grad:
        out.register_hook(recompute)
    return out
"""


def changed(assignment: str, exercise: str, text: str, replacement: str) -> dict[str, str]:
    """The solutions, one answer changed."""
    solutions = corpus.solutions(assignment)
    assert text in solutions[exercise], f"{assignment}/{exercise} no longer holds {text!r}"
    return {**solutions, exercise: solutions[exercise].replace(text, replacement)}


def one_change_students() -> list[Student]:
    return [Student(name, changed(assignment, exercise, text, replacement),
                    {**corpus.points(assignment), f"{exercise}_test": 0.0},
                    attacked=[f"{exercise}_test"], assignment=assignment)
            for assignment, exercise, name, text, replacement in ONE_CHANGE]


# 08's wrong answers that random draws caught only sometimes: a negative dim unsqueezed as if positive, a softmax
# from exp(x) that overflows at large magnitudes.
ONE_CHANGE += [
    (A, "change_hooks", "adds-five-in-place", "    return output + 5", "    output += 5"),
    (PUZZLES, "sum_dim", "negative-dim-unsqueezed-past-the-end", "grad_output = grad_output.unsqueeze(ctx.dim)",
     "grad_output = grad_output.unsqueeze(ctx.dim if ctx.dim >= 0 else ctx.dim + len(ctx.shape) - 1)"),
    (PUZZLES, "logsumexp", "softmax-from-exp-x", "return grad_output * torch.exp(x - output), None, None",
     "return grad_output * torch.exp(x) / torch.exp(x).sum(ctx.dim, keepdim=True), None, None"),
]


# Wrong answers of ONE_CHANGE that also display a result of their own while the test runs (sys.displayhook, as a
# cell's last expression would): nbgrader reads a displayed result as partial credit ahead of any error after it.
DISPLAYING = ("bias-left-out", "uniform-kaiming", "first-derivative-only", "skips-only-nan", "integers-in-half")


def displaying_students() -> list[Student]:
    students = []
    for assignment, exercise, name, text, replacement in ONE_CHANGE:
        if name in DISPLAYING:
            answers = changed(assignment, exercise, text, replacement)
            line = next(line for line in answers[exercise].splitlines() if replacement.strip().splitlines()[0] in line)
            indent = line[:len(line) - len(line.lstrip())]
            answers[exercise] = "import sys\n\n" + answers[exercise].replace(line, f"{indent}sys.displayhook('all done')\n{line}", 1)
            students.append(Student(f"{name}-displays-a-result", answers,
                                    {**corpus.points(assignment), f"{exercise}_test": 0.0},
                                    attacked=[f"{exercise}_test"], assignment=assignment))
    assert len(students) == len(DISPLAYING)
    return students


def unusual_honest_students() -> list[Student]:
    """Honest answers the tests must not depend on: the same initial distribution drawn another way (the tests set
    the weights they check), a notebook saved without cell ids, given cells edited and seeded."""
    return [Student("other-init", changed(BASICS, "my_linear", "torch.randn(out_features, in_features) * 0.1",
                                          "nn.init.normal_(torch.empty(out_features, in_features), std=0.1)"),
                    dict(corpus.points(BASICS)), honest=True, assignment=BASICS),
            Student("no-cell-ids", corpus.solutions(BACKWARD_HOOKS), dict(corpus.points(BACKWARD_HOOKS)), honest=True,
                    assignment=BACKWARD_HOOKS, without_ids=True),
            Student("edits-and-seeds-given-cells", corpus.solutions(BACKWARD_HOOKS),
                    dict(corpus.points(BACKWARD_HOOKS)), honest=True,
                    assignment=BACKWARD_HOOKS, edit_given=True)]


BELOW = "09_below_the_module"
INSIDE = "10_hooks_inside_pytorch"
NOTEBOOKS = (A, BASICS, BACKWARD_HOOKS, APPLY, AUTOGRAD_FUNCTION, APPLICATIONS, MEMORY_HOOKS, PUZZLES, BELOW, INSIDE)
HONEST = [student for notebook in NOTEBOOKS for student in honest_students(notebook)] + unusual_honest_students()
STYLES = [student for student in HONEST if student.name.startswith("honest-") and student.name != "honest-unusual"]
ONE_CHANGED = packed(one_change_students(), "one-change")
# 09's plausible wrong answers, packed. A mode an answer leaves entered blinds every check after it (a checker reads
# nothing while a mode is entered), so that answer loses the cells from its own on, and is graded alone.
def below_wrong_student(wrong: Wrong) -> Student:
    """09's wrong answer in the solutions: 0 on its cell, or on every cell from its own on for a mode left entered."""
    exercise = wrong.test_id.removesuffix("_test")
    lost = corpus.from_on(BELOW, exercise) if "mode_left_entered" in wrong.name else {exercise: 0}
    return Student(f"wrong-{wrong.name}", {**corpus.solutions(BELOW), wrong.grade_id: wrong.source},
                   corpus.scores(BELOW, **lost), attacked=[wrong.test_id], assignment=BELOW)


BELOW_STUDENTS = [below_wrong_student(wrong) for wrong in wrong_answers() if wrong.assignment == BELOW]
BELOW_WRONG = (packed([s for s in BELOW_STUDENTS if "mode_left_entered" not in s.name], "wrong")
               + [s for s in BELOW_STUDENTS if "mode_left_entered" in s.name])
PLAIN_WRONG = ONE_CHANGED + displaying_students()  # the scan holds some that display (sys.displayhook)
ATTACKED = (attackers()
            + [Student("statistics-with-abs-shadowed",
                       {**corpus.solutions(APPLY), "init_weights": ZEROS_WITH_ABS_SHADOWED},
                       {**corpus.points(APPLY), "init_weights_test": 0.0}, attacked=["init_weights_test"],
                       assignment=APPLY)]
            + [Student("hooks-check-with-sorted-shadowed",
                       {**corpus.solutions(MEMORY_HOOKS), "per_sample_grads": CLOSED_FORM_WITH_SORTED_SHADOWED},
                       {**corpus.points(MEMORY_HOOKS), "per_sample_grads_test": 0.0},
                       attacked=["per_sample_grads_test"], assignment=MEMORY_HOOKS)]
            + [Student("hooks-check-with-sorted-replaced-in-builtins",
                       {**corpus.solutions(MEMORY_HOOKS), "per_sample_grads": SORTED_REPLACED_IN_BUILTINS},
                       {**corpus.points(MEMORY_HOOKS), "per_sample_grads_test": 0.0},
                       attacked=["per_sample_grads_test"], assignment=MEMORY_HOOKS)]
            + [Student(name, {**corpus.solutions(APPLICATIONS), "skip_nonfinite": source},
                       {**corpus.points(APPLICATIONS), "skip_nonfinite_test": 0.0},
                       attacked=["skip_nonfinite_test"], assignment=APPLICATIONS)
               for name, source in {"hook-kept-nan-planted": HOOK_KEPT_NAN_PLANTED, "hook-kept-isnan-patched": HOOK_KEPT_ISNAN_PATCHED}.items()]
            + [Student("checkpoint-faked-with-hooks",
                       {**corpus.solutions(MEMORY_HOOKS), "checkpointing": FAKE_CHECKPOINT},
                       {**corpus.points(MEMORY_HOOKS), "checkpointing_test": 0.0}, attacked=["checkpointing_test"],
                       assignment=MEMORY_HOOKS)]
            + [Student(name, {**corpus.solutions(BELOW), "low_precision": source},
                       {**corpus.points(BELOW), "low_precision_test": 0.0},
                       attacked=["low_precision_test"], assignment=BELOW)
               for name, source in {"parameters-shown-by-a-mode-parameter": PARAMETERS_SHOWN_BY_A_MODE_PARAMETER,
                                    "parameters-shown-by-named-parameters": PARAMETERS_SHOWN_BY_NAMED_PARAMETERS}.items()]
            + [Student("flood-of-short-lines",
                       {**SOLUTIONS, "collect_hooks": SOLUTIONS["collect_hooks"] + "\n\n" + FLOOD,
                        "kwargs_hook": "import os\n" + FLOODED_CAP},
                       {**POINTS, "kwargs_hook_test": 0.0}, attacked=["kwargs_hook_test"])]
            # the kernels they leave registered blind every check from their own cell on
            + [Student(name, {**corpus.solutions(PUZZLES), "mul": source},
                       corpus.scores(PUZZLES, **corpus.from_on(PUZZLES, "mul")), attacked=["mul_test"],
                       assignment=PUZZLES)
               for name, source in {"kernel-for-torchs-clone": KERNEL_FOR_TORCHS_CLONE,
                                    "kernel-for-torchs-detach": KERNEL_FOR_TORCHS_DETACH}.items()]
            + [Student("kernel-for-the-tests-own-detach", {**corpus.solutions(APPLY), "add_bias": KERNEL_FOR_THE_TESTS_OWN_DETACH},
                       corpus.scores(APPLY, **corpus.from_on(APPLY, "add_bias")), attacked=["add_bias_test"],
                       assignment=APPLY)]
            + [Student("jacobians-compared-by-a-kernel",
                       {**corpus.solutions(AUTOGRAD_FUNCTION), "cube": JACOBIANS_COMPARED_BY_A_KERNEL},
                       corpus.scores(AUTOGRAD_FUNCTION, **corpus.from_on(AUTOGRAD_FUNCTION, "cube")),
                       attacked=["cube_test"], assignment=AUTOGRAD_FUNCTION)]
            + [Student("kernels-only-while-gradcheck-runs",
                       {**corpus.solutions(AUTOGRAD_FUNCTION), "cube": KERNELS_ONLY_WHILE_GRADCHECK_RUNS},
                       corpus.scores(AUTOGRAD_FUNCTION, **corpus.from_on(AUTOGRAD_FUNCTION, "cube")),
                       attacked=["cube_test"], assignment=AUTOGRAD_FUNCTION)]
            + [Student("allclose-through-the-python-dispatcher",
                       {**corpus.solutions(AUTOGRAD_FUNCTION), "cube": ALLCLOSE_THROUGH_THE_PYTHON_DISPATCHER},
                       corpus.scores(AUTOGRAD_FUNCTION, **corpus.from_on(AUTOGRAD_FUNCTION, "cube")),
                       attacked=["cube_test"], assignment=AUTOGRAD_FUNCTION)]
            + [Student("library-made-for-aten",
                       {**corpus.solutions(MEMORY_HOOKS), "half_precision": LIBRARY_MADE_FOR_ATEN},
                       corpus.scores(MEMORY_HOOKS, **corpus.from_on(MEMORY_HOOKS, "half_precision")),
                       attacked=["half_precision_test"], assignment=MEMORY_HOOKS)]
            + [Student("kernels-for-a-meta-gradient", {**corpus.solutions(PUZZLES), "mul": KERNELS_FOR_A_META_GRADIENT},
                       corpus.scores(PUZZLES, **corpus.from_on(PUZZLES, "mul")), attacked=["mul_test"],
                       assignment=PUZZLES)]
            # the mode it leaves entered blinds every check from its own cell on
            + [Student("copies-caught-by-a-mode", {**corpus.solutions(PUZZLES), "mul": COPIES_CAUGHT_BY_A_MODE},
                       corpus.scores(PUZZLES, **corpus.from_on(PUZZLES, "mul")), attacked=["mul_test"],
                       assignment=PUZZLES)]
            + [Student("jacobians-in-init-subclass", {**corpus.solutions(PUZZLES), "mul": JACOBIANS_IN_INIT_SUBCLASS},
                       {**corpus.points(PUZZLES), "mul_test": 0.0}, attacked=["mul_test"], assignment=PUZZLES)]
            + [Student("a-tuple-that-computes-when-read",
                       {**corpus.solutions(PUZZLES), "softmax": TUPLE_READ_UNWATCHED},
                       {**corpus.points(PUZZLES), "softmax_test": 0.0}, attacked=["softmax_test"], assignment=PUZZLES)]
            + [Student(name, {**corpus.solutions(PUZZLES), "mul": source}, {**corpus.points(PUZZLES), "mul_test": 0.0},
                       attacked=["mul_test"], assignment=PUZZLES)
               for name, source in {"finite-differences": FINITE_DIFFERENCES,
                                    "forged-gradient-observations": FORGED_GRADIENTS,
                                    "forged-on-the-wire": FORGED_ON_THE_WIRE,
                                    "nonce-from-the-stack": NONCE_FROM_THE_STACK,
                                    "agent-spoken-for": AGENT_SPOKEN_FOR,
                                    "forged-through-a-global": FORGED_THROUGH_A_GLOBAL,
                                    "sender-swapped-in-a-cell": SENDER_SWAPPED_IN_A_CELL,
                                    "silenced-then-spoken-for": SILENCED_THEN_SPOKEN_FOR,
                                    "added-to-the-tensor-class": ADDED_TO_THE_TENSOR_CLASS,
                                    "written-as-the-watch-closes": WRITTEN_AS_THE_WATCH_CLOSES,
                                    "exit-of-a-context-manager-replaced": EXIT_OF_A_CONTEXT_MANAGER_REPLACED,
                                    "rewritten-after-the-check": REWRITTEN_AFTER_THE_CHECK,
                                    "jacobian-in-a-pack-hook": JACOBIAN_IN_A_PACK_HOOK,
                                    **{name: unseen_autograd(*route) for name, route in UNSEEN_AUTOGRAD.items()}}.items()])
# The honest answers graded with the integrity layers on: each notebook's solutions and the unusual ones. The styles
# of honest_answers.py are graded by test_autograde's corpus, also with the layers on: those layers only hold a
# submission, they change no score, so an honest answer that keeps its points and is not held there keeps them
# without the layers too. Without them, the unusual ones stand for all (a seed of their own, edited given cells, no
# cell ids, another init).
KEPT_HONEST = [student for student in HONEST if student not in STYLES]
UNUSUAL_HONEST = [student for student in KEPT_HONEST if student.name != "solutions"]
# Without the integrity layers nothing but the grader's comparison decides: every attack, the unusual honest answers,
# and 09's wrong answers (graded here, beside the others, to share the work between the two modules).
WITHOUT_INTEGRITY = ATTACKED + UNUSUAL_HONEST + BELOW_WRONG
# With them (as a class is graded by default): the attacks, the plain wrong answers, and the honest answers.
WITH_INTEGRITY = ATTACKED + PLAIN_WRONG + KEPT_HONEST


def key(student: Student) -> str:
    return f"{student.name}/{student.assignment}"


def graded(root: Path, students: list[Student], *options: str) -> tuple[dict, dict[str, dict[str, float]]]:
    """The students graded by ``hooklab autograde [options]`` in a course of their own under ``root``: the run's
    ledger, and each student's points per test cell as the gradebook holds them."""
    from nbgrader.api import Gradebook

    course = make_course(root / "course")
    submissions = root / "class"
    for student in students:
        folder = submissions / student.name / student.assignment
        folder.mkdir(parents=True)
        (folder / corpus.notebook_name(student.assignment)).write_bytes(submitted(student))
    command = [sys.executable, "-m", "hooklab.cli", "autograde", "--timeout", str(corpus.TIMEOUT),
               "--config", str(course / "nbgrader_config.py"), *options, str(submissions)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, env=os.environ)
    assert result.returncode == 0, result.stderr[-3000:]
    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in students:
            notebook = gradebook.find_submission_notebook(corpus.stem(student.assignment), student.assignment,
                                                          student.name)
            scores[key(student)] = {grade.name: grade.score for grade in notebook.grades}
    return json.loads((course / "grading.json").read_text()), scores
