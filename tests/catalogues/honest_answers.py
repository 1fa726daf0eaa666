"""Honest answers: correct alternatives to every graded exercise, in many ordinary coding styles.

Each :class:`Answer` is the whole source of one answer cell (found by its nbgrader ``grade_id``) as a
student might leave it: right for the right reasons, so it passes every test of its notebook, hidden
ones included, with full marks. :func:`extra_cells` lists harmless scratch cells a student might add
anywhere in a notebook. Together they show that a cheat detector raises no false alarms.

``style`` names the coding styles an answer uses, separated by ", ".
"""

from __future__ import annotations

from dataclasses import dataclass
from textwrap import dedent

MODULE_BASICS = "01_module_basics"
FORWARD_HOOKS = "02_forward_hooks"
BACKWARD_HOOKS = "03_backward_hooks"
APPLY = "04_apply"
AUTOGRAD_FUNCTION = "05_autograd_function"
APPLICATIONS = "06_applications"
MEMORY_HOOKS = "07_memory_hooks"
BACKWARD_PUZZLES = "08_backward_puzzles"
BELOW_THE_MODULE = "09_below_the_module"
HOOKS_INSIDE_PYTORCH = "10_hooks_inside_pytorch"


@dataclass(frozen=True)
class Answer:
    assignment: str
    grade_id: str
    style: str
    source: str


def _cell(source: str) -> str:
    """A cell's source from an indented triple-quoted string."""
    return dedent(source).strip("\n")


def _module_basics() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(MODULE_BASICS, grade_id, style, _cell(source))

    return [
        answer("my_linear", "setattr/getattr, nn.init, comprehension", r'''
            class MyLinear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    shapes = {"weight": (out_features, in_features), "bias": (out_features,)}
                    for name, shape in shapes.items():
                        if name == "bias" and not bias:
                            self.register_parameter(name, None)
                        else:
                            setattr(self, name, nn.Parameter(nn.init.normal_(torch.empty(shape), std=0.1)))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    weight, bias = (getattr(self, name) for name in ("weight", "bias"))
                    return F.linear(x, weight, bias)
        '''),
        answer("my_linear", "docstring, type hints, assert, f-string, einsum", r'''
            class MyLinear(nn.Module):
                """A hand-made nn.Linear: y = x W^T + b."""

                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    self.weight = nn.Parameter(0.1 * torch.randn(out_features, in_features))
                    if bias:
                        self.bias = nn.Parameter(0.1 * torch.randn(out_features))
                    else:
                        self.register_parameter("bias", None)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    """Multiply the last dimension of x by the weight, then add the bias if there is one."""
                    assert x.shape[-1] == self.weight.shape[1], f"expected {self.weight.shape[1]} features, got {x.shape[-1]}"
                    y = torch.einsum("...i,oi->...o", x, self.weight)
                    return y if self.bias is None else y + self.bias
        '''),
        answer("my_linear", "%%time, print, torch.addmm", r'''
            %%time
            class MyLinear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
                    if bias:
                        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
                    else:
                        self.register_parameter("bias", None)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    if self.bias is None:
                        return x @ self.weight.t()
                    rows = torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight.t())  # addmm takes matrices
                    return rows.reshape(*x.shape[:-1], -1)


            print(MyLinear(3, 2), MyLinear(3, 2, bias=False).bias)
        '''),
        answer("running_mean", "assert, f-string, in-place lerp_", r'''
            class RunningMean(nn.Module):
                def __init__(self, num_features: int):
                    super().__init__()
                    self.register_buffer("mean", torch.zeros(num_features), persistent=True)
                    self.register_buffer("count", torch.tensor(0))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    assert x.dim() == 2 and x.shape[1] == self.mean.numel(), f"expected (N, {self.mean.numel()}), got {tuple(x.shape)}"
                    if self.training:
                        batch = x.detach()
                        self.count += len(batch)
                        # new mean = old mean + (batch mean - old mean) * n / (all rows so far)
                        self.mean.lerp_(batch.mean(dim=0), len(batch) / self.count.item())
                    return x - self.mean
        '''),
        answer("running_mean", "torch.no_grad, docstring", r'''
            class RunningMean(nn.Module):
                def __init__(self, num_features: int):
                    super().__init__()
                    buffers = {"mean": torch.zeros(num_features), "count": torch.zeros((), dtype=torch.long)}
                    for name, value in buffers.items():
                        self.register_buffer(name, value)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    """Subtract the running mean; in training mode, fold x's rows into it first."""
                    if self.training:
                        with torch.no_grad():
                            seen, new = self.count.item(), x.shape[0]
                            total = self.mean * seen + x.sum(dim=0)
                            self.count.add_(new)
                            self.mean.copy_(total / (seen + new))
                    return x - self.mean
        '''),
        answer("running_mean", "%time, torch.no_grad, print", r'''
            %time probe_rows = torch.randn(1000, 3)
            class RunningMean(nn.Module):
                def __init__(self, num_features: int):
                    super().__init__()
                    self.register_buffer("mean", torch.zeros(num_features))
                    self.register_buffer("count", torch.zeros((), dtype=torch.long))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    if self.training:
                        with torch.no_grad():
                            old = int(self.count)
                            new = old + x.shape[0]
                            self.mean.mul_(old / new).add_(x.sum(dim=0) / new)
                            self.count.fill_(new)
                    return x - self.mean


            probe = RunningMean(3)
            probe(probe_rows)
            print("running mean:", probe.mean, "| true mean:", probe_rows.mean(dim=0))
        '''),
        answer("mlp", "itertools, comprehension, star unpacking", r'''
            import itertools


            class MLP(nn.Module):
                def __init__(self, sizes: list[int]):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(n_in, n_out) for n_in, n_out in itertools.pairwise(sizes)])

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    *hidden, last = self.layers
                    for layer in hidden:
                        x = F.relu(layer(x))
                    return last(x)
        '''),
        answer("mlp", "loop, print", r'''
            class MLP(nn.Module):
                def __init__(self, sizes: list[int]):
                    super().__init__()
                    self.layers = nn.ModuleList()
                    for i in range(len(sizes) - 1):
                        self.layers.append(nn.Linear(sizes[i], sizes[i + 1]))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    last = len(self.layers) - 1
                    for i, layer in enumerate(self.layers):
                        x = layer(x)
                        if i != last:
                            x = F.relu(x)
                    return x


            print(MLP([4, 8, 8, 2]))
        '''),
        answer("mlp", "lambda, map, functools.reduce", r'''
            from functools import reduce


            class MLP(nn.Module):
                def __init__(self, sizes: list[int]):
                    super().__init__()
                    self.layers = nn.ModuleList(map(lambda pair: nn.Linear(*pair), zip(sizes[:-1], sizes[1:])))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    hidden = reduce(lambda h, layer: F.relu(layer(h)), self.layers[:-1], x)
                    return self.layers[-1](hidden)
        '''),
        answer("two_head_net", "collections", r'''
            from collections import OrderedDict


            class TwoHeadNet(nn.Module):
                def __init__(self, in_features: int, hidden: int, num_classes: int):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU())
                    self.heads = nn.ModuleDict(OrderedDict(cls=nn.Linear(hidden, num_classes), reg=nn.Linear(hidden, 1)))

                def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
                    h = self.body(x)
                    return dict(cls=self.heads["cls"](h), reg=self.heads["reg"](h))
        '''),
        answer("two_head_net", "isinstance, assert, comprehension", r'''
            class TwoHeadNet(nn.Module):
                def __init__(self, in_features: int, hidden: int, num_classes: int):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU())
                    self.heads = nn.ModuleDict()
                    self.heads["cls"] = nn.Linear(hidden, num_classes)
                    self.heads["reg"] = nn.Linear(hidden, 1)

                def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
                    features = self.body(x)
                    outputs = {}
                    for name in self.heads:
                        outputs[name] = self.heads[name](features)
                    assert all(isinstance(value, torch.Tensor) for value in outputs.values())
                    return outputs
        '''),
        answer("two_head_net", "%time, comprehension, print, f-string", r'''
            %time sample_batch = torch.randn(2, 4)
            class TwoHeadNet(nn.Module):
                def __init__(self, in_features: int, hidden: int, num_classes: int):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU())
                    self.heads = nn.ModuleDict({"cls": nn.Linear(hidden, num_classes), "reg": nn.Linear(hidden, 1)})

                def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
                    shared = self.body(x)
                    return {key: self.heads[key](shared) for key in ("cls", "reg")}


            for key, value in TwoHeadNet(4, 8, 3)(sample_batch).items():
                print(f"{key}: shape {tuple(value.shape)}")
        '''),
        answer("freeze", "import math, comprehension", r'''
            import math


            def freeze(model: nn.Module, names: list[str]) -> int:
                params = {id(p): p for name in names for p in model.get_submodule(name).parameters()}
                newly_frozen = [p for p in params.values() if p.requires_grad]
                for p in newly_frozen:
                    p.requires_grad = False
                return sum(math.prod(p.shape) for p in newly_frozen)
        '''),
        answer("freeze", "warnings.warn, try/except, docstring, f-string, comprehension", r'''
            import warnings


            def freeze(model: nn.Module, names: list[str]) -> int:
                """Freeze the named submodules; return how many parameter values this call froze."""
                count = 0
                for name in names:
                    try:
                        submodule = model.get_submodule(name)
                    except AttributeError as error:
                        raise KeyError(f"no submodule named {name!r} in the model") from error
                    trainable = [p for p in submodule.parameters() if p.requires_grad]
                    if not trainable:
                        warnings.warn(f"{name!r} was already frozen")
                    for p in trainable:
                        p.requires_grad_(False)
                        count += p.numel()
                return count
        '''),
        answer("freeze", "itertools, logging.warning, walrus, comprehension", r'''
            import itertools
            import logging


            def freeze(model: nn.Module, names: list[str]) -> int:
                submodules = (model.get_submodule(name) for name in names)
                frozen = 0
                for p in itertools.chain.from_iterable(m.parameters() for m in submodules):
                    if p.requires_grad and (size := p.numel()):
                        p.requires_grad_(False)
                        frozen += size
                return frozen


            logging.warning("freeze is defined: run the test cell below to check it")
        '''),
        answer("scale_repr", "dataclasses, f-string", r'''
            from dataclasses import dataclass


            @dataclass(frozen=True)
            class ScaleConfig:
                factor: float
                learnable: bool


            class Scale(nn.Module):
                def __init__(self, factor: float, learnable: bool = False):
                    super().__init__()
                    self.config = ScaleConfig(factor, learnable)
                    value = torch.tensor(factor, dtype=torch.float32)
                    if learnable:
                        self.register_parameter("factor", nn.Parameter(value))
                    else:
                        self.register_buffer("factor", value)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return self.factor * x

                def extra_repr(self) -> str:
                    return f"factor={self.config.factor}, learnable={self.config.learnable}"
        '''),
        answer("scale_repr", "class with property, setattr/getattr, isinstance", r'''
            class Scale(nn.Module):
                def __init__(self, factor: float, learnable: bool = False):
                    super().__init__()
                    self.shown_factor = str(factor)
                    value = torch.as_tensor(float(factor))
                    if learnable:
                        setattr(self, "factor", nn.Parameter(value))
                    else:
                        self.register_buffer("factor", value)

                @property
                def learnable(self) -> bool:
                    return isinstance(self.factor, nn.Parameter)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return x * self.factor

                def extra_repr(self) -> str:
                    return "factor={}, learnable={}".format(self.shown_factor, self.learnable)
        '''),
        # locals() and vars() in __init__ (a snapshot of the method's own arguments), operator.methodcaller
        answer("my_linear", "locals() in __init__ to keep the arguments, setattr with the names", r'''
            class MyLinear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    for key, value in list(locals().items()):  # in_features and out_features, as nn.Linear keeps them
                        if key not in ("self", "__class__", "bias"):
                            setattr(self, key, value)
                    self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
                    if bias:
                        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
                    else:
                        self.register_parameter("bias", None)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return F.linear(x, self.weight, self.bias)

                def extra_repr(self) -> str:
                    return f"in_features={self.in_features}, out_features={self.out_features}"
        '''),
        answer("scale_repr", "hyper-parameters from locals() in a dict, str.format(**locals()) in extra_repr", r'''
            class Scale(nn.Module):
                def __init__(self, factor: float, learnable: bool = False):
                    super().__init__()
                    self.hparams = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
                    value = torch.tensor(float(factor))
                    if learnable:
                        self.factor = nn.Parameter(value)
                    else:
                        self.register_buffer("factor", value)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return x * self.factor

                def extra_repr(self) -> str:
                    factor, learnable = self.hparams["factor"], self.hparams["learnable"]
                    return "factor={factor}, learnable={learnable}".format(**locals())
        '''),
        answer("two_head_net", "vars() in __init__ for the sizes, a config dict", r'''
            class TwoHeadNet(nn.Module):
                def __init__(self, in_features: int, hidden: int, num_classes: int):
                    super().__init__()
                    self.config = {name: size for name, size in vars().items() if isinstance(size, int)}
                    self.body = nn.Sequential(nn.Linear(self.config["in_features"], self.config["hidden"]), nn.ReLU())
                    self.heads = nn.ModuleDict({"cls": nn.Linear(hidden, self.config["num_classes"]),
                                                "reg": nn.Linear(hidden, 1)})

                def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
                    features = self.body(x)
                    return {name: head(features) for name, head in self.heads.items()}
        '''),
        answer("freeze", "operator.methodcaller over the parameters, map, a dict by id", r'''
            from operator import methodcaller


            def freeze(model: nn.Module, names: list[str]) -> int:
                trainable = {id(p): p for name in names for p in model.get_submodule(name).parameters() if p.requires_grad}
                list(map(methodcaller("requires_grad_", False), trainable.values()))
                return sum(map(methodcaller("numel"), trainable.values()))
        '''),
        # the functional spellings of a getattr loop: functools.reduce(getattr, ...), map(getattr, ...),
        # operator.attrgetter (a blind reviewer's freeze, and the same lookups in other exercises)
        answer("freeze", "functools.reduce(getattr, name.split('.'), model) for a submodule", r'''
            from functools import reduce


            def freeze(model: nn.Module, names: list[str]) -> int:
                frozen = 0
                for name in names:
                    module = reduce(getattr, name.split("."), model) if name else model
                    for parameter in module.parameters():
                        if parameter.requires_grad:
                            parameter.requires_grad_(False)
                            frozen += parameter.numel()
                return frozen
        '''),
        answer("my_linear", "map(getattr, ...) over its own parameters' names", r'''
            class MyLinear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
                    self.register_parameter("bias", nn.Parameter(torch.randn(out_features) * 0.1) if bias else None)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    weight, bias = map(getattr, (self, self), ("weight", "bias"))
                    out = x @ weight.T
                    return out if bias is None else out + bias
        '''),
        answer("scale_repr", "operator.attrgetter with two names in extra_repr", r'''
            from operator import attrgetter


            class Scale(nn.Module):
                def __init__(self, factor: float, learnable: bool = False):
                    super().__init__()
                    self.learnable = learnable
                    value = torch.tensor(float(factor))
                    if learnable:
                        self.factor = nn.Parameter(value)
                    else:
                        self.register_buffer("factor", value)
                    self.shown = factor

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return x * self.factor

                def extra_repr(self) -> str:
                    factor, learnable = attrgetter("shown", "learnable")(self)
                    return f"factor={factor}, learnable={learnable}"
        '''),
    ]


def _forward_hooks() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(FORWARD_HOOKS, grade_id, style, _cell(source))

    return [
        answer("collect_hooks", "global", r'''
            def pre_hook(module, args):
                global answer
                answer += list(args)


            def hook(module, args, output):
                global answer
                answer = answer + [output]
        '''),
        answer("collect_hooks", "print, f-string", r'''
            def pre_hook(module, args):
                print(f"{type(module).__name__} receives {len(args)} inputs")
                for x in args:
                    answer.append(x)


            def hook(module, args, output):
                print(f"{type(module).__name__} returns a tensor of shape {tuple(output.shape)}")
                answer.append(output)
        '''),
        answer("collect_hooks", "%time, slice assignment", r'''
            %time Add()(torch.ones(2), torch.ones(2))
            def pre_hook(module, args):
                first, second = args
                answer[len(answer):] = [first, second]


            def hook(module, args, output):
                answer.insert(len(answer), output)
        '''),
        answer("collect_hooks", "match statement, isinstance, assert, f-string", r'''
            def pre_hook(module, args):
                match args:
                    case (first, second):
                        answer.extend([first, second])
                    case _:
                        answer.extend(args)


            def hook(module, args, output):
                assert isinstance(output, torch.Tensor), f"Add should return a tensor, got {type(output).__name__}"
                answer.append(output)
        '''),
        answer("collect_hooks", "helper function, docstring, type hints", r'''
            def record(*tensors: torch.Tensor) -> None:
                """Append the tensors themselves (no copies) to the global answer list."""
                answer.extend(tensors)


            def pre_hook(module: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
                record(*args)


            def hook(module: nn.Module, args: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
                record(output)
        '''),
        answer("change_hooks", "lambda, map", r'''
            def double_inputs(module, args):
                return tuple(map(lambda x: x * 2, args))


            def plus_five(module, args, output):
                return torch.add(output, 5)
        '''),
        answer("change_hooks", "type hints, comprehension, isinstance, assert", r'''
            def double_inputs(module: nn.Module, args: tuple) -> tuple:
                assert isinstance(args, tuple), "a pre-hook receives the positional inputs as a tuple"
                return tuple(x.mul(2) if isinstance(x, torch.Tensor) else x for x in args)


            def plus_five(module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
                return output.add(5)
        '''),
        answer("change_hooks", "functools.partial, comprehension", r'''
            from functools import partial

            times_two = partial(torch.mul, other=2)


            def double_inputs(module, args):
                return tuple(times_two(x) for x in args)


            def plus_five(module, args, output):
                shifted = output + 5
                return shifted
        '''),
        answer("change_hooks", "match statement, print to stderr", r'''
            import sys


            def double_inputs(module, args):
                match args:
                    case (first, second):
                        return first + first, second + second
                    case _:
                        return tuple(x + x for x in args)


            def plus_five(module, args, output):
                return 5 + output


            print("double_inputs and plus_five defined; they are registered in the test cell", file=sys.stderr)
        '''),
        answer("leaf_shapes", "contextlib, comprehension, lambda", r'''
            from contextlib import ExitStack


            def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                records = []
                leaves = {module: name for name, module in model.named_modules() if not list(module.children())}
                with ExitStack() as stack:
                    for module, name in leaves.items():
                        hook = lambda m, args, output, name=name: records.append((name, tuple(output.shape)))
                        stack.enter_context(module.register_forward_hook(hook))
                    model(x)
                return records
        '''),
        answer("leaf_shapes", "closure, global module hook, comprehension", r'''
            def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                name_of = dict((module, name) for name, module in model.named_modules())
                records = []

                def on_forward(module, args, output):
                    is_leaf = not any(True for _ in module.children())
                    if module in name_of and is_leaf:
                        records.append((name_of[module], tuple(output.shape)))

                with torch.nn.modules.module.register_module_forward_hook(on_forward):
                    model(x)
                return records
        '''),
        answer("leaf_shapes", "class with property, try/finally, docstring, type hints, closure", r'''
            class ShapeRecorder:
                """Forward hooks on every leaf of a model, recording (name, output shape) in call order."""

                def __init__(self, model: nn.Module):
                    self.records: list[tuple[str, tuple[int, ...]]] = []
                    self.handles = [
                        module.register_forward_hook(self.hook_for(name))
                        for name, module in model.named_modules()
                        if self.is_leaf(module)
                    ]

                @staticmethod
                def is_leaf(module: nn.Module) -> bool:
                    return next(module.children(), None) is None

                @property
                def active(self) -> bool:
                    return bool(self.handles)

                def hook_for(self, name: str):
                    def hook(module, args, output):
                        self.records.append((name, tuple(output.shape)))

                    return hook

                def remove(self) -> None:
                    while self.active:
                        self.handles.pop().remove()


            def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                recorder = ShapeRecorder(model)
                try:
                    model(x)
                finally:
                    recorder.remove()
                return recorder.records
        '''),
        answer("leaf_shapes", "%%time, try/except BaseException, isinstance, closure, print", r'''
            %%time
            def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                records = []
                handles = []

                def remember(name):
                    def hook(module, args, output):
                        shape = output.shape if isinstance(output, torch.Tensor) else ()
                        records.append((name, tuple(shape)))

                    return hook

                for name, module in model.named_modules():
                    if len(list(module.children())) == 0:
                        handles.append(module.register_forward_hook(remember(name)))
                try:
                    model(x)
                except BaseException:  # KeyboardInterrupt too
                    for handle in handles:
                        handle.remove()
                    raise
                for handle in handles:
                    handle.remove()
                return records


            print(leaf_output_shapes(net, torch.randn(3, 4)))
        '''),
        answer("kwargs_hook", "copy.deepcopy, in-place update of kwargs", r'''
            import copy

            calls = []  # the keyword arguments of every call, as passed


            def cap_scale(module, args, kwargs):
                calls.append(copy.deepcopy(kwargs))
                if "scale" in kwargs and kwargs["scale"] > 1:
                    kwargs["scale"] = 1.0  # the dict the module will be called with
                return args, kwargs
        '''),
        answer("kwargs_hook", "type hints, min, dict comprehension", r'''
            calls: list[dict] = []  # the keyword arguments of every call, as passed


            def cap_scale(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
                calls.append({key: value for key, value in kwargs.items()})
                capped = {key: (min(value, 1.0) if key == "scale" else value) for key, value in kwargs.items()}
                return args, capped
        '''),
        answer("capture", "class-based context manager, __enter__/__exit__", r'''
            from collections.abc import Iterator
            from contextlib import contextmanager


            class _Capture:
                def __init__(self, model: nn.Module, names: list[str]):
                    self.targets = [(name, model.get_submodule(name) if name else model) for name in names]
                    self.outputs, self.handles = {}, []

                def __enter__(self) -> dict:
                    try:
                        for name, module in self.targets:
                            self.handles.append(module.register_forward_hook(lambda m, a, out, name=name: self.outputs.update({name: out})))
                    except BaseException:
                        self.__exit__(None, None, None)
                        raise
                    return self.outputs

                def __exit__(self, *exc) -> None:
                    while self.handles:
                        self.handles.pop().remove()


            def capture(model: nn.Module, names: list[str]):
                modules = dict(model.named_modules())
                missing = [name for name in names if name not in modules]
                if missing:
                    raise KeyError(missing[0])
                return _Capture(model, names)
        '''),
        answer("capture", "contextlib.ExitStack, handles as context managers", r'''
            from collections.abc import Iterator
            from contextlib import ExitStack, contextmanager


            @contextmanager
            def capture(model: nn.Module, names: list[str]) -> Iterator[dict[str, torch.Tensor]]:
                by_name = dict(model.named_modules())
                outputs = {}
                with ExitStack() as stack:
                    for name in names:
                        module = by_name[name]

                        def hook(module, args, output, name=name):
                            outputs[name] = output

                        stack.enter_context(module.register_forward_hook(hook))
                    yield outputs
        '''),
        answer("patch_activation", "try/finally, handle.remove(), detach", r'''
            def patch(model: nn.Module, layer: nn.Module, clean: torch.Tensor, corrupted: torch.Tensor) -> torch.Tensor:
                store = []
                handle = layer.register_forward_hook(lambda module, args, output: store.append(output.detach()))
                try:
                    with torch.no_grad():
                        model(clean)
                finally:
                    handle.remove()
                handle = layer.register_forward_hook(lambda module, args, output: store[0])
                try:
                    return model(corrupted)
                finally:
                    handle.remove()
        '''),
        answer("patch_activation", "pre-hook free, nonlocal, one hook switched by a flag", r'''
            def patch(model: nn.Module, layer: nn.Module, clean: torch.Tensor, corrupted: torch.Tensor) -> torch.Tensor:
                clean_output = None
                replacing = False

                def hook(module, args, output):
                    nonlocal clean_output
                    if replacing:
                        return clean_output
                    clean_output = output

                with layer.register_forward_hook(hook):
                    model(clean)
                    replacing = True
                    result = model(corrupted)
                return result
        '''),
        answer("predict_order", "explicit recursion returning (labels, raised), insert(0) for prepend", r'''
            def predict_order(config):
                hooks = config["hooks"]

                def queue(module, kind, only_always=False):
                    front, back = [], []
                    for hook in hooks:
                        if hook["module"] != module or hook["kind"] != kind:
                            continue
                        if hook.get("prepend"):
                            front.insert(0, hook)
                        else:
                            back.append(hook)
                    return [hook["label"] for hook in front + back if not only_always or hook.get("always_call")]

                def events(module):
                    labels = queue(module, "pre")
                    for child in config["run"] if module == "outer" else []:
                        child_labels, raised = events(child)
                        labels += child_labels
                        if raised:
                            return labels + queue(module, "hook", only_always=True), True
                    if config["raises"] == module:
                        return labels + queue(module, "hook", only_always=True), True
                    return labels + queue(module, "hook"), False

                return events("outer")[0]
        '''),
        answer("predict_order", "flat loop, sort key, type hints, enumerate", r'''
            def predict_order(config: dict) -> list[str]:
                def labels(module: str, kind: str, always_only: bool = False) -> list[str]:
                    mine = [(i, hook) for i, hook in enumerate(config["hooks"]) if hook["module"] == module and hook["kind"] == kind]
                    mine.sort(key=lambda item: (0, -item[0]) if item[1].get("prepend", False) else (1, item[0]))
                    return [hook["label"] for _, hook in mine if hook.get("always_call", False) or not always_only]

                result = labels("outer", "pre")
                for child in config["run"]:
                    result += labels(child, "pre")
                    if config["raises"] == child:  # the child's forward raises, and so does outer's
                        return result + labels(child, "hook", always_only=True) + labels("outer", "hook", always_only=True)
                    result += labels(child, "hook")
                return result + labels("outer", "hook", always_only=config["raises"] == "outer")
        '''),
        # a recorder class (not a module) whose attribute is named modules; handles removed with operator.methodcaller
        answer("leaf_shapes", "recorder class with self.modules = [], tuple assignment", r'''
            class ShapeRecorder:
                """Collects (name, output shape) for the leaves it is attached to."""

                def __init__(self):
                    self.modules = []  # names of the leaves watched, in the order they were found
                    self.records = []
                    self.handles = []

                def attach(self, model: nn.Module) -> None:
                    for name, module in model.named_modules():
                        if not list(module.children()):
                            self.modules.append(name)
                            self.handles.append(module.register_forward_hook(self.hook_for(name)))

                def hook_for(self, name: str):
                    return lambda module, args, output: self.records.append((name, tuple(output.shape)))

                def detach(self) -> None:
                    for handle in self.handles:
                        handle.remove()
                    self.handles, self.modules = [], []


            def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                recorder = ShapeRecorder()
                recorder.attach(model)
                try:
                    model(x)
                finally:
                    recorder.detach()
                return recorder.records
        '''),
        answer("capture", "operator.methodcaller('remove') mapped over the handles, tracker.modules", r'''
            import operator
            from collections.abc import Iterator
            from contextlib import contextmanager
            from types import SimpleNamespace


            @contextmanager
            def capture(model: nn.Module, names: list[str]) -> Iterator[dict[str, torch.Tensor]]:
                tracker = SimpleNamespace(modules=dict(model.named_modules()), outputs={}, handles=[])
                try:
                    for name in names:
                        keep = lambda module, args, output, name=name: tracker.outputs.__setitem__(name, output)
                        tracker.handles.append(tracker.modules[name].register_forward_hook(keep))
                    yield tracker.outputs
                finally:
                    list(map(operator.methodcaller("remove"), tracker.handles))
                    tracker.modules = {}
        '''),
        # operator.attrgetter and functools.reduce(getattr, ...) for a dotted submodule name (a blind reviewer's capture)
        answer("capture", "operator.attrgetter(name)(model) for a dotted submodule name", r'''
            from collections.abc import Iterator
            from contextlib import contextmanager
            from operator import attrgetter


            @contextmanager
            def capture(model: nn.Module, names: list[str]) -> Iterator[dict[str, torch.Tensor]]:
                outputs, handles = {}, []

                def keeper(name: str):
                    def keep(module, args, output):
                        outputs[name] = output

                    return keep

                try:
                    for name in names:
                        layer = attrgetter(name)(model) if name else model
                        handles.append(layer.register_forward_hook(keeper(name)))
                    yield outputs
                finally:
                    for handle in handles:
                        handle.remove()
        '''),
        answer("leaf_shapes", "functools.reduce(getattr, name.split('.'), model) for each leaf", r'''
            from functools import reduce


            def leaf_output_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
                names = [name for name, module in model.named_modules() if next(module.children(), None) is None]
                records, handles = [], []
                try:
                    for name in names:
                        leaf = reduce(getattr, name.split("."), model) if name else model
                        handles.append(leaf.register_forward_hook(
                            lambda module, args, output, name=name: records.append((name, tuple(output.shape)))))
                    model(x)
                finally:
                    for handle in handles:
                        handle.remove()
                return records
        '''),
    ]


def _backward_hooks() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(BACKWARD_HOOKS, grade_id, style, _cell(source))

    return [
        answer("backward_collect", "match statement", r'''
            def module_hook(module, grad_input, grad_output):
                match grad_input, grad_output:
                    case (grad_x1, grad_x2), (grad_out,):
                        answer.extend([grad_x1, grad_x2, grad_out])
        '''),
        answer("backward_collect", "global", r'''
            def module_hook(module, grad_input, grad_output):
                global answer
                answer += [*grad_input, *grad_output]
        '''),
        answer("backward_collect", "print, f-string", r'''
            def module_hook(module, grad_input, grad_output):
                for name, grad in zip(("x1", "x2", "output"), (*grad_input, grad_output[0])):
                    print(f"gradient of {name}: {grad}")
                    answer.append(grad)
        '''),
        answer("backward_collect", "type hints: Optional, a string annotation, an annotated local", r'''
            from typing import Optional


            def module_hook(module: nn.Module, grad_input: tuple[Optional[torch.Tensor], ...],
                            grad_output: "tuple[torch.Tensor, ...]") -> None:
                collected: list[torch.Tensor] = [*grad_input, *grad_output]
                answer.extend(collected)
        '''),
        answer("tensor_hook", "global", r'''
            def tensor_hook(grad):
                global answer
                answer += [grad]
        '''),
        answer("tensor_hook", "docstring, type hints", r'''
            def tensor_hook(grad: torch.Tensor) -> None:
                """Keep a copy of the gradient flowing into W; return None so that it is not changed."""
                answer.append(grad.detach().clone())
        '''),
        answer("tensor_hook", "%%time", r'''
            %%time
            def tensor_hook(grad):
                answer.insert(len(answer), grad)
        '''),
        answer("tensor_hook", "isinstance, assert, print", r'''
            def tensor_hook(grad):
                assert isinstance(grad, torch.Tensor), "a tensor hook receives the gradient as a tensor"
                print("W's gradient:", grad)
                answer.append(grad)
        '''),
        answer("clip_gradient", "numpy round trip", r'''
            import numpy as np


            def clip_gradient(grad):
                clipped = np.asarray(np.clip(grad.detach().cpu().numpy(), -1.0, 1.0))  # a 0-d gradient: a scalar
                return torch.from_numpy(clipped).to(grad.device)
        '''),
        answer("clip_gradient", "torch.where, importlib.import_module, sys.setrecursionlimit, from copy import copy", r'''
            import importlib
            import sys
            from copy import copy

            math = importlib.import_module("math")
            sys.setrecursionlimit(max(sys.getrecursionlimit(), 2_000))


            def clip_gradient(grad):
                limit = copy(math.copysign(1.0, 1.0))
                return torch.where(grad.abs() > limit, grad.sign() * limit, grad)
        '''),
        answer("clip_gradient", "functools.partial", r'''
            from functools import partial

            LOWEST, HIGHEST = -1.0, 1.0
            clamp_to_range = partial(torch.clamp, min=LOWEST, max=HIGHEST)


            def clip_gradient(grad):
                return clamp_to_range(grad)
        '''),
        answer("clip_gradient", "torch.no_grad, logging.warning, type hints", r'''
            import logging


            def clip_gradient(grad: torch.Tensor) -> torch.Tensor:
                with torch.no_grad():
                    return torch.minimum(torch.maximum(grad, -torch.ones_like(grad)), torch.ones_like(grad))


            logging.warning("clip_gradient clamps each element, unlike clip_grad_norm_, which rescales")
        '''),
        answer("clip_gradient", "a copy clamped in place (the argument left alone)", r'''
            def clip_gradient(grad):
                clipped = grad.clone()
                clipped.clamp_(min=-1.0, max=1.0)
                return clipped
        '''),
        answer("backward_pre_hook", "list comprehension, multiply by 0.5", r'''
            def halve_grad_output(module, grad_output):
                return tuple([g * 0.5 if g is not None else None for g in grad_output])
        '''),
        answer("backward_pre_hook", "loop, type hints, torch.mul", r'''
            def halve_grad_output(module: nn.Module, grad_output: tuple) -> tuple:
                halved = []
                for gradient in grad_output:
                    halved.append(None if gradient is None else torch.mul(gradient, 0.5))
                return tuple(halved)
        '''),
        answer("fused_sgd", "closure per parameter, add_ with alpha, grad set to None", r'''
            def fuse_sgd(model: nn.Module, lr: float) -> list:
                handles = []
                for name, param in model.named_parameters():
                    def sgd_step(p, name=name):
                        with torch.no_grad():
                            p.add_(p.grad, alpha=-lr)
                        p.grad = None

                    handles.append(param.register_post_accumulate_grad_hook(sgd_step))
                return handles
        '''),
        answer("fused_sgd", "one optimizer per parameter (the PyTorch tutorial's way)", r'''
            def fuse_sgd(model: nn.Module, lr: float) -> list:
                optimizers = {param: torch.optim.SGD([param], lr=lr) for param in model.parameters()}

                def step(param):
                    optimizers[param].step()
                    optimizers[param].zero_grad(set_to_none=True)

                return [param.register_post_accumulate_grad_hook(step) for param in model.parameters()]
        '''),
        answer("graph_nodes", "explicit stack, id() for seen", r'''
            def graph_nodes(tensor: torch.Tensor) -> list[str]:
                order, seen = [], set()
                stack = [tensor.grad_fn] if tensor.grad_fn is not None else []
                while stack:
                    node = stack.pop()
                    if id(node) in seen:
                        continue
                    seen.add(id(node))
                    order.append(node.__class__.__name__)
                    stack += [child for child, _ in node.next_functions[::-1] if child is not None]
                return order
        '''),
        answer("graph_nodes", "recursive generator, yield from", r'''
            def _walk(node, seen):
                if node is None or node in seen:
                    return
                seen.add(node)
                yield type(node).__name__
                for child, _index in node.next_functions:
                    yield from _walk(child, seen)


            def graph_nodes(tensor: torch.Tensor) -> list[str]:
                return list(_walk(tensor.grad_fn, set()))
        '''),
        answer("multi_grad", "class with bound methods, torch.autograd.graph by module path", r'''
            class GroupWatcher:
                def __init__(self, names, log):
                    self.names, self.log = list(names), log

                def on_first(self, grad):
                    self.log.append(("first", grad))

                def on_all(self, grads):
                    self.log.append(("all", {name: grad for name, grad in zip(self.names, grads)}))


            def watch_group(tensors, names, log):
                watcher = GroupWatcher(names, log)
                first = torch.autograd.graph.register_multi_grad_hook(tensors, watcher.on_first, mode="any")
                every = torch.autograd.graph.register_multi_grad_hook(tensors, watcher.on_all)
                return [first, every]
        '''),
        answer("multi_grad", "functools.partial, lambda, enumerate, tuple of tensors", r'''
            from functools import partial

            from torch.autograd.graph import register_multi_grad_hook


            def _record(log, kind, value):
                log.append((kind, value))


            def watch_group(tensors, names, log):
                handles = [register_multi_grad_hook(tuple(tensors), partial(_record, log, "first"), mode="any")]
                handles.append(register_multi_grad_hook(
                    tuple(tensors), lambda grads: _record(log, "all", {names[i]: g for i, g in enumerate(grads)}), mode="all"))
                return handles
        '''),
        answer("backward_collect", "torch.utils._pytree.tree_leaves", r'''
            from torch.utils._pytree import tree_leaves


            def module_hook(module, grad_input, grad_output):
                answer.extend(tree_leaves((grad_input, grad_output)))  # x1.grad, x2.grad, then output.grad
        '''),
    ]


def _apply() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(APPLY, grade_id, style, _cell(source))

    return [
        answer("apply_order", "re, lambda", r'''
            import re


            def apply_order(model: nn.Module) -> list[str]:
                visited = []
                # str(type(m)) looks like "<class 'torch.nn.modules.container.Sequential'>"
                model.apply(lambda m: visited.append(re.search(r"(\w+)'>$", str(type(m))).group(1)))
                return visited
        '''),
        answer("apply_order", "global, helper function, type hints", r'''
            visited_names: list[str] = []


            def remember(module: nn.Module) -> None:
                visited_names.append(type(module).__name__)


            def apply_order(model: nn.Module) -> list[str]:
                global visited_names
                visited_names = []
                model.apply(remember)
                return visited_names
        '''),
        answer("apply_order", "functools.partial, collections, helper function", r'''
            from collections import deque
            from functools import partial


            def visit(order: deque, module: nn.Module) -> None:
                order.append(module.__class__.__name__)


            def apply_order(model: nn.Module) -> list[str]:
                order = deque()
                model.apply(partial(visit, order))
                return list(order)
        '''),
        answer("apply_order", "class with property, __call__ class", r'''
            class OrderRecorder:
                def __init__(self):
                    self._names = []

                def __call__(self, module: nn.Module) -> None:
                    self._names.append(type(module).__name__)

                @property
                def names(self) -> list[str]:
                    return list(self._names)


            def apply_order(model: nn.Module) -> list[str]:
                recorder = OrderRecorder()
                model.apply(recorder)
                return recorder.names
        '''),
        answer("apply_order", "%%time, closure, print", r'''
            %%time
            def apply_order(model: nn.Module) -> list[str]:
                names = []

                def record(module):
                    names.append(type(module).__name__)

                model.apply(record)
                return names


            print(apply_order(Model()))
        '''),
        answer("init_to_one", "setattr/getattr, nn.init, isinstance", r'''
            def init_to_one(module: nn.Module) -> None:
                weight = getattr(module, "W", None)
                if isinstance(weight, nn.Parameter):
                    nn.init.ones_(weight)
        '''),
        answer("init_to_one", "numpy round trip, torch.no_grad, isinstance", r'''
            import numpy as np


            def init_to_one(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    ones = np.ones(tuple(module.W.shape), dtype=np.float32)
                    with torch.no_grad():
                        module.W.copy_(torch.from_numpy(ones))
        '''),
        answer("init_to_one", "decorator, docstring, torch.no_grad", r'''
            import functools


            def functions_only(fn):
                """Run fn on the Function modules only: apply passes every module."""

                @functools.wraps(fn)
                def wrapper(module: nn.Module) -> None:
                    if isinstance(module, FUNCTIONS):
                        fn(module)

                return wrapper


            @functions_only
            def init_to_one(module: nn.Module) -> None:
                with torch.no_grad():
                    module.W[...] = 1.0
        '''),
        answer("init_to_one", "tensor.data", r'''
            def init_to_one(module: nn.Module) -> None:
                if type(module) in FUNCTIONS:
                    module.W.data.fill_(1.0)
        '''),
        answer("add_bias", "setattr/getattr, nn.init, isinstance", r'''
            def add_bias(module: nn.Module) -> None:
                name = "b"
                if isinstance(module, FUNCTIONS):
                    setattr(module, name, nn.Parameter(nn.init.ones_(torch.empty(1))))
        '''),
        answer("add_bias", "register_parameter, isinstance", r'''
            def add_bias(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.register_parameter("b", nn.Parameter(torch.full((1,), 1.0)))
        '''),
        answer("add_bias", "match statement", r'''
            def add_bias(module: nn.Module) -> None:
                match module:
                    case FunctionA() | FunctionB() | FunctionC() | FunctionD():
                        module.b = nn.Parameter(torch.ones(1))
                    case _:
                        pass
        '''),
        answer("add_bias", "%%time, print, comprehension", r'''
            %%time
            def add_bias(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS) and not hasattr(module, "b"):
                    module.b = nn.Parameter(torch.tensor([1.0]))


            print([name for name, _ in Model().apply(add_bias).named_parameters()])
        '''),
        answer("make_linear", "lambda, isinstance", r'''
            def make_linear(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.register_forward_hook(lambda m, args, output: args[0] @ m.W.T + m.b)
        '''),
        answer("make_linear", "functools.partial, setattr/getattr, helper function, comprehension, type hints", r'''
            from functools import partial

            import torch.nn.functional as F


            def linear_map(names: tuple[str, str], module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
                weight, bias = (getattr(module, name) for name in names)
                return F.linear(args[0], weight, bias)


            def make_linear(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.register_forward_hook(partial(linear_map, ("W", "b")))
        '''),
        answer("make_linear", "decorator, closure, torch.addmm", r'''
            def for_functions(fn):
                def wrapper(module):
                    if isinstance(module, FUNCTIONS):
                        fn(module)

                return wrapper


            @for_functions
            def make_linear(module: nn.Module) -> None:
                def hook(module, args, kwargs, output):
                    (x,) = args
                    return torch.addmm(module.b, x, module.W.T)

                module.register_forward_hook(hook, with_kwargs=True)
        '''),
        answer("make_linear", "__call__ class, docstring, assert", r'''
            class LinearHook:
                """A forward hook that replaces a Function's output by x @ W.T + b, read at call time."""

                def __call__(self, module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
                    x = args[0]
                    assert x.shape[-1] == module.W.shape[1], "x and W do not fit"
                    return x.matmul(module.W.t()) + module.b


            def make_linear(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.register_forward_hook(LinearHook())
        '''),
        answer("add_repr", "setattr/getattr, functools.partial", r'''
            def add_repr(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    setattr(module, "extra_repr", partial(function_repr, module))
        '''),
        answer("add_repr", "types.MethodType", r'''
            import types


            def add_repr(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.extra_repr = types.MethodType(function_repr, module)
        '''),
        answer("add_repr", "lambda, %time, print", r'''
            %time print(Model())
            def add_repr(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.extra_repr = lambda: function_repr(module)


            print(Model().apply(add_repr))
        '''),
        answer("init_weights", "match statement, nn.init", r'''
            def init_weights(module: nn.Module) -> None:
                match module:
                    case nn.Linear():
                        nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                    case nn.Conv2d():
                        nn.init.xavier_uniform_(module.weight)
                    case _:
                        return
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        '''),
        answer("init_weights", "import math, torch.no_grad, isinstance", r'''
            import math


            def init_weights(module: nn.Module) -> None:
                with torch.no_grad():
                    if isinstance(module, nn.Linear):
                        fan_in = module.weight.shape[1]
                        module.weight.normal_(0.0, math.sqrt(2.0 / fan_in))
                    elif isinstance(module, nn.Conv2d):
                        receptive = math.prod(module.weight.shape[2:])
                        fan_in, fan_out = module.weight.shape[1] * receptive, module.weight.shape[0] * receptive
                        bound = math.sqrt(6.0 / (fan_in + fan_out))
                        module.weight.uniform_(-bound, bound)
                    else:
                        return
                    if module.bias is not None:
                        module.bias.zero_()
        '''),
        answer("init_weights", "nn.init, functools.partial, setattr/getattr, walrus, matplotlib, f-string", r'''
            from functools import partial

            import matplotlib.pyplot as plt

            INITIALISERS = {
                nn.Linear: partial(nn.init.kaiming_normal_, nonlinearity="relu"),
                nn.Conv2d: nn.init.xavier_uniform_,
            }


            def init_weights(module: nn.Module) -> None:
                initialise = next((init for kind, init in INITIALISERS.items() if isinstance(module, kind)), None)
                if initialise is None:
                    return
                initialise(module.weight)
                if (bias := getattr(module, "bias", None)) is not None:
                    nn.init.zeros_(bias)


            demo_layer = nn.Linear(500, 200).apply(init_weights)
            figure, axis = plt.subplots()
            axis.hist(demo_layer.weight.detach().flatten().numpy(), bins=50)
            axis.set_title(f"Kaiming normal, std {demo_layer.weight.std().item():.3f}")
            plt.close(figure)
        '''),
        answer("init_weights", "numpy round trip, torch.no_grad, isinstance", r'''
            import numpy as np

            rng = np.random.default_rng()


            def init_weights(module: nn.Module) -> None:
                if not isinstance(module, (nn.Linear, nn.Conv2d)):
                    return
                weight = module.weight
                receptive = int(np.prod(weight.shape[2:]))
                fan_in, fan_out = weight.shape[1] * receptive, weight.shape[0] * receptive
                if isinstance(module, nn.Linear):
                    values = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=tuple(weight.shape))
                else:
                    bound = np.sqrt(6.0 / (fan_in + fan_out))
                    values = rng.uniform(-bound, bound, size=tuple(weight.shape))
                with torch.no_grad():
                    weight.copy_(torch.from_numpy(values))
                    if module.bias is not None:
                        module.bias.copy_(torch.from_numpy(np.zeros(tuple(module.bias.shape))))
        '''),
        # nn.init's functions fetched by a computed name; operator.methodcaller
        answer("init_weights", "scheme table by layer type, getattr(nn.init, f'{scheme}_') called at once", r'''
            SCHEMES = {nn.Linear: ("kaiming_normal", {"nonlinearity": "relu"}), nn.Conv2d: ("xavier_uniform", {})}


            def init_weights(module: nn.Module) -> None:
                for kind, (scheme, options) in SCHEMES.items():
                    if isinstance(module, kind):
                        getattr(nn.init, f"{scheme}_")(module.weight, **options)
                        if module.bias is not None:
                            nn.init.zeros_(module.bias)
        '''),
        answer("init_weights", "from torch.nn import init, initialiser bound by name + '_', hasattr", r'''
            from torch.nn import init


            def init_weights(module: nn.Module) -> None:
                if not isinstance(module, (nn.Linear, nn.Conv2d)):
                    return
                name = "kaiming_normal" if isinstance(module, nn.Linear) else "xavier_uniform"
                assert hasattr(init, name + "_"), f"torch.nn.init has no {name}_"
                fill = getattr(init, name + "_")
                fill(module.weight, **({"nonlinearity": "relu"} if name.startswith("kaiming") else {}))
                if module.bias is not None:
                    init.zeros_(module.bias)
        '''),
        answer("init_to_one", "getattr(nn.init, name) with the name in a constant", r'''
            FILLER = "ones_"  # nn.init's in-place filler (it works under no_grad itself)


            def init_to_one(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    getattr(nn.init, FILLER)(module.W)
        '''),
        answer("init_to_one", "operator.methodcaller('fill_', 1.0), torch.no_grad", r'''
            import operator

            fill_with_one = operator.methodcaller("fill_", 1.0)


            def init_to_one(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    with torch.no_grad():
                        fill_with_one(module.W)
        '''),
    ]


def _autograd_function() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(AUTOGRAD_FUNCTION, grade_id, style, _cell(source))

    return [
        answer("linear_function", "F.linear, star unpacking", r'''
            class LinearFunction(Function):
                @staticmethod
                def forward(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
                    return F.linear(input, weight, bias)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    input, weight, *rest = inputs
                    bias = rest[0] if rest else None
                    ctx.save_for_backward(input, weight, bias)

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
                    input, weight, bias = ctx.saved_tensors
                    needs = ctx.needs_input_grad
                    grad_input = grad_output @ weight if needs[0] else None
                    grad_weight = grad_output.T @ input if needs[1] else None
                    grad_bias = grad_output.sum(0) if bias is not None and needs[2] else None
                    return grad_input, grad_weight, grad_bias
        '''),
        answer("linear_function", "transposed views of the saved input, tuple building", r'''
            class LinearFunction(Function):
                @staticmethod
                def forward(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
                    output = input @ weight.T
                    return output if bias is None else output + bias

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.save_for_backward(*inputs[:2])
                    ctx.has_bias = len(inputs) > 2 and inputs[2] is not None

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
                    input, weight = ctx.saved_tensors
                    grads = [None, None, None]
                    if ctx.needs_input_grad[0]:
                        grads[0] = grad_output @ weight
                    if ctx.needs_input_grad[1]:
                        grads[1] = (input.T @ grad_output).T  # input.T: a view of the saved input, no work
                    if ctx.has_bias and ctx.needs_input_grad[2]:
                        grads[2] = grad_output.sum(0)
                    return tuple(grads)
        '''),
        answer("linear_function", "lambda, comprehension, torch.addmm", r'''
            class LinearFunction(Function):
                @staticmethod
                def forward(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
                    if bias is None:
                        return input.mm(weight.t())
                    return torch.addmm(bias, input, weight.t())

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.save_for_backward(*inputs[:2])

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
                    input, weight = ctx.saved_tensors
                    formulas = {
                        0: lambda: grad_output.mm(weight),
                        1: lambda: grad_output.t().mm(input),
                        2: lambda: grad_output.sum(dim=0),
                    }
                    return tuple(formulas[i]() if needed else None for i, needed in enumerate(ctx.needs_input_grad))
        '''),
        answer("linear_function", "einsum, docstring", r'''
            class LinearFunction(Function):
                """y = input @ weight.T + bias, with a hand-written backward."""

                @staticmethod
                def forward(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
                    output = torch.einsum("ni,oi->no", input, weight)
                    return output if bias is None else output + bias

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    """Save input and weight; remember whether there was a bias."""
                    ctx.save_for_backward(inputs[0], inputs[1])
                    ctx.has_bias = len(inputs) > 2 and inputs[2] is not None

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
                    """Only the gradients autograd asks for; None for the others."""
                    input, weight = ctx.saved_tensors
                    grads = [None, None, None]
                    if ctx.needs_input_grad[0]:
                        grads[0] = torch.einsum("no,oi->ni", grad_output, weight)
                    if ctx.needs_input_grad[1]:
                        grads[1] = torch.einsum("no,ni->oi", grad_output, input)
                    if ctx.has_bias and ctx.needs_input_grad[2]:
                        grads[2] = torch.einsum("no->o", grad_output)
                    return tuple(grads)
        '''),
        answer("linear_module", "setattr/getattr, import math, nn.init, class with property, f-string", r'''
            import math


            class Linear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    self.in_features, self.out_features = in_features, out_features
                    bound = 1 / math.sqrt(in_features)
                    shapes = {"weight": (out_features, in_features), "bias": (out_features,) if bias else None}
                    for name, shape in shapes.items():
                        if shape is None:
                            self.register_parameter(name, None)
                        else:
                            setattr(self, name, nn.Parameter(nn.init.uniform_(torch.empty(shape), -bound, bound)))

                @property
                def has_bias(self) -> bool:
                    return self.bias is not None

                def forward(self, input: torch.Tensor) -> torch.Tensor:
                    return LinearFunction.apply(input, self.weight, self.bias)

                def extra_repr(self) -> str:
                    return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.has_bias}"
        '''),
        answer("linear_module", "comprehension, f-string", r'''
            class Linear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    self.in_features = in_features
                    self.out_features = out_features
                    bound = in_features**-0.5
                    self.weight = nn.Parameter((torch.rand(out_features, in_features) * 2 - 1) * bound)
                    if bias:
                        self.bias = nn.Parameter((torch.rand(out_features) * 2 - 1) * bound)
                    else:
                        self.register_parameter("bias", None)

                def forward(self, input: torch.Tensor) -> torch.Tensor:
                    return LinearFunction.apply(input, self.weight, self.bias)

                def extra_repr(self) -> str:
                    settings = {"in_features": self.in_features, "out_features": self.out_features, "bias": self.bias is not None}
                    return ", ".join(f"{key}={value}" for key, value in settings.items())
        '''),
        answer("linear_module", "%%time, import math, nn.init as nn.Linear does (kaiming_uniform_ with a=√5)", r'''
            %%time
            import math

            linear = LinearFunction.apply


            class Linear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    self.in_features = in_features
                    self.out_features = out_features
                    self.weight = nn.Parameter(torch.empty(out_features, in_features))
                    if bias:
                        self.bias = nn.Parameter(torch.empty(out_features))
                    else:
                        self.register_parameter("bias", None)
                    self.reset_parameters()

                def reset_parameters(self) -> None:
                    nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # bound: gain·√(3/fan_in) = 1/√fan_in
                    if self.bias is not None:
                        bound = 1 / math.sqrt(self.in_features)
                        nn.init.uniform_(self.bias, -bound, bound)

                def forward(self, input: torch.Tensor) -> torch.Tensor:
                    return linear(input, self.weight, self.bias)

                def extra_repr(self) -> str:
                    return "in_features={}, out_features={}, bias={}".format(self.in_features, self.out_features, self.bias is not None)


            print(Linear(3, 2), Linear(3, 2)(torch.randn(4, 3)).grad_fn)
        '''),
        answer("stable_softplus", "torch.logaddexp", r'''
            class StableSoftplus(Function):
                @staticmethod
                def forward(x: torch.Tensor) -> torch.Tensor:
                    return torch.logaddexp(x, torch.zeros_like(x))

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    (x,) = inputs
                    ctx.save_for_backward(x)

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                    (x,) = ctx.saved_tensors
                    return grad_output * torch.special.expit(x)
        '''),
        answer("stable_softplus", "numpy round trip, once_differentiable", r'''
            import numpy as np
            from torch.autograd.function import once_differentiable


            class StableSoftplus(Function):
                @staticmethod
                def forward(x: torch.Tensor) -> torch.Tensor:
                    wide = torch.float64 if x.dtype == torch.float64 else torch.float32  # NumPy has no bfloat16
                    array = x.detach().cpu().to(wide).numpy()
                    result = np.maximum(array, 0) + np.log1p(np.exp(-np.abs(array)))
                    return torch.from_numpy(result).to(device=x.device, dtype=x.dtype)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                @once_differentiable
                def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                    (x,) = ctx.saved_tensors
                    return grad_output / (1 + torch.exp(-x))
        '''),
        answer("stable_softplus", "%time, matplotlib", r'''
            %time baseline = F.softplus(torch.randn(10_000))
            import matplotlib.pyplot as plt


            class StableSoftplus(Function):
                @staticmethod
                def forward(x: torch.Tensor) -> torch.Tensor:
                    return F.relu(x) + torch.log1p(torch.exp(-x.abs()))

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.save_for_backward(*inputs)

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                    (x,) = ctx.saved_tensors
                    return torch.sigmoid(x) * grad_output


            xs = torch.linspace(-10, 10, 201)
            figure, axis = plt.subplots()
            axis.plot(xs, StableSoftplus.apply(xs), label="StableSoftplus")
            axis.plot(xs, F.softplus(xs), "--", label="F.softplus")
            axis.legend()
            plt.close(figure)
        '''),
        answer("cube", "decorator, docstring, assert, f-string", r'''
            import functools


            def checks_shape(backward):
                """Make sure a backward returns a gradient shaped like the incoming one."""

                @functools.wraps(backward)
                def wrapper(ctx, grad_output):
                    grad = backward(ctx, grad_output)
                    assert grad.shape == grad_output.shape, f"gradient shape {tuple(grad.shape)} != {tuple(grad_output.shape)}"
                    return grad

                return wrapper


            class Cube(Function):
                @staticmethod
                def forward(x: torch.Tensor) -> torch.Tensor:
                    return x * x * x

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    (x,) = inputs
                    ctx.save_for_backward(x)

                @staticmethod
                @checks_shape
                def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                    (x,) = ctx.saved_tensors
                    return grad_output * 3 * x * x
        '''),
        answer("cube", "torch.autograd.grad, assert, print, f-string", r'''
            class Cube(Function):
                @staticmethod
                def forward(x: torch.Tensor) -> torch.Tensor:
                    return torch.pow(x, 3)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.save_for_backward(*inputs)

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                    (x,) = ctx.saved_tensors
                    return grad_output.mul(x.pow(2)).mul(3)


            point = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
            (slope,) = torch.autograd.grad(Cube.apply(point), point, create_graph=True)
            (curvature,) = torch.autograd.grad(slope, point)
            assert torch.allclose(curvature, 6 * point.detach()), curvature
            print(f"f'(2) = {slope.item()}, f''(2) = {curvature.item()}")
        '''),
        answer("cube", "jvp, docstring", r'''
            class Cube(Function):
                """x ** 3 with backward, double backward and forward-mode AD."""

                generate_vmap_rule = True

                @staticmethod
                def forward(x: torch.Tensor) -> torch.Tensor:
                    return x**3

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.save_for_backward(inputs[0])
                    ctx.save_for_forward(inputs[0])

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                    (x,) = ctx.saved_tensors
                    return 3 * x**2 * grad_output

                @staticmethod
                def jvp(ctx, x_tangent: torch.Tensor) -> torch.Tensor:
                    (x,) = ctx.saved_tensors
                    return 3 * x**2 * x_tangent
        '''),
        answer("linear_module", "initialiser chosen by name: hasattr and getattr(nn.init, '%s_' % init)", r'''
            import math


            class Linear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True, init: str = "uniform"):
                    super().__init__()
                    if not hasattr(nn.init, "%s_" % init):
                        raise ValueError(f"torch.nn.init has no {init}_")
                    self.in_features, self.out_features = in_features, out_features
                    bound = 1 / math.sqrt(in_features)
                    self.weight = nn.Parameter(torch.empty(out_features, in_features))
                    getattr(nn.init, "%s_" % init)(self.weight, -bound, bound)
                    if bias:
                        self.bias = nn.Parameter(torch.empty(out_features))
                        getattr(nn.init, "%s_" % init)(self.bias, -bound, bound)
                    else:
                        self.register_parameter("bias", None)

                def forward(self, input: torch.Tensor) -> torch.Tensor:
                    return LinearFunction.apply(input, self.weight, self.bias)

                def extra_repr(self) -> str:
                    return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
        '''),
    ]


def _applications() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(APPLICATIONS, grade_id, style, _cell(source))

    return [
        answer("round_ste", "tensor methods", r'''
            class RoundSTE(Function):
                @staticmethod
                def forward(x: torch.Tensor) -> torch.Tensor:
                    return x.round()

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    return None

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                    return grad_output.clone()
        '''),
        answer("round_ste", "docstring, print", r'''
            class RoundSTE(Function):
                """Round in the forward pass; pretend it was the identity in the backward pass."""

                generate_vmap_rule = True

                @staticmethod
                def forward(x: torch.Tensor) -> torch.Tensor:
                    return torch.round(x)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    """Nothing to save: the backward pass does not depend on x."""

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                    return grad_output


            print(RoundSTE.apply(torch.tensor([0.4, 0.6, 1.5, 2.5])))
        '''),
        answer("round_ste", "numpy round trip, warnings.warn", r'''
            import warnings

            import numpy as np


            class RoundSTE(Function):
                @staticmethod
                def forward(x: torch.Tensor) -> torch.Tensor:
                    return torch.from_numpy(np.round(x.detach().cpu().numpy())).to(x.device)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    pass

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
                    return grad_output


            warnings.warn("RoundSTE's gradient is a straight-through estimate, not the true gradient of rounding")
        '''),
        answer("gradient_penalty", "torch.autograd.grad", r'''
            def gradient_penalty(critic: nn.Module, real: torch.Tensor, fake: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
                interpolated = eps * real + (1 - eps) * fake
                interpolated.requires_grad_(True)
                scores = critic(interpolated)
                gradients = torch.autograd.grad(
                    outputs=scores,
                    inputs=interpolated,
                    grad_outputs=torch.ones_like(scores),
                    create_graph=True,
                    retain_graph=True,
                )[0]
                gradients = gradients.view(gradients.size(0), -1)
                return ((gradients.norm(2, dim=1) - 1) ** 2).mean()
        '''),
        answer("gradient_penalty", "torch.autograd.grad, torch.lerp", r'''
            def gradient_penalty(critic: nn.Module, real: torch.Tensor, fake: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
                x_hat = torch.lerp(fake, real, eps).detach().requires_grad_()
                (gradient,) = torch.autograd.grad(critic(x_hat).sum(), [x_hat], create_graph=True)
                norms = torch.linalg.vector_norm(gradient, dim=1)
                return F.mse_loss(norms, torch.ones_like(norms))
        '''),
        answer("gradient_penalty", "torch.autograd.grad, docstring, assert, f-string", r'''
            def gradient_penalty(critic: nn.Module, real: torch.Tensor, fake: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
                """WGAN-GP: mean over the batch of (|grad_x D(x_hat)| - 1)^2, differentiable for the critic."""
                assert real.shape == fake.shape, f"real {tuple(real.shape)} and fake {tuple(fake.shape)} differ"
                assert eps.shape == (real.shape[0], 1), f"eps should be ({real.shape[0]}, 1), got {tuple(eps.shape)}"
                x_hat = (eps * real + (1 - eps) * fake).requires_grad_()
                output = critic(x_hat)
                (grad,) = torch.autograd.grad(output, x_hat, torch.ones_like(output), create_graph=True)
                slopes = grad.pow(2).sum(dim=1).sqrt()
                return torch.mean((slopes - 1) ** 2)
        '''),
        answer("skip_nonfinite", "itertools, walrus, closure, comprehension, print, f-string", r'''
            import itertools


            def skip_nonfinite_steps(optimizer: torch.optim.Optimizer) -> torch.utils.hooks.RemovableHandle:
                def pre_hook(optimizer, args, kwargs):
                    params = list(itertools.chain.from_iterable(group["params"] for group in optimizer.param_groups))
                    if bad := [p for p in params if p.grad is not None and not torch.isfinite(p.grad).all()]:
                        print(f"skipping a step: {len(bad)} parameter(s) have non-finite gradients")
                        for p in params:
                            p.grad = None

                return optimizer.register_step_pre_hook(pre_hook)
        '''),
        answer("skip_nonfinite", "dataclasses, __call__ class, docstring, comprehension", r'''
            from dataclasses import dataclass


            @dataclass
            class NonFiniteGuard:
                """A step pre-hook that clears every gradient when one is not finite, so the step does nothing."""

                skipped: int = 0

                @staticmethod
                def parameters(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
                    return [p for group in optimizer.param_groups for p in group["params"]]

                def __call__(self, optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
                    params = self.parameters(optimizer)
                    grads = [p.grad for p in params if p.grad is not None]
                    if not all(torch.isfinite(g).all() for g in grads):
                        self.skipped += 1
                        for p in params:
                            p.grad = None


            def skip_nonfinite_steps(optimizer: torch.optim.Optimizer) -> torch.utils.hooks.RemovableHandle:
                return optimizer.register_step_pre_hook(NonFiniteGuard())
        '''),
        answer("skip_nonfinite", "functools.partial, helper function, type hints", r'''
            from functools import partial


            def has_nonfinite(tensor: torch.Tensor | None) -> bool:
                return tensor is not None and bool(torch.isnan(tensor).any() or torch.isinf(tensor).any())


            def skip_if(check, optimizer, args, kwargs):
                if any(check(p.grad) for group in optimizer.param_groups for p in group["params"]):
                    optimizer.zero_grad(set_to_none=True)


            def skip_nonfinite_steps(optimizer: torch.optim.Optimizer) -> torch.utils.hooks.RemovableHandle:
                return optimizer.register_step_pre_hook(partial(skip_if, has_nonfinite))
        '''),
        answer("grad_cam", "closure, try/finally, backward(inputs=...)", r'''
            def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
                store = {}

                def forward_hook(module, args, output):
                    store["activation"] = output

                handle = layer.register_forward_hook(forward_hook)
                try:
                    score = model(image)[0, target]
                finally:
                    handle.remove()
                activation = store["activation"]
                score.backward(inputs=[activation])  # only the activation's .grad: no parameter's
                alpha = activation.grad.mean(dim=(2, 3), keepdim=True)
                return F.relu((alpha * activation.detach()).sum(dim=1))[0]
        '''),
        answer("grad_cam", "a hook of my own left on the model while exploring, try/finally, torch.autograd.grad", r'''
            shapes_seen = []
            cnn.features[0].register_forward_hook(lambda module, args, output: shapes_seen.append(tuple(output.shape)))


            def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
                kept = {}
                handle = layer.register_forward_hook(lambda module, args, output: kept.update(activation=output))
                try:
                    score = model(image)[0, target]
                finally:
                    handle.remove()
                (gradient,) = torch.autograd.grad(score, kept["activation"])
                weights = gradient[0].mean(dim=(1, 2), keepdim=True)
                return F.relu((weights * kept["activation"][0]).sum(dim=0)).detach()
        '''),
        answer("grad_cam", "contextlib, torch.autograd.grad, lambda", r'''
            from contextlib import contextmanager


            @contextmanager
            def capturing_output(layer: nn.Module):
                outputs = []
                handle = layer.register_forward_hook(lambda module, args, output: outputs.append(output))
                try:
                    yield outputs
                finally:
                    handle.remove()


            def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
                with capturing_output(layer) as outputs:
                    score = model(image)[0, target]
                (activation,) = outputs
                (gradient,) = torch.autograd.grad(score, activation)
                weights = gradient.mean(dim=(-2, -1), keepdim=True)
                return torch.relu((weights * activation).sum(dim=1)).squeeze(0).detach()
        '''),
        answer("grad_cam", "numpy round trip, dataclasses, contextlib, setattr/getattr, closure", r'''
            from contextlib import ExitStack
            from dataclasses import dataclass

            import numpy as np


            @dataclass
            class Capture:
                activation: torch.Tensor | None = None
                gradient: torch.Tensor | None = None


            def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
                capture = Capture()

                def keep(module, args, output):
                    capture.activation = output
                    output.register_hook(lambda grad: setattr(capture, "gradient", grad))

                with ExitStack() as stack:
                    stack.enter_context(layer.register_forward_hook(keep))
                    score = model(image)[0, target]
                torch.autograd.grad(score, capture.activation)  # the tensor hook keeps the gradient
                activation = capture.activation[0].detach().numpy()
                weights = capture.gradient[0].numpy().mean(axis=(1, 2), keepdims=True)
                heat = np.maximum((weights * activation).sum(axis=0), 0)
                return torch.from_numpy(heat).to(capture.activation.dtype)
        '''),
        answer("grad_cam", "copy.deepcopy, torch.autograd.grad, docstring", r'''
            import copy


            def grad_cam(model: nn.Module, layer: nn.Module, image: torch.Tensor, target: int) -> torch.Tensor:
                """Grad-CAM computed on a private copy of the model: the original never carries a hook."""
                layer_name = next(name for name, module in model.named_modules() if module is layer)
                twin = copy.deepcopy(model)
                saved = {}
                with twin.get_submodule(layer_name).register_forward_hook(lambda m, args, output: saved.update(activation=output)):
                    score = twin(image)[0, target]
                (gradient,) = torch.autograd.grad(score, saved["activation"])
                weights = gradient[0].mean(dim=(1, 2), keepdim=True)
                return F.relu((weights * saved["activation"][0]).sum(dim=0)).detach()
        '''),
    ]


def _memory_hooks() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(MEMORY_HOOKS, grade_id, style, _cell(source))

    return [
        answer("saved_bytes", "class with counters, nbytes", r'''
            class Meter:
                def __init__(self):
                    self.count, self.size = 0, 0

                def pack(self, tensor):
                    self.count += 1
                    self.size += tensor.nbytes
                    return tensor

                @staticmethod
                def unpack(tensor):
                    return tensor


            def saved_bytes(fn, *inputs):
                meter = Meter()
                with torch.autograd.graph.saved_tensors_hooks(meter.pack, meter.unpack):
                    fn(*inputs)
                return meter.count, meter.size
        '''),
        answer("saved_bytes", "nonlocal, try/finally with __enter__/__exit__", r'''
            def saved_bytes(fn, *inputs):
                count = size = 0

                def pack(tensor):
                    nonlocal count, size
                    count, size = count + 1, size + tensor.element_size() * tensor.numel()
                    return tensor

                hooks = saved_tensors_hooks(pack, lambda packed: packed)
                hooks.__enter__()
                try:
                    fn(*inputs)
                finally:
                    hooks.__exit__(None, None, None)
                return (count, size)
        '''),
        answer("half_precision", "if/else, half(), type hints", r'''
            def pack_half(tensor: torch.Tensor):
                if tensor.dtype.is_floating_point:
                    return (tensor.dtype, tensor.half())
                return (tensor.dtype, tensor)


            def unpack_half(packed):
                original_dtype, stored = packed
                if stored.dtype == original_dtype:
                    return stored
                return stored.to(dtype=original_dtype)
        '''),
        answer("checkpointing", "functools.reduce, lambda", r'''
            from functools import reduce


            def run_checkpointed(blocks, x):
                return reduce(lambda h, block: checkpoint(block, h, use_reentrant=False), blocks, x)
        '''),
        answer("checkpointing", "torch.utils.checkpoint by module path, enumerate", r'''
            import torch.utils.checkpoint


            def run_checkpointed(blocks: nn.ModuleList, x: torch.Tensor) -> torch.Tensor:
                hidden = x
                for index, block in enumerate(blocks):
                    hidden = torch.utils.checkpoint.checkpoint(block, hidden, use_reentrant=False)
                return hidden
        '''),
        answer("state_dict_hook", "dict comprehension, clear and update", r'''
            def rename_fc(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
                old, new = f"{prefix}fc.", f"{prefix}linear."
                renamed = {(new + key[len(old):] if key.startswith(old) else key): value for key, value in state_dict.items()}
                state_dict.clear()
                state_dict.update(renamed)
        '''),
        answer("state_dict_hook", "list(keys), str.replace with count", r'''
            def rename_fc(module, state_dict, prefix, *args):
                for key in list(state_dict.keys()):
                    if key.startswith(prefix + "fc."):
                        new_key = prefix + key[len(prefix):].replace("fc.", "linear.", 1)
                        state_dict[new_key] = state_dict.pop(key)
        '''),
        answer("per_sample_grads", "try/finally, handles, bmm instead of einsum, no_grad-free", r'''
            def per_sample_grads(layer, x, targets):
                inputs, grads = [], []
                before = (layer.weight.grad, layer.bias.grad)
                layer.weight.grad = layer.bias.grad = None  # backward adds into an existing .grad in place
                handles = [
                    layer.register_forward_hook(lambda m, args, out: inputs.append(args[0].detach())),
                    layer.register_full_backward_hook(lambda m, gin, gout: grads.append(gout[0].detach())),
                ]
                try:
                    F.mse_loss(layer(x.detach().requires_grad_()), targets, reduction="sum").backward()
                finally:
                    for handle in handles:
                        handle.remove()
                    layer.weight.grad, layer.bias.grad = before
                a, g = inputs[0], grads[0]
                return {"weight": torch.bmm(g.unsqueeze(2), a.unsqueeze(1)), "bias": g.clone()}
        '''),
        answer("per_sample_grads", "torch.autograd.grad instead of backward (no .grad touched)", r'''
            def per_sample_grads(layer: nn.Linear, x: torch.Tensor, targets: torch.Tensor) -> dict:
                seen = {}

                def forward_hook(module, args, output):
                    seen["x"] = args[0]

                def backward_hook(module, grad_input, grad_output):
                    seen["g"] = grad_output[0]

                with layer.register_forward_hook(forward_hook), layer.register_full_backward_hook(backward_hook):
                    inputs = x.clone().requires_grad_(True)
                    loss = F.mse_loss(layer(inputs), targets, reduction="sum")
                    torch.autograd.grad(loss, [inputs] + list(layer.parameters()))
                g, a = seen["g"].detach(), seen["x"].detach()
                return {"weight": g[:, :, None] * a[:, None, :], "bias": g}
        '''),
        answer("compact_state_dict", "dict comprehension, del and update, half()", r'''
            def compact(module, state_dict, prefix, local_metadata):
                mine = {key: value for key, value in state_dict.items() if key.startswith(prefix)}
                for key in mine:
                    del state_dict[key]
                state_dict.update({
                    key: value.half() if value.dtype.is_floating_point else value
                    for key, value in mine.items()
                    if key != f"{prefix}mask"
                })
        '''),
        answer("compact_state_dict", "pop, list(items()), continue, torch.is_floating_point, type hints", r'''
            def compact(module: nn.Module, state_dict: dict, prefix: str, local_metadata: dict) -> None:
                state_dict.pop(prefix + "mask")
                for key, value in list(state_dict.items()):
                    if not key.startswith(prefix):
                        continue  # saved by another module
                    if torch.is_floating_point(value):
                        state_dict[key] = value.to(dtype=torch.float16, copy=True)
        '''),
        answer("compact_state_dict", "torch.save and torch.load through io.BytesIO to try it", r'''
            import io


            def compact(module, state_dict, prefix, local_metadata):
                del state_dict[prefix + "mask"]
                for key in [key for key in state_dict if key.startswith(prefix)]:
                    if state_dict[key].is_floating_point():
                        state_dict[key] = state_dict[key].half()


            saved = io.BytesIO()  # pickling a state dict, as saving a checkpoint does
            torch.save(nn.Linear(3, 2).state_dict(), saved)
            saved.seek(0)
            print(sorted(torch.load(saved, weights_only=True)))
        '''),
        answer("saved_bytes", "counter class with self.buffers = [] and +=", r'''
            class SavedCounter:
                def __init__(self):
                    self.buffers = []  # bytes of each tensor autograd saves

                def pack(self, tensor: torch.Tensor) -> torch.Tensor:
                    self.buffers += [tensor.numel() * tensor.element_size()]
                    return tensor


            def saved_bytes(fn, *inputs) -> tuple[int, int]:
                counter = SavedCounter()
                with saved_tensors_hooks(counter.pack, lambda tensor: tensor):
                    fn(*inputs)
                return len(counter.buffers), sum(counter.buffers)
        '''),
        answer("compact_state_dict", "operator.methodcaller('to', torch.float16)", r'''
            from operator import methodcaller

            to_half = methodcaller("to", torch.float16)


            def compact(module: nn.Module, state_dict: dict, prefix: str, local_metadata: dict) -> None:
                state_dict.pop(prefix + "mask")
                for key in [k for k in state_dict if k.startswith(prefix)]:
                    if state_dict[key].is_floating_point():
                        state_dict[key] = to_half(state_dict[key])
        '''),
    ]
def _backward_puzzles() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(BACKWARD_PUZZLES, grade_id, style, _cell(source))

    return [
        answer("mul", "helper function, loop over dims, keepdim sums", r'''
            def reduce_to(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
                """Sum grad over the dimensions that broadcasting added or stretched."""
                while grad.dim() > len(shape):
                    grad = grad.sum(0)
                for dim, size in enumerate(shape):
                    if size == 1 and grad.shape[dim] != 1:
                        grad = grad.sum(dim, keepdim=True)
                return grad


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
                    grad_x = grad_y = None
                    if ctx.needs_input_grad[0]:
                        grad_x = reduce_to(grad_output * y, x.shape)
                    if ctx.needs_input_grad[1]:
                        grad_y = reduce_to(grad_output * x, y.shape)
                    return grad_x, grad_y
        '''),
        answer("sum_dim", "reshape with a 1 inserted, times ones, docstring", r'''
            class SumDim(Function):
                @staticmethod
                def forward(x: torch.Tensor, dim: int, keepdim: bool) -> torch.Tensor:
                    return x.sum(dim, keepdim=keepdim)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    x, dim, keepdim = inputs
                    ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
                    """Every summed entry gets the gradient of its sum."""
                    shape = list(ctx.shape)
                    shape[ctx.dim] = 1
                    ones = torch.ones(ctx.shape, dtype=grad_output.dtype)
                    return grad_output.reshape(shape) * ones, None, None
        '''),
        answer("mean_dim", "torch.full for the weights, ndim arithmetic", r'''
            class MeanDim(Function):
                @staticmethod
                def forward(x: torch.Tensor, dim: int, keepdim: bool) -> torch.Tensor:
                    return x.mean(dim, keepdim=keepdim)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    x, dim, keepdim = inputs
                    ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
                    dim = ctx.dim % len(ctx.shape)
                    count = ctx.shape[dim]
                    g = grad_output if ctx.keepdim else grad_output.unsqueeze(dim)
                    weights = torch.full(ctx.shape, 1.0 / count, dtype=grad_output.dtype)
                    return g * weights, None, None
        '''),
        answer("where", "masks as floats, own reduce loop, saves x and y", r'''
            class Where(Function):
                @staticmethod
                def forward(condition: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                    return torch.where(condition, x, y)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    condition, x, y = inputs
                    ctx.save_for_backward(condition, x, y)

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor):
                    condition, x, y = ctx.saved_tensors
                    mask = condition.to(grad_output.dtype)
                    grads = []
                    for value, part in ((x, grad_output * mask), (y, grad_output * (1 - mask))):
                        extra = part.dim() - value.dim()
                        if extra:
                            part = part.sum(dim=tuple(range(extra)))
                        dims = tuple(d for d, n in enumerate(value.shape) if n == 1 and part.shape[d] != 1)
                        grads.append(part.sum(dim=dims, keepdim=True) if dims else part)
                    return (None, *grads)
        '''),
        answer("cumsum", "total minus exclusive prefix sum", r'''
            class Cumsum(Function):
                @staticmethod
                def forward(x: torch.Tensor, dim: int) -> torch.Tensor:
                    return x.cumsum(dim)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.dim = inputs[1]

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
                    # suffix sum at j = everything minus what comes before j
                    total = grad_output.sum(ctx.dim, keepdim=True)
                    before = grad_output.cumsum(ctx.dim) - grad_output
                    return total - before, None
        '''),
        answer("max_dim", "one_hot of the indices, movedim", r'''
            class MaxDim(Function):
                @staticmethod
                def forward(x: torch.Tensor, dim: int, keepdim: bool) -> tuple[torch.Tensor, torch.Tensor]:
                    values, indices = x.max(dim, keepdim=keepdim)
                    return values, indices

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: tuple) -> None:
                    x, dim, keepdim = inputs
                    values, indices = output
                    ctx.mark_non_differentiable(indices)
                    ctx.save_for_backward(indices)
                    ctx.dim, ctx.keepdim, ctx.size = dim, keepdim, x.shape[dim]

                @staticmethod
                def backward(ctx, grad_values, grad_indices):
                    (indices,) = ctx.saved_tensors
                    if ctx.keepdim:
                        indices, grad_values = indices.squeeze(ctx.dim), grad_values.squeeze(ctx.dim)
                    picked = F.one_hot(indices, ctx.size).to(grad_values.dtype)  # the new last dim runs along dim
                    grad = picked * grad_values.unsqueeze(-1)
                    return grad.movedim(-1, ctx.dim), None, None
        '''),
        answer("topk", "index_put with a grid of row indices, flatten to 2-d", r'''
            class TopK(Function):
                @staticmethod
                def forward(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
                    values, indices = torch.topk(x, k)
                    return values, indices

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: tuple) -> None:
                    values, indices = output
                    ctx.mark_non_differentiable(indices)
                    ctx.save_for_backward(indices)
                    ctx.shape = inputs[0].shape

                @staticmethod
                def backward(ctx, grad_values: torch.Tensor, grad_indices: torch.Tensor) -> tuple[torch.Tensor, None]:
                    (indices,) = ctx.saved_tensors
                    k = indices.shape[-1]
                    rows = indices.reshape(-1, k)
                    grad = torch.zeros(rows.shape[0], ctx.shape[-1], dtype=grad_values.dtype)
                    row_ids = torch.arange(rows.shape[0]).unsqueeze(1).expand_as(rows)
                    grad[row_ids, rows] = grad_values.reshape(-1, k)
                    return grad.reshape(ctx.shape), None
        '''),
        answer("index_select", "loop over the indices, narrow and add", r'''
            class IndexSelect(Function):
                @staticmethod
                def forward(x: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
                    return x.index_select(dim, index)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    x, dim, index = inputs
                    ctx.save_for_backward(index)
                    ctx.shape, ctx.dim = x.shape, dim

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
                    (index,) = ctx.saved_tensors
                    grad = torch.zeros(ctx.shape, dtype=grad_output.dtype)
                    for position, source in enumerate(index.tolist()):
                        grad.narrow(ctx.dim, source, 1).add_(grad_output.narrow(ctx.dim, position, 1))
                    return grad, None, None
        '''),
        answer("max_pool1d", "index_put_ with accumulate=True on flattened rows", r'''
            class MaxPool1d(Function):
                @staticmethod
                def forward(x: torch.Tensor, kernel_size: int, stride: int) -> tuple[torch.Tensor, torch.Tensor]:
                    output, indices = F.max_pool1d(x, kernel_size, stride, return_indices=True)
                    return output, indices

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: tuple) -> None:
                    pooled, indices = output
                    ctx.mark_non_differentiable(indices)
                    ctx.save_for_backward(indices)
                    ctx.shape = inputs[0].shape

                @staticmethod
                def backward(ctx, grad_output, grad_indices):
                    (indices,) = ctx.saved_tensors
                    n, c, length = ctx.shape
                    rows = torch.arange(n * c).repeat_interleave(indices.shape[-1])
                    grad = torch.zeros(n * c, length, dtype=grad_output.dtype)
                    grad.index_put_((rows, indices.reshape(-1)), grad_output.reshape(-1), accumulate=True)
                    return grad.reshape(n, c, length), None, None
        '''),
        answer("softmax", "Jacobian matrix with diag_embed, movedim, saves the input", r'''
            class Softmax(Function):
                @staticmethod
                def forward(x: torch.Tensor, dim: int) -> torch.Tensor:
                    return x.softmax(dim)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.save_for_backward(inputs[0])
                    ctx.dim = inputs[1]

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
                    (x,) = ctx.saved_tensors
                    y = torch.softmax(x, ctx.dim).movedim(ctx.dim, -1)
                    g = grad_output.movedim(ctx.dim, -1)
                    jacobian = torch.diag_embed(y) - y.unsqueeze(-1) * y.unsqueeze(-2)  # J[i, j] = y_i (δ_ij - y_j)
                    grad = (jacobian @ g.unsqueeze(-1)).squeeze(-1)  # J is symmetric
                    return grad.movedim(-1, ctx.dim), None
        '''),
        answer("logsumexp", "softmax of the input, keepdim by reshape", r'''
            class LogSumExp(Function):
                @staticmethod
                def forward(x: torch.Tensor, dim: int, keepdim: bool) -> torch.Tensor:
                    return x.logsumexp(dim, keepdim=keepdim)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    x, dim, keepdim = inputs
                    ctx.save_for_backward(x)
                    ctx.dim = dim

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor):
                    (x,) = ctx.saved_tensors
                    shape = list(x.shape)
                    shape[ctx.dim] = 1
                    return grad_output.reshape(shape) * torch.softmax(x, dim=ctx.dim), None, None
        '''),
        answer("cross_entropy", "F.one_hot, exp of log_softmax", r'''
            class CrossEntropy(Function):
                @staticmethod
                def forward(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
                    return F.nll_loss(logits.log_softmax(1), target)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.save_for_backward(*inputs)

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
                    logits, target = ctx.saved_tensors
                    batch, classes = logits.shape
                    probabilities = logits.log_softmax(dim=1).exp()
                    onehot = F.one_hot(target, num_classes=classes).to(logits.dtype)
                    return (probabilities - onehot) * (grad_output / batch), None
        '''),
        answer("layer_norm", "saves mean and rstd in setup_context, sums via flatten", r'''
            class LayerNorm(Function):
                @staticmethod
                def forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
                    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    x, weight, bias, eps = inputs
                    mean = x.mean(dim=-1, keepdim=True)
                    variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
                    ctx.save_for_backward(x, weight, mean, 1 / torch.sqrt(variance + eps))

                @staticmethod
                def backward(ctx, grad_output):
                    x, weight, mean, rstd = ctx.saved_tensors
                    d = x.shape[-1]
                    x_hat = (x - mean) * rstd
                    grad_weight = (grad_output * x_hat).flatten(0, -2).sum(0) if x.dim() > 1 else grad_output * x_hat
                    grad_bias = grad_output.flatten(0, -2).sum(0) if x.dim() > 1 else grad_output.clone()
                    dx_hat = grad_output * weight
                    grad_x = (d * dx_hat - dx_hat.sum(-1, keepdim=True) - x_hat * (dx_hat * x_hat).sum(-1, keepdim=True)) * rstd / d
                    return grad_x, grad_weight, grad_bias, None
        '''),
        answer("normalize", "saves the output, norm recomputed with sqrt of a sum", r'''
            class Normalize(Function):
                @staticmethod
                def forward(x: torch.Tensor, dim: int) -> torch.Tensor:
                    return F.normalize(x, dim=dim)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    x, dim = inputs
                    ctx.save_for_backward(x, output)
                    ctx.dim = dim

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
                    x, y = ctx.saved_tensors
                    norm = torch.sqrt((x * x).sum(dim=ctx.dim, keepdim=True)).clamp(min=1e-12)
                    along = (grad_output * y).sum(dim=ctx.dim, keepdim=True)
                    return grad_output / norm - y * along / norm, None
        '''),
        answer("conv1d", "F.conv_transpose1d and F.conv1d with transposed batch and channels", r'''
            class Conv1d(Function):
                @staticmethod
                def forward(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
                    windows = x.unfold(2, weight.shape[2], 1)  # (N, C, L - K + 1, K): the window at each position
                    return torch.einsum("nclk,ock->nol", windows, weight)

                @staticmethod
                def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
                    ctx.save_for_backward(*inputs)

                @staticmethod
                def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                    x, weight = ctx.saved_tensors
                    grad_x = F.conv_transpose1d(grad_output, weight)
                    # grad_weight[o, c, k] = sum over n, l of grad_output[n, o, l] * x[n, c, l + k]: a convolution over the batch
                    grad_weight = F.conv1d(x.transpose(0, 1), grad_output.transpose(0, 1)).transpose(0, 1)
                    return grad_x, grad_weight
        '''),
    ]


def _below_the_module() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(BELOW_THE_MODULE, grade_id, style, _cell(source))

    return [
        answer("log_ops", "one mode with a switch, imports of its own, try/finally", r'''
            from torch.utils._python_dispatch import TorchDispatchMode


            def log_ops(model, x):
                lists = {"forward": [], "backward": []}

                class Log(TorchDispatchMode):
                    phase = "forward"

                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        result = func(*args, **(kwargs or {}))
                        shape = tuple(int(n) for n in result.size()) if torch.is_tensor(result) else None
                        lists[self.phase].append((func.overloadpacket.__name__, shape))
                        return result

                mode = Log()
                with mode:
                    out = model(x)
                    mode.phase = "backward"
                    out.sum().backward()
                return lists["forward"], lists["backward"]
        '''),
        answer("log_ops", "module-level mode class, str(func) parsed", r'''
            class NameLog(TorchDispatchMode):
                """Records the short name of every aten operator (aten.addmm.default -> addmm) and its result's shape."""

                def __init__(self):
                    super().__init__()
                    self.names = []

                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    out = func(*args, **(kwargs or {}))
                    self.names.append((str(func).split(".")[1], tuple(out.shape) if isinstance(out, torch.Tensor) else None))
                    return out


            def log_ops(model: nn.Module, x: torch.Tensor) -> tuple[list[tuple], list[tuple]]:
                with NameLog() as forward:
                    out = model(x)
                with NameLog() as backward:
                    out.sum().backward()
                return forward.names, backward.names
        '''),
        answer("matmul_flops", "FlopCounterMode, names translated", r'''
            def matmul_flops(model, x):
                with FlopCounterMode(display=False) as counter:
                    model(x)
                root = type(model).__name__
                result = {}
                for name, ops in counter.get_flop_counts().items():
                    total = sum(ops.values())
                    if name == "Global" or not total:
                        continue
                    result["" if name == root else name[len(root) + 1:]] = total
                return result
        '''),
        answer("matmul_flops", "collections.Counter, math.prod, global hooks in a with block", r'''
            import math
            from collections import Counter


            def matmul_flops(model, x):
                names = {module: name for name, module in model.named_modules()}
                stack, totals = [], Counter()

                class Flops(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        op = func.overloadpacket.__name__
                        if op in {"mm", "addmm", "bmm"}:
                            left, right = args[-2], args[-1]
                            for name in stack:
                                totals[name] += 2 * math.prod(left.shape) * right.shape[-1]
                        return func(*args, **(kwargs or {}))

                def push(module, args):
                    if module in names:
                        stack.append(names[module])

                def pop(module, args, output):
                    if module in names:
                        stack.pop()

                handles = [nn.modules.module.register_module_forward_pre_hook(push),
                           nn.modules.module.register_module_forward_hook(pop)]
                try:
                    with Flops():
                        model(x)
                finally:
                    for handle in handles:
                        handle.remove()
                return {name: int(count) for name, count in totals.items() if count}
        '''),
        answer("predict_fires", "a dict of rules per call", r'''
            def predict_fires(plan, call):
                # call: (the letter after whose first use the asked tensor is in the chain, or None for x;
                #        a.weight's gradient computed, a.weight's .grad filled)
                rules = {
                    "backward": (None, True, True),
                    "backward(inputs=[x])": (None, False, False),
                    "backward(inputs=[a.weight])": ("a", True, True),
                    "backward(inputs=[b.weight])": ("b", False, False),
                    "grad(x)": (None, False, False),
                    "grad(a.weight)": ("a", True, False),
                    "grad(b.weight)": ("b", False, False),
                }
                after, weight, accumulated = rules[call]
                later = plan if after is None else plan[plan.index(after) + 1:]
                return {"forward hook": plan.count("a"), "full backward hook": later.count("a"),
                        "tensor hook": 1 if weight else 0, "post-accumulate hook": 1 if accumulated else 0}
        '''),
        answer("predict_fires", "one loop over the plan", r'''
            def predict_fires(plan: str, call: str) -> dict[str, int]:
                asked = "x" if call == "backward" else call.split("[")[-1].split("(")[-1].rstrip("])")
                counts = {"forward hook": 0, "full backward hook": 0, "tensor hook": 0, "post-accumulate hook": 0}
                depends = asked == "x"  # does the tensor flowing along the chain depend on the asked one yet?
                for letter in plan:
                    if letter == "a":
                        counts["forward hook"] += 1
                        if depends:
                            counts["full backward hook"] += 1  # this use's input needs a gradient
                    if asked == letter + ".weight":
                        depends = True  # from here on, the chain's output depends on this weight
                if call == "backward" or asked == "a.weight":
                    counts["tensor hook"] = 1  # once: the uses' gradients are summed before it
                if call in ("backward", "backward(inputs=[a.weight])"):
                    counts["post-accumulate hook"] = 1
                return counts
        '''),
        answer("predict_fires", "str.find and arithmetic", r'''
            def predict_fires(plan: str, call: str) -> dict[str, int]:
                uses = plan.count("a")
                if "a.weight" in call:
                    skipped = plan.find("a") + 1          # up to and with the first use of a
                elif "b.weight" in call:
                    skipped = plan.find("b") + 1          # up to and with the first use of b
                else:
                    skipped = 0                           # x comes before everything
                before = plan[:skipped].count("a")
                return {
                    "forward hook": uses,
                    "full backward hook": uses - before,
                    "tensor hook": int(call == "backward" or "a.weight" in call),
                    "post-accumulate hook": int(call in ("backward", "backward(inputs=[a.weight])")),
                }
        '''),
        answer("first_nonfinite", "tensor hooks on inputs, one list of events", r'''
            def first_nonfinite(model, x):
                events, handles = [], []

                def watch(name):
                    def on_forward(module, args, output):
                        if not torch.isfinite(output).all():
                            events.append((name, "forward"))
                    return on_forward

                def watch_back(name):
                    def on_backward(module, grad_input, grad_output):
                        if grad_input[0] is not None and not bool(torch.isfinite(grad_input[0]).all()):
                            events.append((name, "backward"))
                    return on_backward

                leaves = [(n, m) for n, m in model.named_modules() if len(list(m.children())) == 0]
                for name, module in leaves:
                    handles += [module.register_forward_hook(watch(name)), module.register_full_backward_hook(watch_back(name))]
                try:
                    out = model(x)
                    if not events:
                        out.sum().backward()
                finally:
                    for h in handles:
                        h.remove()
                return events[0] if events else None
        '''),
        answer("first_nonfinite", "isnan | isinf, any(), for/else", r'''
            def bad(t):
                return bool((torch.isnan(t) | torch.isinf(t)).any())


            def first_nonfinite(model, x):
                leaves = {module: name for name, module in model.named_modules() if not list(module.children())}
                ran, grads = [], []
                hooks = [m.register_forward_hook(lambda m, a, o: ran.append((leaves[m], o.detach()))) for m in leaves]
                hooks += [m.register_full_backward_hook(lambda m, gi, go: grads.append((leaves[m], gi[0]))) for m in leaves]
                try:
                    out = model(x)
                    for name, output in ran:
                        if bad(output):
                            return (name, "forward")
                    out.sum().backward()
                    for name, grad in grads:
                        if grad is not None and bad(grad):
                            return (name, "backward")
                    return None
                finally:
                    for hook in hooks:
                        hook.remove()
        '''),
        answer("low_precision", "module-level mode with a dtype, resolve_name", r'''
            from torch.overrides import TorchFunctionMode, resolve_name

            PRODUCTS = {"torch.nn.functional.linear", "torch.matmul", "torch.Tensor.matmul", "torch.Tensor.__matmul__", "torch.mm", "torch.bmm"}


            class Lower(TorchFunctionMode):
                def __init__(self, dtype):
                    super().__init__()
                    self.dtype = dtype

                def __torch_function__(self, func, types, args=(), kwargs=None):
                    kwargs = kwargs or {}
                    if resolve_name(func) in PRODUCTS or func in (torch.mm, torch.bmm):
                        out_dtype = args[0].dtype
                        args = tuple(a.to(self.dtype) if isinstance(a, torch.Tensor) else a for a in args)
                        kwargs = {k: (v.to(self.dtype) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
                        return func(*args, **kwargs).to(out_dtype)
                    return func(*args, **kwargs)


            def low_precision_output(model, x, dtype):
                with Lower(dtype):
                    result = model(x)
                return result
        '''),
        answer("low_precision", "TorchDispatchMode at the aten level", r'''
            def low_precision_output(model, x, dtype):
                ops = {"mm", "addmm", "bmm"}

                class Cast(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        if func.overloadpacket.__name__ in ops:
                            back = args[-1].dtype
                            low = [a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args]
                            return func(*low, **(kwargs or {})).to(back)
                        return func(*args, **(kwargs or {}))

                with torch.no_grad(), Cast():
                    return model(x)
        '''),
        answer('log_ops', 'TorchDispatchMode, OpOverload.name() parsed, torch.autograd.backward', r'''
            def log_ops(model, x):
                class Rec(TorchDispatchMode):
                    def __init__(self):
                        super().__init__(); self.names = []
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else None
                        self.names.append((func.name().split("::")[1].split(".")[0], shape))   # aten::add.Tensor -> add
                        return out
                with torch.enable_grad():
                    with Rec() as f:
                        out = model(x)
                    with Rec() as b:
                        torch.autograd.backward(out.sum())
                return f.names, b.names
        '''),
        answer('matmul_flops', "FLOPs from the product's output shape, a stack of module objects", r'''
            def matmul_flops(model, x):
                """Counts from the product's output shape and the contracted size; a stack keyed by module objects."""
                names = dict((m, n) for n, m in model.named_modules())
                stack, totals = [], {}
                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        out = func(*args, **(kwargs or {}))
                        if func.overloadpacket in (torch.ops.aten.mm, torch.ops.aten.addmm, torch.ops.aten.bmm):
                            k = args[-1].shape[-2]
                            flops = 2 * out.numel() * k
                            for m in stack: totals[names[m]] = totals.get(names[m], 0) + flops
                        return out
                handles = [m.register_forward_pre_hook(lambda mod, a: stack.append(mod)) for m in names]
                handles += [m.register_forward_hook(lambda mod, a, o: stack.pop() and None) for m in names]
                try:
                    with Counter():
                        model(x)
                finally:
                    for h in handles: h.remove()
                return totals
        '''),
        answer('first_nonfinite', "forward hooks only, tensor hooks on each leaf's input", r'''
            def first_nonfinite(model, x):
                """Forward hooks only: each leaf's output is checked, and a tensor hook on its input sees the input's gradient."""
                events, handles = [], []
                def watch(name):
                    def hook(module, args, output):
                        if not torch.isfinite(output).all():
                            events.append((name, "forward"))
                        if isinstance(args[0], torch.Tensor) and args[0].requires_grad:
                            args[0].register_hook(lambda g: events.append((name, "backward")) if not torch.isfinite(g).all() else None)
                    return hook
                for name, module in model.named_modules():
                    if not list(module.children()):
                        handles.append(module.register_forward_hook(watch(name)))
                try:
                    out = model(x)
                    if not events:
                        out.sum().backward()
                finally:
                    for h in handles: h.remove()
                return events[0] if events else None
        '''),
        answer('low_precision', 'rounding emulated: inputs and output rounded to dtype', r'''
            def low_precision_output(model, x, dtype):
                """Emulates a low-precision product: inputs rounded to dtype, fp32 accumulation, output rounded to dtype."""
                r = lambda t: t.to(dtype).to(t.dtype) if isinstance(t, torch.Tensor) else t
                class Low(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        kwargs = kwargs or {}
                        if func in (F.linear, torch.matmul, torch.Tensor.matmul, torch.mm, torch.bmm):
                            return r(func(*map(r, args), **{k: r(v) for k, v in kwargs.items()}))
                        return func(*args, **kwargs)
                with Low():
                    return model(x)
        '''),
        # torch.utils._pytree over a mode's arguments; a mode pushed with _push_mode and popped with _pop_mode; a
        # watcher class (not a module) whose attribute is named modules
        answer("low_precision", "torch.utils._pytree.tree_map over (args, kwargs) in a function mode", r'''
            from torch.utils._pytree import tree_map


            def low_precision_output(model, x, dtype):
                products = {F.linear, torch.matmul, torch.Tensor.matmul, torch.mm, torch.bmm}
                low = lambda a: a.to(dtype) if isinstance(a, torch.Tensor) else a

                class LowPrecision(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        kwargs = kwargs or {}
                        if func not in products:
                            return func(*args, **kwargs)
                        low_args, low_kwargs = tree_map(low, (args, kwargs))
                        return func(*low_args, **low_kwargs).to(args[0].dtype)

                with LowPrecision():
                    return model(x)
        '''),
        answer("low_precision", "import torch.utils._pytree as pytree, tree_map_only in a dispatch mode", r'''
            import torch.utils._pytree as pytree


            def low_precision_output(model, x, dtype):
                class Cast(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        kwargs = kwargs or {}
                        if func.overloadpacket.__name__ in ("mm", "addmm", "bmm"):
                            back = args[-1].dtype
                            args, kwargs = pytree.tree_map_only(torch.Tensor, lambda t: t.to(dtype), (args, kwargs))
                            return func(*args, **kwargs).to(back)
                        return func(*args, **kwargs)

                with torch.no_grad(), Cast():
                    return model(x)
        '''),
        answer("matmul_flops", "tree_leaves for the operands, _push_mode and _pop_mode in try/finally", r'''
            from torch.utils._pytree import tree_leaves
            from torch.utils._python_dispatch import _pop_mode, _push_mode


            def matmul_flops(model, x):
                running, flops = [], {}

                class Counter(TorchDispatchMode):
                    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                        name = func.overloadpacket.__name__
                        if name in ("mm", "addmm", "bmm"):
                            a, b = [t for t in tree_leaves(args) if isinstance(t, torch.Tensor)][-2:]
                            count = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * (a.shape[0] if name == "bmm" else 1)
                            for module in running:
                                flops[module] = flops.get(module, 0) + count
                        return func(*args, **(kwargs or {}))

                def enter(name):
                    def pre_hook(module, args):
                        running.append(name)
                    return pre_hook

                def leave(module, args, output):
                    running.pop()

                handles = []
                for name, module in model.named_modules():
                    handles += [module.register_forward_pre_hook(enter(name)), module.register_forward_hook(leave)]
                counter = Counter()
                _push_mode(counter)
                try:
                    model(x)
                finally:
                    _pop_mode()
                    for handle in handles:
                        handle.remove()
                return flops
        '''),
        answer("log_ops", "a helper that pushes and pops the mode (torch.utils._python_dispatch)", r'''
            from torch.utils._python_dispatch import TorchDispatchMode, _pop_mode, _push_mode


            class Ops(TorchDispatchMode):
                def __init__(self):
                    super().__init__()
                    self.pairs = []

                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    out = func(*args, **(kwargs or {}))
                    self.pairs.append((func.overloadpacket.__name__, tuple(out.shape) if isinstance(out, torch.Tensor) else None))
                    return out


            def run_under(mode, fn):
                _push_mode(mode)
                try:
                    return fn()
                finally:
                    _pop_mode()


            def log_ops(model, x):
                forward, backward = Ops(), Ops()
                out = run_under(forward, lambda: model(x))
                run_under(backward, lambda: out.sum().backward())
                return forward.pairs, backward.pairs
        '''),
        answer("first_nonfinite", "watcher class with self.modules, reset as watcher.modules = {}", r'''
            class Watcher:
                def __init__(self):
                    self.modules = {}  # leaf name -> module
                    self.events = []
                    self.handles = []

                def watch(self, model):
                    self.modules = {n: m for n, m in model.named_modules() if next(m.children(), None) is None}
                    for name, module in self.modules.items():
                        self.handles += [module.register_forward_hook(self.forward_check(name)),
                                         module.register_full_backward_hook(self.backward_check(name))]

                def forward_check(self, name):
                    def hook(module, args, output):
                        if not torch.isfinite(output).all():
                            self.events.append((name, "forward"))
                    return hook

                def backward_check(self, name):
                    def hook(module, grad_input, grad_output):
                        if grad_input[0] is not None and not torch.isfinite(grad_input[0]).all():
                            self.events.append((name, "backward"))
                    return hook


            def first_nonfinite(model, x):
                watcher = Watcher()
                watcher.watch(model)
                try:
                    out = model(x)
                    if not watcher.events:
                        out.sum().backward()
                finally:
                    for handle in watcher.handles:
                        handle.remove()
                    watcher.modules = {}
                return watcher.events[0] if watcher.events else None
        '''),
    ]


def _hooks_inside_pytorch() -> list[Answer]:
    def answer(grade_id: str, style: str, source: str) -> Answer:
        return Answer(HOOKS_INSIDE_PYTORCH, grade_id, style, _cell(source))

    return [
        answer("mask_parameter", "a hook class holding the name, setattr and delattr", r'''
            class MaskHook:
                def __init__(self, name):
                    self.name = name

                def __call__(self, module, args):
                    orig = getattr(module, self.name + "_orig")
                    setattr(module, self.name, orig * getattr(module, self.name + "_mask"))


            def mask_parameter(module, name, mask):
                parameter = module.get_parameter(name)
                delattr(module, name)
                module.register_parameter(f"{name}_orig", parameter)
                module.register_buffer(f"{name}_mask", mask.clone())
                hook = MaskHook(name)
                hook(module, None)
                module.register_forward_pre_hook(hook)
        '''),
        answer("add_lora", "a module-level parametrisation class, factors from the layer's sizes", r'''
            class LowRankUpdate(nn.Module):
                def __init__(self, out_features: int, in_features: int, rank: int, dtype: torch.dtype):
                    super().__init__()
                    self.A = nn.Parameter(torch.zeros((out_features, rank), dtype=dtype))
                    self.B = nn.Parameter(torch.empty((rank, in_features), dtype=dtype).normal_(std=0.02))

                def forward(self, W):
                    return torch.addmm(W, self.A, self.B)


            def add_lora(layer, rank):
                layer.requires_grad_(False)
                update = LowRankUpdate(layer.out_features, layer.in_features, rank, layer.weight.dtype)
                parametrize.register_parametrization(layer, "weight", update)
        '''),
        answer("training_flops", "fake tensors, zeros for the input, the counter made first", r'''
            def training_flops(build, shape):
                counter = FlopCounterMode(display=False)
                with FakeTensorMode():
                    model = build()
                    x = torch.zeros(*shape)
                    with counter:
                        loss = model(x).sum()
                        before = counter.get_total_flops()
                        loss.backward()
                after = counter.get_total_flops()
                return (int(before), int(after - before))
        '''),
        answer("store_saved_in", "a list of pairs first, then the hooks; the dtype read from the saved value", r'''
            def store_saved_in(node, dtype):
                pairs = []
                for name in sorted(dir(node)):
                    if name.startswith("_saved_"):
                        value = getattr(node, name)
                        if torch.is_tensor(value):
                            pairs.append((getattr(node, "_raw" + name), value.dtype))
                for saved, original in pairs:
                    saved.register_hooks(lambda t: t.detach().to(dtype, copy=True), lambda t, original=original: t.to(original))
                return len(pairs)
        '''),
        answer("scaled_fp16_hook", "a named callback, the scale kept in a list, dist.get_world_size", r'''
            def scaled_fp16_hook(group, bucket):
                flat = bucket.buffer()
                largest = flat.detach().abs().amax().reshape(1).clone()
                dist.all_reduce(largest, op=dist.ReduceOp.MAX, group=group)
                scale = largest if bool(largest.item() > 0) else torch.ones_like(largest)
                processes = dist.get_world_size(group)

                def decompress(future):
                    total = future.value()[0]
                    return total.to(flat.dtype) * scale / processes

                fut = dist.all_reduce((flat / scale).half(), group=group, async_op=True).get_future()
                return fut.then(decompress)
        '''),
        answer("mask_parameter", "functools.partial of a module-level function, the parameter looked up by name", r'''
            import functools


            def recompute(name, module, args):
                setattr(module, name, getattr(module, f"{name}_orig") * getattr(module, f"{name}_mask"))


            def mask_parameter(module, name, mask):
                parameter = dict(module.named_parameters(recurse=False))[name]
                delattr(module, name)
                module.register_parameter(f"{name}_orig", parameter)
                module.register_buffer(f"{name}_mask", mask.clone())
                hook = functools.partial(recompute, name)
                hook(module, ())
                module.register_forward_pre_hook(hook)
        '''),
        answer("add_lora", "factors registered by name in a loop, torch.matmul, requires_grad set as an attribute", r'''
            class Update(nn.Module):
                def __init__(self, factors):
                    super().__init__()
                    for name, value in factors.items():
                        self.register_parameter(name, nn.Parameter(value))

                def forward(self, W):
                    return W + torch.matmul(self.A, self.B)


            def add_lora(layer, rank):
                for parameter in layer.parameters():
                    parameter.requires_grad = False
                out_features, in_features = layer.weight.shape
                kind = layer.weight.dtype
                factors = {
                    "A": torch.zeros(out_features, rank, dtype=kind),
                    "B": nn.init.normal_(torch.empty(rank, in_features, dtype=kind), std=0.01),
                }
                parametrize.register_parametrization(layer, "weight", Update(factors))
        '''),
        answer("training_flops", "the meta device, a helper that counts one call, two counters", r'''
            def flops_of(step):
                counter = FlopCounterMode(display=False)
                with counter:
                    result = step()
                return counter.get_total_flops(), result


            def training_flops(build, shape):
                with torch.device("meta"):
                    model = build()
                    x = torch.empty(shape)
                forward, loss = flops_of(lambda: model(x).sum())
                backward, _ = flops_of(loss.backward)
                return forward, backward
        '''),
        answer("store_saved_in", "a comprehension of slot names, a small class holding pack and unpack", r'''
            class Lowered:
                def __init__(self, dtype):
                    self.dtype = dtype
                    self.original = None

                def pack(self, t):
                    self.original = t.dtype
                    return t.to(self.dtype)

                def unpack(self, t):
                    return t.to(self.original)


            def store_saved_in(node, dtype):
                slots = [name.removeprefix("_saved_") for name in dir(node)
                         if name.startswith("_saved_") and torch.is_tensor(getattr(node, name))]
                for slot in slots:
                    lowered = Lowered(dtype)
                    getattr(node, f"_raw_saved_{slot}").register_hooks(lowered.pack, lowered.unpack)
                return len(slots)
        '''),
        answer("scaled_fp16_hook", "an infinity norm, torch.where, a functools.partial callback", r'''
            import functools


            def restore(future, *, scale, dtype, processes):
                (total,) = future.value()
                return total.to(dtype).mul(scale).div(processes)


            def scaled_fp16_hook(group, bucket):
                group = dist.group.WORLD if group is None else group
                buffer = bucket.buffer()
                largest = torch.linalg.vector_norm(buffer, ord=float("inf"))
                dist.all_reduce(largest, op=dist.ReduceOp.MAX, group=group)
                scale = torch.where(largest > 0, largest, torch.ones_like(largest))
                work = dist.all_reduce(buffer.div(scale).to(torch.float16), group=group, async_op=True)
                return work.get_future().then(
                    functools.partial(restore, scale=scale, dtype=buffer.dtype, processes=group.size()))
        '''),
        answer("scaled_fp16_hook", "type hints as torch's docs write them (torch.futures.Future[torch.Tensor]), X | None", r'''
            def scaled_fp16_hook(state: dist.ProcessGroup | None,
                                 bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
                group: dist.ProcessGroup = dist.group.WORLD if state is None else state
                flat: torch.Tensor = bucket.buffer()
                peak = flat.detach().abs().amax().reshape(1)
                dist.all_reduce(peak, op=dist.ReduceOp.MAX, group=group)
                scale = torch.where(peak > 0, peak, torch.ones_like(peak))

                def unscale(future: torch.futures.Future[list[torch.Tensor]]) -> torch.Tensor:
                    (total,) = future.value()
                    return total.to(flat.dtype) * scale / dist.get_world_size(group)

                work = dist.all_reduce(flat.div(scale).half(), group=group, async_op=True)
                return work.get_future().then(unscale)
        '''),
        answer("scaled_fp16_hook", "string type hints, Optional, a notebook-level annotated constant", r'''
            from typing import Optional

            WIRE: torch.dtype = torch.float16


            def scaled_fp16_hook(group: "Optional[dist.ProcessGroup]",
                                 bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
                buffer = bucket.buffer()
                largest = buffer.detach().abs().max().reshape(1)
                dist.all_reduce(largest, op=dist.ReduceOp.MAX, group=group)
                scale = largest if largest.item() > 0 else torch.ones_like(largest)
                members = dist.get_world_size(group)

                def unscale(done: "torch.futures.Future[list[torch.Tensor]]") -> "torch.Tensor":
                    return done.value()[0].to(buffer.dtype) * scale / members

                pending: "torch.futures.Future[list[torch.Tensor]]" = dist.all_reduce(
                    (buffer / scale).to(WIRE), group=group, async_op=True).get_future()
                return pending.then(unscale)
        '''),
    ]


def honest_answers() -> list[Answer]:
    """Every honest answer, at least one for each answer cell of the notebooks."""
    return _module_basics() + _forward_hooks() + _backward_hooks() + _apply() + _autograd_function() + _applications() + _memory_hooks() + _backward_puzzles() + _below_the_module() + _hooks_inside_pytorch()


def extra_cells() -> list[tuple[str, str, str]]:
    """(assignment, style, source) of harmless scratch cells; each runs at the end of its notebook."""
    cells = [
        (MODULE_BASICS, "print shapes", '''
            for name, parameter in classifier.named_parameters():
                print(f"{name:22} {tuple(parameter.shape)}")
        '''),
        (MODULE_BASICS, "dir", '''
            [attribute for attribute in dir(classifier) if not attribute.startswith("_")][:15]
        '''),
        (MODULE_BASICS, "getattr with a name in a variable", '''
            attribute_name = "encoder"
            getattr(classifier, attribute_name)
        '''),
        (MODULE_BASICS, "vars of my own object", '''
            class Notes:
                def __init__(self):
                    self.topic = "buffers"
                    self.remember = "register_buffer(name, tensor, persistent=False) is not saved"


            vars(Notes())
        '''),
        (FORWARD_HOOKS, "help", '''
            help(nn.Module.register_forward_hook)
        '''),
        (FORWARD_HOOKS, "inspect.signature", '''
            import inspect

            print(inspect.signature(leaf_output_shapes))
            inspect.signature(nn.Module.register_forward_pre_hook)
        '''),
        (FORWARD_HOOKS, "%timeit", '''
            %timeit -n 20 -r 3 net(torch.randn(2, 4))
        '''),
        (BACKWARD_HOOKS, "type(x).__name__", '''
            type(model.W).__name__, type(model).__name__, type(model.W.grad).__name__
        '''),
        (BACKWARD_HOOKS, "plot a tensor", '''
            import matplotlib.pyplot as plt

            grid = torch.linspace(-3, 3, 61)
            plt.plot(grid, torch.tanh(grid), label="tanh")
            plt.plot(grid, 1 - torch.tanh(grid) ** 2, label="its derivative")
            plt.legend()
            plt.close()
        '''),
        (APPLY, "model.apply(print)", '''
            Model().apply(print)
        '''),
        (APPLY, "helper function", '''
            def count_parameters(module: nn.Module) -> int:
                return sum(p.numel() for p in module.parameters())


            print("parameters in Model:", count_parameters(Model()))
        '''),
        (AUTOGRAD_FUNCTION, "torch.__version__", '''
            print("torch", torch.__version__)
        '''),
        (AUTOGRAD_FUNCTION, "sys.version", '''
            import sys

            sys.version
        '''),
        (AUTOGRAD_FUNCTION, "%time", '''
            %time torch.autograd.gradcheck(Square.apply, (torch.randn(3, dtype=torch.float64, requires_grad=True),))
        '''),
        (APPLICATIONS, "os.getcwd", '''
            import os

            os.getcwd()
        '''),
        (APPLICATIONS, "plot a tensor", '''
            plt.imshow(test_x[0, 0], cmap="gray_r")
            plt.title(f"label {int(test_y[0])}")
            plt.close()
        '''),
        (APPLICATIONS, "print shapes", '''
            print("train:", tuple(train_x.shape), "test:", tuple(test_x.shape))
        '''),
    ]
    return [(assignment, style, _cell(source)) for assignment, style, source in cells]
