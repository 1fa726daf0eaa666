"""06_applications: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

from catalogues.honest_answers import APPLICATIONS, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

SPACE: dict[str, list[Dimension]] = {}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
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
