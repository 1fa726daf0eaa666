"""04_apply: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

import torch
from torch import nn

from catalogues.honest_answers import APPLY, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

FUNCTIONS = {"FunctionA", "FunctionB", "FunctionC", "FunctionD"}  # the notebook's Function classes, by name
NAMES = {"plus", "subtract", "multiply", "divide"}  # the names Model() gives its Functions


def _function(module: object) -> bool:
    return type(module).__name__ in FUNCTIONS


SPACE: dict[str, list[Dimension]] = {
    "apply_order": [
        Dimension("a model without children (apply visits the model alone)",
                  lambda c: c.target == "apply_order" and not list(c.args[0].children())),
        Dimension("a module shared by two parents", lambda c: c.target == "apply_order" and len(
            list(c.args[0].named_modules(remove_duplicate=False))) > len(list(c.args[0].modules()))),
        Dimension("a ModuleList (a container without forward) in the tree",
                  lambda c: c.target == "apply_order" and any(isinstance(m, nn.ModuleList)
                                                              for m in c.args[0].modules())),
        Dimension("one class at several places", lambda c: c.target == "apply_order" and len(
            {type(m) for m in c.args[0].modules()}) < len(list(c.args[0].modules()))),
        Dimension("a tree three levels deep", lambda c: c.target == "apply_order" and any(
            list(grandchild.children()) for child in c.args[0].children() for grandchild in child.children())),
        Dimension("a second call", lambda c: c.target == "apply_order" and c.number >= 1),
    ],
    "init_to_one": [
        Dimension("a Function whose W is not 1", lambda c: c.target == "init_to_one" and _function(c.args[0])
                  and not torch.equal(c.args[0].W.detach(), torch.ones(1, 1))),
        Dimension("a layer and the model (modules that are no Function)",
                  lambda c: c.target == "init_to_one" and type(c.args[0]).__name__ in {"LayerAB", "LayerCD", "Model"}),
        Dimension("an nn.Linear given to init_to_one",
                  lambda c: c.target == "init_to_one" and isinstance(c.args[0], nn.Linear)),
        Dimension("a Function that is the whole model (applied to alone)",
                  reading="init_to_one_test's hidden FunctionC('multiply').apply(init_to_one): its W"),
        Dimension("parameters held by an optimizer created before",
                  reading="check_init_to_one: each Parameter the one it was; an SGD step moves it to 1 - 0.1 * grad"),
    ],
    "add_bias": [
        Dimension("a Function", lambda c: c.target == "add_bias" and _function(c.args[0])),
        Dimension("a layer and the model",
                  lambda c: c.target == "add_bias" and type(c.args[0]).__name__ in {"LayerAB", "Model"}),
        Dimension("an nn.Linear", lambda c: c.target == "add_bias" and isinstance(c.args[0], nn.Linear)),
        Dimension("a Function that is the whole model",
                  reading="add_bias_test's hidden add_bias(FunctionC('multiply')): its parameters are W, b"),
    ],
    "make_linear": [
        Dimension("a Function that already holds a forward hook",
                  lambda c: c.target == "make_linear" and _function(c.args[0]) and len(c.args[0]._forward_hooks) > 0),
        Dimension("Functions nested in a Sequential inside a Sequential",
                  lambda c: c.target == "make_linear" and isinstance(c.args[0], nn.Sequential)
                  and any(isinstance(m, nn.Sequential) for m in c.args[0].children())),
        Dimension("a module that is no Function", lambda c: c.target == "make_linear" and not _function(c.args[0])),
        Dimension("W and b changed, and W replaced by a wider Parameter, after make_linear",
                  reading="make_linear_test's hidden batch through Functions with n x n weights, n from 2 to 4"),
    ],
    "add_repr": [
        Dimension("a Function with a name other than the example's",
                  lambda c: c.target == "add_repr" and _function(c.args[0]) and c.args[0].name not in NAMES),
        Dimension("the model and its layers", lambda c: c.target == "add_repr" and type(c.args[0]).__name__ == "Model"),
        Dimension("a Function that is the whole model",
                  reading="add_repr_test's hidden FunctionD('divide').apply(add_repr): its repr"),
        Dimension("a new model add_repr was not applied to",
                  reading="add_repr_test's hidden repr(Model()) after the others"),
    ],
    "init_weights": [
        Dimension("a large nn.Linear (statistics of its weights)",
                  lambda c: c.target == "init_weights" and type(c.args[0]) is nn.Linear
                  and c.args[0].in_features >= 600),
        Dimension("an nn.Linear without a bias", lambda c: c.target == "init_weights" and isinstance(
            c.args[0], nn.Linear) and c.args[0].bias is None),
        Dimension("an nn.Conv2d without a bias", lambda c: c.target == "init_weights" and isinstance(
            c.args[0], nn.Conv2d) and c.args[0].bias is None),
        Dimension("a subclass of nn.Linear", lambda c: c.target == "init_weights" and isinstance(
            c.args[0], nn.Linear) and type(c.args[0]) is not nn.Linear),
        Dimension("modules with weights that are neither (Embedding, Conv1d, BatchNorm2d, LayerNorm)",
                  lambda c: c.target == "init_weights" and isinstance(c.args[0], (nn.Embedding, nn.Conv1d))),
        Dimension("a LayerNorm", lambda c: c.target == "init_weights" and isinstance(c.args[0], nn.LayerNorm)),
    ],
}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
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
        '''), "repr(model) after apply(add_repr) raised TypeError"),
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
        # requirement 3 read as "the W and b the module has when make_linear runs": both taken at registration, so a W
        # replaced by a new Parameter afterwards is not seen
        Wrong("make_linear_takes_w_and_b_at_registration", APPLY, "make_linear", _cell('''
            def make_linear(module: nn.Module) -> None:
                if isinstance(module, FUNCTIONS):
                    W, b = module.W, module.b

                    def linear(module, args, output):
                        return args[0] @ W.T + b

                    module.register_forward_hook(linear)
        '''), "raised RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
        # "x @ W.T" read as a product of entries: right while W is 1 x 1
        Wrong("make_linear_multiplies_entries", APPLY, "make_linear", _cell('''
            def make_linear(module: nn.Module) -> None:
                def linear(module, args, output):
                    return args[0] * module.W.T + module.b

                if isinstance(module, FUNCTIONS):
                    module.register_forward_hook(linear)
        '''), "model(x) for a batch of"),
        # "one forward hook on every Function" read as "at most one": a Function that already holds a hook (a caller's
        # logging hook) is left as it is
        Wrong("make_linear_skips_a_function_with_a_hook", APPLY, "make_linear", _cell('''
            def make_linear(module: nn.Module) -> None:
                def linear(module, args, output):
                    return args[0] @ module.W.T + module.b

                if isinstance(module, FUNCTIONS) and not module._forward_hooks:
                    module.register_forward_hook(linear)
        '''), "already held a forward hook"),
        # "the biases of both are 0" read as "every Linear and Conv2d has a bias": a layer built with bias=False raises
        Wrong("init_weights_assumes_a_bias", APPLY, "init_weights", _cell('''
            def init_weights(module: nn.Module) -> None:
                if isinstance(module, nn.Linear):
                    nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                    nn.init.zeros_(module.bias)
                elif isinstance(module, nn.Conv2d):
                    nn.init.xavier_uniform_(module.weight)
                    nn.init.zeros_(module.bias)
        '''), "built with bias=False"),
        # "every nn.Linear" read as modules whose class is exactly nn.Linear: a subclass of it is left alone
        Wrong("init_weights_by_exact_class", APPLY, "init_weights", _cell('''
            def init_weights(module: nn.Module) -> None:
                if type(module) == nn.Linear:
                    nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                    nn.init.zeros_(module.bias)
                elif type(module) == nn.Conv2d:
                    nn.init.xavier_uniform_(module.weight)
                    nn.init.zeros_(module.bias)
        '''), "a subclass of nn.Linear"),
        # a Linear told by a 2-D weight and a Conv2d by a 4-D one: an Embedding (2-D) or a Conv1d would be changed too
        Wrong("init_weights_by_the_weights_rank", APPLY, "init_weights", _cell('''
            def init_weights(module: nn.Module) -> None:
                weight = getattr(module, "weight", None)
                if weight is None:
                    return
                if weight.dim() == 2:
                    nn.init.kaiming_normal_(weight, nonlinearity="relu")
                elif weight.dim() == 4:
                    nn.init.xavier_uniform_(weight)
                else:
                    return
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
        '''), "leave other modules alone"),
    ]
