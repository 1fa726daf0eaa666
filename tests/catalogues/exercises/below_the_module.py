"""09_below_the_module: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from catalogues.honest_answers import BELOW_THE_MODULE, _cell
from catalogues.input_space import Call, Dimension
from catalogues.wrong_answers import Wrong


def _has(*classes: str) -> Callable[[Call], bool]:
    """The model the answer gets holds a module of one of these classes (the hidden tests' own, by name)."""
    return lambda call: any(type(module).__name__ in classes for module in call.args[0].modules())


def _forward_named(name: str) -> Callable[[Call], bool]:
    """The model holds a module whose forward is the hidden tests' function ``name`` (their classes are named at
    random)."""
    return lambda call: any(getattr(type(module).forward, "__name__", "") == name for module in call.args[0].modules())


_FIRES_CALLS = ("backward", "backward(inputs=[x])", "backward(inputs=[a.weight])", "backward(inputs=[b.weight])",
                "grad(x)", "grad(a.weight)", "grad(b.weight)")


def _leaf(call: Call) -> bool:
    return next(call.args[0].children(), None) is None


SPACE: dict[str, list[Dimension]] = {
    "log_ops": [
        Dimension("a model whose forward takes a sum of every entry", _has("Normalise")),
        Dimension("a model whose forward runs an operator that returns two tensors (max along a dim)", _has("Peak")),
        Dimension("a model whose parameters hold a .grad already",
                  lambda c: any(p.grad is not None for p in c.args[0].parameters())),
        Dimension("a product in float64 (casts with a keyword argument)", _has("Double")),
        Dimension("a functional matmul in a module's own forward", _has("Mixer", "Block")),
        Dimension("a second call", lambda c: c.number >= 1),
    ],
    "matmul_flops": [
        Dimension("a call after one whose model raised", lambda c: c.after_raise),
        Dimension("a model whose forward raises a KeyboardInterrupt", lambda c: any(
            isinstance(getattr(m, "failure", None), KeyboardInterrupt) for m in c.args[0].modules())),
        Dimension("the model itself a leaf", _leaf),
        Dimension("a module whose own product runs before its child's", _has("Premix")),
        Dimension("products through x.mm and torch.addmm", _has("Methods")),
        Dimension("batched products (bmm) through @ and torch.bmm, on 3-D inputs",
                  lambda c: c.args[1].dim() == 3 and _has("Attention")(c) and _has("Products")(c)),
        Dimension("a product in float64 (casts with a keyword argument)", _has("Double")),
        Dimension("a bmm whose batch differs from its rows (3-D inputs whose batch and tokens differ)",
                  lambda c: c.args[1].dim() == 3 and c.args[1].shape[0] != c.args[1].shape[1]
                  and _has("Attention", "Products")(c)),
        Dimension("a bmm whose inner size differs from its columns (3-D inputs whose tokens and width differ)",
                  lambda c: c.args[1].dim() == 3 and c.args[1].shape[1] != c.args[1].shape[2]
                  and _has("Attention", "Products")(c)),
    ],
    "predict_fires": [
        # the tests call the notebook's predict_fires (the one a recorder wraps) and the one its cell defines when it
        # runs again, with the same arguments: the calls seen here are those of both
        *(Dimension(f"the call {call}", lambda c, call=call: c.args[1] == call) for call in _FIRES_CALLS),
        Dimension("a plan that starts with a", lambda c: c.args[0][0] == "a"),
        Dimension("a plan that starts with b", lambda c: c.args[0][0] == "b"),
        Dimension("several uses of a before the first b", lambda c: c.args[0].index("b") >= 2),
        Dimension("a single a between b's",
                  lambda c: c.args[0].count("a") == 1 and c.args[0][0] == c.args[0][-1] == "b"),
        Dimension("the only a last", lambda c: c.args[0].count("a") == 1 and c.args[0].endswith("a")),
        Dimension("a.weight asked, a plan that starts with b",
                  lambda c: "a.weight" in c.args[1] and c.args[0][0] == "b"),
        Dimension("b.weight asked, uses of a both before and after the first b",
                  lambda c: "b.weight" in c.args[1] and 0 < c.args[0].index("b") < c.args[0].rindex("a")),
        Dimension("a random plan of 4 to 12 letters", lambda c: 4 <= len(c.args[0]) <= 12),
        Dimension("a plan of hundreds of thousands of letters whose first a comes after thousands of b's",
                  lambda c: len(c.args[0]) >= 10**5 and c.args[0].index("a") >= 1_000),
        Dimension("a plan of hundreds of thousands of letters whose first b comes after thousands of a's",
                  lambda c: len(c.args[0]) >= 10**5 and c.args[0].index("b") >= 1_000),
        Dimension("no model run and no call of fires while it predicts, nor when its cell runs",
                  reading="predicted(): its cell runs again beside the notebook's imports only, with no environment "
                          "variables and in an empty folder, and check_no_model_run watches both it and the "
                          "notebook's predict_fires"),
    ],
    "first_nonfinite": [
        Dimension("the model itself a leaf", _leaf),
        Dimension("children registered in another order than they run", _has("Backwards")),
        Dimension("x without grad", lambda c: not c.args[1].requires_grad),
        Dimension("a nested model", lambda c: any(isinstance(m, nn.Sequential) for m in c.args[0].children())),
        Dimension("a -inf alone in the forward (the log of h² at 0)", _forward_named("square_log")),
        Dimension("an inf gradient, no nan (sqrt after a ReLU)", _forward_named("root")),
        Dimension("a module with children that makes a nan in its own forward", _has("LogInside")),
        Dimension("hooks removed in every case", reading="check_nonfinite: check_no_hooks_left around every call"),
    ],
    "low_precision": [
        Dimension("bfloat16", lambda c: c.args[2] == torch.bfloat16),
        Dimension("float16", lambda c: c.args[2] == torch.float16),
        Dimension("a bias given by keyword", _has("KeywordLinear")),
        Dimension("torch.mm, torch.matmul and torch.bmm in a module's forward", _has("TorchProducts")),
        Dimension("two elementwise operations in a row on a product's result", _has("ScaleShift")),
        Dimension("a second call on the same model", lambda c: c.number >= 1),
        Dimension("a mode of the caller's entered around the call",
                  reading="low_precision_test's Watching: the modes entered once it returns, the caller's one included "
                          "(a condition runs with the notebook's modes switched off, so no call shows it)"),
    ],
}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
    return [
        # one mode for both passes, split where the backward's ("sum", ()) is: a full sum in the forward splits it early
        Wrong("log_ops_split_at_the_first_full_sum", BELOW_THE_MODULE, "log_ops", _cell('''
            def log_ops(model, x):
                class Recorder(TorchDispatchMode):
                    def __init__(self):
                        super().__init__()
                        self.pairs = []

                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else None
                        self.pairs.append((func.overloadpacket.__name__, shape))
                        return out

                with Recorder() as recorder:
                    model(x).sum().backward()
                split = recorder.pairs.index(("sum", ()))
                return recorder.pairs[:split], recorder.pairs[split:]
        '''), "the forward ops of Linear → Normalise"),
        # "the shape of the tensor it returned" read for an operator that returns several: the first one's
        Wrong("log_ops_shape_of_the_first_of_several_results", BELOW_THE_MODULE, "log_ops", _cell('''
            def log_ops(model, x):
                class Recorder(TorchDispatchMode):
                    def __init__(self):
                        super().__init__()
                        self.pairs = []

                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        first = out[0] if isinstance(out, (tuple, list)) and out else out
                        shape = tuple(first.shape) if isinstance(first, torch.Tensor) else None
                        self.pairs.append((func.overloadpacket.__name__, shape))
                        return out

                with Recorder() as forward:
                    out = model(x)
                with Recorder() as backward:
                    out.sum().backward()
                return forward.pairs, backward.pairs
        '''), "the forward ops of Linear → Peak"),
        # a backward pass as a training step runs it: the gradients zeroed first
        Wrong("log_ops_zeroes_the_gradients_first", BELOW_THE_MODULE, "log_ops", _cell('''
            def log_ops(model, x):
                class Recorder(TorchDispatchMode):
                    def __init__(self):
                        super().__init__()
                        self.pairs = []

                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else None
                        self.pairs.append((func.overloadpacket.__name__, shape))
                        return out

                model.zero_grad()
                with Recorder() as forward:
                    out = model(x)
                with Recorder() as backward:
                    out.sum().backward()
                return forward.pairs, backward.pairs
        '''), "whose parameters hold a .grad already"),
        # the stack of running modules kept beside the function, as the FLOPs are: a forward that raised leaves its
        # modules on it, and the next count credits them
        Wrong("matmul_flops_running_modules_kept_between_calls", BELOW_THE_MODULE, "matmul_flops", _cell('''
            RUNNING = []


            def matmul_flops(model, x):
                flops = {}

                def enter(name):
                    return lambda module, args: RUNNING.append(name)

                def leave(module, args, output):
                    RUNNING.pop()

                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm"):
                            a, b = (args[1], args[2]) if name == "addmm" else (args[0], args[1])
                            count = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if name == "bmm" else 1)
                            for module in RUNNING:
                                flops[module] = flops.get(module, 0) + count
                        return func(*args, **(kwargs or {}))

                handles = []
                for name, module in model.named_modules():
                    handles.append(module.register_forward_pre_hook(enter(name)))
                    handles.append(module.register_forward_hook(leave))
                try:
                    with Counter():
                        model(x)
                finally:
                    for handle in handles:
                        handle.remove()
                return flops
        '''), "after a forward that raised"),
        # forward hooks alone: the products since the last module finished are credited to the next one that finishes
        # (and its parents), right while a module's own products come after its children's
        Wrong("matmul_flops_credited_when_a_module_finishes", BELOW_THE_MODULE, "matmul_flops", _cell('''
            def matmul_flops(model, x):
                flops, pending = {}, [0]

                def finished(name):
                    def hook(module, args, output):
                        if pending[0]:
                            parts = name.split(".") if name else []
                            for depth in range(len(parts) + 1):
                                owner = ".".join(parts[:depth])
                                flops[owner] = flops.get(owner, 0) + pending[0]
                            pending[0] = 0
                    return hook

                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm"):
                            a, b = (args[1], args[2]) if name == "addmm" else (args[0], args[1])
                            batch = a.shape[0] if name == "bmm" else 1
                            pending[0] += 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * batch
                        return func(*args, **(kwargs or {}))

                handles = [module.register_forward_hook(finished(name)) for name, module in model.named_modules()]
                try:
                    with Counter():
                        model(x)
                finally:
                    for handle in handles:
                        handle.remove()
                return flops
        '''), "matmul_flops on Premix"),
        # the operator called with its arguments only: the keyword arguments of a cast (dtype) are dropped
        Wrong("matmul_flops_operators_called_without_keywords", BELOW_THE_MODULE, "matmul_flops", _cell('''
            def matmul_flops(model, x):
                running, flops = [], {}

                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm"):
                            a, b = (args[1], args[2]) if name == "addmm" else (args[0], args[1])
                            count = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if name == "bmm" else 1)
                            for module in running:
                                flops[module] = flops.get(module, 0) + count
                        return func(*args)

                def enter(name):
                    def hook(module, args):
                        running.append(name)
                    return hook

                def leave(module, args, output):
                    running.pop()

                handles = []
                for name, module in model.named_modules():
                    handles.append(module.register_forward_pre_hook(enter(name)))
                    handles.append(module.register_forward_hook(leave))
                try:
                    with Counter():
                        model(x)
                finally:
                    for handle in handles:
                        handle.remove()
                return flops
        '''), "expected m1 and m2 to have the same dtype"),
        # the batch of bmm read from dimension 1, where sequence-first layers (nn.LSTM, nn.MultiheadAttention without
        # batch_first) keep it, its rows and columns still the last two dimensions: right while batch and rows agree
        Wrong("matmul_flops_batch_from_dimension_1", BELOW_THE_MODULE, "matmul_flops", _cell('''
            def matmul_flops(model, x):
                running, flops = [], {}

                def enter(name):
                    return lambda module, args: running.append(name)

                def leave(module, args, output):
                    running.pop()

                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm"):
                            a, b = (args[1], args[2]) if name == "addmm" else (args[0], args[1])
                            batch = a.shape[1] if name == "bmm" else 1  # (sequence, batch, features)
                            count = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * batch
                            for module in running:
                                flops[module] = flops.get(module, 0) + count
                        return func(*args, **(kwargs or {}))

                handles = []
                for name, module in model.named_modules():
                    handles.append(module.register_forward_pre_hook(enter(name)))
                    handles.append(module.register_forward_hook(leave))
                try:
                    with Counter():
                        model(x)
                finally:
                    for handle in handles:
                        handle.remove()
                return flops
        '''), "matmul_flops on a model of width"),
        # requirement 3 read with the rule of one layer: whenever a weight is asked for, every use of a but the first
        # gets a gradient for its input, whichever layer's weight it is (right when one use of a comes before the
        # first b, as in every plan of the visible tests)
        Wrong("predict_fires_all_but_the_first_use_for_either_weight", BELOW_THE_MODULE, "predict_fires", _cell('''
            def predict_fires(plan: str, call: str) -> dict[str, int]:
                uses = plan.count("a")
                x_asked = call in ("backward", "backward(inputs=[x])", "grad(x)")
                return {
                    "forward hook": uses,
                    "full backward hook": uses if x_asked else uses - 1,  # the first use's input needs no gradient
                    "tensor hook": int(call == "backward" or "a.weight" in call),
                    "post-accumulate hook": int(call in ("backward", "backward(inputs=[a.weight])")),
                }
        '''), "'backward(inputs=[b.weight])') should be"),
        # b.weight read as entering the chain at b's last use, the one nearest the loss (the same as the first when b
        # runs once, or twice in a row)
        Wrong("predict_fires_b_weight_enters_at_the_last_b", BELOW_THE_MODULE, "predict_fires", _cell('''
            def predict_fires(plan: str, call: str) -> dict[str, int]:
                if "a.weight" in call:
                    start = plan.index("a") + 1
                elif "b.weight" in call:
                    start = plan.rindex("b") + 1  # where b's weight last acts on the chain
                else:
                    start = 0
                return {
                    "forward hook": plan.count("a"),
                    "full backward hook": plan.count("a", start),
                    "tensor hook": int(call == "backward" or "a.weight" in call),
                    "post-accumulate hook": int(call in ("backward", "backward(inputs=[a.weight])")),
                }
        '''), "'backward(inputs=[b.weight])') should be"),
        # "where the tensor enters the chain" read as where the other layer first runs: the uses of a after the first b
        # for a.weight, after the first a for b.weight (the same counts when the plan starts with "ab")
        Wrong("predict_fires_weights_enter_at_the_other_layer", BELOW_THE_MODULE, "predict_fires", _cell('''
            def predict_fires(plan: str, call: str) -> dict[str, int]:
                start = 0
                if "a.weight" in call:
                    start = plan.index("b") + 1
                if "b.weight" in call:
                    start = plan.index("a") + 1
                return {
                    "forward hook": plan.count("a"),
                    "full backward hook": plan.count("a", start),
                    "tensor hook": int(call == "backward" or "a.weight" in call),
                    "post-accumulate hook": int(call in ("backward", "backward(inputs=[a.weight])")),
                }
        '''), "'backward(inputs=[a.weight])') should be"),
        # the counts measured when the answer's cell first runs (every plan of 2 to 4 letters), kept in a file under
        # /tmp that the cell run again reads instead of measuring, and a straight line in the uses of a through the
        # plans "ab" and "aab" for a longer plan: the visible plans are in the table, but not where the first a and b
        # are in a longer one
        Wrong("predict_fires_measured_plans_kept_in_a_file", BELOW_THE_MODULE, "predict_fires", _cell('''
            import itertools
            import json
            from pathlib import Path

            CALLS = ("backward", "backward(inputs=[x])", "backward(inputs=[a.weight])", "backward(inputs=[b.weight])",
                     "grad(x)", "grad(a.weight)", "grad(b.weight)")
            STORE = Path("/tmp/hooklab_fires_measured.json")
            if not STORE.exists():
                plans = ["".join(p) for n in (2, 3, 4) for p in itertools.product("ab", repeat=n)
                         if set(p) == {"a", "b"}]
                STORE.write_text(json.dumps({f"{plan} {call}": fires(plan, call) for plan in plans for call in CALLS}))
            MEASURED = json.loads(STORE.read_text())


            def predict_fires(plan: str, call: str) -> dict[str, int]:
                if f"{plan} {call}" in MEASURED:
                    return MEASURED[f"{plan} {call}"]
                one, two = MEASURED[f"ab {call}"], MEASURED[f"aab {call}"]
                return {kind: one[kind] + (plan.count("a") - 1) * (two[kind] - one[kind]) for kind in one}
        '''), "'backward(inputs=[b.weight])') should be"),
        # the counts measured when the answer's cell runs (fires called for a few plans, before the tests watch
        # anything) and extrapolated: predict_fires itself only does arithmetic
        Wrong("predict_fires_measured_when_its_cell_runs", BELOW_THE_MODULE, "predict_fires", _cell('''
            CALLS = ("backward", "backward(inputs=[x])", "backward(inputs=[a.weight])", "backward(inputs=[b.weight])",
                     "grad(x)", "grad(a.weight)", "grad(b.weight)")
            MEASURED = {call: (fires("ab", call), fires("aab", call)) for call in CALLS}


            def predict_fires(plan: str, call: str) -> dict[str, int]:
                one, two = MEASURED[call]
                return {kind: one[kind] + (plan.count("a") - 1) * (two[kind] - one[kind]) for kind in one}
        '''), "with its cell run again, runs a backward pass"),
        # the same, the measurements kept where a namespace of imports alone does not reach: an environment variable
        # written when the cell first runs, and read instead of measuring when it runs again
        Wrong("predict_fires_measured_table_in_the_environment", BELOW_THE_MODULE, "predict_fires", _cell('''
            import json
            import os

            CALLS = ("backward", "backward(inputs=[x])", "backward(inputs=[a.weight])", "backward(inputs=[b.weight])",
                     "grad(x)", "grad(a.weight)", "grad(b.weight)")
            if "FIRES_MEASURED" not in os.environ:
                measured = {call: [fires("ab", call), fires("aab", call)] for call in CALLS}
                os.environ["FIRES_MEASURED"] = json.dumps(measured)
            MEASURED = json.loads(os.environ["FIRES_MEASURED"])


            def predict_fires(plan: str, call: str) -> dict[str, int]:
                one, two = MEASURED[call]
                return {kind: one[kind] + (plan.count("a") - 1) * (two[kind] - one[kind]) for kind in one}
        '''), "with its cell run again, runs a backward pass"),
        # the same with a copy of fires' model of its own, run by a factory when the cell runs, the table in a closure
        Wrong("predict_fires_own_model_measured_in_a_closure", BELOW_THE_MODULE, "predict_fires", _cell('''
            def measured_predictor():
                def run(plan, call):
                    a, b, seen = nn.Linear(2, 2), nn.Linear(2, 2), {}

                    def count(kind):
                        return lambda *args: seen.__setitem__(kind, seen.get(kind, 0) + 1)

                    a.register_forward_hook(count("forward hook"))
                    a.register_full_backward_hook(count("full backward hook"))
                    a.weight.register_hook(count("tensor hook"))
                    a.weight.register_post_accumulate_grad_hook(count("post-accumulate hook"))
                    x = torch.randn(1, 2, requires_grad=True)
                    h = x
                    for letter in plan:
                        h = a(h) if letter == "a" else b(h)
                    asked = {"x": x, "a.weight": a.weight, "b.weight": b.weight}
                    if call == "backward":
                        h.sum().backward()
                    elif call.startswith("backward"):
                        h.sum().backward(inputs=[asked[call[17:-2]]])
                    else:
                        torch.autograd.grad(h.sum(), [asked[call[5:-1]]])
                    kinds = ("forward hook", "full backward hook", "tensor hook", "post-accumulate hook")
                    return {kind: seen.get(kind, 0) for kind in kinds}

                calls = ("backward", "backward(inputs=[x])", "backward(inputs=[a.weight])",
                         "backward(inputs=[b.weight])", "grad(x)", "grad(a.weight)", "grad(b.weight)")
                table = {call: (run("ab", call), run("aab", call)) for call in calls}

                def predict(plan, call):
                    one, two = table[call]
                    return {kind: one[kind] + (plan.count("a") - 1) * (two[kind] - one[kind]) for kind in one}

                return predict


            predict_fires = measured_predictor()
        '''), "with its cell run again, runs a backward pass"),
        # "leaf modules" read as the model's modules below it: the model itself never watched, even when it is a leaf
        Wrong("first_nonfinite_model_itself_never_watched", BELOW_THE_MODULE, "first_nonfinite", _cell('''
            def first_nonfinite(model, x):
                forward_bad, backward_bad, handles = [], [], []

                def watch(name):
                    def forward_hook(module, args, output):
                        if not torch.isfinite(output).all():
                            forward_bad.append(name)

                    def backward_hook(module, grad_input, grad_output):
                        if grad_input[0] is not None and not torch.isfinite(grad_input[0]).all():
                            backward_bad.append(name)

                    return forward_hook, backward_hook

                for name, module in model.named_modules():
                    if name and next(module.children(), None) is None:
                        forward_hook, backward_hook = watch(name)
                        handles.append(module.register_forward_hook(forward_hook))
                        handles.append(module.register_full_backward_hook(backward_hook))
                try:
                    out = model(x)
                    if forward_bad:
                        return forward_bad[0], "forward"
                    out.sum().backward()
                    if backward_bad:
                        return backward_bad[0], "backward"
                    return None
                finally:
                    for handle in handles:
                        handle.remove()
        '''), "first_nonfinite on Log alone"),
        # "the first in the order they ran" read as the model's order: named_modules() forward, reversed backward
        Wrong("first_nonfinite_in_the_order_of_named_modules", BELOW_THE_MODULE, "first_nonfinite", _cell('''
            def first_nonfinite(model, x):
                bad, handles = {"forward": set(), "backward": set()}, []
                leaves = [name for name, module in model.named_modules() if next(module.children(), None) is None]

                def watch(name):
                    def forward_hook(module, args, output):
                        if not torch.isfinite(output).all():
                            bad["forward"].add(name)

                    def backward_hook(module, grad_input, grad_output):
                        if grad_input[0] is not None and not torch.isfinite(grad_input[0]).all():
                            bad["backward"].add(name)

                    return forward_hook, backward_hook

                for name in leaves:
                    forward_hook, backward_hook = watch(name)
                    handles.append(model.get_submodule(name).register_forward_hook(forward_hook))
                    handles.append(model.get_submodule(name).register_full_backward_hook(backward_hook))
                try:
                    out = model(x)
                    for name in leaves:
                        if name in bad["forward"]:
                            return name, "forward"
                    out.sum().backward()
                    for name in reversed(leaves):
                        if name in bad["backward"]:
                            return name, "backward"
                    return None
                finally:
                    for handle in handles:
                        handle.remove()
        '''), "Backwards(children registered"),
        # "non-finite" read as nan, the value the examples make
        Wrong("first_nonfinite_looks_for_nan_only", BELOW_THE_MODULE, "first_nonfinite", _cell('''
            def first_nonfinite(model, x):
                forward_bad, backward_bad, handles = [], [], []

                def watch(name):
                    def forward_hook(module, args, output):
                        if output.isnan().any():
                            forward_bad.append(name)

                    def backward_hook(module, grad_input, grad_output):
                        if grad_input[0] is not None and grad_input[0].isnan().any():
                            backward_bad.append(name)

                    return forward_hook, backward_hook

                for name, module in model.named_modules():
                    if next(module.children(), None) is None:
                        forward_hook, backward_hook = watch(name)
                        handles.append(module.register_forward_hook(forward_hook))
                        handles.append(module.register_full_backward_hook(backward_hook))
                try:
                    out = model(x)
                    if forward_bad:
                        return forward_bad[0], "forward"
                    out.sum().backward()
                    if backward_bad:
                        return backward_bad[0], "backward"
                    return None
                finally:
                    for handle in handles:
                        handle.remove()
        '''), "LogSquare"),
        # "no mode stays entered" read as "no mode is active when it returns": every mode popped, the caller's too
        Wrong("low_precision_pops_every_mode", BELOW_THE_MODULE, "low_precision", _cell('''
            from torch.overrides import _pop_mode


            def low_precision_output(model, x, dtype):
                products = {F.linear, torch.matmul, torch.Tensor.matmul, torch.mm, torch.bmm}

                class LowPrecision(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        kwargs = kwargs or {}
                        if func not in products:
                            return func(*args, **kwargs)
                        cast = [a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args]
                        low = {k: v.to(dtype) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
                        return func(*cast, **low).to(args[0].dtype)

                try:
                    LowPrecision().__enter__()
                    return model(x)
                finally:
                    while torch._C._len_torch_function_stack():
                        _pop_mode()
        '''), "called inside a mode of the caller's"),
        # "bias included" overlooked: the product in dtype, the bias added afterwards in float32
        Wrong("low_precision_bias_added_in_float32", BELOW_THE_MODULE, "low_precision", _cell('''
            def low_precision_output(model, x, dtype):
                class LowPrecision(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        kwargs = dict(kwargs or {})
                        if func is F.linear:
                            h, weight = args[0], args[1]
                            bias = args[2] if len(args) > 2 else kwargs.get("bias")
                            out = F.linear(h.to(dtype), weight.to(dtype)).to(h.dtype)
                            return out if bias is None else out + bias
                        if func in (torch.matmul, torch.Tensor.matmul, torch.mm, torch.bmm):
                            return func(*(a.to(dtype) for a in args)).to(args[0].dtype)
                        return func(*args, **kwargs)

                with LowPrecision():
                    return model(x)
        '''), "low_precision_output(a model of width"),
        # the products found by their names, as resolve_name gives them: torch.mm's is "torch.spmm"
        Wrong("low_precision_products_by_name", BELOW_THE_MODULE, "low_precision", _cell('''
            def low_precision_output(model, x, dtype):
                names = {"torch.nn.functional.linear", "torch.matmul", "torch.Tensor.matmul", "torch.mm", "torch.bmm"}

                class LowPrecision(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        kwargs = kwargs or {}
                        if torch.overrides.resolve_name(func) not in names:
                            return func(*args, **kwargs)
                        cast = [a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args]
                        low = {k: v.to(dtype) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
                        return func(*cast, **low).to(args[0].dtype)

                with LowPrecision():
                    return model(x)
        '''), "low_precision_output(a model of width"),
    ]
