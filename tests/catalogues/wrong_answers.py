"""Plausible wrong answers: each must fail its exercise's test cell, with a message that says what is wrong.

Each :class:`Wrong` replaces one answer cell of a solution notebook (by ``grade_id``); the test
cell ``test`` (hidden tests included) must then raise, and its error must contain ``message``.
These are the mistakes a student could make that an earlier, weaker test let through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from textwrap import dedent, indent

import nbformat

from catalogues.honest_answers import (
    APPLICATIONS,
    APPLY,
    AUTOGRAD_FUNCTION,
    BACKWARD_HOOKS,
    BACKWARD_PUZZLES,
    BELOW_THE_MODULE,
    FORWARD_HOOKS,
    MEMORY_HOOKS,
    MODULE_BASICS,
    _cell,
)
from conftest import REPO, solution_sources


@dataclass(frozen=True)
class Wrong:
    name: str
    assignment: str
    grade_id: str
    source: str
    message: str  # expected in the test cell's error
    test: str = ""  # the test cell's grade_id; "" for "<grade_id>_test"

    @property
    def test_id(self) -> str:
        return self.test or f"{self.grade_id}_test"


@cache
def _puzzles() -> dict[str, str]:
    return solution_sources(nbformat.read(REPO / "solutions" / BACKWARD_PUZZLES / "backward_puzzles.ipynb",
                                          as_version=4))


def _with_backward(grade_id: str, body: str, imports: str = "") -> str:
    """A backward puzzle's answer cell as given (its Function's forward and setup_context), with ``body`` as
    the backward the student wrote."""
    given = _puzzles()[grade_id]
    signature = re.search(r"^    def backward\(.*\n", given, re.MULTILINE)
    return dedent(imports) + given[: signature.end()] + indent(dedent(body).strip("\n"), " " * 8) + "\n"


# 05's Linear module with its parameters drawn as WEIGHT and BIAS say (the exercise asks for U(±1/sqrt(in_features))).
LINEAR_MODULE = '''
    class Linear(nn.Module):
        def __init__(self, in_features, out_features, bias=True):
            super().__init__()
            self.in_features, self.out_features = in_features, out_features
            self.weight = nn.Parameter(WEIGHT)
            if bias:
                self.bias = nn.Parameter(BIAS)
            else:
                self.register_parameter("bias", None)

        def forward(self, input):
            return LinearFunction.apply(input, self.weight, self.bias)

        def extra_repr(self):
            return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
'''


def wrong_answers() -> list[Wrong]:
    from catalogues import wrong_readings  # it imports Wrong from here

    return _below_the_module() + _earlier() + _hooks_return_and_logs() + wrong_readings.readings()


def _below_the_module() -> list[Wrong]:
    return [
        Wrong("log_ops_function_mode", BELOW_THE_MODULE, "log_ops", _cell('''
            def log_ops(model, x):
                class Log(TorchFunctionMode):
                    def __init__(self):
                        super().__init__()
                        self.names = []

                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        self.names.append((func.__name__, tuple(out.shape) if isinstance(out, torch.Tensor) else None))
                        return out

                with Log() as forward:
                    out = model(x)
                with Log() as backward:
                    out.sum().backward()
                return forward.names, backward.names
        '''), "the forward ops of"),
        Wrong("log_ops_full_names", BELOW_THE_MODULE, "log_ops", _cell('''
            def log_ops(model, x):
                class Log(TorchDispatchMode):
                    def __init__(self):
                        super().__init__()
                        self.names = []

                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        self.names.append((str(func), tuple(out.shape) if isinstance(out, torch.Tensor) else None))
                        return out

                with Log() as forward:
                    out = model(x)
                with Log() as backward:
                    out.sum().backward()
                return forward.names, backward.names
        '''), "the forward ops of"),
        Wrong("log_ops_backward_without_sum", BELOW_THE_MODULE, "log_ops", _cell('''
            def log_ops(model, x):
                class Log(TorchDispatchMode):
                    def __init__(self):
                        super().__init__()
                        self.names = []

                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        self.names.append((func.overloadpacket.__name__, tuple(out.shape) if isinstance(out, torch.Tensor) else None))
                        return out

                with Log() as forward:
                    out = model(x)
                loss = out.sum()
                with Log() as backward:
                    loss.backward()
                return forward.names, backward.names
        '''), "the first backward op of Linear(3, 2) → Tanh"),
        Wrong("matmul_flops_innermost_only", BELOW_THE_MODULE, "matmul_flops", _cell('''
            def matmul_flops(model, x):
                running, flops = [], {}

                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm") and running:
                            a, b = args[-2], args[-1]
                            count = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if name == "bmm" else 1)
                            flops[running[-1]] = flops.get(running[-1], 0) + count
                        return func(*args, **(kwargs or {}))

                handles = []
                for name, module in model.named_modules():
                    handles.append(module.register_forward_pre_hook(lambda m, a, name=name: running.append(name)))
                    handles.append(module.register_forward_hook(lambda m, a, o: running.pop() and None))
                with Counter():
                    model(x)
                for handle in handles:
                    handle.remove()
                return flops
        '''), "matmul_flops on"),
        Wrong("matmul_flops_no_bmm", BELOW_THE_MODULE, "matmul_flops", _cell('''
            def matmul_flops(model, x):
                running, flops = [], {}

                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        if func.overloadpacket.__name__ in ("mm", "addmm"):
                            a, b = args[-2], args[-1]
                            for module in running:
                                flops[module] = flops.get(module, 0) + 2 * a.shape[0] * a.shape[1] * b.shape[1]
                        return func(*args, **(kwargs or {}))

                handles = []
                for name, module in model.named_modules():
                    handles.append(module.register_forward_pre_hook(lambda m, a, name=name: running.append(name)))
                    handles.append(module.register_forward_hook(lambda m, a, o: running.pop() and None))
                with Counter():
                    model(x)
                for handle in handles:
                    handle.remove()
                return flops
        '''), "matmul_flops on"),
        Wrong("matmul_flops_linear_formula", BELOW_THE_MODULE, "matmul_flops", _cell('''
            def matmul_flops(model, x):
                # from the Linear layers' shapes: misses every product a forward makes with @
                rows = x.numel() // x.shape[-1]
                flops = {}
                for name, module in model.named_modules():
                    if isinstance(module, nn.Linear):
                        count = 2 * rows * module.in_features * module.out_features
                        parts = name.split(".")
                        for depth in range(len(parts) + 1):
                            key = ".".join(parts[:depth])
                            flops[key] = flops.get(key, 0) + count
                return flops
        '''), "matmul_flops on"),
        Wrong("predict_fires_tensor_hook_per_use", BELOW_THE_MODULE, "predict_fires", _cell('''
            def predict_fires(plan, call):
                start = plan.index("a") + 1 if "a.weight" in call else plan.index("b") + 1 if "b.weight" in call else 0
                weight = call == "backward" or "a.weight" in call
                return {"forward hook": plan.count("a"), "full backward hook": plan.count("a", start),
                        "tensor hook": plan.count("a") if weight else 0,  # wrong: the uses' gradients are summed first
                        "post-accumulate hook": int(call in ("backward", "backward(inputs=[a.weight])"))}
        '''), "predict_fires('aba', 'backward')"),
        Wrong("predict_fires_grad_accumulates", BELOW_THE_MODULE, "predict_fires", _cell('''
            def predict_fires(plan, call):
                start = plan.index("a") + 1 if "a.weight" in call else plan.index("b") + 1 if "b.weight" in call else 0
                weight = call == "backward" or "a.weight" in call
                return {"forward hook": plan.count("a"), "full backward hook": plan.count("a", start),
                        "tensor hook": int(weight), "post-accumulate hook": int(weight)}  # wrong: grad() accumulates nothing
        '''), "predict_fires('ab', 'grad(a.weight)')"),
        Wrong("predict_fires_backward_hook_every_use", BELOW_THE_MODULE, "predict_fires", _cell('''
            def predict_fires(plan, call):
                weight = call == "backward" or "a.weight" in call
                return {"forward hook": plan.count("a"), "full backward hook": plan.count("a"),  # wrong: not where
                        "tensor hook": int(weight),                    # the input's gradient is not asked for
                        "post-accumulate hook": int(call in ("backward", "backward(inputs=[a.weight])"))}
        '''), "predict_fires('ab', 'backward(inputs=[a.weight])')"),
        Wrong("first_nonfinite_forward_only", BELOW_THE_MODULE, "first_nonfinite", _cell('''
            def first_nonfinite(model, x):
                bad, handles = [], []
                for name, module in model.named_modules():
                    if not list(module.children()):
                        handles.append(module.register_forward_hook(
                            lambda m, a, o, name=name: bad.append(name) if not torch.isfinite(o).all() else None))
                model(x)
                for handle in handles:
                    handle.remove()
                return (bad[0], "forward") if bad else None
        '''), "first_nonfinite on Linear → Tanh → Linear → RootAbs"),
        Wrong("first_nonfinite_forward_order_in_backward", BELOW_THE_MODULE, "first_nonfinite", _cell('''
            def first_nonfinite(model, x):
                leaves = [(name, m) for name, m in model.named_modules() if not list(m.children())]
                ran, bad_grads, handles = [], set(), []
                for name, module in leaves:
                    handles.append(module.register_forward_hook(lambda m, a, o, name=name: ran.append((name, bool(torch.isfinite(o).all())))))
                    handles.append(module.register_full_backward_hook(
                        lambda m, gi, go, name=name: bad_grads.add(name) if gi[0] is not None and not torch.isfinite(gi[0]).all() else None))
                try:
                    out = model(x)
                    for name, finite in ran:
                        if not finite:
                            return (name, "forward")
                    out.sum().backward()
                    for name, _ in ran:  # wrong: the forward's order, not the backward's
                        if name in bad_grads:
                            return (name, "backward")
                    return None
                finally:
                    for handle in handles:
                        handle.remove()
        '''), "first_nonfinite on Linear → Tanh → Linear → RootAbs"),
        Wrong("first_nonfinite_hooks_left", BELOW_THE_MODULE, "first_nonfinite", _cell('''
            def first_nonfinite(model, x):
                forward_bad, backward_bad = [], []
                for name, module in model.named_modules():
                    if not list(module.children()):
                        module.register_forward_hook(lambda m, a, o, name=name: forward_bad.append(name) if not torch.isfinite(o).all() else None)
                        module.register_full_backward_hook(
                            lambda m, gi, go, name=name: backward_bad.append(name) if not torch.isfinite(gi[0]).all() else None)
                out = model(x)
                if forward_bad:
                    return forward_bad[0], "forward"
                out.sum().backward()
                return (backward_bad[0], "backward") if backward_bad else None
        '''), "hooks left on"),
        Wrong("low_precision_linear_only", BELOW_THE_MODULE, "low_precision", _cell('''
            def low_precision_output(model, x, dtype):
                class Lower(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        kwargs = kwargs or {}
                        if func is F.linear:  # misses x @ w
                            return func(*[a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args], **kwargs).to(args[0].dtype)
                        return func(*args, **kwargs)

                with Lower():
                    return model(x)
        '''), "low_precision_output(Block(2), torch.bfloat16)"),
        Wrong("low_precision_rounds_the_output", BELOW_THE_MODULE, "low_precision", _cell('''
            def low_precision_output(model, x, dtype):
                return model(x).to(dtype).to(x.dtype)  # computes in float32, rounds only the output
        '''), "low_precision_output(Linear(2, 1), torch.bfloat16)"),
        Wrong("low_precision_returns_low_dtype", BELOW_THE_MODULE, "low_precision", _cell('''
            def low_precision_output(model, x, dtype):
                class Lower(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        kwargs = kwargs or {}
                        if func in (F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.bmm):
                            return func(*[a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args], **kwargs)
                        return func(*args, **kwargs)

                with Lower():
                    return model(x).to(dtype)
        '''), "has dtype torch.bfloat16, expected torch.float32"),
        # the expert's read of 09 (round e09): answers the tests used to accept
        Wrong('log_ops_splits_at_the_first_sum', BELOW_THE_MODULE, 'log_ops', _cell('''
            def log_ops(model, x):
                class Rec(TorchDispatchMode):
                    names = []
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        self.names.append((func.overloadpacket.__name__, tuple(out.shape) if isinstance(out, torch.Tensor) else None))
                        return out
                rec = Rec(); rec.names = []
                with rec:
                    model(x).sum().backward()
                cut = [name for name, _ in rec.names].index("sum")   # wrong as soon as the model's forward calls sum
                return rec.names[:cut], rec.names[cut:]
        '''), 'the forward ops of Linear → Softmax'),
        Wrong('log_ops_logs_a_copy', BELOW_THE_MODULE, 'log_ops', _cell('''
            import copy
            def log_ops(model, x):
                model = copy.deepcopy(model)   # the caller's model never gets its .grad
                class Rec(TorchDispatchMode):
                    def __init__(self):
                        super().__init__(); self.names = []
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        self.names.append((func.overloadpacket.__name__, tuple(out.shape) if isinstance(out, torch.Tensor) else None))
                        return out
                with Rec() as f:
                    out = model(x)
                with Rec() as b:
                    out.sum().backward()
                return f.names, b.names
        '''), 'the parameters of Linear(3, 2) → Tanh on 4 rows without a .grad after log_ops'),
        Wrong('log_ops_mode_left_entered', BELOW_THE_MODULE, 'log_ops', _cell('''
            def log_ops(model, x):
                class Rec(TorchDispatchMode):
                    def __init__(self):
                        super().__init__(); self.names = []
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        self.names.append((func.overloadpacket.__name__, tuple(out.shape) if isinstance(out, torch.Tensor) else None))
                        return out
                forward = Rec(); forward.__enter__()          # entered, never left
                out = model(x)
                n = len(forward.names)
                out.sum().backward()
                return forward.names[:n], forward.names[n:]   # forward.names keeps growing for the rest of the session
        '''), 'the number of modes log_ops left entered on Linear(3, 2) → Tanh'),
        Wrong('log_ops_profiler', BELOW_THE_MODULE, 'log_ops', _cell('''
            from torch.profiler import profile
            def log_ops(model, x):
                # "every aten operator dispatched": the profiler records each aten:: call
                with profile() as forward:
                    out = model(x)
                with profile() as backward:
                    out.sum().backward()
                names = lambda p: [(e.name.split("::")[1], tuple(e.input_shapes[0]) if e.input_shapes else None) for e in p.events() if e.name.startswith("aten::")]
                return names(forward), names(backward)
        '''), 'the forward ops of Linear(3, 2) → Tanh on 4 rows named in STABLE, with their shapes should be'),
        Wrong('matmul_flops_function_level', BELOW_THE_MODULE, 'matmul_flops', _cell('''
            import math
            def matmul_flops(model, x):
                running, flops = [], {}
                class Count(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        if func is F.linear:
                            count = 2 * math.prod(args[0].shape) * args[1].shape[0]
                        elif func is torch.Tensor.matmul:      # only @ ; torch.mm, torch.bmm, torch.matmul, einsum missed
                            count = 2 * math.prod(args[0].shape) * args[1].shape[-1]
                        else:
                            count = 0
                        for name in running:
                            if count: flops[name] = flops.get(name, 0) + count
                        return func(*args, **(kwargs or {}))
                handles = []
                for name, module in model.named_modules():
                    handles.append(module.register_forward_pre_hook(lambda m, a, name=name: running.append(name)))
                    handles.append(module.register_forward_hook(lambda m, a, o: running.pop() and None))
                try:
                    with Count():
                        model(x)
                finally:
                    for h in handles: h.remove()
                return flops
        '''), 'matmul_flops on a model of width'),
        Wrong('matmul_flops_bmm_without_batch', BELOW_THE_MODULE, 'matmul_flops', _cell('''
            def matmul_flops(model, x):
                running, flops = [], {}
                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm"):
                            a, b = args[-2], args[-1]
                            count = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1]     # forgets bmm's batch
                            for m in running: flops[m] = flops.get(m, 0) + count
                        return func(*args, **(kwargs or {}))
                hs = []
                for n, m in model.named_modules():
                    hs += [m.register_forward_pre_hook(lambda mod, a, n=n: running.append(n)), m.register_forward_hook(lambda mod, a, o: running.pop() and None)]
                try:
                    with Counter(): model(x)
                finally:
                    for h in hs: h.remove()
                return flops
        '''), 'matmul_flops on a model of width'),
        Wrong('matmul_flops_hooks_left_on_error', BELOW_THE_MODULE, 'matmul_flops', _cell('''
            def matmul_flops(model, x):
                running, flops = [], {}
                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm"):
                            a, b = args[-2], args[-1]
                            count = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if name == "bmm" else 1)
                            for m in running: flops[m] = flops.get(m, 0) + count
                        return func(*args, **(kwargs or {}))
                hs = []
                for n, m in model.named_modules():
                    hs += [m.register_forward_pre_hook(lambda mod, a, n=n: running.append(n)), m.register_forward_hook(lambda mod, a, o: running.pop() and None)]
                with Counter():
                    model(x)
                for h in hs: h.remove()     # never reached when model(x) raises
                return flops
        '''), 'hooks left by matmul_flops on a model whose forward raises'),
        Wrong('matmul_flops_swallows_the_error', BELOW_THE_MODULE, 'matmul_flops', _cell('''
            def matmul_flops(model, x):
                running, flops = [], {}
                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm"):
                            a, b = args[-2], args[-1]
                            count = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if name == "bmm" else 1)
                            for m in running: flops[m] = flops.get(m, 0) + count
                        return func(*args, **(kwargs or {}))
                hs = []
                for n, m in model.named_modules():
                    hs += [m.register_forward_pre_hook(lambda mod, a, n=n: running.append(n)), m.register_forward_hook(lambda mod, a, o: running.pop() and None)]
                try:
                    with Counter():
                        model(x)
                except Exception:
                    pass                        # the caller never learns the forward failed
                finally:
                    for h in hs: h.remove()
                return flops
        '''), "what matmul_flops raised when the model's forward raised an error"),
        Wrong('matmul_flops_raises_its_own_error', BELOW_THE_MODULE, 'matmul_flops', _cell('''
            def matmul_flops(model, x):
                with FlopCounterMode(display=False) as counter:
                    try:
                        model(x)
                    except Exception:
                        raise ValueError("the model failed") from None     # the model's own error is lost
                root, flops = type(model).__name__, {}
                for name, ops in counter.get_flop_counts().items():
                    if name != "Global" and sum(ops.values()):
                        flops["" if name == root else name.removeprefix(root + ".")] = sum(ops.values())
                return flops
        '''), "what matmul_flops raised when the model's forward raised an error"),
        Wrong('matmul_flops_cleans_up_on_exception_only', BELOW_THE_MODULE, 'matmul_flops', _cell('''
            def matmul_flops(model, x):
                running, flops = [], {}
                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm"):
                            a, b = args[-2], args[-1]
                            count = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if name == "bmm" else 1)
                            for m in running: flops[m] = flops.get(m, 0) + count
                        return func(*args, **(kwargs or {}))
                hs = []
                for n, m in model.named_modules():
                    hs += [m.register_forward_pre_hook(lambda mod, a, n=n: running.append(n)), m.register_forward_hook(lambda mod, a, o: running.pop() and None)]
                try:
                    with Counter():
                        model(x)
                except Exception:               # a KeyboardInterrupt is no Exception: its hooks stay
                    for h in hs: h.remove()
                    raise
                for h in hs: h.remove()
                return flops
        '''), "hooks left by matmul_flops on a model whose forward raises a KeyboardInterrupt"),
        Wrong('predict_fires_measured_table', BELOW_THE_MODULE, 'predict_fires', _cell('''
            CALLS = ["backward", "backward(inputs=[x])", "backward(inputs=[a.weight])", "backward(inputs=[b.weight])",
                     "grad(x)", "grad(a.weight)", "grad(b.weight)"]
            TABLE = {(plan, call): fires(plan, call) for plan in ("ab", "aba", "abba") for call in CALLS}   # measured

            def predict_fires(plan, call):
                return dict(TABLE[plan, call])
        '''), "with its cell run again, runs a backward pass (autograd's engine ran SumBackward0)"),
        Wrong('predict_fires_pops_the_tests_mode', BELOW_THE_MODULE, 'predict_fires', _cell('''
            from torch.utils._python_dispatch import _pop_mode, _push_mode

            measure = fires

            def predict_fires(plan, call):
                mode = _pop_mode()                   # pops the dispatch mode the tests entered
                try:
                    return measure(plan, call)
                finally:
                    _push_mode(mode)
        '''), "runs a backward pass (autograd's engine ran SumBackward0): it must answer without running a model"),
        Wrong('predict_fires_runs_the_model_in_a_callback', BELOW_THE_MODULE, 'predict_fires', _cell('''
            measure = fires

            def predict_fires(plan, call):
                box = []
                # a Python function called back from inside an operator, where a function mode does not reach
                torch.zeros(1).map_(torch.zeros(1), lambda a, b: box.append(measure(plan, call)) or 0.0)
                return box[0]
        '''), "runs a backward pass (autograd's engine ran SumBackward0): it must answer without running a model"),
        Wrong('predict_fires_extrapolates_small_runs', BELOW_THE_MODULE, 'predict_fires', _cell('''
            measure = fires

            def predict_fires(plan, call):
                one, two = measure("ab", call), measure("aab", call)     # small runs, then a straight line
                return {kind: one[kind] + (plan.count("a") - 1) * (two[kind] - one[kind]) for kind in one}
        '''), "runs a backward pass (autograd's engine ran SumBackward0): it must answer without running a model"),
        Wrong('predict_fires_runs_fires', BELOW_THE_MODULE, 'predict_fires', _cell('''
            def predict_fires(plan, call):
                return fires(plan, call)     # runs the model: Requirement 4, unchecked
        '''), "runs a backward pass (autograd's engine ran SumBackward0): it must answer without running a model"),
        Wrong('predict_fires_runs_a_copy_of_fires', BELOW_THE_MODULE, 'predict_fires', _cell('''
            def predict_fires(plan, call):
                # fires' own code, pasted: it runs a model rather than predicting
                a, b = nn.Linear(3, 3), nn.Linear(3, 3)
                counts = dict.fromkeys(["forward hook", "full backward hook", "tensor hook", "post-accumulate hook"], 0)
                def count(kind):
                    def hook(*args):
                        counts[kind] += 1
                    return hook
                a.register_forward_hook(count("forward hook"))
                a.register_full_backward_hook(count("full backward hook"))
                a.weight.register_hook(count("tensor hook"))
                a.weight.register_post_accumulate_grad_hook(count("post-accumulate hook"))
                x = torch.randn(2, 3, requires_grad=True)
                h = x
                for letter in plan:
                    h = a(h) if letter == "a" else b(h)
                loss = h.sum()
                asked = {"x": x, "a.weight": a.weight, "b.weight": b.weight}
                if call == "backward":
                    loss.backward()
                elif call.startswith("backward"):
                    loss.backward(inputs=[asked[call[17:-2]]])
                else:
                    torch.autograd.grad(loss, [asked[call[5:-1]]])
                return counts
        '''), "runs a backward pass (autograd's engine ran SumBackward0): it must answer without running a model"),
        Wrong('predict_fires_bool_counts', BELOW_THE_MODULE, 'predict_fires', _cell('''
            def predict_fires(plan, call):
                start = plan.index("a") + 1 if "a.weight" in call else plan.index("b") + 1 if "b.weight" in call else 0
                return {"forward hook": plan.count("a"), "full backward hook": plan.count("a", start),
                        "tensor hook": "a.weight" in call or call == "backward",          # a bool: fires or not
                        "post-accumulate hook": call in ("backward", "backward(inputs=[a.weight])")}
        '''), "['tensor hook'] is a bool, expected an int"),
        Wrong('first_nonfinite_isnan_only', BELOW_THE_MODULE, 'first_nonfinite', _cell('''
            def first_nonfinite(model, x):
                fwd, bwd, handles = [], [], []
                for name, module in model.named_modules():
                    if next(module.children(), None) is None:
                        handles.append(module.register_forward_hook(lambda m, a, o, name=name: fwd.append(name) if o.isnan().any() else None))
                        handles.append(module.register_full_backward_hook(lambda m, gi, go, name=name: bwd.append(name) if gi[0] is not None and gi[0].isnan().any() else None))
                try:
                    out = model(x)
                    if fwd: return fwd[0], "forward"
                    out.sum().backward()
                    return (bwd[0], "backward") if bwd else None
                finally:
                    for h in handles: h.remove()
        '''), 'LogSquare'),
        Wrong('first_nonfinite_isnan_in_backward', BELOW_THE_MODULE, 'first_nonfinite', _cell('''
            def first_nonfinite(model, x):
                fwd, bwd, handles = [], [], []
                for name, module in model.named_modules():
                    if next(module.children(), None) is None:
                        handles.append(module.register_forward_hook(lambda m, a, o, name=name: fwd.append(name) if not o.isfinite().all() else None))
                        # anomaly mode's test: a nan, but an inf gradient passes
                        handles.append(module.register_full_backward_hook(lambda m, gi, go, name=name: bwd.append(name) if gi[0] is not None and gi[0].isnan().any() else None))
                try:
                    out = model(x)
                    if fwd: return fwd[0], "forward"
                    out.sum().backward()
                    return (bwd[0], "backward") if bwd else None
                finally:
                    for h in handles: h.remove()
        '''), 'ReLU → Root →'),
        Wrong('first_nonfinite_every_module', BELOW_THE_MODULE, 'first_nonfinite', _cell('''
            def first_nonfinite(model, x):
                fwd, bwd, handles = [], [], []
                for name, module in model.named_modules():      # every module, not the leaves only
                    handles.append(module.register_forward_hook(lambda m, a, o, name=name: fwd.append(name) if not o.isfinite().all() else None))
                    handles.append(module.register_full_backward_hook(lambda m, gi, go, name=name: bwd.append(name) if gi[0] is not None and not gi[0].isfinite().all() else None))
                try:
                    out = model(x)
                    if fwd: return fwd[0], "forward"
                    out.sum().backward()
                    return (bwd[0], "backward") if bwd else None
                finally:
                    for h in handles: h.remove()
        '''), 'LogInside'),
        Wrong('first_nonfinite_old_backward_hook', BELOW_THE_MODULE, 'first_nonfinite', _cell('''
            def first_nonfinite(model, x):
                fwd, bwd, handles = [], [], []
                for name, module in model.named_modules():
                    if next(module.children(), None) is None:
                        handles.append(module.register_forward_hook(lambda m, a, o, name=name: fwd.append(name) if not o.isfinite().all() else None))
                        handles.append(module.register_backward_hook(lambda m, gi, go, name=name: bwd.append(name) if gi[0] is not None and not gi[0].isfinite().all() else None))
                try:
                    out = model(x)
                    if fwd: return fwd[0], "forward"
                    out.sum().backward()
                    return (bwd[0], "backward") if bwd else None
                finally:
                    for h in handles: h.remove()
        '''), 'ScaledRootAbs'),
        Wrong('first_nonfinite_no_none_guard', BELOW_THE_MODULE, 'first_nonfinite', _cell('''
            def first_nonfinite(model, x):
                fwd, bwd, handles = [], [], []
                for name, module in model.named_modules():
                    if next(module.children(), None) is None:
                        handles.append(module.register_forward_hook(lambda m, a, o, name=name: fwd.append(name) if not o.isfinite().all() else None))
                        handles.append(module.register_full_backward_hook(lambda m, gi, go, name=name: bwd.append(name) if not gi[0].isfinite().all() else None))
                try:
                    out = model(x)
                    if fwd: return fwd[0], "forward"
                    out.sum().backward()
                    return (bwd[0], "backward") if bwd else None
                finally:
                    for h in handles: h.remove()
        '''), "'NoneType' object has no attribute"),
        Wrong('low_precision_linear_and_at_only', BELOW_THE_MODULE, 'low_precision', _cell('''
            def low_precision_output(model, x, dtype):
                products = {F.linear, torch.Tensor.matmul, torch.Tensor.__matmul__}     # torch.matmul, mm, bmm missed
                class Low(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        kwargs = kwargs or {}
                        if func not in products:
                            return func(*args, **kwargs)
                        cast = [a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args]
                        return func(*cast, **{k: v.to(dtype) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}).to(args[0].dtype)
                with Low():
                    return model(x)
        '''), 'low_precision_output(a model of width'),
        Wrong('low_precision_by_name', BELOW_THE_MODULE, 'low_precision', _cell('''
            from torch.overrides import resolve_name

            PRODUCTS = {"torch.nn.functional.linear", "torch.matmul", "torch.Tensor.matmul", "torch.Tensor.__matmul__", "torch.mm", "torch.bmm"}

            def low_precision_output(model, x, dtype):
                class Low(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        kwargs = kwargs or {}
                        if resolve_name(func) not in PRODUCTS:      # torch.mm's name is "torch.spmm"
                            return func(*args, **kwargs)
                        low = lambda v: v.to(dtype) if isinstance(v, torch.Tensor) else v
                        return func(*map(low, args), **{k: low(v) for k, v in kwargs.items()}).to(args[0].dtype)
                with torch.no_grad(), Low():
                    return model(x)
        '''), 'low_precision_output(a model of width'),
        Wrong('low_precision_autocast', BELOW_THE_MODULE, 'low_precision', _cell('''
            def low_precision_output(model, x, dtype):
                with torch.autocast("cpu", dtype=dtype):    # every op after a product runs in dtype too
                    return model(x).to(x.dtype)
        '''), 'low_precision_output(a model of width'),
        Wrong('low_precision_no_cast_back', BELOW_THE_MODULE, 'low_precision', _cell('''
            def low_precision_output(model, x, dtype):
                products = {F.linear, torch.Tensor.matmul}
                class Low(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        if func in products:   # results stay in dtype; torch.mm/bmm/matmul missed too
                            return func(*[a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args])
                        return func(*args, **(kwargs or {}))
                with Low():
                    return model(x).to(x.dtype)
        '''), 'to have the same dtype'),  # a product's result left in the low dtype meets a float32 weight
    ]


def _earlier() -> list[Wrong]:
    return [
        Wrong("predict_order_always_call_last", FORWARD_HOOKS, "predict_order", _cell('''
            def predict_order(config):
                def in_order(module, kind):
                    mine = [h for h in config["hooks"] if h["module"] == module and h["kind"] == kind]
                    first = [h for h in mine if h.get("prepend")]
                    return first[::-1] + [h for h in mine if not h.get("prepend")]

                order = []

                def call(module):
                    order.extend(h["label"] for h in in_order(module, "pre"))
                    try:
                        if module == "outer":
                            for child in config["run"]:
                                call(child)
                        if config["raises"] == module:
                            raise RuntimeError
                        order.extend(h["label"] for h in in_order(module, "hook") if not h.get("always_call"))
                    finally:  # wrong: always_call hooks run in registration order with the others in a normal call
                        order.extend(h["label"] for h in in_order(module, "hook") if h.get("always_call"))

                try:
                    call("outer")
                except RuntimeError:
                    pass
                return order
        '''), "always_call hooks in a normal call"),
        Wrong("mlp_layers_in_a_sequential", MODULE_BASICS, "mlp", _cell('''
            class MLP(nn.Module):
                def __init__(self, sizes):
                    super().__init__()
                    self.layers = nn.Sequential(*(nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes, sizes[1:])))

                def forward(self, x):
                    for layer in self.layers[:-1]:
                        x = F.relu(layer(x))
                    return self.layers[-1](x)
        '''), "hold the layers in an nn.ModuleList"),
        Wrong("mlp_initialised_to_nan", MODULE_BASICS, "mlp", _cell('''
            class MLP(nn.Module):
                def __init__(self, sizes):
                    super().__init__()
                    self.layers = nn.ModuleList(nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes, sizes[1:]))
                    for parameter in self.parameters():
                        nn.init.constant_(parameter, float("nan"))

                def forward(self, x):
                    for layer in self.layers[:-1]:
                        x = F.relu(layer(x))
                    return self.layers[-1](x)
        '''), "as initialised (finite numbers)"),
        Wrong("freeze_counts_overlapping_names_twice", MODULE_BASICS, "freeze", _cell('''
            def freeze(model, names):
                chosen = [p for name in names for p in model.get_submodule(name).parameters() if p.requires_grad]
                for parameter in chosen:
                    parameter.requires_grad_(False)
                return sum(parameter.numel() for parameter in chosen)
        '''), "names overlap in one call"),
        Wrong("running_mean_records_a_graph", MODULE_BASICS, "running_mean", _cell('''
            class RunningMean(nn.Module):
                def __init__(self, num_features):
                    super().__init__()
                    self.register_buffer("mean", torch.zeros(num_features))
                    self.register_buffer("count", torch.zeros((), dtype=torch.long))

                def forward(self, x):
                    if self.training:
                        self.count += x.shape[0]
                        self.mean += (x.sum(dim=0) - x.shape[0] * self.mean) / self.count
                    return x - self.mean
        '''), "mean.requires_grad after training"),
        Wrong("running_mean_starts_at_ones", MODULE_BASICS, "running_mean", _cell('''
            class RunningMean(nn.Module):
                def __init__(self, num_features):
                    super().__init__()
                    self.register_buffer("mean", torch.ones(num_features))
                    self.register_buffer("count", torch.zeros((), dtype=torch.long))

                def forward(self, x):
                    if self.training:
                        with torch.no_grad():
                            self.count += x.shape[0]
                            self.mean += (x.sum(dim=0) - x.shape[0] * self.mean) / self.count
                    return x - self.mean
        '''), "mean right after RunningMean(num_features)"),
        Wrong("my_linear_initialised_without_the_scale", MODULE_BASICS, "my_linear", _cell('''
            class MyLinear(nn.Module):
                def __init__(self, in_features, out_features, bias=True):
                    super().__init__()
                    self.weight = nn.Parameter(torch.randn(out_features, in_features))
                    if bias:
                        self.bias = nn.Parameter(torch.randn(out_features))
                    else:
                        self.register_parameter("bias", None)

                def forward(self, x):
                    return x @ self.weight.T + (self.bias if self.bias is not None else 0)
        '''), "drawn from torch.randn(...) * 0.1"),
        Wrong("scale_stores_a_one_element_float64_factor", MODULE_BASICS, "scale_repr", _cell('''
            class Scale(nn.Module):
                def __init__(self, factor, learnable=False):
                    super().__init__()
                    self.shown, self.learnable = factor, learnable
                    value = torch.tensor([factor], dtype=torch.float64)  # shape (1,), float64: not what the spec asks
                    if learnable:
                        self.factor = nn.Parameter(value)
                    else:
                        self.register_buffer("factor", value)

                def forward(self, x):
                    return (x * self.factor).to(x.dtype)

                def extra_repr(self):
                    return f"factor={self.shown}, learnable={self.learnable}"
        '''), "a 0-dimensional float32 tensor"),
        Wrong("my_linear_initialised_with_a_fixed_pattern", MODULE_BASICS, "my_linear", _cell('''
            class MyLinear(nn.Module):  # ±0.1 in turn: mean 0 and standard deviation 0.1, but neither normal nor random
                def __init__(self, in_features, out_features, bias=True):
                    super().__init__()
                    sign = torch.tensor([0.1, -0.1])
                    self.weight = nn.Parameter(sign.repeat(out_features * in_features)[: out_features * in_features].reshape(out_features, in_features).clone())
                    if bias:
                        self.bias = nn.Parameter(sign.repeat(out_features)[:out_features].clone())
                    else:
                        self.register_parameter("bias", None)

                def forward(self, x):
                    return x @ self.weight.T + (self.bias if self.bias is not None else 0)
        '''), "kurtosis"),
        Wrong("my_linear_initialised_with_the_normals_quantiles", MODULE_BASICS, "my_linear", _cell('''
            def quantiles(*shape):  # a perfect normal sample, the same for every module
                n = torch.Size(shape).numel()
                return (0.1 * 2**0.5 * torch.erfinv(torch.linspace(-1, 1, n + 2)[1:-1])).reshape(shape)


            class MyLinear(nn.Module):
                def __init__(self, in_features, out_features, bias=True):
                    super().__init__()
                    self.weight = nn.Parameter(quantiles(out_features, in_features))
                    if bias:
                        self.bias = nn.Parameter(quantiles(out_features))
                    else:
                        self.register_parameter("bias", None)

                def forward(self, x):
                    return x @ self.weight.T + (self.bias if self.bias is not None else 0)
        '''), "minus another's"),
        Wrong("capture_cleans_up_only_after_exceptions", FORWARD_HOOKS, "capture", _cell('''
            from contextlib import contextmanager


            @contextmanager
            def capture(model, names):
                modules = dict(model.named_modules())
                outputs, handles = {}, []
                try:
                    for name in names:
                        handles.append(modules[name].register_forward_hook(lambda m, a, out, name=name: outputs.__setitem__(name, out)))
                    yield outputs
                except Exception:
                    for handle in handles:
                        handle.remove()
                    raise
                for handle in handles:
                    handle.remove()
        '''), "stopped by KeyboardInterrupt"),
        Wrong("cap_scale_drops_the_other_keyword_arguments", FORWARD_HOOKS, "kwargs_hook", _cell('''
            calls = []


            def cap_scale(module, args, kwargs):
                calls.append(dict(kwargs))
                if kwargs.get("scale", 1.0) > 1:
                    return args, {"scale": 1.0}  # offset is lost
        '''), "OffsetAdd()(x1, x2, **{'offset': 0.5, 'scale': 3.0})"),
        Wrong("cap_scale_caps_only_above_two", FORWARD_HOOKS, "kwargs_hook", _cell('''
            calls = []


            def cap_scale(module, args, kwargs):
                calls.append(dict(kwargs))
                if kwargs.get("scale", 0.0) > 2:
                    return args, {**kwargs, "scale": 1.0}
        '''), "{'scale': 1.5}"),
        Wrong("sum_dim_unsqueezes_grad_output_in_place", BACKWARD_PUZZLES, "sum_dim", _with_backward("sum_dim", '''
            if not ctx.keepdim:
                grad_output.unsqueeze_(ctx.dim)  # the caller's tensor changes shape
            return grad_output.expand(ctx.shape), None, None
        '''), "SumDim.backward changed grad_output in place"),
        Wrong("scale_repr_rounds_the_factor", MODULE_BASICS, "scale_repr", _cell('''
            class Scale(nn.Module):
                def __init__(self, factor: float, learnable: bool = False):
                    super().__init__()
                    self.learnable = learnable
                    value = torch.tensor(float(factor))
                    if learnable:
                        self.factor = nn.Parameter(value)
                    else:
                        self.register_buffer("factor", value)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return x * self.factor

                def extra_repr(self) -> str:
                    return f"factor={self.factor.item():.1f}, learnable={self.learnable}"
        '''), "repr(Scale("),
        Wrong("hooks_double_in_place", FORWARD_HOOKS, "change_hooks", _cell('''
            def double_inputs(module, args):
                for x in args:
                    x.mul_(2)
                return args


            def plus_five(module, args, output):
                return output + 5
        '''), "do not change the inputs in place"),
        Wrong("plus_five_in_place", FORWARD_HOOKS, "change_hooks", _cell('''
            def double_inputs(module, args):
                return tuple(2 * x for x in args)


            def plus_five(module, args, output):
                output.add_(5)
        '''), "what plus_five returns when called directly"),
        Wrong("hooks_for_two_inputs_only", FORWARD_HOOKS, "change_hooks", _cell('''
            def double_inputs(module, args):
                x1, x2 = args
                return 2 * x1, 2 * x2


            def plus_five(module, args, output):
                return output + 5
        '''), "ValueError"),
        Wrong("clip_gradient_clamps_in_place", BACKWARD_HOOKS, "clip_gradient", _cell('''
            def clip_gradient(grad):
                return grad.clamp_(-1.0, 1.0)
        '''), "the gradient clip_gradient was given (a hook must not change its argument in place)"),
        Wrong("halve_grad_output_in_place", BACKWARD_HOOKS, "backward_pre_hook", _cell('''
            def halve_grad_output(module, grad_output):
                for g in grad_output:
                    if g is not None:
                        g.mul_(0.5)
        '''), "(a hook must not change grad_output in place)"),
        Wrong("tensor_hook_reads_w_grad", BACKWARD_HOOKS, "tensor_hook", _cell('''
            def tensor_hook(grad):
                answer.append(model.W.grad)
        '''), "W.grad is not set yet while the hook runs"),
        Wrong("leaf_shapes_global_hook_left_when_model_raises", FORWARD_HOOKS, "leaf_shapes", _cell('''
            def leaf_output_shapes(model, x):
                names = {module: name for name, module in model.named_modules()}
                records = []
                handle = torch.nn.modules.module.register_module_forward_hook(
                    lambda module, args, output: records.append((names[module], tuple(output.shape)))
                    if module in names and not list(module.children()) else None)
                model(x)
                handle.remove()
                return records
        '''), "still holding a hook when model(x) raised RuntimeError"),
        Wrong("leaf_shapes_hides_its_hooks_behind_named_modules", FORWARD_HOOKS, "leaf_shapes", _cell('''
            def leaf_output_shapes(model, x):
                records = []
                for name, module in nn.Module.named_modules(model):
                    if next(module.children(), None) is None:
                        module.register_forward_hook(lambda module, args, output, name=name: records.append((name, tuple(output.shape))))

                def named_modules(*args, **kwargs):  # the next caller sees no module, once
                    del model.named_modules
                    return iter(())

                model.named_modules = named_modules
                model(x)
                return list(records)
        '''), "named_modules cannot be replaced on the model while it is graded"),
        Wrong("leaf_shapes_borrows_the_reference", FORWARD_HOOKS, "leaf_shapes", _cell('''
            def leaf_output_shapes(model, x):
                try:
                    return reference_leaf_shapes(model, x)
                except NameError:
                    return [("body.0", (2, 8)), ("body.1", (2, 8)), ("head", (2, 3))]
        '''), "leaf_output_shapes on"),
        Wrong("kaiming_uniform_instead_of_normal", APPLY, "init_weights", _cell('''
            def init_weights(module: nn.Module) -> None:
                if isinstance(module, nn.Linear):
                    nn.init.kaiming_uniform_(module.weight, nonlinearity="relu")
                    nn.init.zeros_(module.bias)
                elif isinstance(module, nn.Conv2d):
                    nn.init.xavier_uniform_(module.weight)
                    nn.init.zeros_(module.bias)
        '''), "kurtosis"),
        Wrong("xavier_normal_instead_of_uniform", APPLY, "init_weights", _cell('''
            def init_weights(module: nn.Module) -> None:
                if isinstance(module, nn.Linear):
                    nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                    nn.init.zeros_(module.bias)
                elif isinstance(module, nn.Conv2d):
                    nn.init.xavier_normal_(module.weight)
                    nn.init.zeros_(module.bias)
        '''), "lies outside ±"),
        Wrong("make_linear_replaces_forward", APPLY, "make_linear", _cell('''
            def make_linear(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.forward = lambda x, m=module: x @ m.W.T + m.b  # no hook: the exercise asks for one
        '''), "how many forward hooks each Function has"),
        Wrong("init_to_one_fills_every_module", APPLY, "init_to_one", _cell('''
            def init_to_one(module: nn.Module) -> None:
                with torch.no_grad():
                    for parameter in module.parameters(recurse=False):
                        parameter.fill_(1.0)
        '''), "leave other modules alone"),
        Wrong("make_linear_knows_only_this_model", APPLY, "make_linear", _cell('''
            def make_linear(module: nn.Module) -> None:
                if isinstance(module, Model):
                    for fn in (module.ab.a, module.ab.b, module.cd.c, module.cd.d):
                        fn.register_forward_hook(lambda m, args, output: args[0] @ m.W.T + m.b)
        '''), "with every Function made linear"),
        Wrong("add_repr_patches_the_class", APPLY, "add_repr", _cell('''
            def add_repr(module):
                if isinstance(module, FUNCTIONS):
                    type(module).extra_repr = function_repr
        '''), "repr of a new model that add_repr was not applied to"),
        Wrong("per_sample_grads_swaps_one_global_hook_for_another", MEMORY_HOOKS, "per_sample_grads", _cell('''
            from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

            left_behind = [register_module_forward_pre_hook(lambda module, args: None)]


            def per_sample_grads(layer, x, targets):
                kept = {"calls": 0}
                left_behind.pop().remove()  # the number of global hooks stays the same …
                left_behind.append(register_module_forward_hook(lambda module, args, output: kept.update(calls=kept["calls"] + 1)))
                saved = {name: p.grad for name, p in layer.named_parameters()}
                layer.zero_grad()
                forward = layer.register_forward_hook(lambda module, args, output: kept.update(input=args[0].detach()))
                backward = layer.register_full_backward_hook(lambda module, grad_input, grad_output: kept.update(grad_output=grad_output[0]))
                F.mse_loss(layer(x.detach().requires_grad_()), targets, reduction="sum").backward()
                forward.remove()
                backward.remove()
                for name, p in layer.named_parameters():
                    p.grad = saved[name]
                return {"weight": torch.einsum("no,ni->noi", kept["grad_output"], kept["input"]), "bias": kept["grad_output"]}
        '''), "a global hook"),
        Wrong("compact_drops_every_key_named_mask", MEMORY_HOOKS, "compact_state_dict", _cell('''
            def compact(module: nn.Module, state_dict: dict, prefix: str, local_metadata: dict) -> None:
                for key in [key for key in state_dict if key.endswith("mask")]:  # another module's mask too
                    del state_dict[key]
                for key, value in state_dict.items():
                    if key.startswith(prefix) and value.is_floating_point():
                        state_dict[key] = value.to(torch.float16)
        '''), "the keys of OwnMask("),
        Wrong("per_sample_grads_in_closed_form", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                with torch.no_grad():
                    grad_output = 2 * (layer(x) - targets)  # d(sum of squares)/d(output), no hook, no backward
                return {"weight": torch.einsum("no,ni->noi", grad_output, x), "bias": grad_output}
        '''), "the kinds of the layer's hooks that fired"),
        Wrong("per_sample_grads_keeps_the_input_attached", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                kept = {}
                saved = {name: p.grad for name, p in layer.named_parameters()}
                layer.zero_grad()
                with (layer.register_forward_hook(lambda m, args, output: kept.update(input=args[0])),
                      layer.register_full_backward_hook(lambda m, gi, go: kept.update(grad_output=go[0]))):
                    F.mse_loss(layer(x.detach().requires_grad_()), targets, reduction="sum").backward()
                for name, p in layer.named_parameters():
                    p.grad = saved[name]
                return {"weight": torch.einsum("no,ni->noi", kept["grad_output"], kept["input"]), "bias": kept["grad_output"]}
        '''), "is attached to a graph"),
        Wrong("per_sample_grads_marks_the_callers_x", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                kept = {}
                saved = {name: p.grad for name, p in layer.named_parameters()}
                layer.zero_grad()
                with (layer.register_forward_hook(lambda m, args, output: kept.update(input=args[0].detach())),
                      layer.register_full_backward_hook(lambda m, gi, go: kept.update(grad_output=go[0]))):
                    F.mse_loss(layer(x.requires_grad_()), targets, reduction="sum").backward()
                for name, p in layer.named_parameters():
                    p.grad = saved[name]
                return {"weight": torch.einsum("no,ni->noi", kept["grad_output"], kept["input"]), "bias": kept["grad_output"]}
        '''), "x.requires_grad after per_sample_grads on a batch of 4, Linear(3, 2), as given"),
        Wrong("per_sample_grads_leaves_its_hooks", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                kept = {}
                layer.register_forward_hook(lambda m, args, output: kept.update(input=args[0].detach()))
                layer.register_full_backward_hook(lambda m, gi, go: kept.update(grad_output=go[0]))
                inputs = x.detach().requires_grad_()
                torch.autograd.grad(F.mse_loss(layer(inputs), targets, reduction="sum"), inputs)
                return {"weight": torch.einsum("no,ni->noi", kept["grad_output"], kept["input"]), "bias": kept["grad_output"]}
        '''), "what still holds a hook after per_sample_grads on a batch of 4, Linear(3, 2) (remove every hook "
           "per_sample_grads registers before it returns) should be [], got ['the layer']"),
        Wrong("per_sample_grads_returns_a_pair", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                kept = {}
                with (layer.register_forward_hook(lambda m, args, output: kept.update(input=args[0].detach())),
                      layer.register_full_backward_hook(lambda m, gi, go: kept.update(grad_output=go[0]))):
                    inputs = x.detach().requires_grad_()
                    torch.autograd.grad(F.mse_loss(layer(inputs), targets, reduction="sum"), inputs)
                return torch.einsum("no,ni->noi", kept["grad_output"], kept["input"]), kept["grad_output"]
        '''), "the keys of the dict that per_sample_grads on a batch of 4, Linear(3, 2) returns should be "
           "['bias', 'weight'], got 'tuple'"),
        *[Wrong(name, AUTOGRAD_FUNCTION, "linear_module",
                _cell(LINEAR_MODULE.replace("WEIGHT", weight).replace("BIAS", bias)), message)
          for name, weight, bias, message in [
              ("linear_initialised_to_zeros", "torch.zeros(out_features, in_features)", "torch.zeros(out_features)",
               "standard deviation 0"),
              ("linear_initialised_normal_with_the_uniforms_std",
               "torch.randn(out_features, in_features) / (3 * in_features) ** 0.5",
               "torch.randn(out_features) / (3 * in_features) ** 0.5", "lies outside ±"),
          ]],
        Wrong("grad_cam_by_backward_into_the_parameters", APPLICATIONS, "grad_cam", _cell('''
            def grad_cam(model, layer, image, target):
                captured = {}

                def keep_activation(module, inputs, output):
                    captured["activation"] = output
                    output.register_hook(lambda grad: captured.__setitem__("gradient", grad))

                with layer.register_forward_hook(keep_activation):
                    model(image)[0, target].backward()  # right map, but every parameter's .grad grows
                weights = captured["gradient"][0].mean(dim=(1, 2), keepdim=True)
                return F.relu((weights * captured["activation"][0]).sum(dim=0)).detach()
        '''), "whose .grad"),
        Wrong("grad_cam_by_backward_then_zero_grad", APPLICATIONS, "grad_cam", _cell('''
            def grad_cam(model, layer, image, target):
                captured = {}

                def keep_activation(module, inputs, output):
                    output.retain_grad()
                    captured["activation"] = output

                handle = layer.register_forward_hook(keep_activation)
                try:
                    model(image)[0, target].backward()
                finally:
                    handle.remove()
                model.zero_grad()  # clears the gradients the caller had, too
                activation = captured["activation"]
                weights = activation.grad[0].mean(dim=(1, 2), keepdim=True)
                return F.relu((weights * activation[0]).sum(dim=0)).detach()
        '''), "whose .grad"),
        Wrong("grad_cam_hides_its_backward_behind_named_modules", APPLICATIONS, "grad_cam", _cell('''
            def grad_cam(model, layer, image, target):
                captured = {}

                def keep(module, inputs, output):
                    output.retain_grad()
                    captured["activation"] = output

                handle = layer.register_forward_hook(keep)
                try:
                    model(image)[0, target].backward()  # adds into every parameter's .grad
                finally:
                    handle.remove()

                def named_modules(*args, **kwargs):  # the next caller sees no module, once
                    del model.named_modules
                    return iter(())

                model.named_modules = named_modules
                activation = captured["activation"]
                weights = activation.grad[0].mean(dim=(1, 2), keepdim=True)
                return F.relu((weights * activation[0]).sum(dim=0)).detach()
        '''), "named_modules cannot be replaced on the model while it is graded"),
        Wrong("grad_cam_cleans_up_only_after_an_exception", APPLICATIONS, "grad_cam", _cell('''
            def grad_cam(model, layer, image, target):
                captured = {}
                handle = layer.register_forward_hook(lambda module, inputs, output: captured.update(activation=output))
                try:
                    score = model(image)[0, target]
                except Exception:  # a KeyboardInterrupt passes by, the hook stays
                    handle.remove()
                    raise
                handle.remove()
                (gradient,) = torch.autograd.grad(score, captured["activation"])
                weights = gradient[0].mean(dim=(1, 2), keepdim=True)
                return F.relu((weights * captured["activation"][0]).sum(dim=0)).detach()
        '''), "KeyboardInterrupt"),
        Wrong("grad_cam_leaves_a_global_hook", APPLICATIONS, "grad_cam", _cell('''
            from torch.nn.modules.module import register_module_forward_hook


            def grad_cam(model, layer, image, target):
                captured = {}
                register_module_forward_hook(lambda module, inputs, output: captured.update(activation=output) if module is layer else None)
                score = model(image)[0, target]
                (gradient,) = torch.autograd.grad(score, captured["activation"])
                weights = gradient[0].mean(dim=(1, 2), keepdim=True)
                return F.relu((weights * captured["activation"][0]).sum(dim=0)).detach()
        '''), "a global hook"),
        Wrong("skip_nonfinite_handle_that_poisons_instead_of_removing", APPLICATIONS, "skip_nonfinite", _cell('''
            class Handle:
                def __init__(self, optimizer):
                    self.optimizer = optimizer

                def remove(self):  # the hook stays: a nan planted where the test used to look for one
                    with torch.no_grad():
                        for group in self.optimizer.param_groups:
                            for p in group["params"]:
                                p.view(-1)[0] = float("nan")


            def skip_nonfinite_steps(optimizer):
                def skip_if_nonfinite(optimizer, args, kwargs):
                    params = [p for group in optimizer.param_groups for p in group["params"]]
                    if any(p.grad is not None and not torch.isfinite(p.grad).all() for p in params):
                        for p in params:
                            p.grad = None

                optimizer.register_step_pre_hook(skip_if_nonfinite)
                return Handle(optimizer)
        '''), "once handle.remove() has run"),
        Wrong("linear_function_computes_the_input_gradient_elementwise_always", AUTOGRAD_FUNCTION, "linear_function", _cell('''
            class LinearFunction(Function):
                @staticmethod
                def forward(input, weight, bias=None):
                    output = input @ weight.T
                    return output + bias if bias is not None else output

                @staticmethod
                def setup_context(ctx, inputs, output):
                    input, weight, bias = inputs
                    ctx.save_for_backward(input, weight)
                    ctx.has_bias = bias is not None

                @staticmethod
                def backward(ctx, grad_output):
                    input, weight = ctx.saved_tensors
                    full = (grad_output.unsqueeze(-1) * weight.unsqueeze(0)).sum(1)  # no matrix product: no FLOPs counted
                    grad_input = full if ctx.needs_input_grad[0] else None
                    grad_weight = grad_output.T @ input if ctx.needs_input_grad[1] else None
                    grad_bias = grad_output.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
                    return grad_input, grad_weight, grad_bias
        '''), "tensors of the input's gradient"),
        Wrong("cube_keeps_x_on_ctx", AUTOGRAD_FUNCTION, "cube", _cell('''
            class Cube(Function):
                @staticmethod
                def forward(x):
                    return x**3

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.x = inputs[0]

                @staticmethod
                def backward(ctx, grad_output):
                    return 3 * ctx.x**2 * grad_output
        '''), "backward after x was changed in place since forward"),
        Wrong("linear_function_ignores_needs_input_grad", AUTOGRAD_FUNCTION, "linear_function", _cell('''
            class LinearFunction(Function):
                @staticmethod
                def forward(input, weight, bias=None):
                    output = input @ weight.T
                    return output if bias is None else output + bias

                @staticmethod
                def setup_context(ctx, inputs, output):
                    input, weight, *rest = inputs
                    ctx.save_for_backward(input, weight)
                    ctx.has_bias = bool(rest) and rest[0] is not None

                @staticmethod
                def backward(ctx, grad_output):
                    input, weight = ctx.saved_tensors
                    grad_bias = grad_output.sum(0) if ctx.has_bias else None
                    return grad_output @ weight, grad_output.T @ input, grad_bias
        '''), "ctx.needs_input_grad"),
        Wrong("skips_nan_but_not_inf", APPLICATIONS, "skip_nonfinite", _cell('''
            def skip_nonfinite_steps(optimizer):
                def skip_if_nan(optimizer, args, kwargs):
                    params = [p for group in optimizer.param_groups for p in group["params"]]
                    if any(p.grad is not None and p.grad.isnan().any() for p in params):
                        for p in params:
                            p.grad = None

                return optimizer.register_step_pre_hook(skip_if_nan)
        '''), "a inf gradient"),
            Wrong("penalty_without_create_graph", APPLICATIONS, "gradient_penalty", _cell('''
            def gradient_penalty(critic, real, fake, eps):
                x_hat = (eps * real + (1 - eps) * fake).requires_grad_()
                (grad,) = torch.autograd.grad(critic(x_hat).sum(), x_hat)
                return (grad.norm(dim=1) - 1).pow(2).mean()
        '''), "whether the penalty stays in the graph"),
        Wrong("penalty_mixes_the_wrong_way_round", APPLICATIONS, "gradient_penalty", _cell('''
            def gradient_penalty(critic, real, fake, eps):
                x_hat = (eps * fake + (1 - eps) * real).requires_grad_()  # right on a linear critic only
                (grad,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
                return (grad.norm(dim=1) - 1).pow(2).mean()
        '''), "gradient_penalty on a batch of"),
        Wrong("penalty_norm_of_the_whole_batch", APPLICATIONS, "gradient_penalty", _cell('''
            def gradient_penalty(critic, real, fake, eps):
                x_hat = (eps * real + (1 - eps) * fake).requires_grad_()
                (grad,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
                return (grad.norm() - 1).pow(2)
        '''), "gradient_penalty of the linear critic"),
            Wrong("cap_scale_records_the_capped_kwargs", FORWARD_HOOKS, "kwargs_hook", _cell('''
            calls = []


            def cap_scale(module, args, kwargs):
                if kwargs.get("scale", 0.0) > 1:
                    kwargs["scale"] = 1.0
                calls.append(kwargs)  # the same dict, after capping
        '''), "the keyword arguments as passed, before capping"),
        Wrong("cap_scale_adds_a_missing_scale", FORWARD_HOOKS, "kwargs_hook", _cell('''
            calls = []


            def cap_scale(module, args, kwargs):
                calls.append(dict(kwargs))
                return args, {**kwargs, "scale": min(kwargs.get("scale", 1.0), 1.0)}
        '''), "HalfScaledAdd()(x1, x2, **{'offset'"),
        Wrong("capture_without_finally", FORWARD_HOOKS, "capture", _cell('''
            from contextlib import contextmanager


            @contextmanager
            def capture(model, names):
                modules = dict(model.named_modules())
                outputs = {}
                handles = [modules[name].register_forward_hook(lambda m, a, out, name=name: outputs.__setitem__(name, out)) for name in names]
                yield outputs
                for handle in handles:
                    handle.remove()
        '''), "after a with block that raised"),
        Wrong("patch_returns_the_clean_run", FORWARD_HOOKS, "patch_activation", _cell('''
            def patch(model, layer, clean, corrupted):
                return model(clean)  # right for a Sequential only
        '''), "the skip connection still carries corrupted"),
        Wrong("patch_leaves_its_hooks", FORWARD_HOOKS, "patch_activation", _cell('''
            def patch(model, layer, clean, corrupted):
                kept = {}
                layer.register_forward_hook(lambda module, args, output: kept.setdefault("output", output))
                model(clean)
                return model(corrupted)
        '''), "the names of the modules still holding a hook after patch(model, model["),
            Wrong("fused_sgd_keeps_the_gradient", BACKWARD_HOOKS, "fused_sgd", _cell('''
            def fuse_sgd(model, lr):
                def step(param):
                    with torch.no_grad():
                        param -= lr * param.grad
                return [param.register_post_accumulate_grad_hook(step) for param in model.parameters()]
        '''), "(free it: p.grad = None) should be [False, False], got [True, True]"),
        Wrong("graph_nodes_breadth_first", BACKWARD_HOOKS, "graph_nodes", _cell('''
            from collections import deque


            def graph_nodes(tensor):
                names, seen, queue = [], set(), deque([tensor.grad_fn])
                while queue:
                    node = queue.popleft()
                    if node is None or node in seen:
                        continue
                    seen.add(node)
                    names.append(type(node).__name__)
                    queue.extend(child for child, _ in node.next_functions)
                return names
        '''), "depth-first"),
        Wrong("graph_nodes_counts_shared_nodes_twice", BACKWARD_HOOKS, "graph_nodes", _cell('''
            def graph_nodes(tensor):
                def visit(node):
                    if node is None:
                        return []
                    return [type(node).__name__] + [name for child, _ in node.next_functions for name in visit(child)]

                return visit(tensor.grad_fn)
        '''), "each node once"),
            Wrong("saved_bytes_counts_elements_not_bytes", MEMORY_HOOKS, "saved_bytes", _cell('''
            def saved_bytes(fn, *inputs):
                sizes = []
                with saved_tensors_hooks(lambda t: sizes.append(t.numel()) or t, lambda t: t):
                    fn(*inputs)
                return len(sizes), sum(sizes)
        '''), "should be (2, 96)"),
        Wrong("saved_bytes_counts_the_storage_of_a_view", MEMORY_HOOKS, "saved_bytes", _cell('''
            def saved_bytes(fn, *inputs):
                sizes = []
                with saved_tensors_hooks(lambda t: sizes.append(t.untyped_storage().nbytes()) or t, lambda t: t):
                    fn(*inputs)
                return len(sizes), sum(sizes)
        '''), "two views of one row"),
        Wrong("pack_half_converts_integers_too", MEMORY_HOOKS, "half_precision", _cell('''
            def pack_half(tensor):
                return tensor.dtype, tensor.half()


            def unpack_half(packed):
                dtype, stored = packed
                return stored.to(dtype)
        '''), "pack_half of a torch.int64 tensor"),
        Wrong("pack_half_keeps_float32_behind_a_dtype_property", MEMORY_HOOKS, "half_precision", _cell('''
            class LooksHalf(torch.Tensor):
                @property
                def dtype(self):
                    return torch.float16


            def pack_half(tensor):
                return tensor.dtype, tensor.as_subclass(LooksHalf) if tensor.is_floating_point() else tensor


            def unpack_half(packed):
                dtype, stored = packed
                return stored.as_subclass(torch.Tensor).to(dtype)
        '''), "the pair's second item (the tensor it stores) should be 'a plain torch.float16 tensor', got 'a LooksHalf (a "
           "torch.Tensor subclass)'"),
        Wrong("pack_half_swaps_the_pair", MEMORY_HOOKS, "half_precision", _cell('''
            def pack_half(tensor):
                return tensor.to(torch.float16) if tensor.is_floating_point() else tensor, tensor.dtype


            def unpack_half(packed):
                stored, dtype = packed
                return stored.to(dtype)
        '''), "pack_half of a torch.float32 tensor: the pair's first item (the tensor's dtype: return (dtype, stored) in "
           "that order) should be 'a torch.dtype', got 'a plain torch.float16 tensor'"),
        Wrong("pack_half_returns_only_the_tensor", MEMORY_HOOKS, "half_precision", _cell('''
            def pack_half(tensor):
                return tensor.to(torch.float16) if tensor.is_floating_point() else tensor


            def unpack_half(packed):
                dtype, stored = packed
                return stored.to(dtype)
        '''), "pack_half of a torch.float32 tensor: the type it returns (a pair (dtype, stored)) should be 'tuple', got "
           "'Tensor'"),
        Wrong("blocks_run_without_checkpoint", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks:
                    x = block(x)  # no checkpoint: everything is saved
                return x
        '''), "forward calls of the blocks over forward and backward"),
        Wrong("rename_fc_ignores_prefix", MEMORY_HOOKS, "state_dict_hook", _cell('''
            def rename_fc(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
                for key in [key for key in state_dict if key.startswith("fc.")]:
                    state_dict["linear." + key[3:]] = state_dict.pop(key)
        '''), "the keys of state_dict after rename_fc on an Encoder nested as encoder (prefix 'encoder.'), given "
           "['encoder.fc.bias', 'encoder.fc.weight', 'head.bias', 'head.weight'] (rename the keys that start with prefix + "
           "'fc.', in state_dict itself) should be ['encoder.linear.bias', 'encoder.linear.weight', 'head.bias', "
           "'head.weight'], got ['encoder.fc.bias', 'encoder.fc.weight', 'head.bias', 'head.weight']"),
        Wrong("rename_fc_copies_the_keys", MEMORY_HOOKS, "state_dict_hook", _cell('''
            def rename_fc(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
                for key in [key for key in state_dict if key.startswith(prefix + "fc.")]:
                    state_dict[prefix + "linear." + key[len(prefix + "fc."):]] = state_dict[key]  # the old key stays
        '''), "rename_fc on an Encoder (prefix ''), given ['fc.bias', 'fc.weight'] (rename the keys that start with "
           "prefix + 'fc.', in state_dict itself) should be ['linear.bias', 'linear.weight'], got ['fc.bias', 'fc.weight', "
           "'linear.bias', 'linear.weight']"),
        Wrong("rename_fc_returns_a_new_dict", MEMORY_HOOKS, "state_dict_hook", _cell('''
            def rename_fc(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
                old = prefix + "fc."
                return {(prefix + "linear." + key[len(old):] if key.startswith(old) else key): value
                        for key, value in state_dict.items()}
        '''), "in state_dict itself) should be ['linear.bias', 'linear.weight'], got ['fc.bias', 'fc.weight']"),
        Wrong("per_sample_grads_batch_gradient_repeated", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                F.mse_loss(layer(x), targets, reduction="sum").backward()
                n = x.shape[0]
                grads = {"weight": layer.weight.grad.expand(n, -1, -1) / n, "bias": layer.bias.grad.expand(n, -1) / n}
                layer.weight.grad = layer.bias.grad = None
                return grads
        '''), "the 'weight' entry of per_sample_grads on a batch of 4, Linear(3, 2) has the wrong values"),
            Wrong("graph_nodes_marks_nodes_when_pushed", BACKWARD_HOOKS, "graph_nodes", _cell('''
            def graph_nodes(tensor):
                if tensor.grad_fn is None:
                    return []
                names, seen, stack = [], {tensor.grad_fn}, [tensor.grad_fn]
                while stack:
                    node = stack.pop()
                    names.append(type(node).__name__)
                    for child, _ in reversed(node.next_functions):
                        if child is not None and child not in seen:
                            seen.add(child)  # seen when pushed, not when visited
                            stack.append(child)
                return names
        '''), "a node is listed when it is visited"),
            Wrong("saved_bytes_pack_returns_nothing", MEMORY_HOOKS, "saved_bytes", _cell('''
            def saved_bytes(fn, *inputs):
                sizes = []
                with saved_tensors_hooks(lambda t: sizes.append(t.numel() * t.element_size()), lambda t: t):
                    fn(*inputs)
                return len(sizes), sum(sizes)
        '''), "what saved_bytes's pack hook returns (autograd keeps what pack returns and gives it to unpack: return "
           "the tensor itself) should be 'a tensor', got 'None'"),  # before backward, whose TypeError names unpack
        Wrong("checkpoint_reentrant", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks:
                    x = checkpoint(block, x, use_reentrant=True)
                return x
        '''), "use_reentrant=False"),
        Wrong("run_checkpointed_returns_nothing", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks:
                    x = checkpoint(block, x, use_reentrant=False)
        '''), "what run_checkpointed on 3 blocks returns (the last block's output: return it) should be 'a tensor', got "
           "'None'"),
        Wrong("run_checkpointed_without_autograd", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                with torch.no_grad():  # nothing saved at all
                    for block in blocks:
                        x = block(x)
                return x
        '''), "whether the output of run_checkpointed on 3 blocks requires grad (x does: backward needs the graph) should "
           "be True, got False"),
        Wrong("rename_fc_replaces_every_fc", MEMORY_HOOKS, "state_dict_hook", _cell('''
            def rename_fc(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
                for key in list(state_dict):
                    if "fc." in key:
                        state_dict[key.replace("fc.", "linear.")] = state_dict.pop(key)
        '''), "rename_fc on an Encoder nested as old_fc (prefix 'old_fc.'), given ['old_fc.fc.bias', 'old_fc.fc.weight'] "
           "(rename the keys that start with prefix + 'fc.', in state_dict itself) should be ['old_fc.linear.bias', "
           "'old_fc.linear.weight'], got ['old_linear.linear.bias', 'old_linear.linear.weight']"),
        Wrong("per_sample_grads_zeroes_the_gradient", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                kept = {}
                with layer.register_forward_hook(lambda m, args, out: kept.__setitem__("x", args[0].detach())), \\
                        layer.register_full_backward_hook(lambda m, gin, gout: kept.__setitem__("g", gout[0])):
                    F.mse_loss(layer(x.detach().requires_grad_()), targets, reduction="sum").backward()
                layer.zero_grad()  # not what it was before
                return {"weight": torch.einsum("no,ni->noi", kept["g"], kept["x"]), "bias": kept["g"]}
        '''), "the gradient it had before the call"),
        Wrong("watch_group_all_mode_twice", BACKWARD_HOOKS, "multi_grad", _cell('''
            from torch.autograd.graph import register_multi_grad_hook


            def watch_group(tensors, names, log):
                return [register_multi_grad_hook(tensors, lambda grads: log.append(("first", grads))),
                        register_multi_grad_hook(tensors, lambda grads: log.append(("all", dict(zip(names, grads)))))]
        '''), "expected a tensor"),
        Wrong("watch_group_first_on_every_tensor", BACKWARD_HOOKS, "multi_grad", _cell('''
            from torch.autograd.graph import register_multi_grad_hook


            def watch_group(tensors, names, log):
                handles = [t.register_hook(lambda grad: log.append(("first", grad))) for t in tensors]
                return handles[:1] + [register_multi_grad_hook(tensors, lambda grads: log.append(("all", dict(zip(names, grads)))))]
        '''), "one of each per pass"),
        Wrong("watch_group_all_skips_missing", BACKWARD_HOOKS, "multi_grad", _cell('''
            from torch.autograd.graph import register_multi_grad_hook


            def watch_group(tensors, names, log):
                def every(grads):
                    log.append(("all", {name: grad for name, grad in zip(names, grads) if grad is not None}))

                return [register_multi_grad_hook(tensors, lambda grad: log.append(("first", grad)), mode="any"),
                        register_multi_grad_hook(tensors, every)]
        '''), "every name of the group"),
        Wrong("predict_order_ignores_prepend", FORWARD_HOOKS, "predict_order", _cell('''
            def predict_order(config):
                def labels(module, kind, always_only=False):
                    return [h["label"] for h in config["hooks"] if h["module"] == module and h["kind"] == kind
                            and (h.get("always_call") or not always_only)]

                result = labels("outer", "pre")
                for child in config["run"]:
                    result += labels(child, "pre")
                    if config["raises"] == child:
                        return result + labels(child, "hook", True) + labels("outer", "hook", True)
                    result += labels(child, "hook")
                return result + labels("outer", "hook", config["raises"] == "outer")
        '''), "prepended pre-hooks and hooks"),
        Wrong("predict_order_prepended_in_registration_order", FORWARD_HOOKS, "predict_order", _cell('''
            def predict_order(config):
                def labels(module, kind, always_only=False):
                    mine = [h for h in config["hooks"] if h["module"] == module and h["kind"] == kind]
                    ordered = [h for h in mine if h.get("prepend")] + [h for h in mine if not h.get("prepend")]
                    return [h["label"] for h in ordered if h.get("always_call") or not always_only]

                result = labels("outer", "pre")
                for child in config["run"]:
                    result += labels(child, "pre")
                    if config["raises"] == child:
                        return result + labels(child, "hook", True) + labels("outer", "hook", True)
                    result += labels(child, "hook")
                return result + labels("outer", "hook", config["raises"] == "outer")
        '''), "of two prepended hooks, the later runs first"),
        Wrong("predict_order_nothing_after_a_raise", FORWARD_HOOKS, "predict_order", _cell('''
            def predict_order(config):
                def labels(module, kind):
                    mine = [h for h in config["hooks"] if h["module"] == module and h["kind"] == kind]
                    return [h["label"] for h in [h for h in mine if h.get("prepend")][::-1] + [h for h in mine if not h.get("prepend")]]

                result = labels("outer", "pre")
                for child in config["run"]:
                    result += labels(child, "pre")
                    if config["raises"] == child:
                        return result  # no hook runs once forward has raised
                    result += labels(child, "hook")
                return result if config["raises"] == "outer" else result + labels("outer", "hook")
        '''), "a child that raises"),
        Wrong("predict_order_each_child_once", FORWARD_HOOKS, "predict_order", _cell('''
            def predict_order(config):
                def labels(module, kind, always_only=False):
                    mine = [h for h in config["hooks"] if h["module"] == module and h["kind"] == kind]
                    ordered = [h for h in mine if h.get("prepend")][::-1] + [h for h in mine if not h.get("prepend")]
                    return [h["label"] for h in ordered if h.get("always_call") or not always_only]

                result = labels("outer", "pre")
                for child in dict.fromkeys(config["run"]):  # each child once
                    result += labels(child, "pre")
                    if config["raises"] == child:
                        return result + labels(child, "hook", True) + labels("outer", "hook", True)
                    result += labels(child, "hook")
                return result + labels("outer", "hook", config["raises"] == "outer")
        '''), "a child called twice"),
        Wrong("compact_converts_every_entry", MEMORY_HOOKS, "compact_state_dict", _cell('''
            def compact(module, state_dict, prefix, local_metadata):
                del state_dict[prefix + "mask"]
                for key, value in state_dict.items():
                    if value.is_floating_point():
                        state_dict[key] = value.half()
        '''), "(an entry of another module) should be 'torch.float32'"),
        Wrong("compact_halves_the_module", MEMORY_HOOKS, "compact_state_dict", _cell('''
            def compact(module, state_dict, prefix, local_metadata):
                del state_dict[prefix + "mask"]
                module.half()
        '''), "should be 'torch.float16'"),
        Wrong("compact_halves_integers_too", MEMORY_HOOKS, "compact_state_dict", _cell('''
            def compact(module, state_dict, prefix, local_metadata):
                del state_dict[prefix + "mask"]
                for key in [key for key in state_dict if key.startswith(prefix)]:
                    state_dict[key] = state_dict[key].half()
        '''), "(an integer entry) should be 'torch.int64'"),
        Wrong("compact_drops_mask_without_prefix", MEMORY_HOOKS, "compact_state_dict", _cell('''
            def compact(module, state_dict, prefix, local_metadata):
                state_dict.pop("mask", None)
                for key, value in state_dict.items():
                    if key.startswith(prefix) and value.is_floating_point():
                        state_dict[key] = value.half()
        '''), "each Smoother's mask left out"),
        Wrong("compact_returns_a_new_dict", MEMORY_HOOKS, "compact_state_dict", _cell('''
            def compact(module, state_dict, prefix, local_metadata):
                return {key: value.half() if key.startswith(prefix) and value.is_floating_point() else value
                        for key, value in state_dict.items() if key != prefix + "mask"}
        '''), "what compact returns, called on Smoother(3)'s state dict (a state-dict post-hook changes state_dict in "
           "place and returns None) should be 'None', got 'a dict'"),
        # 08: one plausible mistake per puzzle; each fails its test cell with a message in the student's terms
        Wrong("mul_gradient_not_reduced", BACKWARD_PUZZLES, "mul", _cell('''
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
                    return grad_output * y, grad_output * x  # autograd's engine would sum these down; the check does not
        '''), "grad of input y: shape (4,) expected, got (3, 4)"),
        Wrong("sum_dim_expand_without_unsqueeze", BACKWARD_PUZZLES, "sum_dim", _cell('''
            class SumDim(Function):
                @staticmethod
                def forward(x, dim, keepdim):
                    return x.sum(dim, keepdim=keepdim)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    x, dim, keepdim = inputs
                    ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim

                @staticmethod
                def backward(ctx, grad_output):
                    return grad_output.expand(ctx.shape), None, None  # right for dim=0 only
        '''), "SumDim.backward raised RuntimeError"),
        Wrong("mean_dim_without_dividing", BACKWARD_PUZZLES, "mean_dim", _cell('''
            class MeanDim(Function):
                @staticmethod
                def forward(x, dim, keepdim):
                    return x.mean(dim, keepdim=keepdim)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    x, dim, keepdim = inputs
                    ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim

                @staticmethod
                def backward(ctx, grad_output):
                    g = grad_output if ctx.keepdim else grad_output.unsqueeze(ctx.dim)
                    return g.expand(ctx.shape), None, None
        '''), "grad of input x has the wrong values: 1.541 instead of 0.513665 at index (0, 0) (12 of 12 entries wrong)"),
        Wrong("where_gradient_not_reduced", BACKWARD_PUZZLES, "where", _cell('''
            class Where(Function):
                @staticmethod
                def forward(condition, x, y):
                    return torch.where(condition, x, y)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                def backward(ctx, grad_output):
                    (condition,) = ctx.saved_tensors
                    return None, grad_output * condition, grad_output * ~condition
        '''), "grad of input x: shape (1, 4) expected, got (3, 4)"),
        Wrong("cumsum_forward_direction", BACKWARD_PUZZLES, "cumsum", _cell('''
            class Cumsum(Function):
                @staticmethod
                def forward(x, dim):
                    return x.cumsum(dim)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.dim = inputs[1]

                @staticmethod
                def backward(ctx, grad_output):
                    return grad_output.cumsum(ctx.dim), None
        '''), "grad of input x has the wrong values: 1.541 instead of -1.44731 at index (0, 0) (10 of 10 entries wrong)"),
        Wrong("max_dim_gradient_to_every_tie", BACKWARD_PUZZLES, "max_dim", _cell('''
            class MaxDim(Function):
                @staticmethod
                def forward(x, dim, keepdim):
                    values, indices = x.max(dim, keepdim=keepdim)
                    return values, indices

                @staticmethod
                def setup_context(ctx, inputs, output):
                    x, dim, keepdim = inputs
                    values, indices = output
                    ctx.mark_non_differentiable(indices)
                    ctx.save_for_backward(x, values)
                    ctx.dim, ctx.keepdim = dim, keepdim

                @staticmethod
                def backward(ctx, grad_values, grad_indices):
                    x, values = ctx.saved_tensors
                    if not ctx.keepdim:
                        values, grad_values = values.unsqueeze(ctx.dim), grad_values.unsqueeze(ctx.dim)
                    return (x == values) * grad_values, None, None  # every tied maximum gets the gradient
        '''), "grad of input x has the wrong values: 1.541 instead of 0 at index (0, 2) (2 of 6 entries wrong)"),
        Wrong("topk_scatter_along_dim_0", BACKWARD_PUZZLES, "topk", _cell('''
            class TopK(Function):
                @staticmethod
                def forward(x, k):
                    values, indices = torch.topk(x, k)
                    return values, indices

                @staticmethod
                def setup_context(ctx, inputs, output):
                    values, indices = output
                    ctx.mark_non_differentiable(indices)
                    ctx.save_for_backward(indices)
                    ctx.shape = inputs[0].shape

                @staticmethod
                def backward(ctx, grad_values, grad_indices):
                    (indices,) = ctx.saved_tensors
                    return grad_values.new_zeros(ctx.shape).scatter(0, indices, grad_values), None
        '''), "TopK.backward raised RuntimeError: index 4 is out of bounds"),
        Wrong("index_select_copy_loses_repeats", BACKWARD_PUZZLES, "index_select", _cell('''
            class IndexSelect(Function):
                @staticmethod
                def forward(x, dim, index):
                    return x.index_select(dim, index)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    x, dim, index = inputs
                    ctx.save_for_backward(index)
                    ctx.shape, ctx.dim = x.shape, dim

                @staticmethod
                def backward(ctx, grad_output):
                    (index,) = ctx.saved_tensors
                    grad = grad_output.new_zeros(ctx.shape)
                    for position, source in enumerate(index.tolist()):
                        grad.select(ctx.dim, source).copy_(grad_output.select(ctx.dim, position))  # the last copy wins
                    return grad, None, None
        '''), "IndexSelect.apply(x: (4, 3) float64, dim=0, index: (4,) int64): grad of input x has the wrong values: -0.403344 instead of 1.541 at index (2, 0) (3 of 12 entries wrong)"),
        Wrong("max_pool1d_scatter_not_add", BACKWARD_PUZZLES, "max_pool1d", _cell('''
            class MaxPool1d(Function):
                @staticmethod
                def forward(x, kernel_size, stride):
                    output, indices = F.max_pool1d(x, kernel_size, stride, return_indices=True)
                    return output, indices

                @staticmethod
                def setup_context(ctx, inputs, output):
                    pooled, indices = output
                    ctx.mark_non_differentiable(indices)
                    ctx.save_for_backward(indices)
                    ctx.shape = inputs[0].shape

                @staticmethod
                def backward(ctx, grad_output, grad_indices):
                    (indices,) = ctx.saved_tensors
                    return grad_output.new_zeros(ctx.shape).scatter(-1, indices, grad_output), None, None
        '''), "MaxPool1d.apply(x: (2, 3, 8) float64, kernel_size=3, stride=1): grad of input x has the wrong values: -1.06082 instead of -3.74448 at index (0, 0, 2) (9 of 48 entries wrong)"),
        Wrong("softmax_without_the_subtraction", BACKWARD_PUZZLES, "softmax", _cell('''
            class Softmax(Function):
                @staticmethod
                def forward(x, dim):
                    return x.softmax(dim)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(output)
                    ctx.dim = inputs[1]

                @staticmethod
                def backward(ctx, grad_output):
                    (y,) = ctx.saved_tensors
                    return y * (1 - y) * grad_output, None  # the diagonal of the Jacobian only
        '''), "Softmax.apply(x: (3, 4) float64, dim=1): grad of input x has the wrong values: 0.249298 instead of 0.413118 at index (0, 0) (12 of 12 entries wrong)"),
        Wrong("logsumexp_ignores_grad_output", BACKWARD_PUZZLES, "logsumexp", _cell('''
            class LogSumExp(Function):
                @staticmethod
                def forward(x, dim, keepdim):
                    return x.logsumexp(dim, keepdim=keepdim)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    x, dim, keepdim = inputs
                    ctx.save_for_backward(x)
                    ctx.dim = dim

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return torch.softmax(x, ctx.dim), None, None  # the local derivative, not times grad_output
        '''), "LogSumExp.apply(x: (3, 4) float64, dim=0, keepdim=False): grad of input x has the wrong values: 0.17465 instead of 0.269135 at index (0, 0) (12 of 12 entries wrong)"),
        Wrong("cross_entropy_sum_not_mean", BACKWARD_PUZZLES, "cross_entropy", _cell('''
            class CrossEntropy(Function):
                @staticmethod
                def forward(logits, target):
                    return F.nll_loss(logits.log_softmax(1), target)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(*inputs)

                @staticmethod
                def backward(ctx, grad_output):
                    logits, target = ctx.saved_tensors
                    return (logits.softmax(1) - F.one_hot(target, logits.shape[1])) * grad_output, None
        '''), "grad of input logits has the wrong values: -1.13767 instead of -0.284419 at index (0, 0) (12 of 12 entries wrong)"),
        Wrong("layer_norm_statistics_as_constants", BACKWARD_PUZZLES, "layer_norm", _cell('''
            class LayerNorm(Function):
                @staticmethod
                def forward(x, weight, bias, eps):
                    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    x, weight, bias, eps = inputs
                    ctx.save_for_backward(x, weight)
                    ctx.eps = eps

                @staticmethod
                def backward(ctx, grad_output):
                    x, weight = ctx.saved_tensors
                    mean, var = x.mean(-1, keepdim=True), x.var(-1, correction=0, keepdim=True)
                    rstd = (var + ctx.eps).rsqrt()
                    x_hat = (x - mean) * rstd
                    return grad_output * weight * rstd, (grad_output * x_hat).sum(0), grad_output.sum(0), None
        '''), "grad of input x has the wrong values: -0.104249 instead of -0.172514 at index (0, 0) (15 of 15 entries wrong)"),
        Wrong("layer_norm_weight_gradient_not_summed_over_rows", BACKWARD_PUZZLES, "layer_norm", _cell('''
            class LayerNorm(Function):
                @staticmethod
                def forward(x, weight, bias, eps):
                    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    x, weight, bias, eps = inputs
                    ctx.save_for_backward(x, weight)
                    ctx.eps = eps

                @staticmethod
                def backward(ctx, grad_output):
                    x, weight = ctx.saved_tensors
                    rstd = (x.var(-1, correction=0, keepdim=True) + ctx.eps).rsqrt()
                    x_hat = (x - x.mean(-1, keepdim=True)) * rstd
                    g = grad_output * weight
                    grad_x = rstd * (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True))
                    return grad_x, (grad_output * x_hat).mean(0), grad_output.mean(0), None
        '''), "grad of input weight has the wrong values: -0.056755 instead of -0.170265 at index (0,) (5 of 5 entries wrong)"),
        Wrong("normalize_norm_as_constant", BACKWARD_PUZZLES, "normalize", _cell('''
            class Normalize(Function):
                @staticmethod
                def forward(x, dim):
                    return F.normalize(x, dim=dim)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])
                    ctx.dim = inputs[1]

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return grad_output / x.norm(dim=ctx.dim, keepdim=True), None
        '''), "Normalize.apply(x: (3, 4) float64, dim=1): grad of input x has the wrong values: 0.812721 instead of 0.385865 at index (0, 0) (12 of 12 entries wrong)"),
        Wrong("conv1d_flipped_kernel", BACKWARD_PUZZLES, "conv1d", _cell('''
            class Conv1d(Function):
                @staticmethod
                def forward(x, weight):
                    windows = x.unfold(2, weight.shape[2], 1)
                    return torch.einsum("nclk,ock->nol", windows, weight)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(*inputs)

                @staticmethod
                def backward(ctx, grad_output):
                    x, weight = ctx.saved_tensors
                    grad_weight = torch.einsum("nol,nclk->ock", grad_output, x.unfold(2, weight.shape[2], 1))
                    return F.conv_transpose1d(grad_output, weight.flip(-1)), grad_weight  # convolution vs correlation
        '''), "Conv1d.apply(x: (2, 3, 7) float64, weight: (4, 3, 3) float64): grad of input x has the wrong values: -2.52681 instead of -0.836823 at index (0, 0, 0) (42 of 42 entries wrong)"),
        Wrong("softmax_by_autograd", BACKWARD_PUZZLES, "softmax", _cell('''
            class Softmax(Function):
                @staticmethod
                def forward(x, dim):
                    return x.softmax(dim)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])
                    ctx.dim = inputs[1]

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    with torch.enable_grad():
                        x = x.detach().requires_grad_()
                        (grad,) = torch.autograd.grad(x.softmax(ctx.dim), x, grad_output)
                    return grad, None
        '''), "Softmax.backward turns gradient recording on"),
        Wrong("softmax_by_forward_mode_autograd", BACKWARD_PUZZLES, "softmax", _with_backward("softmax", '''
            (y,) = ctx.saved_tensors
            x, columns = y.log().reshape(-1), []  # log(y) is x shifted along dim: the same Jacobian
            with fwAD.dual_level():  # the Jacobian a column at a time, with no gradient recording
                for i in range(x.numel()):
                    dual = fwAD.make_dual(x, torch.eye(x.numel(), dtype=x.dtype)[i]).reshape(y.shape)
                    columns.append(fwAD.unpack_dual(dual.softmax(ctx.dim)).tangent.reshape(-1))
            return (torch.stack(columns, dim=1).T @ grad_output.reshape(-1)).reshape(y.shape), None
        ''', imports="import torch.autograd.forward_ad as fwAD\n\n"), "Softmax.backward uses forward-mode autograd"),
        Wrong("logsumexp_by_jacfwd", BACKWARD_PUZZLES, "logsumexp", _with_backward("logsumexp", '''
            x, _ = ctx.saved_tensors
            jacobian = jacfwd(lambda v: v.logsumexp(ctx.dim, keepdim=ctx.keepdim))(x)
            axes = list(range(grad_output.dim()))
            return torch.tensordot(grad_output, jacobian, dims=(axes, axes)), None, None
        ''', imports="from torch.func import jacfwd\n\n"), "LogSumExp.backward uses forward-mode autograd"),
        Wrong("layer_norm_by_torch_func", BACKWARD_PUZZLES, "layer_norm", _cell('''
            class LayerNorm(Function):
                @staticmethod
                def forward(x, weight, bias, eps):
                    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    x, weight, bias, eps = inputs
                    ctx.save_for_backward(x, weight, bias)
                    ctx.eps = eps

                @staticmethod
                def backward(ctx, grad_output):
                    x, weight, bias = ctx.saved_tensors
                    _, vjp = torch.func.vjp(lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b, ctx.eps), x, weight, bias)
                    return (*vjp(grad_output), None)
        '''), "LayerNorm.backward turns gradient recording on"),
        Wrong("cross_entropy_by_pytorch_backward_kernel", BACKWARD_PUZZLES, "cross_entropy", _cell('''
            class CrossEntropy(Function):
                @staticmethod
                def forward(logits, target):
                    return F.nll_loss(logits.log_softmax(1), target)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(*inputs)

                @staticmethod
                def backward(ctx, grad_output):
                    logits, target = ctx.saved_tensors
                    log_p = logits.log_softmax(1)
                    total = torch.tensor(float(len(target)), dtype=logits.dtype)
                    grad_log_p = torch.ops.aten.nll_loss_backward(grad_output, log_p, target, None, 1, -100, total)
                    return torch.ops.aten._log_softmax_backward_data(grad_log_p, log_p, 1, logits.dtype), None
        '''), "calls PyTorch's own backward function (nll_loss_backward)"),
        Wrong("max_pool1d_graph_built_in_setup_context", BACKWARD_PUZZLES, "max_pool1d", _cell('''
            class MaxPool1d(Function):
                @staticmethod
                def forward(x, kernel_size, stride):
                    output, indices = F.max_pool1d(x, kernel_size, stride, return_indices=True)
                    return output, indices

                @staticmethod
                def setup_context(ctx, inputs, output):
                    x, kernel_size, stride = inputs
                    ctx.mark_non_differentiable(output[1])
                    with torch.enable_grad():  # a private graph, differentiated later
                        ctx.leaf = x.detach().requires_grad_()
                        ctx.pooled = F.max_pool1d(ctx.leaf, kernel_size, stride)

                @staticmethod
                def backward(ctx, grad_output, grad_indices):
                    (grad,) = torch.autograd.grad(ctx.pooled, ctx.leaf, grad_output)
                    return grad, None, None
        '''), "MaxPool1d.setup_context turns gradient recording on"),
    ]


def _hooks_return_and_logs() -> list[Wrong]:
    """02 and 03: a hook's return value misread (torch would then fail inside the module call with its own words), and
    answers whose wrong data used to crash a later line of the test when graded (a failed check does not stop it)."""
    return [
        Wrong("pre_hook_returns_the_first_input", FORWARD_HOOKS, "collect_hooks", _cell('''
            def pre_hook(module, args):
                answer.extend(args)
                return args[0]


            def hook(module, args, output):
                answer.append(output)
        '''), "the inputs Add's forward gets after pre_hook (a forward pre-hook that returns something replaces them: "
              "return nothing) should be ['x1', 'x2'], got ['x1']"),
        Wrong("hook_returns_answer", FORWARD_HOOKS, "collect_hooks", _cell('''
            def pre_hook(module, args):
                answer.extend(args)


            def hook(module, args, output):
                answer.append(output)
                return answer
        '''), "what add(x1, x2) returns after hook (a forward hook that returns something replaces the output: return "
              "nothing) should be 'output', got 'a list'"),
        Wrong("double_inputs_returns_a_generator", FORWARD_HOOKS, "change_hooks", _cell('''
            def double_inputs(module, args):
                return (2 * x for x in args)


            def plus_five(module, args, output):
                return output + 5
        '''), "what double_inputs returns (a forward pre-hook returns the new inputs as a tuple, e.g. tuple(2 * x for x "
              "in args); anything else is taken as one input) should be 'a tuple', got 'a generator'"),
        Wrong("cap_scale_returns_the_kwargs_alone", FORWARD_HOOKS, "kwargs_hook", _cell('''
            calls = []


            def cap_scale(module, args, kwargs):
                calls.append(dict(kwargs))
                if kwargs.get("scale", 0.0) > 1:
                    return {**kwargs, "scale": 1.0}
        '''), "what cap_scale(module, (x1, x2), {'scale': 3.0}) returns (a pre-hook registered with_kwargs=True returns "
              "None or a pair (new args, new kwargs)) should be 'None or (args, kwargs)', got 'a dict'"),
        Wrong("capture_yields_nothing", FORWARD_HOOKS, "capture", _cell('''
            from contextlib import contextmanager


            @contextmanager
            def capture(model, names):
                modules = dict(model.named_modules())
                outputs, handles = {}, []
                try:
                    for name in names:
                        handles.append(modules[name].register_forward_hook(
                            lambda module, args, output, name=name: outputs.__setitem__(name, output)))
                    yield  # the dict is never handed out
                finally:
                    for handle in handles:
                        handle.remove()
        '''), "what capture(net, ['body.0', 'head']) yields (a dict: name → output) should be 'a dict', got 'None'"),
        Wrong("capture_keys_by_layer_type", FORWARD_HOOKS, "capture", _cell('''
            from contextlib import contextmanager


            @contextmanager
            def capture(model, names):
                modules = dict(model.named_modules())
                outputs, handles = {}, []

                def keep(module, args, output):
                    outputs[type(module).__name__] = output

                try:
                    for name in names:
                        handles.append(modules[name].register_forward_hook(keep))
                    yield outputs
                finally:
                    for handle in handles:
                        handle.remove()
        '''), "the names in capture(net, ['body.0', 'head']) should be ['body.0', 'head'], got ['Linear']"),
        Wrong("tensor_hook_doubles_the_gradient", BACKWARD_HOOKS, "tensor_hook", _cell('''
            def tensor_hook(grad):
                answer.append(grad)
                return grad * 2
        '''), "W.grad with tensor_hook registered, x1 · x2 (a hook that returns a tensor replaces the gradient: return "
              "nothing) has the wrong values: 0.25 instead of 0.125"),
        Wrong("halve_grad_output_returns_a_bare_tensor", BACKWARD_HOOKS, "backward_pre_hook", _cell('''
            def halve_grad_output(module, grad_output):
                return grad_output[0] / 2
        '''), "what halve_grad_output(module, grad_output) returns (a backward pre-hook returns a tuple with one gradient "
              "per output, e.g. (grad_output[0] / 2,)) should be 'a tuple of 1 gradient', got 'a Tensor'"),
        Wrong("fuse_sgd_returns_nothing", BACKWARD_HOOKS, "fused_sgd", _cell('''
            def fuse_sgd(model, lr):
                def step(param):
                    with torch.no_grad():
                        param -= lr * param.grad
                    param.grad = None

                for param in model.parameters():
                    param.register_post_accumulate_grad_hook(step)
        '''), "what fuse_sgd(model, lr=0.1) on Linear returns (the list of the hooks' handles, one per parameter) should "
              "be 'a list of 2 handles', got 'None'"),
        Wrong("watch_group_returns_nothing", BACKWARD_HOOKS, "multi_grad", _cell('''
            from torch.autograd.graph import register_multi_grad_hook


            def watch_group(tensors, names, log):
                register_multi_grad_hook(tensors, lambda grad: log.append(("first", grad)), mode="any")
                register_multi_grad_hook(tensors, lambda grads: log.append(("all", dict(zip(names, grads)))))
        '''), "what watch_group returns ([the handle of mode='any', the handle of mode='all']) should be 'a list of 2 "
              "handles', got 'None'"),
        Wrong("watch_group_logs_a_list", BACKWARD_HOOKS, "multi_grad", _cell('''
            from torch.autograd.graph import register_multi_grad_hook


            def watch_group(tensors, names, log):
                return [register_multi_grad_hook(tensors, lambda grad: log.append(("first", grad)), mode="any"),
                        register_multi_grad_hook(tensors, lambda grads: log.append(("all", list(grads))))]
        '''), "the type of log[1]'s second item after watch_group([h1, h2, h3], …) with h1 = 3 * x, h2 = tanh(h1), h3 = "
              "h2 ** 2 and a loss from h3 (a dict name → gradient) should be 'dict', got 'list'"),
        Wrong("watch_group_all_then_first", BACKWARD_HOOKS, "multi_grad", _cell('''
            from torch.autograd.graph import register_multi_grad_hook


            def watch_group(tensors, names, log):
                every = register_multi_grad_hook(tensors, lambda grads: log.append(("all", dict(zip(names, grads)))))
                first = register_multi_grad_hook(tensors, lambda grads: log.append(("first", grads[0])))
                return [first, every]
        '''), "the kinds of the log entries after backward pass 1 (watch_group([h1, h2, h3], …) with h1 = 3 * x, h2 = "
              "tanh(h1), h3 = h2 ** 2 and a loss from h3): one of each per pass should be ['first', 'all'], got ['all', "
              "'first']"),
    ]
