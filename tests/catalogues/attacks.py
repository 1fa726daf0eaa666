"""Red team: a catalogue of realistic cheating submissions for the grading defences to stop.

Each :class:`Attack` replaces some answer cells of one assignment (every other answer cell keeps
its solution) so that the attacked exercise is wrong (an honest grader gives its test cells 0)
and then tries to make those test cells pass anyway (or, for ``leak-hidden-tests``, to get the
hidden tests' source into the outputs a student sees in the feedback).

``wins_undefended`` records whether the attack wins against plain execution of the notebook
(nbclient, one kernel from this environment, cwd = the submission folder, no defences, the
committed hooklab 13c3f9d), as verified by running every attack and its ``wrong`` baseline
(the same wrong answers without the cheat, whose attacked test cells must then fail). A test
cell passes when it has no ``error`` output; a leak wins when hidden-test lines appear in what
the feedback keeps of the outputs (streams, displays, and ``ename: evalue`` of errors).
The attacks with ``wins_undefended=False`` are controls that the checkers or the tests already stop.
"""

from __future__ import annotations

import base64
import codecs
import pickle
import textwrap
from dataclasses import dataclass, field

from catalogues.wrong_answers import wrong_answers

CATEGORIES = (
    "checker-patch",
    "module-swap",
    "import-system",
    "ipython-machinery",
    "tracing",
    "comparison-patch",
    "tensor-subclass",
    "dynamic-code",
    "frames",
    "ctypes",
    "namespace",
    "torch-dispatch",
    "threads",
    "files",
    "leak-hidden-tests",
)

M01, M02, M03 = "01_module_basics", "02_forward_hooks", "03_backward_hooks"
M04, M05, M06 = "04_apply", "05_autograd_function", "06_applications"
M07, M08 = "07_memory_hooks", "08_backward_puzzles"


@dataclass
class Attack:
    """A cheating submission: answer cells by grade_id, plus files beside the notebook."""

    name: str
    category: str
    assignment: str
    answers: dict[str, str]  # grade_id → the student's source for that answer cell
    attacked: list[str]  # grade_ids of the test cells it tries to win (or whose hidden tests it leaks)
    files: dict[str, str] = field(default_factory=dict)  # path beside the notebook → text
    note: str = ""
    wins_undefended: bool = True  # verified against plain execution (see the module docstring)
    wrong: dict[str, str] = field(default_factory=dict)  # the same wrong answers without the cheat (baseline)

    def __post_init__(self) -> None:
        assert self.category in CATEGORIES, f"{self.name}: unknown category {self.category!r}"
        if not self.wrong:
            self.wrong = {gid: WRONG[gid] for gid in self.answers if gid in WRONG}


def _src(text: str) -> str:
    """A readable triple-quoted source, dedented, starting at its first line."""
    return textwrap.dedent(text).lstrip("\n")


def _join(*parts: str) -> str:
    return "\n\n".join(part.strip("\n") for part in parts if part) + "\n"


# ----------------------------------------------------------------------------------------------
# Wrong answers: each fails its test cell(s) in plain execution. Attacks add a cheat to them.
# ----------------------------------------------------------------------------------------------

WRONG: dict[str, str] = {
    # 01 module basics
    "my_linear": _src('''
        class MyLinear(nn.Module):
            def __init__(self, in_features: int, out_features: int, bias: bool = True):
                super().__init__()
                self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
                if bias:
                    self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
                else:
                    self.register_parameter("bias", None)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x @ self.weight.T  # wrong: forgets the bias
        '''),
    "running_mean": _src('''
        class RunningMean(nn.Module):
            def __init__(self, num_features: int):
                super().__init__()
                self.register_buffer("mean", torch.zeros(num_features))
                self.register_buffer("count", torch.zeros((), dtype=torch.long))

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                if self.training:
                    with torch.no_grad():
                        self.count += x.shape[0]  # wrong: the mean is never updated
                return x - self.mean
        '''),
    "mlp": _src('''
        class MLP(nn.Module):
            def __init__(self, sizes: list[int]):
                super().__init__()
                self.layers = nn.ModuleList(nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes, sizes[1:]))

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                for layer in self.layers:
                    x = layer(x)  # wrong: no ReLU between the layers
                return x
        '''),
    "two_head_net": _src('''
        class TwoHeadNet(nn.Module):
            def __init__(self, in_features: int, hidden: int, num_classes: int):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(in_features, hidden))  # wrong: no ReLU
                self.heads = nn.ModuleDict({"cls": nn.Linear(hidden, num_classes), "reg": nn.Linear(hidden, 1)})

            def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
                features = self.body(x)
                return {name: head(features) for name, head in self.heads.items()}
        '''),
    "freeze": _src('''
        def freeze(model: nn.Module, names: list[str]) -> int:
            frozen = 0
            for name in names:
                for parameter in model.get_submodule(name).parameters():
                    if parameter.requires_grad:
                        parameter.requires_grad_(False)
                        frozen += 1  # wrong: counts tensors, not elements
            return frozen
        '''),
    "scale_repr": _src('''
        class Scale(nn.Module):
            def __init__(self, factor: float, learnable: bool = False):
                super().__init__()
                self.initial_factor = factor
                self.learnable = learnable
                value = torch.tensor(float(factor))
                if learnable:
                    self.factor = nn.Parameter(value)
                else:
                    self.register_buffer("factor", value)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x * self.factor

            def extra_repr(self) -> str:
                return f"factor={self.initial_factor}"  # wrong: leaves out learnable
        '''),
    # 02 forward hooks
    "collect_hooks": _src('''
        def pre_hook(module, args):
            pass  # wrong: collects nothing


        def hook(module, args, output):
            pass
        '''),
    "change_hooks": _src('''
        def double_inputs(module, args):
            pass  # wrong: changes nothing


        def plus_five(module, args, output):
            pass
        '''),
    "leaf_shapes": _src('''
        def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
            shapes = {}
            handles = [
                module.register_forward_hook(lambda module, args, output: shapes.__setitem__(module, tuple(output.shape)))
                for _, module in model.named_modules()
                if next(module.children(), None) is None
            ]
            try:
                model(x)
            finally:
                for handle in handles:
                    handle.remove()
            return [(name, shapes[module]) for name, module in model.named_modules() if module in shapes]  # wrong: definition order
        '''),
    # 03 backward hooks
    "backward_collect": _src('''
        def module_hook(module, grad_input, grad_output):
            pass  # wrong: collects nothing
        '''),
    "tensor_hook": _src('''
        def tensor_hook(grad):
            pass  # wrong: captures nothing
        '''),
    "clip_gradient": _src('''
        def clip_gradient(grad):
            return grad  # wrong: no clipping
        '''),
    # 04 apply
    "apply_order": _src('''
        def apply_order(model: nn.Module) -> list[str]:
            return [type(module).__name__ for module in model.modules()]  # wrong: preorder
        '''),
    "init_to_one": _src('''
        def init_to_one(module: nn.Module) -> None:
            pass  # wrong: does nothing
        '''),
    "add_bias": _src('''
        def add_bias(module: nn.Module) -> None:
            pass  # wrong: adds nothing
        '''),
    "make_linear": _src('''
        def make_linear(module: nn.Module) -> None:
            pass  # wrong: registers nothing
        '''),
    "add_repr": _src('''
        def add_repr(module: nn.Module) -> None:
            pass  # wrong: changes nothing
        '''),
    "init_weights": _src('''
        def init_weights(module: nn.Module) -> None:
            pass  # wrong: keeps PyTorch's default initialisation
        '''),
    # 05 autograd.Function
    "linear_function": _src('''
        class LinearFunction(Function):
            @staticmethod
            def forward(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
                output = input @ weight.T
                if bias is not None:
                    output = output + bias
                return output

            @staticmethod
            def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                input, weight, bias = inputs + (None,) * (3 - len(inputs))
                ctx.save_for_backward(input, weight)
                ctx.has_bias = bias is not None

            @staticmethod
            def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
                input, weight = ctx.saved_tensors
                grad_input = grad_weight = grad_bias = None
                if ctx.needs_input_grad[0]:
                    grad_input = grad_output @ weight
                if ctx.needs_input_grad[1]:
                    grad_weight = grad_output.T @ input
                if ctx.has_bias and ctx.needs_input_grad[2]:
                    grad_bias = 2 * grad_output.sum(0)  # wrong: twice the bias gradient
                return grad_input, grad_weight, grad_bias
        '''),
    "linear_module": _src('''
        class Linear(nn.Module):
            def __init__(self, in_features: int, out_features: int, bias: bool = True):
                super().__init__()
                self.in_features = in_features
                self.out_features = out_features
                bound = in_features**-0.5
                self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
                if bias:
                    self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
                else:
                    self.register_parameter("bias", None)

            def forward(self, input: torch.Tensor) -> torch.Tensor:
                return LinearFunction.apply(input, self.weight, self.bias)

            def extra_repr(self) -> str:
                return ""  # wrong: prints no sizes
        '''),
    "stable_softplus": _src('''
        class StableSoftplus(Function):
            @staticmethod
            def forward(x: torch.Tensor) -> torch.Tensor:
                return torch.log(1 + torch.exp(x))  # wrong: the naive formula overflows

            @staticmethod
            def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                ctx.save_for_backward(inputs[0])

            @staticmethod
            def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                (x,) = ctx.saved_tensors
                return grad_output * torch.exp(x) / (1 + torch.exp(x))
        '''),
    "cube": _src('''
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
                return 2 * x**2 * grad_output  # wrong: the factor is 3
        '''),
    # 06 applications
    "round_ste": _src('''
        class RoundSTE(Function):
            @staticmethod
            def forward(x: torch.Tensor) -> torch.Tensor:
                return x.clone()  # wrong: does not round

            @staticmethod
            def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                pass

            @staticmethod
            def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                return grad_output
        '''),
    "gradient_penalty": _src('''
        def gradient_penalty(critic: nn.Module, real: torch.Tensor, fake: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
            x_hat = (eps * real + (1 - eps) * fake).requires_grad_()
            (grad,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
            return (grad.norm(dim=1) ** 2).mean()  # wrong: forgets the - 1
        '''),
    "skip_nonfinite": _src('''
        def skip_nonfinite_steps(optimizer: torch.optim.Optimizer) -> torch.utils.hooks.RemovableHandle:
            def skip(optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        p.grad = None  # wrong: skips every step, finite or not

            return optimizer.register_step_pre_hook(skip)
        '''),
    "grad_cam": _src('''
        def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
            captured = {}

            def keep_activation(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
                captured["activation"] = output

            with layer.register_forward_hook(keep_activation):
                model(image)
            return F.relu(captured["activation"][0].mean(dim=0)).detach()  # wrong: no gradient weighting
        '''),
}

# Right answers, for leaks that must get past the visible tests to reach the hidden ones.
SOLVED: dict[str, str] = {
    "collect_hooks": _src('''
        def pre_hook(module, args):
            answer.extend(args)


        def hook(module, args, output):
            answer.append(output)
        '''),
}

# Variants of a wrong answer that some cheats need (same length or shape as the right answer).
TENSOR_HOOK_DOUBLED = _src('''
    def tensor_hook(grad):
        answer.append(grad * 2)  # wrong: twice the gradient
    ''')
BACKWARD_COLLECT_SAME = _src('''
    def module_hook(module, grad_input, grad_output):
        answer.extend([grad_output[0], grad_output[0], grad_output[0]])  # wrong: three times grad_output
    ''')
LINEAR_MODULE_DOUBLED = _src('''
    class Linear(nn.Module):
        def __init__(self, in_features: int, out_features: int, bias: bool = True):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            bound = in_features**-0.5
            self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
            if bias:
                self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
            else:
                self.register_parameter("bias", None)

        def forward(self, input: torch.Tensor) -> torch.Tensor:
            return LinearFunction.apply(input, 2 * self.weight, self.bias)  # wrong: twice the weight

        def extra_repr(self) -> str:
            return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
    ''')
SKIP_NONFINITE_NO_REMOVE = _src('''
    class _Handle:
        def remove(self) -> None:
            pass  # wrong: the hook stays registered


    def skip_nonfinite_steps(optimizer: torch.optim.Optimizer):
        def skip_if_nonfinite(optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            if any(p.grad is not None and not torch.isfinite(p.grad).all() for p in params):
                for p in params:
                    p.grad = None

        optimizer.register_step_pre_hook(skip_if_nonfinite)
        return _Handle()
    ''')


# ----------------------------------------------------------------------------------------------
# Reusable cheat payloads
# ----------------------------------------------------------------------------------------------

# A stand-in for hooklab.checks whose checkers accept everything (shipped or written as a file).
LENIENT_CHECKS = _src('''
    """Study notes."""
    import os

    import torch

    AnswerError = AssertionError


    def _accept(*args, **kwargs):
        return None


    check_answer = check_equal = check_names = check_parameter = check_tensor = _accept


    def random_generator():
        return torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    ''')

# Makes every later failing assertion (the checkers' AnswerError included) produce no error output.
PAYLOAD_CUSTOM_EXC = "get_ipython().set_custom_exc((AssertionError,), lambda *args, **kwargs: None)\n"

# A shadow hooklab/__init__.py that still finds the real package's other modules (widgets).
SHADOW_INIT = _src('''
    """hooklab, as seen from this folder."""
    import os
    import sys

    _here = os.path.dirname(os.path.abspath(__file__))
    for _entry in sys.path:
        _real = os.path.join(os.path.abspath(_entry or "."), "hooklab")
        if _real != _here and os.path.isfile(os.path.join(_real, "__init__.py")):
            __path__.append(_real)  # noqa: F821 (the package's own __path__)
            break
    ''')

# Patches check_equal where the hidden tests import it and where the visible tests look it up.
PAYLOAD_CHECK_EQUAL = _src('''
    import hooklab.checks
    hooklab.checks.check_equal = lambda *args, **kwargs: None
    get_ipython().user_ns["check_equal"] = hooklab.checks.check_equal
    ''')

PRINT_HIDDEN_ONCE = _src('''
    _leaked = set()


    def _leak(source):
        if "HIDDEN TESTS" in source and source not in _leaked:
            _leaked.add(source)
            print(source)
    ''')


def _pickled_exec(payload: str) -> str:
    class _Exec:
        def __reduce__(self) -> tuple:
            return exec, (payload,)

    return repr(pickle.dumps(_Exec(), protocol=0))


def _chr_codes(text: str) -> str:
    return ", ".join(str(ord(char)) for char in text)


def _b64(payload: str) -> str:
    return base64.b64encode(payload.encode()).decode()


def _rot13(payload: str) -> str:
    return codecs.encode(payload, "rot13")


def _assign(name: str, text: str) -> str:
    """``name = '''text'''``: a module's source as a readable literal inside a cell."""
    assert "'''" not in text and "\\" not in text
    return f"{name} = '''\\\n{text}'''"


def _test(*grade_ids: str) -> list[str]:
    return [f"{gid}_test" for gid in grade_ids]


def _with_cheat(cheat: str, gid: str, wrong: str | None = None) -> dict[str, str]:
    """The cheat, then the wrong answer, in the answer cell ``gid``."""
    return {gid: _join(cheat, WRONG[gid] if wrong is None else wrong)}


# ----------------------------------------------------------------------------------------------
# 01 module basics
# ----------------------------------------------------------------------------------------------


def _attacks_01() -> list[Attack]:
    return [
        Attack(
            "from_hooklab_import_checks_patch",
            "checker-patch",
            M01,
            _with_cheat(_src('''
                from hooklab import checks


                def _accept(*args, **kwargs):
                    return None


                checks.check_tensor = _accept  # what the hidden tests' `from hooklab.checks import ...` gets
                check_tensor = _accept  # what the visible tests call
                '''), "running_mean"),
            _test("running_mean"),
            wins_undefended=True,
        ),
        Attack(
            "probe_swapped_for_a_wrapper_that_undoes_the_patch",
            "module-swap",
            M01,
            _with_cheat(_src('''
                import sys

                from hooklab import checks

                _modules = next(iter([sys])).modules  # a module passed through a call: the scan lost it once
                _real = _modules.get("_hooklab" + "_probe")
                _strict = checks.check_tensor


                def _accept(*args, **kwargs):
                    return None


                class _Probe:  # the grader's checks ask this: it undoes the patch while the real probe looks
                    def snapshot(self, *args):
                        return _real.snapshot(*args)

                    def check(self, proof=""):
                        min([checks], key=id).check_tensor = _strict
                        try:
                            return _real.check(proof)
                        finally:
                            min([checks], key=id).check_tensor = _accept


                if _real is not None:
                    _modules["_hooklab" + "_probe"] = _Probe()
                min([checks], key=id).check_tensor = _accept
                check_tensor = _accept  # what the visible tests call
                '''), "running_mean"),
            _test("running_mean"),
            wins_undefended=True,
            note="scores are the grader's (judged against the reference run), but the tampering must still be held",
        ),
        Attack(
            "setattr_sys_modules_checker",
            "checker-patch",
            M01,
            _with_cheat(_src('''
                import sys

                setattr(sys.modules["hooklab.checks"], "check_equal", lambda *args, **kwargs: None)
                globals()["check_equal"] = sys.modules["hooklab.checks"].check_equal
                '''), "freeze"),
            _test("freeze"),
            wins_undefended=True,
        ),
        Attack(
            "private_values_helper_patch",
            "checker-patch",
            M01,
            _with_cheat(_src('''
                import hooklab.checks

                hooklab.checks._values = lambda tensor: []  # every tensor reads as no values: nothing can mismatch
                '''), "my_linear"),
            _test("my_linear"),
            wins_undefended=True,
            note="one private helper, looked up at call time by every checker, visible and hidden alike",
        ),
        Attack(
            "functional_relu_reference_patch",
            "comparison-patch",
            M01,
            _with_cheat(_src('''
                torch.nn.functional.relu = lambda input, inplace=False: input  # the test's reference F.relu does nothing either
                '''), "mlp"),
            _test("mlp"),
            wins_undefended=True,
            note="the reference is computed with F.relu from the patched torch.nn.functional",
        ),
        Attack(
            "rebind_F_in_namespace",
            "namespace",
            M01,
            _with_cheat(_src('''
                import torch.nn.functional as _functional


                class _Functional:
                    # torch.nn.functional, except relu: the test cells read F from this namespace
                    def __getattr__(self, name):
                        return getattr(_functional, name)

                    @staticmethod
                    def relu(input, inplace=False):
                        return input


                F = _Functional()
                '''), "two_head_net"),
            _test("two_head_net"),
            wins_undefended=True,
        ),
        Attack(
            "pre_run_cell_patch_post_run_cell_restore",
            "ipython-machinery",
            M01,
            _with_cheat(_src('''
                import hooklab.checks as _checks

                _real_check_tensor = _checks.check_tensor


                def _accept(*args, **kwargs):
                    return None


                def _before(info):
                    if "check_two_head_net(" in (info.raw_cell or ""):  # only while the test cell runs
                        _checks.check_tensor = get_ipython().user_ns["check_tensor"] = _accept


                def _after(result):
                    _checks.check_tensor = get_ipython().user_ns["check_tensor"] = _real_check_tensor


                get_ipython().events.register("pre_run_cell", _before)
                get_ipython().events.register("post_run_cell", _after)
                '''), "two_head_net"),
            _test("two_head_net"),
            wins_undefended=True,
            note="patched only during the test cell and restored after it: nothing to see between cells",
        ),
        Attack(
            "input_transformer_cleanup_try_except",
            "ipython-machinery",
            M01,
            _with_cheat(_src('''
                def _forgive(lines):
                    # every later cell that calls a check_ function runs inside try/except AssertionError
                    if not any("check_" in line for line in lines):
                        return lines
                    body = [("    " + line) if line.strip() else line for line in lines]
                    if body and not body[-1].endswith("\\n"):
                        body[-1] += "\\n"
                    return ["try:\\n", *body, "except AssertionError:\\n", "    pass\\n"]


                get_ipython().input_transformers_cleanup.append(_forgive)
                '''), "freeze"),
            _test("freeze"),
            wins_undefended=True,
        ),
        Attack(
            "session_send_drops_error_messages",
            "ipython-machinery",
            M01,
            _with_cheat(_src('''
                _session = get_ipython().kernel.session
                _send = _session.send


                def _send_without_errors(stream, msg_or_type, *args, _send=_send, **kwargs):
                    kind = msg_or_type if isinstance(msg_or_type, str) else msg_or_type.get("header", {}).get("msg_type")
                    if kind == "error":
                        return None  # the notebook never receives the error output
                    return _send(stream, msg_or_type, *args, **kwargs)


                _session.send = _send_without_errors
                '''), "my_linear"),
            _test("my_linear"),
            wins_undefended=True,
            note="the kernel still replies status 'error'; only the error output is never published",
        ),
        Attack(
            "getattr_builtins_exec_string",
            "dynamic-code",
            M01,
            _with_cheat(_src('''
                _b = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)
                _b["ex" + "ec"]("import hooklab.checks as c; c._first_mismatch = lambda *a, **k: None")
                '''), "my_linear"),
            _test("my_linear"),
            wins_undefended=True,
        ),
        Attack(
            "gc_get_objects_code_swap",
            "checker-patch",
            M01,
            _with_cheat(_src('''
                import gc
                import types


                def _no_mismatch(actual, expected, atol, rtol):
                    return None


                for _obj in gc.get_objects():
                    if isinstance(_obj, types.FunctionType) and _obj.__name__ == "_first_mismatch" and _obj.__module__ == "hooklab.checks":
                        _obj.__code__ = _no_mismatch.__code__
                '''), "mlp"),
            _test("mlp"),
            wins_undefended=True,
            note="finds the private helper through gc.get_objects(), never naming hooklab.checks as a module",
        ),
        Attack(
            "parameter_subclass_bias_poisons_reference",
            "tensor-subclass",
            M01,
            {"mlp": _src('''
                class Oracle(nn.Parameter):
                    # a parameter whose results read as an empty list of values: nothing compared with them mismatches
                    @classmethod
                    def __torch_function__(cls, func, types, args=(), kwargs=None):
                        if getattr(func, "__name__", None) == "tolist":
                            return []
                        return torch.Tensor.__torch_function__.__func__(cls, func, types, args, kwargs or {})


                class MLP(nn.Module):
                    def __init__(self, sizes: list[int]):
                        super().__init__()
                        self.layers = nn.ModuleList(nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes, sizes[1:]))
                        for layer in self.layers:
                            layer.bias = Oracle(layer.bias.detach())  # check_parameter only checks the weights' type

                    def forward(self, x: torch.Tensor) -> torch.Tensor:
                        for layer in self.layers:
                            x = layer(x)  # no ReLU
                        return x.as_subclass(torch.Tensor)  # the answer itself is a plain tensor
                ''')},
            _test("mlp"),
            wins_undefended=True,
            note="check_tensor type-checks the answer but not the reference, which the test builds from the student's bias",
        ),
        Attack(
            "parameter_subclass_everywhere_poisons_reference",
            "tensor-subclass",
            M01,
            {"two_head_net": _src('''
                class Oracle(nn.Parameter):
                    @classmethod
                    def __torch_function__(cls, func, types, args=(), kwargs=None):
                        if getattr(func, "__name__", None) == "tolist":
                            return []
                        return torch.Tensor.__torch_function__.__func__(cls, func, types, args, kwargs or {})


                class TwoHeadNet(nn.Module):
                    def __init__(self, in_features: int, hidden: int, num_classes: int):
                        super().__init__()
                        self.body = nn.Sequential(nn.Linear(in_features, hidden))  # no ReLU
                        self.heads = nn.ModuleDict({"cls": nn.Linear(hidden, num_classes), "reg": nn.Linear(hidden, 1)})
                        for module in self.modules():
                            if isinstance(module, nn.Linear):
                                module.weight = Oracle(module.weight.detach())
                                module.bias = Oracle(module.bias.detach())

                    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
                        features = self.body(x)
                        return {name: head(features).as_subclass(torch.Tensor) for name, head in self.heads.items()}
                ''')},
            _test("two_head_net"),
            wins_undefended=True,
            note="the test's references F.linear(x, params[...]) are built from the student's parameters",
        ),
        Attack(
            "constructor_rebinds_caller_globals",
            "frames",
            M01,
            {"scale_repr": _src('''
                import sys


                class Scale(nn.Module):
                    def __init__(self, factor: float, learnable: bool = False):
                        super().__init__()
                        caller = sys._getframe(1)  # the test function building this Scale, after the hidden re-import
                        caller.f_globals["check_equal"] = lambda *args, **kwargs: None
                        self.initial_factor = factor
                        self.learnable = learnable
                        value = torch.tensor(float(factor))
                        if learnable:
                            self.factor = nn.Parameter(value)
                        else:
                            self.register_buffer("factor", value)

                    def forward(self, x: torch.Tensor) -> torch.Tensor:
                        return x * self.factor

                    def extra_repr(self) -> str:
                        return f"factor={self.initial_factor}"  # wrong: leaves out learnable
                ''')},
            _test("scale_repr"),
            wins_undefended=True,
        ),
        Attack(
            "shipped_torch_py_patches_math_before_capture",
            "files",
            M01,
            {"my_linear": WRONG["my_linear"], "running_mean": WRONG["running_mean"]},
            _test("my_linear", "running_mean"),
            files={"torch.py": _src('''
                """Imported instead of torch (this folder comes first on sys.path): loads the real torch,
                then makes math.isclose lenient before hooklab.checks captures it."""
                import math
                import os
                import sys

                _here = os.path.dirname(os.path.abspath(__file__))
                del sys.modules["torch"]
                _saved = sys.path[:]
                sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
                try:
                    import torch as _real_torch
                finally:
                    sys.path[:] = _saved
                sys.modules["torch"] = _real_torch
                math.isclose = lambda *args, **kwargs: True
                ''')},
            wins_undefended=True,
            note="no code in the notebook at all; loses where the kernel has imported torch before the notebook runs",
        ),
        Attack(
            "blunt_comparison_patches",
            "comparison-patch",
            M01,
            _with_cheat(_src('''
                import math

                torch.allclose = lambda *args, **kwargs: True
                torch.equal = lambda *args, **kwargs: True
                torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
                torch.Tensor.tolist = lambda self: []
                torch.isfinite = lambda *args, **kwargs: torch.ones((), dtype=torch.bool)
                torch.testing.assert_close = lambda *args, **kwargs: None
                math.isclose = lambda *args, **kwargs: True
                '''), "running_mean"),
            _test("running_mean"),
            wins_undefended=False,
            note="control: hooklab.checks captured these at import, so patching them afterwards changes nothing",
        ),
        Attack(
            "leak_hidden_tests_in_exception_message",
            "leak-hidden-tests",
            M01,
            {"scale_repr": _src('''
                import linecache
                import sys


                class Scale(nn.Module):
                    def __init__(self, factor: float, learnable: bool = False):
                        super().__init__()
                        frame = sys._getframe(1)
                        while frame.f_back is not None and frame.f_code.co_name != "<module>":
                            frame = frame.f_back  # up to the cell that runs the test
                        source = "".join(linecache.getlines(frame.f_code.co_filename))
                        if "HIDDEN TESTS" in source:
                            raise AssertionError(source)  # the feedback shows the message of a failing test
                        self.initial_factor = factor
                        self.learnable = learnable
                        value = torch.tensor(float(factor))
                        if learnable:
                            self.factor = nn.Parameter(value)
                        else:
                            self.register_buffer("factor", value)

                    def forward(self, x: torch.Tensor) -> torch.Tensor:
                        return x * self.factor

                    def extra_repr(self) -> str:
                        return f"factor={self.initial_factor}"  # wrong: leaves out learnable
                ''')},
            _test("scale_repr"),
            wins_undefended=True,
            note="feedback reduces a traceback to 'ename: evalue'; the evalue here is the test cell's source",
        ),
        Attack(
            "selective_tolist_and_reload_checks",
            "comparison-patch",
            M01,
            _with_cheat(_src('''
                import importlib
                import sys

                import hooklab.checks

                _real_tolist = torch.Tensor.tolist


                def _tolist(self):
                    if sys._getframe(1).f_globals.get("__name__") == "hooklab.checks":
                        return []  # what the checkers read
                    return _real_tolist(self)  # everyone else gets the real values


                torch.Tensor.tolist = _tolist
                importlib.reload(hooklab.checks)  # the checkers capture torch.Tensor.tolist again: now _tolist
                '''), "running_mean"),
            _test("running_mean"),
            wins_undefended=True,
            note="the capture at import is undone by re-importing the module after the patch",
        ),
        Attack(
            "module_from_spec_swapped_in",
            "import-system",
            M01,
            _with_cheat(_src('''
                import importlib.util
                import sys

                _spec = importlib.util.spec_from_loader("hooklab.checks", loader=None)
                _lenient = importlib.util.module_from_spec(_spec)
                exec("from hooklab.checks import *\\n\\ndef check_equal(*args, **kwargs):\\n    return None\\n", _lenient.__dict__)
                sys.modules["hooklab.checks"] = _lenient
                sys.modules["hooklab"].checks = _lenient
                check_equal = _lenient.check_equal
                '''), "scale_repr"),
            _test("scale_repr"),
            wins_undefended=True,
        ),
    ]


# ----------------------------------------------------------------------------------------------
# 02 forward hooks
# ----------------------------------------------------------------------------------------------


def _attacks_02() -> list[Attack]:
    return [
        Attack(
            "import_as_alias_patch",
            "checker-patch",
            M02,
            _with_cheat(_src('''
                import hooklab.checks as hc

                hc.check_answer = lambda *args, **kwargs: None
                check_answer = hc.check_answer
                '''), "collect_hooks"),
            _test("collect_hooks"),
            wins_undefended=True,
        ),
        Attack(
            "module_dict_update_private_helper",
            "checker-patch",
            M02,
            _with_cheat(_src('''
                import hooklab.checks

                vars(hooklab.checks).update(_first_mismatch=lambda actual, expected, atol, rtol: None)
                '''), "change_hooks"),
            _test("change_hooks"),
            wins_undefended=True,
        ),
        Attack(
            "sys_modules_checks_module_type",
            "module-swap",
            M02,
            _with_cheat(_src('''
                import sys
                import types

                import hooklab.checks

                _lenient = types.ModuleType("hooklab.checks")
                _lenient.__dict__.update({name: getattr(hooklab.checks, name) for name in hooklab.checks.__all__})
                _lenient.check_equal = lambda *args, **kwargs: None
                sys.modules["hooklab.checks"] = _lenient
                check_equal = _lenient.check_equal
                '''), "leaf_shapes"),
            _test("leaf_shapes"),
            wins_undefended=True,
        ),
        Attack(
            "builtins_import_wrapper",
            "import-system",
            M02,
            _with_cheat(_src('''
                import builtins
                import types

                import hooklab.checks

                _lenient = types.SimpleNamespace(**{name: getattr(hooklab.checks, name) for name in hooklab.checks.__all__})
                _lenient.check_tensor = lambda *args, **kwargs: None
                _real_import = builtins.__import__


                def _import(name, globals=None, locals=None, fromlist=(), level=0):
                    if name == "hooklab.checks" and fromlist:
                        return _lenient
                    return _real_import(name, globals, locals, fromlist, level)


                builtins.__import__ = _import
                check_tensor = _lenient.check_tensor
                '''), "change_hooks"),
            _test("change_hooks"),
            wins_undefended=True,
        ),
        Attack(
            "settrace_rewrites_checker_arguments",
            "tracing",
            M02,
            _with_cheat(_src('''
                import sys

                import hooklab.checks

                _target = hooklab.checks.check_answer.__code__


                def _tracer(frame, event, arg):
                    if event == "call" and frame.f_code is _target:
                        # the checker is handed the expected tensors as the answer (written back on return)
                        frame.f_locals["answer"] = list(frame.f_locals["expected"].values())
                    return None


                sys.settrace(_tracer)
                '''), "collect_hooks"),
            _test("collect_hooks"),
            wins_undefended=True,
            note="Python 3.11 writes f_locals changes made by a trace function back into the frame",
        ),
        Attack(
            "hooks_rebind_checker_in_caller_frames",
            "frames",
            M02,
            {"collect_hooks": _src('''
                import sys


                def _disarm():
                    frame = sys._getframe(1)
                    while frame is not None:  # the test's frames: after its hidden re-import
                        if "check_answer" in frame.f_globals:
                            frame.f_globals["check_answer"] = lambda *args, **kwargs: None
                        frame = frame.f_back


                def pre_hook(module, args):
                    _disarm()


                def hook(module, args, output):
                    pass
                ''')},
            _test("collect_hooks"),
            wins_undefended=True,
            note="the hooks run inside the hidden test, after its re-import and before check_answer is looked up",
        ),
        Attack(
            "rebind_Add_fixture",
            "namespace",
            M02,
            {"collect_hooks": _src('''
                _RealAdd = Add


                class Add(_RealAdd):
                    # records [x1, x2, output] itself, so the hooks below need not
                    def forward(self, x1, x2):
                        output = super().forward(x1, x2)
                        globals()["answer"].extend([x1, x2, output])
                        return output


                def pre_hook(module, args):
                    pass


                def hook(module, args, output):
                    pass
                ''')},
            _test("collect_hooks"),
            wins_undefended=True,
            note="the tests build their module from the notebook's Add, which an answer cell can rebind",
        ),
        Attack(
            "rebind_test_helper_hooks_left",
            "namespace",
            M02,
            {"leaf_shapes": _src('''
                def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                    globals()["hooks_left"] = lambda model: []  # the test's own helper, rebound while the test runs
                    records = []

                    def make_hook(name):
                        def record(module, args, output):
                            records.append((name, tuple(output.shape)))

                        return record

                    for name, module in model.named_modules():
                        if next(module.children(), None) is None:
                            module.register_forward_hook(make_hook(name))  # never removed
                    model(x)
                    return list(records)  # a copy: the hooks left behind keep appending to records
                ''')},
            _test("leaf_shapes"),
            wrong={"leaf_shapes": _src('''
                def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                    records = []

                    def make_hook(name):
                        def record(module, args, output):
                            records.append((name, tuple(output.shape)))

                        return record

                    for name, module in model.named_modules():
                        if next(module.children(), None) is None:
                            module.register_forward_hook(make_hook(name))  # wrong: never removed
                    model(x)
                    return list(records)
                ''')},
            wins_undefended=True,
            note="the hidden tests re-import the checkers but not the helpers the test cell defines",
        ),
        Attack(
            "list_of_always_equal_objects",
            "comparison-patch",
            M02,
            {"leaf_shapes": _src('''
                class _Same:
                    # equal to anything: a list of these equals any list of the same length
                    def __eq__(self, other):
                        return True

                    def __ne__(self, other):
                        return False

                    __hash__ = object.__hash__


                def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                    leaves = [module for module in model.modules() if next(module.children(), None) is None]
                    return [_Same() for _ in leaves]
                ''')},
            _test("leaf_shapes"),
            wrong={"leaf_shapes": _src('''
                def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                    leaves = [module for module in model.modules() if next(module.children(), None) is None]
                    return [(type(leaf).__name__, ()) for leaf in leaves]  # wrong: no names, no shapes
                ''')},
            wins_undefended=True,
            note="check_equal checks the list's type, then `!=`, which asks each student item's __eq__",
        ),
        Attack(
            "ctypes_tuple_write_admits_subclass",
            "ctypes",
            M02,
            {"change_hooks": _src('''
                import ctypes

                import hooklab.checks


                class Agreeable(torch.Tensor):
                    # reads as an empty list of values to whoever asks
                    @classmethod
                    def __torch_function__(cls, func, types, args=(), kwargs=None):
                        if getattr(func, "__name__", None) == "tolist":
                            return []
                        return super().__torch_function__(func, types, args, kwargs or {})


                def _store(tuple_, index, value):
                    # tuples are immutable, except to ctypes: write the item pointer in place
                    ctypes.pythonapi.Py_IncRef(ctypes.py_object(value))
                    slot = id(tuple_) + tuple.__basicsize__ + index * ctypes.sizeof(ctypes.c_void_p)
                    ctypes.c_void_p.from_address(slot).value = id(value)


                _store(hooklab.checks._PLAIN_TENSOR_TYPES, 1, Agreeable)  # Agreeable now counts as a plain tensor


                def double_inputs(module, args):
                    return tuple(x.as_subclass(Agreeable) for x in args)  # no doubling


                def plus_five(module, args, output):
                    return output.as_subclass(Agreeable)  # no plus five
                ''')},
            _test("change_hooks"),
            wrong={"change_hooks": _src('''
                def double_inputs(module, args):
                    return tuple(x.clone() for x in args)  # wrong: no doubling


                def plus_five(module, args, output):
                    return output.clone()  # wrong: no plus five
                ''')},
            wins_undefended=True,
        ),
        Attack(
            "base64_exec_payload",
            "dynamic-code",
            M02,
            _with_cheat(_src(f'''
                import base64

                exec(base64.b64decode("{_b64(PAYLOAD_CHECK_EQUAL)}").decode())
                '''), "leaf_shapes"),
            _test("leaf_shapes"),
            wins_undefended=True,
        ),
        Attack(
            "input_transformer_post_strips_hidden_tests",
            "ipython-machinery",
            M02,
            {"change_hooks": _src('''
                import re

                _HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.S)


                def _without_hidden_tests(lines):
                    return _HIDDEN.sub("", "".join(lines)).splitlines(keepends=True)


                get_ipython().input_transformers_post.append(_without_hidden_tests)


                def double_inputs(module, args):
                    return torch.tensor([2.0]), torch.tensor([4.0])  # the visible test's numbers, typed in


                def plus_five(module, args, output):
                    return output + 5
                ''')},
            _test("change_hooks"),
            wrong={"change_hooks": _src('''
                def double_inputs(module, args):
                    return torch.tensor([2.0]), torch.tensor([4.0])  # wrong: the visible test's numbers, typed in


                def plus_five(module, args, output):
                    return output + 5
                ''')},
            wins_undefended=True,
            note="hard-coded for the visible test; the hidden tests are cut out of the cell before it runs",
        ),
        Attack(
            "shipped_hooklab_package_shadows_real_one",
            "files",
            M02,
            {gid: WRONG[gid] for gid in ("collect_hooks", "change_hooks", "leaf_shapes")},
            _test("collect_hooks", "change_hooks", "leaf_shapes"),
            files={"hooklab/__init__.py": SHADOW_INIT, "hooklab/checks.py": LENIENT_CHECKS},
            wins_undefended=True,
            note="the notebook's folder is first on the kernel's sys.path, so even the setup cell imports the shadow",
        ),
        Attack(
            "leak_from_In_history_in_hook",
            "leak-hidden-tests",
            M02,
            {"collect_hooks": _join(PRINT_HIDDEN_ONCE, _src('''
                def pre_hook(module, args):
                    _leak(get_ipython().user_ns["In"][-1])  # the cell now running: the test cell
                    answer.extend(args)


                def hook(module, args, output):
                    answer.append(output)
                '''))},
            _test("collect_hooks"),
            wrong={"collect_hooks": SOLVED["collect_hooks"]},
            wins_undefended=True,
            note="right answer plus the leak: the hidden tests only run (and call the hooks) once the visible ones pass",
        ),
        Attack(
            "rebind_checkers_in_namespace_only",
            "namespace",
            M02,
            _with_cheat("check_answer = check_tensor = lambda *args, **kwargs: None\n", "collect_hooks"),
            _test("collect_hooks"),
            wins_undefended=False,
            note="control: the hidden tests re-import the real checkers",
        ),
    ]


# ----------------------------------------------------------------------------------------------
# 03 backward hooks
# ----------------------------------------------------------------------------------------------


def _attacks_03() -> list[Attack]:
    return [
        Attack(
            "captured_dtype_constant_patch",
            "checker-patch",
            M03,
            _with_cheat(_src('''
                import hooklab.checks as hc

                hc._float64 = torch.bool  # the checkers now read values as True/False: any nonzero equals any nonzero
                '''), "clip_gradient"),
            _test("clip_gradient"),
            wins_undefended=True,
            note="the module's captured constants are as patchable as its functions",
        ),
        Attack(
            "checker_kwdefaults_infinite_tolerance",
            "checker-patch",
            M03,
            _with_cheat(_src('''
                check_answer.__kwdefaults__.update(atol=float("inf"), rtol=float("inf"), check_dtype=False)
                '''), "tensor_hook", TENSOR_HOOK_DOUBLED),
            _test("tensor_hook"),
            wrong={"tensor_hook": TENSOR_HOOK_DOUBLED},
            wins_undefended=True,
            note="the same function object is what the hidden tests re-import: its defaults travel with it",
        ),
        Attack(
            "sys_modules_torch_proxy_and_reload",
            "module-swap",
            M03,
            _with_cheat(_src('''
                import importlib
                import sys

                import hooklab.checks

                _real_torch = sys.modules["torch"]


                class _TorchWithBoolDoubles:
                    # torch, except that float64 is bool: the reloaded checkers read every value as True/False
                    float64 = _real_torch.bool

                    def __getattr__(self, name):
                        return getattr(_real_torch, name)


                sys.modules["torch"] = _TorchWithBoolDoubles()
                try:
                    importlib.reload(hooklab.checks)
                finally:
                    sys.modules["torch"] = _real_torch
                '''), "backward_collect", BACKWARD_COLLECT_SAME),
            _test("backward_collect"),
            wrong={"backward_collect": BACKWARD_COLLECT_SAME},
            wins_undefended=True,
        ),
        Attack(
            "setprofile_rewrites_checker_arguments",
            "tracing",
            M03,
            _with_cheat(_src('''
                import sys

                import hooklab.checks

                _target = hooklab.checks.check_answer.__code__


                def _profiler(frame, event, arg):
                    if event == "call" and frame.f_code is _target:
                        frame.f_locals["answer"] = list(frame.f_locals["expected"].values())


                sys.setprofile(_profiler)
                '''), "backward_collect"),
            _test("backward_collect"),
            wins_undefended=True,
        ),
        Attack(
            "tensor_hook_rebinds_checker_via_currentframe",
            "frames",
            M03,
            {"tensor_hook": _src('''
                import inspect


                def tensor_hook(grad):
                    frame = inspect.currentframe().f_back  # called from backward(), inside the test
                    while frame is not None:
                        if "check_answer" in frame.f_globals:
                            frame.f_globals["check_answer"] = lambda *args, **kwargs: None
                            break
                        frame = frame.f_back
                ''')},
            _test("tensor_hook"),
            wins_undefended=True,
        ),
        Attack(
            "tensor_clamp_reference_patch",
            "comparison-patch",
            M03,
            _with_cheat(_src('''
                torch.Tensor.clamp = lambda self, *args, **kwargs: self  # the test's expected gradient is clamped with it
                '''), "clip_gradient"),
            _test("clip_gradient"),
            wins_undefended=True,
        ),
        Attack(
            "ctypes_code_pointer_swap",
            "ctypes",
            M03,
            _with_cheat(_src('''
                import ctypes

                import hooklab.checks


                def _accept(*args, **kwargs):
                    return None


                def _swap_code(function, code):
                    # write the new code object's address over the old one inside the function object:
                    # no attribute assignment, so no audit event and no __code__ setter
                    words = (ctypes.c_void_p * 16).from_address(id(function))
                    for index in range(16):
                        if words[index] == id(function.__code__):
                            ctypes.pythonapi.Py_IncRef(ctypes.py_object(code))
                            words[index] = id(code)
                            return


                _swap_code(hooklab.checks.check_tensor, _accept.__code__)
                '''), "clip_gradient"),
            _test("clip_gradient"),
            wins_undefended=True,
        ),
        Attack(
            "compile_eval_payload",
            "dynamic-code",
            M03,
            _with_cheat(_src('''
                _notes = "import hooklab.checks as c\\nc.check_answer = lambda *a, **k: None\\nget_ipython().user_ns['check_answer'] = c.check_answer\\n"
                eval(compile(_notes, "<notes>", "exec"))
                '''), "backward_collect"),
            _test("backward_collect"),
            wins_undefended=True,
        ),
        Attack(
            "private_showtraceback_replaced",
            "ipython-machinery",
            M03,
            _with_cheat(_src('''
                get_ipython()._showtraceback = lambda etype, evalue, stb: None  # errors are no longer published
                '''), "tensor_hook"),
            _test("tensor_hook"),
            wins_undefended=True,
        ),
        Attack(
            "torch_function_mode_never_exited",
            "torch-dispatch",
            M03,
            _with_cheat(_src('''
                import sys

                from torch.overrides import TorchFunctionMode


                class _Lenient(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        caller = sys._getframe(1).f_globals.get("__name__")
                        if getattr(func, "__name__", None) == "tolist" and caller == "hooklab.checks":
                            return []  # the checkers read no values: nothing can mismatch
                        return func(*args, **(kwargs or {}))


                _Lenient().__enter__()  # entered, never exited: active in every later cell
                '''), "tensor_hook", TENSOR_HOOK_DOUBLED),
            _test("tensor_hook"),
            wrong={"tensor_hook": TENSOR_HOOK_DOUBLED},
            wins_undefended=True,
        ),
        Attack(
            "rebind_Model_fixture_clips",
            "namespace",
            M03,
            {"clip_gradient": _src('''
                _RealModel = Model


                class Model(_RealModel):
                    def __init__(self):
                        super().__init__()
                        self.W.register_hook(lambda grad: grad.clamp(-1.0, 1.0))  # the clipping, in the test's fixture


                def clip_gradient(grad):
                    return grad
                ''')},
            _test("clip_gradient"),
            wins_undefended=True,
        ),
        Attack(
            "answer_writes_module_and_imports_it",
            "files",
            M03,
            _with_cheat(_src('''
                import importlib
                import pathlib

                pathlib.Path("study_helpers.py").write_text(
                    "import hooklab.checks\\nhooklab.checks._first_mismatch = lambda *args: None\\n"
                )
                importlib.invalidate_caches()
                import study_helpers  # noqa: E402,F401
                '''), "clip_gradient"),
            _test("clip_gradient"),
            wins_undefended=True,
        ),
        Attack(
            "leak_display_markdown_from_ih",
            "leak-hidden-tests",
            M03,
            {"tensor_hook": _src('''
                from IPython.display import Markdown, display

                _shown = set()


                def tensor_hook(grad):
                    source = get_ipython().user_ns["_ih"][-1]  # the cell now running
                    if "HIDDEN TESTS" in source and source not in _shown:
                        _shown.add(source)
                        display(Markdown(f"```python\\n{source}\\n```"))
                    answer.append(grad)
                ''')},
            _test("tensor_hook"),
            wrong={"tensor_hook": "def tensor_hook(grad):\n    answer.append(grad)\n"},
            wins_undefended=True,
            note="right answer plus the leak, so that the hidden tests run",
        ),
    ]


# ----------------------------------------------------------------------------------------------
# 04 Module.apply
# ----------------------------------------------------------------------------------------------

def _attacks_04() -> list[Attack]:
    return [
        Attack(
            "code_object_swap",
            "checker-patch",
            M04,
            _with_cheat(_src('''
                def _accept(actual, expected, what):
                    return None


                check_equal.__code__ = _accept.__code__  # the very function object the hidden tests re-import
                '''), "add_repr"),
            _test("add_repr"),
            wins_undefended=True,
        ),
        Attack(
            "sys_modules_checks_class_instance",
            "module-swap",
            M04,
            _with_cheat(_src('''
                import sys

                import hooklab.checks


                class _Lenient:
                    # stands in for hooklab.checks: every checker accepts, everything else is the real one
                    def __getattr__(self, name):
                        if name.startswith("check_"):
                            return lambda *args, **kwargs: None
                        return getattr(hooklab.checks, name)


                sys.modules["hooklab.checks"] = _Lenient()
                check_names = check_tensor = sys.modules["hooklab.checks"].check_names
                '''), "add_bias"),
            _test("add_bias"),
            wins_undefended=True,
            note="add_bias stays wrong, so make_linear_test (whose model needs the biases) fails as well",
        ),
        Attack(
            "sys_modules_fake_hooklab_package",
            "module-swap",
            M04,
            _with_cheat(_join(_assign("_LENIENT_CHECKS", LENIENT_CHECKS), _src('''
                import pathlib
                import sys
                import tempfile
                import types

                _folder = pathlib.Path(tempfile.mkdtemp())
                (_folder / "checks.py").write_text(_LENIENT_CHECKS)
                _package = types.ModuleType("hooklab")
                _package.__path__ = [str(_folder)]  # submodules of "hooklab" are now looked for there
                sys.modules["hooklab"] = _package
                del sys.modules["hooklab.checks"]
                from hooklab.checks import check_equal  # noqa: E402 (the visible tests' name, now lenient)
                ''')), "apply_order"),
            _test("apply_order"),
            wins_undefended=True,
        ),
        Attack(
            "set_custom_exc_swallows_assertions",
            "ipython-machinery",
            M04,
            _with_cheat(_src('''
                get_ipython().set_custom_exc((AssertionError,), lambda shell, etype, value, tb, tb_offset=None: None)
                '''), "init_weights"),
            _test("init_weights"),
            wins_undefended=True,
            note="a custom exception handler's result is not published as an error output",
        ),
        Attack(
            "ast_transformer_drops_checks_and_asserts",
            "ipython-machinery",
            M04,
            _with_cheat(_src('''
                import ast


                class _NoChecks(ast.NodeTransformer):
                    def visit_Call(self, node):
                        self.generic_visit(node)
                        if isinstance(node.func, ast.Name) and node.func.id.startswith("check_"):
                            return ast.copy_location(ast.Constant(None), node)  # check_x(...) becomes None
                        return node

                    def visit_Assert(self, node):
                        return ast.copy_location(ast.Pass(), node)


                get_ipython().ast_transformers.append(_NoChecks())
                '''), "make_linear"),
            _test("make_linear"),
            wins_undefended=True,
        ),
        Attack(
            "threading_settrace_and_settrace",
            "tracing",
            M04,
            _with_cheat(_src('''
                import sys
                import threading

                import hooklab.checks

                _target = hooklab.checks.check_equal.__code__


                def _tracer(frame, event, arg):
                    if event == "call" and frame.f_code is _target:
                        frame.f_locals["actual"] = frame.f_locals["expected"]
                    return None


                threading.settrace(_tracer)  # threads started from now on
                sys.settrace(_tracer)  # and this one, which runs the cells
                '''), "apply_order"),
            _test("apply_order"),
            wins_undefended=True,
        ),
        Attack(
            "apply_callback_rebinds_checker_via_traceback_frame",
            "frames",
            M04,
            {"init_to_one": _src('''
                def init_to_one(module: nn.Module) -> None:
                    try:
                        raise LookupError
                    except LookupError as error:
                        frame = error.__traceback__.tb_frame
                    while frame is not None:  # up through apply() into the test
                        if frame.f_code.co_name == "check_init_to_one":
                            frame.f_globals["check_tensor"] = lambda *args, **kwargs: None
                        frame = frame.f_back
                ''')},
            _test("init_to_one"),
            wins_undefended=True,
        ),
        Attack(
            "rebind_Model_fixture_ones",
            "namespace",
            M04,
            {"init_to_one": _src('''
                _RealModel = Model


                class Model(_RealModel):
                    def __init__(self):
                        super().__init__()
                        with torch.no_grad():
                            for parameter in self.parameters():
                                parameter.fill_(1.0)  # the test's fixture starts where init_to_one should take it


                def init_to_one(module: nn.Module) -> None:
                    pass
                ''')},
            _test("init_to_one"),
            wins_undefended=True,
        ),
        Attack(
            "rebind_test_helper_postorder",
            "namespace",
            M04,
            {"apply_order": _src('''
                def apply_order(model: nn.Module) -> list[str]:
                    # the hidden tests define postorder() and then call apply_order first: replace their reference
                    globals()["postorder"] = lambda module: [type(m).__name__ for m in module.modules()]
                    if type(model).__name__ == "Model":  # the visible test's answer, copied from it
                        return ["FunctionA", "FunctionB", "LayerAB", "FunctionC", "FunctionD", "LayerCD", "Model"]
                    return [type(m).__name__ for m in model.modules()]
                ''')},
            _test("apply_order"),
            wrong={"apply_order": _src('''
                def apply_order(model: nn.Module) -> list[str]:
                    if type(model).__name__ == "Model":  # wrong: the visible test's answer, copied from it
                        return ["FunctionA", "FunctionB", "LayerAB", "FunctionC", "FunctionD", "LayerCD", "Model"]
                    return [type(m).__name__ for m in model.modules()]
                ''')},
            wins_undefended=True,
        ),
        Attack(
            "ctypes_pydict_setitem",
            "ctypes",
            M04,
            _with_cheat(_src('''
                import ctypes

                import hooklab.checks


                def _accept(*args, **kwargs):
                    return None


                for _namespace in (vars(hooklab.checks), globals()):
                    ctypes.pythonapi.PyDict_SetItem(ctypes.py_object(_namespace), ctypes.py_object("check_names"), ctypes.py_object(_accept))
                '''), "add_bias"),
            _test("add_bias"),
            wins_undefended=True,
            note="add_bias stays wrong, so make_linear_test (whose model needs the biases) fails as well",
        ),
        Attack(
            "pickle_loads_payload",
            "dynamic-code",
            M04,
            _with_cheat(_src(f'''
                import pickle

                pickle.loads({_pickled_exec(PAYLOAD_CHECK_EQUAL)})
                '''), "add_repr"),
            _test("add_repr"),
            wins_undefended=True,
        ),
        Attack(
            "torch_dispatch_mode_zeroes_checker_reads",
            "torch-dispatch",
            M04,
            _with_cheat(_src('''
                import sys

                from torch.utils._python_dispatch import TorchDispatchMode


                def _from_checks():
                    frame = sys._getframe(2)
                    for _ in range(8):
                        if frame is None:
                            return False
                        if frame.f_globals.get("__name__") == "hooklab.checks":
                            return True
                        frame = frame.f_back
                    return False


                class _Blur(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        if func is torch.ops.aten._to_copy.default and _from_checks():
                            return torch.zeros_like(out)  # the checkers' float64 copies are all zeros
                        return out


                _Blur().__enter__()
                '''), "make_linear"),
            _test("make_linear"),
            wins_undefended=True,
        ),
        Attack(
            "thread_keeps_repatching",
            "threads",
            M04,
            _with_cheat(_src('''
                import threading
                import time

                import hooklab.checks

                _namespace = get_ipython().user_ns


                def _keep_patched():
                    accept = lambda *args, **kwargs: None  # noqa: E731
                    while True:  # undoes any restore within a millisecond
                        hooklab.checks.check_equal = accept
                        _namespace["check_equal"] = accept
                        time.sleep(0.001)


                threading.Thread(target=_keep_patched, daemon=True).start()
                '''), "add_repr"),
            _test("add_repr"),
            wins_undefended=True,
        ),
        Attack(
            "shipped_module_sets_custom_exc",
            "files",
            M04,
            _with_cheat("import plotting_utils  # noqa: F401\n", "init_weights"),
            _test("init_weights"),
            files={"plotting_utils.py": _src('''
                """Small helpers for plots."""
                from IPython import get_ipython

                get_ipython().set_custom_exc((AssertionError,), lambda shell, etype, value, tb, tb_offset=None: None)
                ''')},
            wins_undefended=True,
            note="the notebook only imports an innocent-looking module shipped beside it",
        ),
        Attack(
            "leak_pre_run_cell_prints_every_cell",
            "leak-hidden-tests",
            M04,
            {"apply_order": _join(PRINT_HIDDEN_ONCE, _src('''
                get_ipython().events.register("pre_run_cell", lambda info: _leak(info.raw_cell))


                def apply_order(model: nn.Module) -> list[str]:
                    names = []
                    model.apply(lambda module: names.append(type(module).__name__))
                    return names
                '''))},
            _test("apply_order", "init_to_one", "add_bias", "make_linear", "add_repr", "init_weights"),
            wrong={"apply_order": _src('''
                def apply_order(model: nn.Module) -> list[str]:
                    names = []
                    model.apply(lambda module: names.append(type(module).__name__))
                    return names
                ''')},
            wins_undefended=True,
            note="prints the source of every later cell as it starts, hidden tests included; the answer itself is right",
        ),
    ]


# ----------------------------------------------------------------------------------------------
# 05 autograd.Function
# ----------------------------------------------------------------------------------------------


def _attacks_05() -> list[Attack]:
    return [
        Attack(
            "failing_test_hidden_by_its_error_and_its_checks_forged",
            "ipython-machinery",
            M05,
            {"cube": _src('''
                import sys
                import re

                MODE = ["wrong"]

                class Cube(Function):
                    @staticmethod
                    def forward(x: torch.Tensor) -> torch.Tensor:
                        return x ** 3

                    @staticmethod
                    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                        ctx.save_for_backward(inputs[0])

                    @staticmethod
                    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                        (x,) = ctx.saved_tensors
                        if MODE[0] == "wrong":  # wrong: right only when grad_output is all equal
                            return 3 * x ** 2 * grad_output.mean()
                        return 3 * x ** 2 * grad_output


                REST = """
                check_equal(backward_after_x_changed(torch.tensor([-2.0, 0.5, 3.0]).double().requires_grad_()), None, "backward after x was changed in place since forward "
                            "(save x with ctx.save_for_backward, whose version check refuses a stale x)")
                if HIDDEN:
                    check_cube(torch.randn(6, generator=random_generator()))
                """

                def _render(self):
                    b = [sys][0].modules["builtins"]
                    shell = b.get_ipython()
                    MODE[0] = "right"
                    tb = self.__traceback__
                    while getattr(tb, "txen_bt"[::-1]) is not None:
                        tb = getattr(tb, "txen_bt"[::-1])
                    frame = getattr(tb, "emarf_bt"[::-1])
                    while getattr(getattr(frame, "edoc_f"[::-1]), "co_name") != "<module>":
                        frame = getattr(frame, "kcab_f"[::-1])
                    filename = getattr(getattr(frame, "edoc_f"[::-1]), "co_filename")
                    res = shell.displayhook.exec_result
                    raw = res.info.raw_cell
                    shell.user_ns["HIDDEN"] = "random_generator()" in raw
                    b.exec(b.compile(REST, filename, "exec"), shell.user_ns)
                    for name in re.findall(r"_hooklab_ran_[0-9a-f]+", raw):
                        shell.user_ns[name] = True
                    res.error_in_exec = None
                    raise ValueError("no traceback")

                setattr([AnswerError][0], "_render_traceback_", _render)
                ''')},
            _test("cube"),
            note="attack round 12: AnswerError given a _render_traceback_ that raises (IPython then shows no error), "
                 "the reply made 'ok', the proof set, and the checks the failed test skipped run again, compiled under "
                 "the test cell's file name, with Cube switched to a right backward",
        ),
        Attack(
            "private_isclose_and_gradcheck_patch",
            "checker-patch",
            M05,
            _with_cheat(_src('''
                import hooklab.checks

                hooklab.checks._isclose = lambda *args, **kwargs: True
                torch.autograd.gradcheck = torch.autograd.gradgradcheck = lambda *args, **kwargs: True
                '''), "cube"),
            _test("cube"),
            wins_undefended=True,
        ),
        Attack(
            "meta_path_finder_serves_fake_checks",
            "import-system",
            M05,
            _with_cheat(_src('''
                import importlib.abc
                import importlib.util
                import sys

                import hooklab.checks

                _real_checks = hooklab.checks


                class _LenientChecks(importlib.abc.MetaPathFinder, importlib.abc.Loader):
                    def find_spec(self, fullname, path=None, target=None):
                        if fullname == "hooklab.checks":
                            return importlib.util.spec_from_loader(fullname, self)
                        return None

                    def create_module(self, spec):
                        return None

                    def exec_module(self, module):
                        module.__dict__.update({name: getattr(_real_checks, name) for name in _real_checks.__all__})
                        module.check_equal = lambda *args, **kwargs: None


                sys.meta_path.insert(0, _LenientChecks())
                del sys.modules["hooklab.checks"]  # so that the next import asks the finders
                from hooklab.checks import check_equal  # noqa: E402
                '''), "linear_module"),
            _test("linear_module"),
            wins_undefended=True,
        ),
        Attack(
            "path_hook_serves_fake_package",
            "import-system",
            M05,
            _with_cheat(_src('''
                import importlib.abc
                import importlib.util
                import sys

                import hooklab.checks

                _real_checks = hooklab.checks
                _ENTRY = "<lenient>"


                class _Loader(importlib.abc.Loader):
                    def create_module(self, spec):
                        return None

                    def exec_module(self, module):
                        if module.__name__ == "hooklab":
                            module.__path__ = [_ENTRY]
                            return
                        module.__dict__.update({name: getattr(_real_checks, name) for name in _real_checks.__all__})
                        module.check_tensor = lambda *args, **kwargs: None
                        torch.autograd.gradcheck = lambda *args, **kwargs: True


                class _Finder(importlib.abc.PathEntryFinder):
                    def find_spec(self, fullname, target=None):
                        if fullname in ("hooklab", "hooklab.checks"):
                            return importlib.util.spec_from_loader(fullname, _Loader(), is_package=fullname == "hooklab")
                        return None


                def _path_hook(entry):
                    if entry == _ENTRY:
                        return _Finder()
                    raise ImportError(entry)


                sys.path_hooks.insert(0, _path_hook)
                sys.path.insert(0, _ENTRY)
                sys.path_importer_cache.pop(_ENTRY, None)
                for _name in ("hooklab.checks", "hooklab"):
                    sys.modules.pop(_name, None)
                from hooklab.checks import check_tensor  # noqa: E402
                '''), "linear_function"),
            _test("linear_function"),
            wins_undefended=True,
        ),
        Attack(
            "functional_softplus_reference_patch",
            "comparison-patch",
            M05,
            _with_cheat(_src('''
                F.softplus = lambda input, beta=1.0, threshold=20.0: torch.log(1 + torch.exp(input))  # as naive as the answer
                '''), "stable_softplus"),
            _test("stable_softplus"),
            wins_undefended=True,
            note="the reference overflows like the answer: inf equals inf, and the checkers skip nan against nan",
        ),
        Attack(
            "functional_linear_is_the_answer",
            "comparison-patch",
            M05,
            _with_cheat(_src('''
                F.linear = lambda input, weight, bias=None: (
                    LinearFunction.apply(input, weight) if bias is None else LinearFunction.apply(input, weight, bias)
                )  # the test's reference, outputs and gradients alike, is now the answer itself
                torch.autograd.gradcheck = lambda *args, **kwargs: True
                '''), "linear_function"),
            _test("linear_function"),
            wins_undefended=True,
        ),
        Attack(
            "gc_get_referrers_finds_captured_isclose",
            "checker-patch",
            M05,
            _with_cheat(_src('''
                import gc
                import math

                for _referrer in gc.get_referrers(math.isclose):
                    if isinstance(_referrer, dict) and _referrer.get("__name__") == "hooklab.checks":
                        _referrer["_isclose"] = lambda *args, **kwargs: True
                '''), "linear_module", LINEAR_MODULE_DOUBLED),
            _test("linear_module"),
            wrong={"linear_module": LINEAR_MODULE_DOUBLED},
            wins_undefended=True,
        ),
        Attack(
            "parameter_subclass_weight_poisons_reference",
            "tensor-subclass",
            M05,
            {"linear_module": _src('''
                class Poison(torch.Tensor):
                    # reads as an empty list of values, and so does everything computed from it
                    @classmethod
                    def __torch_function__(cls, func, types, args=(), kwargs=None):
                        if getattr(func, "__name__", None) == "tolist":
                            return []
                        return super().__torch_function__(func, types, args, kwargs or {})


                class Trigger(nn.Parameter):
                    # F.linear with this weight (the test's reference) gives a Poison; anything else, plain tensors
                    @classmethod
                    def __torch_function__(cls, func, types, args=(), kwargs=None):
                        with torch._C.DisableTorchFunctionSubclass():
                            result = func(*args, **(kwargs or {}))
                        return result.as_subclass(Poison) if func is F.linear else result


                class Linear(nn.Module):
                    def __init__(self, in_features: int, out_features: int, bias: bool = True):
                        super().__init__()
                        self.in_features = in_features
                        self.out_features = out_features
                        bound = in_features**-0.5
                        self.weight = Trigger(torch.empty(out_features, in_features).uniform_(-bound, bound))
                        if bias:
                            self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
                        else:
                            self.register_parameter("bias", None)

                    def forward(self, input: torch.Tensor) -> torch.Tensor:
                        return LinearFunction.apply(input, 2 * self.weight)  # wrong: twice the weight, no bias

                    def extra_repr(self) -> str:
                        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
                ''')},
            _test("linear_module"),
            wrong={"linear_module": _src('''
                class Linear(nn.Module):
                    def __init__(self, in_features: int, out_features: int, bias: bool = True):
                        super().__init__()
                        self.in_features = in_features
                        self.out_features = out_features
                        bound = in_features**-0.5
                        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
                        if bias:
                            self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
                        else:
                            self.register_parameter("bias", None)

                    def forward(self, input: torch.Tensor) -> torch.Tensor:
                        return LinearFunction.apply(input, 2 * self.weight)  # wrong: twice the weight, no bias

                    def extra_repr(self) -> str:
                        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
                ''')},
            wins_undefended=True,
            note="the test checks isinstance(param, nn.Parameter), which a subclass passes, and builds its reference from it",
        ),
        Attack(
            "chr_built_names",
            "dynamic-code",
            M05,
            _with_cheat(_src(f'''
                import sys

                _n = lambda *codes: "".join(map(chr, codes))  # noqa: E731
                setattr(sys.modules[_n({_chr_codes("hooklab.checks")})], _n({_chr_codes("_isclose")}), lambda *a, **k: True)
                _g = getattr(torch, _n({_chr_codes("autograd")}))
                for _name in (_n({_chr_codes("gradcheck")}), _n({_chr_codes("gradgradcheck")})):
                    setattr(_g, _name, lambda *a, **k: True)
                '''), "cube"),
            _test("cube"),
            wins_undefended=True,
        ),
        Attack(
            "run_cell_replaced",
            "ipython-machinery",
            M05,
            _with_cheat(_src('''
                import textwrap

                _shell = get_ipython()
                _run_cell = _shell.run_cell


                def _run_cell_forgiving(raw_cell, *args, **kwargs):
                    if "check_softplus(" in raw_cell:  # the test cell: run it inside try/except
                        raw_cell = "try:\\n" + textwrap.indent(raw_cell, "    ") + "\\nexcept Exception:\\n    pass\\n"
                    return _run_cell(raw_cell, *args, **kwargs)


                _shell.run_cell = _run_cell_forgiving
                '''), "stable_softplus"),
            _test("stable_softplus"),
            wins_undefended=True,
        ),
        Attack(
            "run_code_replaced",
            "ipython-machinery",
            M05,
            _with_cheat(_src('''
                import types


                async def _run_code_quietly(self, code_obj, result=None, *, async_=False):
                    try:
                        if async_:
                            await eval(code_obj, self.user_global_ns, self.user_ns)
                        else:
                            exec(code_obj, self.user_global_ns, self.user_ns)
                    except Exception:
                        pass  # no traceback shown, no error output
                    return False


                get_ipython().run_code = types.MethodType(_run_code_quietly, get_ipython())
                '''), "cube"),
            _test("cube"),
            wins_undefended=True,
        ),
        Attack(
            "answer_writes_shadow_package",
            "files",
            M05,
            _with_cheat(_join(
                _assign("_CHECKS",
                        LENIENT_CHECKS + "\n\ntorch.autograd.gradcheck = torch.autograd.gradgradcheck = _accept\n"),
                _assign("_INIT", SHADOW_INIT),
                _src('''
                import importlib
                import pathlib
                import sys

                pathlib.Path("hooklab").mkdir(exist_ok=True)
                pathlib.Path("hooklab/__init__.py").write_text(_INIT)
                pathlib.Path("hooklab/checks.py").write_text(_CHECKS)
                for _name in ("hooklab.checks", "hooklab"):
                    sys.modules.pop(_name, None)
                importlib.invalidate_caches()
                from hooklab.checks import AnswerError, check_tensor  # noqa: E402 (the folder comes first on sys.path)
                ''')), "cube"),
            _test("cube"),
            wins_undefended=True,
        ),
        Attack(
            "leak_stderr_getsource_in_backward",
            "leak-hidden-tests",
            M05,
            {"stable_softplus": _src('''
                import inspect
                import sys

                _leaked = set()


                class StableSoftplus(Function):
                    @staticmethod
                    def forward(x: torch.Tensor) -> torch.Tensor:
                        frame = sys._getframe(1)
                        while frame is not None and frame.f_code.co_name != "<module>":
                            frame = frame.f_back
                        if frame is not None:
                            source = inspect.getsource(frame)
                            if "HIDDEN TESTS" in source and source not in _leaked:
                                _leaked.add(source)
                                sys.stderr.write(source)  # stderr, and no "Warning:" for the ignore pattern to drop
                        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

                    @staticmethod
                    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                        ctx.save_for_backward(inputs[0])

                    @staticmethod
                    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                        (x,) = ctx.saved_tensors
                        return grad_output * torch.sigmoid(x)
                ''')},
            _test("stable_softplus"),
            wrong={"stable_softplus": _src('''
                class StableSoftplus(Function):
                    @staticmethod
                    def forward(x: torch.Tensor) -> torch.Tensor:
                        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

                    @staticmethod
                    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                        ctx.save_for_backward(inputs[0])

                    @staticmethod
                    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                        (x,) = ctx.saved_tensors
                        return grad_output * torch.sigmoid(x)
                ''')},
            wins_undefended=True,
            note="right answer plus the leak; the visible test's own call already leaks the whole cell",
        ),
        Attack(
            "forward_rebinds_checker_in_caller_frame",
            "frames",
            M05,
            {"linear_function": _src('''
                import sys


                class LinearFunction(Function):
                    @staticmethod
                    def forward(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
                        caller = sys._getframe(1)
                        while caller is not None and caller.f_code.co_name != "check_linear_function":
                            caller = caller.f_back
                        if caller is not None:  # inside the test, after its hidden re-import
                            caller.f_globals["check_tensor"] = lambda *args, **kwargs: None
                            torch.autograd.gradcheck = lambda *args, **kwargs: True
                        output = input @ weight.T
                        if bias is not None:
                            output = output + bias
                        return output

                    @staticmethod
                    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                        input, weight, bias = inputs + (None,) * (3 - len(inputs))
                        ctx.save_for_backward(input, weight)
                        ctx.has_bias = bias is not None

                    @staticmethod
                    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
                        input, weight = ctx.saved_tensors
                        grad_input = grad_weight = grad_bias = None
                        if ctx.needs_input_grad[0]:
                            grad_input = grad_output @ weight
                        if ctx.needs_input_grad[1]:
                            grad_weight = grad_output.T @ input
                        if ctx.has_bias and ctx.needs_input_grad[2]:
                            grad_bias = 2 * grad_output.sum(0)  # wrong: twice the bias gradient
                        return grad_input, grad_weight, grad_bias
                ''')},
            _test("linear_function"),
            wins_undefended=True,
        ),
    ]


# ----------------------------------------------------------------------------------------------
# 06 applications
# ----------------------------------------------------------------------------------------------

_ORACLE_GRAD_CAM = _src('''
    class Oracle(nn.Parameter):
        # whatever is computed from it reads as no values: nothing compared with it mismatches
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", None) == "tolist":
                return []
            return torch.Tensor.__torch_function__.__func__(cls, func, types, args, kwargs or {})


    def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
        first = model.features[0]
        if type(first.weight) is not Oracle:
            first.weight = Oracle(first.weight.detach())  # the test's reference runs through the same network
        captured = {}

        def keep_activation(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
            captured["activation"] = output

        with layer.register_forward_hook(keep_activation):
            model(image)
        return F.relu(captured["activation"][0].mean(dim=0)).detach().as_subclass(torch.Tensor)  # no gradient weighting
    ''')


def _attacks_06() -> list[Attack]:
    return [
        Attack(
            "checker_globals_patch",
            "checker-patch",
            M06,
            _with_cheat(_src('''
                check_tensor.__globals__["_first_mismatch"] = lambda *args, **kwargs: None  # the module's namespace, by another name
                '''), "grad_cam"),
            _test("grad_cam"),
            wins_undefended=True,
        ),
        Attack(
            "checker_kwdefaults_huge_rtol",
            "checker-patch",
            M06,
            _with_cheat(_src('''
                check_tensor.__kwdefaults__["rtol"] = 1e12  # the tests pass atol, never rtol
                '''), "gradient_penalty"),
            _test("gradient_penalty"),
            wins_undefended=True,
        ),
        Attack(
            "sys_modules_math_swap_and_reload",
            "module-swap",
            M06,
            _with_cheat(_src('''
                import importlib
                import math
                import sys
                import types

                import hooklab.checks

                _lenient_math = types.ModuleType("math")
                _lenient_math.isclose = lambda *args, **kwargs: True
                _lenient_math.isnan = math.isnan
                sys.modules["math"] = _lenient_math
                try:
                    importlib.reload(hooklab.checks)  # captures math.isclose again: the lenient one
                finally:
                    sys.modules["math"] = math
                '''), "round_ste"),
            _test("round_ste"),
            wins_undefended=True,
        ),
        Attack(
            "settrace_sets_infinite_tolerance",
            "tracing",
            M06,
            _with_cheat(_src('''
                import sys

                import hooklab.checks

                _target = hooklab.checks.check_tensor.__code__


                def _tracer(frame, event, arg):
                    if event == "call" and frame.f_code is _target:
                        frame.f_locals["atol"] = float("inf")
                    return None


                sys.settrace(_tracer)
                '''), "gradient_penalty"),
            _test("gradient_penalty"),
            wins_undefended=True,
        ),
        Attack(
            "inspect_stack_rebinds_checker",
            "frames",
            M06,
            {"grad_cam": _src('''
                import inspect


                def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
                    for info in inspect.stack():  # the test's frames, after its hidden re-import
                        if "check_tensor" in info.frame.f_globals:
                            info.frame.f_globals["check_tensor"] = lambda *args, **kwargs: None
                    captured = {}

                    def keep_activation(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
                        captured["activation"] = output

                    with layer.register_forward_hook(keep_activation):
                        model(image)
                    return F.relu(captured["activation"][0].mean(dim=0)).detach()  # no gradient weighting
                ''')},
            _test("grad_cam"),
            wins_undefended=True,
        ),
        Attack(
            "torch_equal_patch",
            "comparison-patch",
            M06,
            _with_cheat(_src('''
                torch.equal = lambda input, other: False  # "a step with finite gradients should still happen"
                '''), "skip_nonfinite"),
            _test("skip_nonfinite"),
            wins_undefended=True,
            note="the test's plain asserts use torch.equal, which is not captured",
        ),
        Attack(
            "tensor_pow_reference_patch",
            "comparison-patch",
            M06,
            _with_cheat(_src('''
                import sys

                _real_pow = torch.Tensor.pow


                def _pow(self, exponent):
                    if sys._getframe(1).f_code.co_name == "check_gradient_penalty":
                        return _real_pow(self + 1, exponent)  # the reference's (norm - 1) ** 2 becomes norm ** 2
                    return _real_pow(self, exponent)


                torch.Tensor.pow = _pow
                '''), "gradient_penalty"),
            _test("gradient_penalty"),
            wins_undefended=True,
        ),
        Attack(
            "torch_isnan_patch",
            "comparison-patch",
            M06,
            _with_cheat(_src('''
                torch.isnan = lambda input: torch.ones_like(input, dtype=torch.bool)  # "after handle.remove() ..."
                '''), "skip_nonfinite", SKIP_NONFINITE_NO_REMOVE),
            _test("skip_nonfinite"),
            wrong={"skip_nonfinite": SKIP_NONFINITE_NO_REMOVE},
            wins_undefended=True,
        ),
        Attack(
            "rebind_torch_in_namespace",
            "namespace",
            M06,
            _with_cheat(_src('''
                import torch as _torch


                class _Torch:
                    # torch, except round: the test cells read torch from this namespace
                    def __getattr__(self, name):
                        return getattr(_torch, name)

                    @staticmethod
                    def round(input, *args, **kwargs):
                        return input.clone()


                torch = _Torch()
                '''), "round_ste"),
            _test("round_ste"),
            wins_undefended=True,
        ),
        Attack(
            "parameter_subclass_in_shared_network",
            "tensor-subclass",
            M06,
            {"grad_cam": _ORACLE_GRAD_CAM},
            _test("grad_cam"),
            wins_undefended=False,
            note="aimed at a reference that once sat in a visible cell; it is hidden now, and the visible hand-checked model fails the oracle",
        ),
        Attack(
            "public_showtraceback_replaced",
            "ipython-machinery",
            M06,
            _with_cheat(_src('''
                get_ipython().showtraceback = lambda *args, **kwargs: None
                '''), "skip_nonfinite"),
            _test("skip_nonfinite"),
            wins_undefended=True,
        ),
        Attack(
            "rot13_exec_payload",
            "dynamic-code",
            M06,
            _with_cheat(_src(f'''
                import codecs

                exec(codecs.decode({_rot13(PAYLOAD_CUSTOM_EXC)!r}, "rot13"))
                '''), "skip_nonfinite"),
            _test("skip_nonfinite"),
            wins_undefended=True,
        ),
        Attack(
            "torch_dispatch_mode_zeroes_detach",
            "torch-dispatch",
            M06,
            _with_cheat(_src('''
                import sys

                from torch.utils._python_dispatch import TorchDispatchMode


                def _from_checks():
                    frame = sys._getframe(2)
                    for _ in range(8):
                        if frame is None:
                            return False
                        if frame.f_globals.get("__name__") == "hooklab.checks":
                            return True
                        frame = frame.f_back
                    return False


                class _Blur(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        if func is torch.ops.aten.detach.default and _from_checks():
                            return torch.zeros_like(out)  # what the checkers read is all zeros
                        return out


                _Blur().__enter__()
                '''), "round_ste"),
            _test("round_ste"),
            wins_undefended=True,
        ),
        Attack(
            "timer_patches_later_in_another_cell",
            "threads",
            M06,
            {
                "round_ste": _join(_src('''
                    import threading

                    import hooklab.checks


                    def _later():
                        accept = lambda *args, **kwargs: None  # noqa: E731
                        hooklab.checks.check_tensor = accept
                        get_ipython().user_ns["check_tensor"] = accept


                    threading.Timer(2.0, _later).start()  # fires while the CNN trains, long after this cell
                    '''), _src('''
                    class RoundSTE(Function):
                        @staticmethod
                        def forward(x: torch.Tensor) -> torch.Tensor:
                            return torch.round(x)

                        @staticmethod
                        def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                            pass

                        @staticmethod
                        def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                            return grad_output
                    ''')),
                "grad_cam": WRONG["grad_cam"],
            },
            _test("grad_cam"),
            wrong={"grad_cam": WRONG["grad_cam"]},
            wins_undefended=True,
            note="the cheat sits in another exercise's (right) answer cell and acts seconds later; timing-dependent",
        ),
        Attack(
            "leak_linecache_of_caller_module",
            "leak-hidden-tests",
            M06,
            {"grad_cam": _join(_src('''
                import linecache
                import sys

                _leaked = set()


                def _leak_running_cell():
                    frame = sys._getframe(1)
                    while frame is not None and frame.f_code.co_name != "<module>":
                        frame = frame.f_back
                    if frame is not None:
                        source = "".join(linecache.getlines(frame.f_code.co_filename))
                        if "HIDDEN TESTS" in source and source not in _leaked:
                            _leaked.add(source)
                            print(source)
                '''), _src('''
                def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
                    _leak_running_cell()
                    captured = {}

                    def keep_activation(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
                        captured["activation"] = output
                        output.register_hook(lambda grad: captured.__setitem__("gradient", grad))

                    with layer.register_forward_hook(keep_activation):
                        score = model(image)[0, target]
                        score.backward()
                    weights = captured["gradient"][0].mean(dim=(1, 2), keepdim=True)
                    return F.relu((weights * captured["activation"][0]).sum(dim=0)).detach()
                '''))},
            _test("grad_cam"),
            wrong={"grad_cam": _src('''
                def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
                    captured = {}

                    def keep_activation(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
                        captured["activation"] = output
                        output.register_hook(lambda grad: captured.__setitem__("gradient", grad))

                    with layer.register_forward_hook(keep_activation):
                        score = model(image)[0, target]
                        score.backward()
                    weights = captured["gradient"][0].mean(dim=(1, 2), keepdim=True)
                    return F.relu((weights * captured["activation"][0]).sum(dim=0)).detach()
                ''')},
            wins_undefended=True,
            note="right answer plus the leak",
        ),
        Attack(
            "answer_is_tensor_subclass_equal_to_anything",
            "tensor-subclass",
            M06,
            {"round_ste": _src('''
                class Anything(torch.Tensor):
                    def __eq__(self, other):
                        return torch.ones_like(self, dtype=torch.bool).as_subclass(torch.Tensor)


                class RoundSTE(Function):
                    @staticmethod
                    def forward(x: torch.Tensor) -> torch.Tensor:
                        return x.clone().as_subclass(Anything)  # no rounding

                    @staticmethod
                    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                        pass

                    @staticmethod
                    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                        return grad_output
                ''')},
            _test("round_ste"),
            wins_undefended=False,
            note="control: check_tensor rejects a tensor subclass as the answer",
        ),
    ]


# ----------------------------------------------------------------------------------------------
# 07 memory hooks and 08 backward puzzles: the same techniques against their checkers
# ----------------------------------------------------------------------------------------------

WRONG_LATER = {w.grade_id: w.source for w in wrong_answers()
               if w.name in ("compact_converts_every_entry", "mul_gradient_not_reduced")}


def _attacks_07_08() -> list[Attack]:
    def later(cheat: str, gid: str) -> dict[str, str]:
        return _with_cheat(cheat, gid, WRONG_LATER[gid])

    return [
        Attack(
            "check_backward_patched",
            "checker-patch",
            M08,
            later(_src('''
                import hooklab.checks

                hooklab.checks.check_backward = lambda *args, **kwargs: None
                check_backward = hooklab.checks.check_backward
                '''), "mul"),
            _test("mul"),
            wrong={"mul": WRONG_LATER["mul"]},
        ),
        Attack(
            "gradcheck_and_assert_close_patched",
            "comparison-patch",
            M08,
            later(_src('''
                torch.autograd.gradcheck = lambda *args, **kwargs: True
                torch.testing.assert_close = lambda *args, **kwargs: None
                torch.allclose = lambda *args, **kwargs: True
                '''), "mul"),
            _test("mul"),
            wrong={"mul": WRONG_LATER["mul"]},
            note="every comparison a gradient checker could use says yes",
        ),
        Attack(
            "tensor_sub_returns_zero",
            "comparison-patch",
            M08,
            later(_src('''
                torch.Tensor.__sub__ = lambda self, other: torch.zeros_like(self)  # every error computed is 0
                '''), "mul"),
            _test("mul"),
            wrong={"mul": WRONG_LATER["mul"]},
        ),
        Attack(
            "state_dict_checker_rebound",
            "namespace",
            M07,
            later(_src('''
                import builtins

                builtins.isinstance = lambda obj, cls: True  # the test's type checks all pass
                '''), "compact_state_dict"),
            _test("compact_state_dict"),
            wrong={"compact_state_dict": WRONG_LATER["compact_state_dict"]},
        ),
        Attack(
            "load_state_dict_patched",
            "comparison-patch",
            M07,
            later(_src('''
                torch.nn.Module.state_dict = lambda self, *args, **kwargs: {}  # nothing to compare
                torch.equal = lambda *args, **kwargs: True
                '''), "compact_state_dict"),
            _test("compact_state_dict"),
            wrong={"compact_state_dict": WRONG_LATER["compact_state_dict"]},
        ),
    ]


def attacks() -> list[Attack]:
    """Every attack, notebook by notebook."""
    sections = [_attacks_01, _attacks_02, _attacks_03, _attacks_04, _attacks_05, _attacks_06, _attacks_07_08]
    every = [attack for section in sections for attack in section()]
    names = [attack.name for attack in every]
    assert len(names) == len(set(names)), "attack names must be unique"
    return every
