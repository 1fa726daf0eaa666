"""05_autograd_function: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

from catalogues.honest_answers import AUTOGRAD_FUNCTION, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

SPACE: dict[str, list[Dimension]] = {}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
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
