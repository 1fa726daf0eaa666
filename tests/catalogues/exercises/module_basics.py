"""01_module_basics: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

from catalogues.honest_answers import MODULE_BASICS, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

SPACE: dict[str, list[Dimension]] = {}
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
    ]
