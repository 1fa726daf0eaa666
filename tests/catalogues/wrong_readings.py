"""Wrong readings: answers a student would write after misreading an exercise's text.

A wrong reading is right on the exercise's visible example and wrong elsewhere in what the text specifies:
other shapes and sizes (a batch of 1 included), the dtypes it names, the model itself a leaf, nested
containers, shared modules, registration order that is not call order, a second call, ties, negatives and
zero, defaults other than the usual ones, keyword arguments. Each is written from the exercise's markdown
(its numbered requirements), not from its tests; each must fail its test cell (hidden tests included) with a
message that says what is wrong, as the :class:`Wrong` answers of ``wrong_answers.py`` do, whose list these
join.
"""

from __future__ import annotations

from catalogues.honest_answers import (
    APPLICATIONS,
    APPLY,
    AUTOGRAD_FUNCTION,
    BACKWARD_HOOKS,
    MODULE_BASICS,
    _cell,
)
from catalogues.wrong_answers import Wrong


def readings() -> list[Wrong]:
    return _module_basics() + _backward_hooks() + _apply() + _autograd_function() + _applications()


def _module_basics() -> list[Wrong]:
    return [
        # "forward(x) returns a plain dict (not a subclass such as OrderedDict)": read as any mapping
        Wrong("two_head_net_returns_an_ordered_dict", MODULE_BASICS, "two_head_net", _cell('''
            from collections import OrderedDict


            class TwoHeadNet(nn.Module):
                def __init__(self, in_features: int, hidden: int, num_classes: int):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU())
                    self.heads = nn.ModuleDict({"cls": nn.Linear(hidden, num_classes), "reg": nn.Linear(hidden, 1)})

                def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
                    features = self.body(x)
                    return OrderedDict((name, head(features)) for name, head in self.heads.items())
        '''), "the type of what forward returns"),
        # the heads listed as a dict literal in another order: "in this order" read as "these names"
        Wrong("two_head_net_lists_the_reg_head_first", MODULE_BASICS, "two_head_net", _cell('''
            class TwoHeadNet(nn.Module):
                def __init__(self, in_features: int, hidden: int, num_classes: int):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU())
                    self.heads = nn.ModuleDict({"reg": nn.Linear(hidden, 1), "cls": nn.Linear(hidden, num_classes)})

                def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
                    features = self.body(x)
                    return {name: head(features) for name, head in self.heads.items()}
        '''), "named_parameters() of TwoHeadNet"),
        # TwoHeadNet(in_features, hidden, num_classes) read with the sizes in another order (classes, then the hidden
        # width): right when called with keywords, wrong when called positionally
        Wrong("two_head_net_takes_num_classes_before_hidden", MODULE_BASICS, "two_head_net", _cell('''
            class TwoHeadNet(nn.Module):
                def __init__(self, in_features: int, num_classes: int, hidden: int):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU())
                    self.heads = nn.ModuleDict({"cls": nn.Linear(hidden, num_classes), "reg": nn.Linear(hidden, 1)})

                def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
                    features = self.body(x)
                    return {name: head(features) for name, head in self.heads.items()}
        '''), 'output["cls"]: shape'),
        # "how many parameter values (numel)" read as how many parameters
        Wrong("freeze_counts_tensors_not_values", MODULE_BASICS, "freeze", _cell('''
            def freeze(model: nn.Module, names: list[str]) -> int:
                frozen = 0
                for name in names:
                    for parameter in model.get_submodule(name).parameters():
                        if parameter.requires_grad:
                            parameter.requires_grad_(False)
                            frozen += 1
                return frozen
        '''), 'freeze(model, ["encoder"])'),
        # requirement 3 missed: every parameter under the names counts, frozen before or not
        Wrong("freeze_counts_parameters_frozen_by_an_earlier_call", MODULE_BASICS, "freeze", _cell('''
            def freeze(model: nn.Module, names: list[str]) -> int:
                chosen = {id(p): p for name in names for p in model.get_submodule(name).parameters()}
                for parameter in chosen.values():
                    parameter.requires_grad_(False)
                return sum(parameter.numel() for parameter in chosen.values())
        '''), "encoder.0 was already frozen"),
        # "every parameter of each named submodule" read as the parameters it holds itself, not its children's
        Wrong("freeze_freezes_only_the_modules_own_parameters", MODULE_BASICS, "freeze", _cell('''
            def freeze(model: nn.Module, names: list[str]) -> int:
                frozen = 0
                for name in names:
                    for parameter in model.get_submodule(name).parameters(recurse=False):
                        if parameter.requires_grad:
                            parameter.requires_grad_(False)
                            frozen += parameter.numel()
                return frozen
        '''), 'freeze(model, ["encoder"])'),
        # "qualified submodule names" matched as prefixes of named_parameters()' names instead of looked up with
        # get_submodule: a module registered under two names has its parameters listed under the first name only
        Wrong("freeze_matches_parameter_names_by_prefix", MODULE_BASICS, "freeze", _cell('''
            def freeze(model: nn.Module, names: list[str]) -> int:
                frozen = 0
                for qualified, parameter in model.named_parameters():
                    if any(qualified.startswith(name + ".") for name in names) and parameter.requires_grad:
                        parameter.requires_grad_(False)
                        frozen += parameter.numel()
                return frozen
        '''), "where decoder is also encoder.2"),
        # "the other parameters are left as they are" read as "the others are made trainable"
        Wrong("freeze_makes_the_other_parameters_trainable", MODULE_BASICS, "freeze", _cell('''
            def freeze(model: nn.Module, names: list[str]) -> int:
                for parameter in model.parameters():
                    parameter.requires_grad_(True)
                frozen = 0
                for name in names:
                    for parameter in model.get_submodule(name).parameters():
                        if parameter.requires_grad:
                            parameter.requires_grad_(False)
                            frozen += parameter.numel()
                return frozen
        '''), "encoder.0 was already frozen"),
    ]


def _backward_hooks() -> list[Wrong]:
    return [
        # requirement 2 missed: output.grad taken to be 1, as in the example
        Wrong("backward_collect_assumes_output_grad_is_one", BACKWARD_HOOKS, "backward_collect", _cell('''
            def module_hook(module, grad_input, grad_output):
                answer.extend([grad_input[0], grad_input[1], torch.ones_like(grad_output[0])])
        '''), "answer[2]"),
        # "the gradient of x1" read as the local derivative ∂output/∂x1: equal only when output.grad is 1
        Wrong("backward_collect_collects_local_derivatives", BACKWARD_HOOKS, "backward_collect", _cell('''
            def module_hook(module, grad_input, grad_output):
                answer.extend([grad_input[0] / grad_output[0], grad_input[1] / grad_output[0], grad_output[0]])
        '''), "answer[0]"),
        # gradients collected as flat vectors: right for the example's shape (1,), wrong for 2-d inputs
        Wrong("backward_collect_flattens_the_gradients", BACKWARD_HOOKS, "backward_collect", _cell('''
            def module_hook(module, grad_input, grad_output):
                answer.extend([grad_input[0].flatten(), grad_input[1].flatten(), grad_output[0].flatten()])
        '''), "answer[0]"),
        # "clamped to [-1, 1]" read as "its sign"
        Wrong("clip_gradient_keeps_only_the_sign", BACKWARD_HOOKS, "clip_gradient", _cell('''
            def clip_gradient(grad):
                return grad.sign()
        '''), "what clip_gradient returns"),
        # only large gradients clipped: the lower bound forgotten
        Wrong("clip_gradient_clamps_only_from_above", BACKWARD_HOOKS, "clip_gradient", _cell('''
            def clip_gradient(grad):
                return grad.clamp(max=1.0)
        '''), "what clip_gradient returns"),
        # clipping read as clipping the norm (clip_grad_norm_'s meaning)
        Wrong("clip_gradient_clips_the_norm", BACKWARD_HOOKS, "clip_gradient", _cell('''
            def clip_gradient(grad):
                return grad * (1.0 / grad.norm()).clamp(max=1.0)
        '''), "what clip_gradient returns"),
    ]


def _apply() -> list[Wrong]:
    return [
        # the order of modules() (preorder) taken for apply's
        Wrong("apply_order_lists_modules_in_preorder", APPLY, "apply_order", _cell('''
            def apply_order(model: nn.Module) -> list[str]:
                return [type(module).__name__ for module in model.modules()]
        '''), "apply_order(Model())"),
        # "one per visit" read as one per kind of module: right while every class appears once
        Wrong("apply_order_lists_each_class_once", APPLY, "apply_order", _cell('''
            def apply_order(model: nn.Module) -> list[str]:
                names = []

                def visit(module):
                    if type(module).__name__ not in names:
                        names.append(type(module).__name__)

                model.apply(visit)
                return names
        '''), "apply_order on"),
        # "one per visit" read as one per module: a module shared by two parents listed once
        Wrong("apply_order_lists_a_shared_module_once", APPLY, "apply_order", _cell('''
            def apply_order(model: nn.Module) -> list[str]:
                visits = {}
                model.apply(lambda module: visits.setdefault(module, type(module).__name__))
                return list(visits.values())
        '''), "apply_order on"),
        # "b of shape (1,)" read as "shaped like W", which is (1, 1)
        Wrong("add_bias_shapes_b_like_w", APPLY, "add_bias", _cell('''
            def add_bias(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.b = nn.Parameter(torch.ones_like(module.W))
        '''), "ab.a.b"),
        # "every Function module" read as every module without children: an nn.Linear gets a b too
        Wrong("add_bias_biases_every_leaf_module", APPLY, "add_bias", _cell('''
            def add_bias(module: nn.Module) -> None:
                if not list(module.children()):
                    module.b = nn.Parameter(torch.ones(1))
        '''), "leave other modules alone"),
        # "every Function module" read as every module with a weight of its own
        Wrong("add_bias_biases_every_module_with_a_weight", APPLY, "add_bias", _cell('''
            def add_bias(module: nn.Module) -> None:
                if list(module.parameters(recurse=False)):
                    module.b = nn.Parameter(torch.ones(1))
        '''), "leave other modules alone"),
        # "every Function module" read as every Function among the module's children: right under apply on a model
        # (each Function has a parent), wrong on a Function alone
        Wrong("add_bias_biases_the_children", APPLY, "add_bias", _cell('''
            def add_bias(module: nn.Module) -> None:
                for child in module.children():
                    if isinstance(child, FUNCTIONS):
                        child.b = nn.Parameter(torch.ones(1))
        '''), "parameters of a single FunctionC after add_bias"),
        Wrong("init_to_one_fills_the_children", APPLY, "init_to_one", _cell('''
            def init_to_one(module: nn.Module) -> None:
                with torch.no_grad():
                    for child in module.children():
                        if isinstance(child, FUNCTIONS):
                            child.W.fill_(1.0)
        '''), "W of a single FunctionC after FunctionC.apply(init_to_one)"),
        # requirement 2 missed: a new Parameter of ones replaces W
        Wrong("init_to_one_replaces_the_parameter", APPLY, "init_to_one", _cell('''
            def init_to_one(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.W = nn.Parameter(torch.ones(1, 1))
        '''), "whether each Parameter is still the one the optimizer holds"),
        # W set to 1 with data swapped for a new tensor of another shape: "1" read as a number, not ones(1, 1)
        Wrong("init_to_one_sets_a_scalar", APPLY, "init_to_one", _cell('''
            def init_to_one(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.W.data = torch.tensor(1.0)
        '''), "after apply(init_to_one)"),
        # extra_repr set to the string itself rather than to a function that makes it
        Wrong("add_repr_sets_a_string", APPLY, "add_repr", _cell('''
            def add_repr(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.extra_repr = function_repr(module)
        '''), "TypeError"),
        # "every Function with its own name" read as every module with its name, if it has one
        Wrong("add_repr_gives_every_module_an_extra_repr", APPLY, "add_repr", _cell('''
            def add_repr(module: nn.Module) -> None:
                module.extra_repr = partial(lambda m: f"name={getattr(m, 'name', '')}", module)
        '''), "repr(model)"),
        # the same reading of "every Function module" for extra_repr: the children of each module get one
        Wrong("add_repr_names_the_children", APPLY, "add_repr", _cell('''
            def add_repr(module: nn.Module) -> None:
                for child in module.children():
                    if isinstance(child, FUNCTIONS):
                        child.extra_repr = partial(function_repr, child)
        '''), "repr of a single FunctionD after FunctionD.apply(add_repr)"),
        # "FunctionA(name=plus)" read as a name per class, copied from the example
        Wrong("add_repr_names_each_class_as_in_the_example", APPLY, "add_repr", _cell('''
            NAMES = {"FunctionA": "plus", "FunctionB": "subtract", "FunctionC": "multiply", "FunctionD": "divide"}


            def add_repr(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    module.extra_repr = partial(lambda kind: f"name={NAMES[kind]}", type(module).__name__)
        '''), "repr(model) with other names"),
    ]


def _autograd_function() -> list[Wrong]:
    return [
        # the formula log(1 + exp(x)) as written, not the stable one
        Wrong("stable_softplus_exponentiates_x", AUTOGRAD_FUNCTION, "stable_softplus", _cell('''
            class StableSoftplus(Function):
                @staticmethod
                def forward(x):
                    return torch.log1p(torch.exp(x))

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return grad_output * torch.sigmoid(x)
        '''), "StableSoftplus.apply("),
        # requirement 2's "finite for the same inputs" missed: sigmoid written as exp(x) / (1 + exp(x))
        Wrong("stable_softplus_gradient_overflows", AUTOGRAD_FUNCTION, "stable_softplus", _cell('''
            class StableSoftplus(Function):
                @staticmethod
                def forward(x):
                    return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return grad_output * torch.exp(x) / (1 + torch.exp(x))
        '''), "gradient of StableSoftplus"),
        # "its gradient is sigmoid(x)" read without grad_output: right for the gradient of a sum only
        Wrong("stable_softplus_ignores_grad_output", AUTOGRAD_FUNCTION, "stable_softplus", _cell('''
            class StableSoftplus(Function):
                @staticmethod
                def forward(x):
                    return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return torch.sigmoid(x)
        '''), "gradcheck failed"),
        # "in float32" read as "computes in float32": a float64 input comes back float32
        Wrong("stable_softplus_computes_in_float32", AUTOGRAD_FUNCTION, "stable_softplus", _cell('''
            class StableSoftplus(Function):
                @staticmethod
                def forward(x):
                    x = x.float()
                    return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return grad_output * torch.sigmoid(x.float())
        '''), "gradcheck failed"),
        # requirement 3 missed: the gradient built from a detached x, so it cannot be differentiated again
        Wrong("cube_gradient_from_a_detached_x", AUTOGRAD_FUNCTION, "cube", _cell('''
            class Cube(Function):
                @staticmethod
                def forward(x):
                    return x**3

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return 3 * x.detach() ** 2 * grad_output
        '''), "whether Cube's gradient can be differentiated"),
        # "keep x for backward" read as keeping what forward computed: x recovered from x³ (the cube root), so a
        # change to x after forward goes unnoticed
        Wrong("cube_saves_the_output", AUTOGRAD_FUNCTION, "cube", _cell('''
            class Cube(Function):
                @staticmethod
                def forward(x):
                    return x**3

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(output)

                @staticmethod
                def backward(ctx, grad_output):
                    (cubed,) = ctx.saved_tensors
                    x = cubed.sign() * cubed.abs() ** (1 / 3)
                    return 3 * x**2 * grad_output
        '''), "backward after x was changed in place since forward"),
        # "its gradient is 3x²" read without grad_output: right for the gradient of a sum only
        Wrong("cube_ignores_grad_output", AUTOGRAD_FUNCTION, "cube", _cell('''
            class Cube(Function):
                @staticmethod
                def forward(x):
                    return x**3

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return 3 * x**2
        '''), "failed"),
    ]


def _applications() -> list[Wrong]:
    return [
        # rounding read as "round half up": floor(x + 0.5) differs from torch.round on ties (2.5 -> 2, -0.5 -> -0)
        Wrong("round_ste_rounds_half_up", APPLICATIONS, "round_ste", _cell('''
            class RoundSTE(Function):
                @staticmethod
                def forward(x):
                    return torch.floor(x + 0.5)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    pass

                @staticmethod
                def backward(ctx, grad_output):
                    return grad_output
        '''), "RoundSTE.apply("),
        # "acts as the identity in the backward pass" read as "its derivative is 1"
        Wrong("round_ste_gradient_is_one", APPLICATIONS, "round_ste", _cell('''
            class RoundSTE(Function):
                @staticmethod
                def forward(x):
                    return torch.round(x)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    pass

                @staticmethod
                def backward(ctx, grad_output):
                    return torch.ones_like(grad_output)
        '''), "gradient of RoundSTE"),
        # rounding read as "to whole numbers" in a float32 tensor: a float64 input comes back float32
        Wrong("round_ste_returns_float32", APPLICATIONS, "round_ste", _cell('''
            class RoundSTE(Function):
                @staticmethod
                def forward(x):
                    return torch.round(x).float()

                @staticmethod
                def setup_context(ctx, inputs, output):
                    pass

                @staticmethod
                def backward(ctx, grad_output):
                    return grad_output
        '''), "RoundSTE.apply("),
    ]
