"""01_module_basics: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

import torch

from catalogues.honest_answers import MODULE_BASICS, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

SPACE: dict[str, list[Dimension]] = {
    "my_linear": [
        Dimension("one input feature", lambda c: c.target == "MyLinear.__init__" and c.args[1] == 1),
        Dimension("one output feature", lambda c: c.target == "MyLinear.__init__" and c.args[2] == 1),
        Dimension("bias=False passed by position",
                  lambda c: c.target == "MyLinear.__init__" and len(c.args) > 3 and c.args[3] is False),
        Dimension("bias=False passed by keyword",
                  lambda c: c.target == "MyLinear.__init__" and c.kwargs.get("bias") is False),
        Dimension("a batch of 1",
                  lambda c: c.target == "MyLinear.forward" and c.args[1].dim() == 2 and len(c.args[1]) == 1),
        Dimension("one sample without a batch dimension (1-d)",
                  lambda c: c.target == "MyLinear.forward" and c.args[1].dim() == 1),
        Dimension("two batch dimensions (3-d)", lambda c: c.target == "MyLinear.forward" and c.args[1].dim() == 3),
        Dimension("a module large enough for the initial values' statistics",
                  lambda c: c.target == "MyLinear.__init__" and c.args[1] * c.args[2] >= 300_000),
        Dimension("a second module, drawn anew",
                  reading="check_distribution of one MyLinear(300, 1000)'s values minus another's (std 0.1 * sqrt(2))"),
        Dimension("the gradient reaching weight",
                  reading="weight.grad after output.sum().backward(), in check_my_linear"),
    ],
    "running_mean": [
        Dimension("one feature", lambda c: c.target == "RunningMean.__init__" and c.args[1] == 1),
        Dimension("a training batch of one row",
                  lambda c: c.target == "RunningMean.forward" and c.args[0].training and len(c.args[1]) == 1),
        Dimension("a training batch that requires grad",
                  lambda c: c.target == "RunningMean.forward" and c.args[0].training and c.args[1].requires_grad),
        Dimension("a training batch that does not require grad",
                  lambda c: c.target == "RunningMean.forward" and c.args[0].training and not c.args[1].requires_grad),
        Dimension("an eval-mode batch that requires grad",
                  lambda c: c.target == "RunningMean.forward" and not c.args[0].training and c.args[1].requires_grad),
        Dimension("a training batch after an eval-mode call",
                  reading="check_running_mean trains the module again after its eval-mode call: mean and count of "
                          "every row seen in training mode (no call shows what mode the module was in before)"),
        Dimension("the output's gradient reaching x",
                  reading="x.grad after output.sum().backward() in check_running_mean (the update records no graph, "
                          "the output does)"),
    ],
    "mlp": [
        Dimension("one layer", lambda c: c.target == "MLP.__init__" and len(c.args[1]) == 2),
        Dimension("four layers", lambda c: c.target == "MLP.__init__" and len(c.args[1]) == 5),
        Dimension("a width of 1", lambda c: c.target == "MLP.__init__" and 1 in c.args[1]),
        Dimension("a hidden width equal to the output width",
                  lambda c: c.target == "MLP.__init__" and c.args[1][-1] in c.args[1][1:-1]),
        Dimension("a batch of 1", lambda c: c.target == "MLP.forward" and c.args[1].dim() == 2 and len(c.args[1]) == 1),
        Dimension("one sample without a batch dimension (1-d)",
                  lambda c: c.target == "MLP.forward" and c.args[1].dim() == 1),
        Dimension("two batch dimensions (3-d)", lambda c: c.target == "MLP.forward" and c.args[1].dim() == 3),
    ],
    "two_head_net": [
        Dimension("one class (both heads of width 1)", lambda c: c.target == "TwoHeadNet.__init__" and c.args[3] == 1),
        Dimension("a hidden width of 1", lambda c: c.target == "TwoHeadNet.__init__" and c.args[2] == 1),
        Dimension("sizes passed by keyword",
                  lambda c: c.target == "TwoHeadNet.__init__"
                  and set(c.kwargs) == {"in_features", "hidden", "num_classes"}),
        Dimension("sizes passed by position", lambda c: c.target == "TwoHeadNet.__init__" and len(c.args) == 4),
        Dimension("hidden wider than num_classes and num_classes wider than 1",
                  lambda c: c.target == "TwoHeadNet.__init__" and c.args[2] > c.args[3] > 1),
        Dimension("a batch of 1", lambda c: c.target == "TwoHeadNet.forward" and len(c.args[1]) == 1),
    ],
    "freeze": [
        Dimension("the model itself a leaf", lambda c: c.target == "freeze" and not list(c.args[0].children())),
        Dimension("the name '' (the model itself)", lambda c: c.target == "freeze" and "" in c.args[1]),
        Dimension("no names", lambda c: c.target == "freeze" and list(c.args[1]) == []),
        Dimension("the same name twice in one call",
                  lambda c: c.target == "freeze" and len(set(c.args[1])) < len(c.args[1])),
        Dimension("a name inside another name of the same call",
                  lambda c: c.target == "freeze"
                  and any(a != b and b.startswith(a + ".") for a in c.args[1] for b in c.args[1])),
        Dimension("a parameter frozen by an earlier call",
                  lambda c: c.target == "freeze" and any(not p.requires_grad for n in c.args[1]
                                                         for p in c.args[0].get_submodule(n).parameters())),
        Dimension("one module under two names", lambda c: c.target == "freeze" and len(
            list(c.args[0].named_modules(remove_duplicate=False))) > len(list(c.args[0].named_modules()))),
        Dimension("a named module holding a parameter of its own beside its children",
                  lambda c: c.target == "freeze" and any(
            list(c.args[0].get_submodule(n).parameters(recurse=False)) and list(c.args[0].get_submodule(n).children())
            for n in c.args[1])),
        Dimension("a parameter shared by two modules (tied weights)", lambda c: c.target == "freeze" and len(
            {id(p) for m in c.args[0].modules() for p in m.parameters(recurse=False)})
            < sum(1 for m in c.args[0].modules() for _ in m.parameters(recurse=False))),
    ],
    "scale_repr": [
        Dimension("an int factor", lambda c: c.target == "Scale.__init__" and type(c.args[1]) is int),
        Dimension("a negative factor", lambda c: c.target == "Scale.__init__" and c.args[1] < 0),
        Dimension("a factor of zero", lambda c: c.target == "Scale.__init__" and c.args[1] == 0),
        Dimension("a factor float32 does not hold exactly",
                  lambda c: c.target == "Scale.__init__" and float(torch.tensor(float(c.args[1]))) != c.args[1]),
        Dimension("a whole float (12.0: shown as 12.0, not 12)",
                  lambda c: c.target == "Scale.__init__" and type(c.args[1]) is float and c.args[1].is_integer()),
        Dimension("learnable=True passed by keyword",
                  lambda c: c.target == "Scale.__init__" and c.kwargs.get("learnable") is True),
        Dimension("learnable=True passed by position",
                  lambda c: c.target == "Scale.__init__" and len(c.args) > 2 and c.args[2] is True),
        Dimension("an input of two dimensions", lambda c: c.target == "Scale.forward" and c.args[1].dim() == 2),
    ],
}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
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
        # "computes x @ weight.T + bias like nn.Linear" written for a batch of rows only, as an einsum over (batch, in)
        Wrong("my_linear_forward_takes_only_a_batch_of_rows", MODULE_BASICS, "my_linear", _cell('''
            class MyLinear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
                    if bias:
                        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
                    else:
                        self.register_parameter("bias", None)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    output = torch.einsum("bi,oi->bo", x, self.weight)
                    return output if self.bias is None else output + self.bias
        '''), "raised RuntimeError: einsum()"),
        # the input flattened to (rows, in_features) "to be safe": the batch dimensions are not given back
        Wrong("my_linear_flattens_the_batch_dimensions", MODULE_BASICS, "my_linear", _cell('''
            class MyLinear(nn.Module):
                def __init__(self, in_features: int, out_features: int, bias: bool = True):
                    super().__init__()
                    self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
                    if bias:
                        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
                    else:
                        self.register_parameter("bias", None)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    rows = x.reshape(-1, self.weight.shape[1])
                    output = rows @ self.weight.T
                    return output if self.bias is None else output + self.bias
        '''), "MyLinear output for one sample without a batch dimension"),
        # MyLinear(in_features, out_features, bias=True) read as taking bias by keyword only
        Wrong("my_linear_takes_bias_by_keyword_only", MODULE_BASICS, "my_linear", _cell('''
            class MyLinear(nn.Module):
                def __init__(self, in_features: int, out_features: int, *, bias: bool = True):
                    super().__init__()
                    self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
                    if bias:
                        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
                    else:
                        self.register_parameter("bias", None)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    output = x @ self.weight.T
                    return output if self.bias is None else output + self.bias
        '''), "(bias given by position"),
        # "in training mode" read as "when gradients flow": the batch's requires_grad taken for self.training
        Wrong("running_mean_updates_when_the_input_requires_grad", MODULE_BASICS, "running_mean", _cell('''
            class RunningMean(nn.Module):
                def __init__(self, num_features: int):
                    super().__init__()
                    self.register_buffer("mean", torch.zeros(num_features))
                    self.register_buffer("count", torch.zeros((), dtype=torch.long))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    if x.requires_grad:
                        with torch.no_grad():
                            self.count += x.shape[0]
                            self.mean += (x.sum(dim=0) - x.shape[0] * self.mean) / self.count
                    return x - self.mean
        '''), "count after a training batch that does not require grad"),
        # requirement 5 ("the update records no graph") read as "forward records no graph": the output loses x's graph
        Wrong("running_mean_forward_records_no_graph", MODULE_BASICS, "running_mean", _cell('''
            class RunningMean(nn.Module):
                def __init__(self, num_features: int):
                    super().__init__()
                    self.register_buffer("mean", torch.zeros(num_features))
                    self.register_buffer("count", torch.zeros((), dtype=torch.long))

                @torch.no_grad()
                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    if self.training:
                        self.count += x.shape[0]
                        self.mean += (x.sum(dim=0) - x.shape[0] * self.mean) / self.count
                    return x - self.mean
        '''), "output.requires_grad in eval mode"),
        # requirement 5's "x.detach()" applied to x itself, at the top of forward
        Wrong("running_mean_detaches_its_input", MODULE_BASICS, "running_mean", _cell('''
            class RunningMean(nn.Module):
                def __init__(self, num_features: int):
                    super().__init__()
                    self.register_buffer("mean", torch.zeros(num_features))
                    self.register_buffer("count", torch.zeros((), dtype=torch.long))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    x = x.detach()
                    if self.training:
                        self.count += x.shape[0]
                        self.mean += (x.sum(dim=0) - x.shape[0] * self.mean) / self.count
                    return x - self.mean
        '''), "output.requires_grad in eval mode"),
        # the input flattened to (batch, features) first, as for images: a single sample or a sequence goes wrong
        Wrong("mlp_flattens_its_input", MODULE_BASICS, "mlp", _cell('''
            class MLP(nn.Module):
                def __init__(self, sizes: list[int]):
                    super().__init__()
                    self.layers = nn.ModuleList(nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes, sizes[1:]))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    x = x.view(x.size(0), -1)
                    for layer in self.layers[:-1]:
                        x = F.relu(layer(x))
                    return self.layers[-1](x)
        '''), "raised RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
        # the first layer written apart (it takes the input), then the middle ones, then the last: one layer runs twice
        Wrong("mlp_writes_the_first_layer_apart", MODULE_BASICS, "mlp", _cell('''
            class MLP(nn.Module):
                def __init__(self, sizes: list[int]):
                    super().__init__()
                    self.layers = nn.ModuleList(nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes, sizes[1:]))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    x = F.relu(self.layers[0](x))
                    for layer in self.layers[1:-1]:
                        x = F.relu(layer(x))
                    return self.layers[-1](x)
        '''), "raised RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
        # "the last layer" recognised by its width: a hidden layer as wide as the output loses its ReLU
        Wrong("mlp_knows_the_last_layer_by_its_width", MODULE_BASICS, "mlp", _cell('''
            class MLP(nn.Module):
                def __init__(self, sizes: list[int]):
                    super().__init__()
                    self.out_features = sizes[-1]
                    self.layers = nn.ModuleList(nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes, sizes[1:]))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    for layer in self.layers:
                        x = layer(x)
                        if layer.out_features != self.out_features:
                            x = F.relu(x)
                    return x
        '''), "output has the wrong values"),
        # "a 0-dimensional float32 tensor holding the given value" made with torch.tensor(factor): an int stays an int
        Wrong("scale_keeps_an_int_factor_as_an_int_tensor", MODULE_BASICS, "scale_repr", _cell('''
            class Scale(nn.Module):
                def __init__(self, factor: float, learnable: bool = False):
                    super().__init__()
                    self.given, self.learnable = factor, learnable
                    if learnable:
                        self.factor = nn.Parameter(torch.tensor(factor))
                    else:
                        self.register_buffer("factor", torch.tensor(factor))

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return x * self.factor

                def extra_repr(self) -> str:
                    return f"factor={self.given}, learnable={self.learnable}"
        '''), "raised RuntimeError: Only Tensors of floating point"),
        # "shown exactly as it was passed" read as "shown as a Python float": Scale(3) shows factor=3.0
        Wrong("scale_shows_the_factor_as_a_float", MODULE_BASICS, "scale_repr", _cell('''
            class Scale(nn.Module):
                def __init__(self, factor: float, learnable: bool = False):
                    super().__init__()
                    self.learnable = learnable
                    value = torch.tensor(float(factor))
                    if learnable:
                        self.factor = nn.Parameter(value)
                    else:
                        self.register_buffer("factor", value)
                    self.shown = float(factor)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return x * self.factor

                def extra_repr(self) -> str:
                    return f"factor={self.shown}, learnable={self.learnable}"
        '''), "repr(Scale("),
        # the factor shown from the tensor that holds it: float32's value, not the one passed
        Wrong("scale_shows_the_stored_value", MODULE_BASICS, "scale_repr", _cell('''
            class Scale(nn.Module):
                def __init__(self, factor: float, learnable: bool = False):
                    super().__init__()
                    value = torch.tensor(float(factor))
                    if learnable:
                        self.factor = nn.Parameter(value)
                    else:
                        self.register_buffer("factor", value)

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return x * self.factor

                def extra_repr(self) -> str:
                    learnable = isinstance(self.factor, nn.Parameter)
                    return f"factor={self.factor.item()}, learnable={learnable}"
        '''), "repr(Scale("),
    ]
