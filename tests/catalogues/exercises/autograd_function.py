"""05_autograd_function: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

import torch

from catalogues.honest_answers import AUTOGRAD_FUNCTION, _cell
from catalogues.input_space import Call, Dimension
from catalogues.wrong_answers import Wrong

FORWARD = "LinearFunction.forward"


def _linear(c: Call, test) -> bool:
    """A call of LinearFunction.forward (input, weight, bias) for which ``test(input, weight, bias)`` holds."""
    return c.target == FORWARD and test(*c.args, *(None,) * (3 - len(c.args)))


def _general(grad_output: torch.Tensor) -> bool:
    """A grad_output that an answer right only for ones, one-hot rows or sorted values gets wrong."""
    flat = grad_output.detach().flatten()
    steps = flat.diff()
    return bool(flat.numel() > 2 and (steps > 0).any() and (steps < 0).any() and (flat < 0).any() and (flat > 0).any()
                and ((flat != 0) & (flat != 1)).any())


SPACE: dict[str, list[Dimension]] = {
    "linear_function": [
        Dimension("no bias", lambda c: _linear(c, lambda x, w, b: b is None)),
        Dimension("a batch of 1", lambda c: _linear(c, lambda x, w, b: x.shape[0] == 1)),
        Dimension("one input feature", lambda c: _linear(c, lambda x, w, b: x.shape[1] == 1)),
        Dimension("one output", lambda c: _linear(c, lambda x, w, b: w.shape[0] == 1)),
        Dimension("float64", lambda c: _linear(c, lambda x, w, b: x.dtype == torch.float64)),
        Dimension("float32, nn.Linear's dtype, with a backward pass",
                  lambda c: c.target == "LinearFunction.backward" and c.args[1].dtype == torch.float32),
        Dimension("an input that needs no gradient", lambda c: _linear(c, lambda x, w, b: not x.requires_grad)),
        Dimension("a frozen weight", lambda c: _linear(c, lambda x, w, b: x.requires_grad and not w.requires_grad)),
        Dimension("a frozen bias", lambda c: _linear(c, lambda x, w, b: b is not None and not b.requires_grad)),
        Dimension("two graphs alive, the later call's forward before the earlier one's backward",
                  reading="linear_function_test's hidden check_float32_and_interleaved, with and without a bias, "
                  "in both orders"),
        Dimension("backward called directly on an input that needs no gradient (no work for it)",
                  reading="check_no_work_for_the_input: no tensor with the batch and the input's width made"),
    ],
    "linear_module": [
        Dimension("bias=False", lambda c: c.target == "Linear.__init__" and (
            c.kwargs.get("bias", c.args[3] if len(c.args) > 3 else True) is False)),
        Dimension("one input feature", lambda c: c.target == "Linear.__init__" and c.args[1] == 1),
        Dimension("one output feature", lambda c: c.target == "Linear.__init__" and c.args[2] == 1),
        Dimension("a layer large enough for the statistics of its initial values",
                  lambda c: c.target == "Linear.__init__" and c.args[2] >= 20_000),
        Dimension("a forward pass", lambda c: c.target == "Linear.forward" and c.args[1].dtype == torch.float32),
        Dimension("two layers drawn one after the other (values drawn anew, at random)",
                  reading="linear_module_test's hidden check_drawn_anew: one layer's values minus another's"),
    ],
    "stable_softplus": [
        Dimension("beyond exp's float32 range (|x| > 88)",
                  lambda c: c.target == "StableSoftplus.forward" and bool((c.args[0].abs() > 88).any())),
        Dimension("zero", lambda c: c.target == "StableSoftplus.forward" and bool((c.args[0] == 0).any())),
        Dimension("negatives", lambda c: c.target == "StableSoftplus.forward" and bool((c.args[0] < 0).any())),
        Dimension("float32", lambda c: c.target == "StableSoftplus.forward" and c.args[0].dtype == torch.float32),
        Dimension("float64 (gradcheck)",
                  lambda c: c.target == "StableSoftplus.forward" and c.args[0].dtype == torch.float64),
        Dimension("a gradient for large inputs",
                  lambda c: c.target == "StableSoftplus.backward" and c.args[1].dtype == torch.float32),
        Dimension("bfloat16 (the output in x's dtype)",
                  lambda c: c.target == "StableSoftplus.forward" and c.args[0].dtype == torch.bfloat16),
        Dimension("a bfloat16 gradient",
                  lambda c: c.target == "StableSoftplus.backward" and c.args[1].dtype == torch.bfloat16),
        Dimension("a grad_output of mixed signs, neither sorted nor made of 0s and 1s",
                  lambda c: c.target == "StableSoftplus.backward" and _general(c.args[1])),
    ],
    "cube": [
        Dimension("negatives", lambda c: c.target == "Cube.forward" and bool((c.args[0] < 0).any())),
        Dimension("float64", lambda c: c.target == "Cube.forward" and c.args[0].dtype == torch.float64),
        Dimension("zero (3x² is 0 there)", lambda c: c.target == "Cube.forward" and bool((c.args[0] == 0).any())),
        Dimension("-0.0", lambda c: c.target == "Cube.forward"
                  and bool(((c.args[0] == 0) & c.args[0].signbit()).any())),
        Dimension("tiny magnitudes (0 < |x| < 1e-100)", lambda c: c.target == "Cube.forward"
                  and bool(((c.args[0] != 0) & (c.args[0].abs() < 1e-100)).any())),
        Dimension("a second backward pass (double backward)", lambda c: c.target == "Cube.backward" and c.number >= 1),
        Dimension("a grad_output of mixed signs, neither sorted nor made of 0s and 1s, needing no gradient",
                  lambda c: c.target == "Cube.backward" and _general(c.args[1]) and not c.args[1].requires_grad),
        Dimension("a grad_output that needs a gradient (backward differentiated in grad_output)",
                  lambda c: c.target == "Cube.backward" and c.args[1].requires_grad),
        Dimension("x changed in place between forward and backward",
                  reading="backward_after_x_changed: autograd's 'modified by an inplace operation' error"),
    ],
}
"""The answer cell's grade_id → the dimensions of its input space."""



def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
    return [
        # "the static methods hold no state" read as "keep what backward needs on the class": whether a bias was given
        # is stored once for every graph, so a graph built before another call gets that call's answer
        Wrong("linear_function_keeps_the_bias_flag_on_the_class", AUTOGRAD_FUNCTION, "linear_function", _cell('''
            class LinearFunction(Function):
                @staticmethod
                def forward(input, weight, bias=None):
                    output = input @ weight.T
                    if bias is not None:
                        output = output + bias
                    return output

                @staticmethod
                def setup_context(ctx, inputs, output):
                    input, weight, bias = inputs
                    ctx.save_for_backward(input, weight)
                    LinearFunction.has_bias = bias is not None

                @staticmethod
                def backward(ctx, grad_output):
                    input, weight = ctx.saved_tensors
                    grad_input = grad_weight = grad_bias = None
                    if ctx.needs_input_grad[0]:
                        grad_input = grad_output @ weight
                    if ctx.needs_input_grad[1]:
                        grad_weight = grad_output.T @ input
                    if LinearFunction.has_bias and ctx.needs_input_grad[2]:
                        grad_bias = grad_output.sum(0)
                    return grad_input, grad_weight, grad_bias
        '''), "two graphs built before either backward ran"),
        # the bias's test written inside the input's (both "skip what nothing needs"): a first layer, whose input
        # needs no gradient, gets no bias gradient
        Wrong("linear_function_bias_gradient_under_the_input_s_test", AUTOGRAD_FUNCTION, "linear_function", _cell('''
            class LinearFunction(Function):
                @staticmethod
                def forward(input, weight, bias=None):
                    output = input @ weight.T
                    if bias is not None:
                        output = output + bias
                    return output

                @staticmethod
                def setup_context(ctx, inputs, output):
                    input, weight, bias = inputs
                    ctx.save_for_backward(input, weight)
                    ctx.has_bias = bias is not None

                @staticmethod
                def backward(ctx, grad_output):
                    input, weight = ctx.saved_tensors
                    grad_input = grad_weight = grad_bias = None
                    if ctx.needs_input_grad[0]:
                        grad_input = grad_output @ weight
                        if ctx.has_bias and ctx.needs_input_grad[2]:
                            grad_bias = grad_output.sum(0)
                    if ctx.needs_input_grad[1]:
                        grad_weight = grad_output.T @ input
                    return grad_input, grad_weight, grad_bias
        '''), "the input needing no gradient: gradient of bias"),
        # "skip the gradients nothing needs" read as "return None for them": with a bias, every product is computed
        Wrong("linear_function_computes_every_gradient_with_a_bias", AUTOGRAD_FUNCTION, "linear_function", _cell('''
            class LinearFunction(Function):
                @staticmethod
                def forward(input, weight, bias=None):
                    output = input @ weight.T
                    if bias is not None:
                        output = output + bias
                    return output

                @staticmethod
                def setup_context(ctx, inputs, output):
                    input, weight, bias = inputs
                    ctx.save_for_backward(input, weight)
                    ctx.has_bias = bias is not None

                @staticmethod
                def backward(ctx, grad_output):
                    input, weight = ctx.saved_tensors
                    need_input, need_weight, need_bias = ctx.needs_input_grad
                    if ctx.has_bias:
                        grads = (grad_output @ weight, grad_output.T @ input, grad_output.sum(0))
                    else:
                        grads = (grad_output @ weight if need_input else None,
                                 grad_output.T @ input if need_weight else None, None)
                    return tuple(g if need else None for g, need in zip(grads, ctx.needs_input_grad))
        '''), "whether backward computed no part of the input's gradient"),
        # "bias is (out,)" read loosely: the summed gradient squeezed, which is a scalar when there is one output
        Wrong("linear_function_squeezes_the_bias_gradient", AUTOGRAD_FUNCTION, "linear_function", _cell('''
            class LinearFunction(Function):
                @staticmethod
                def forward(input, weight, bias=None):
                    output = input @ weight.T
                    if bias is not None:
                        output = output + bias
                    return output

                @staticmethod
                def setup_context(ctx, inputs, output):
                    input, weight, bias = inputs
                    ctx.save_for_backward(input, weight)

                @staticmethod
                def backward(ctx, grad_output):
                    input, weight = ctx.saved_tensors
                    grad_input = grad_weight = grad_bias = None
                    if ctx.needs_input_grad[0]:
                        grad_input = grad_output @ weight
                    if ctx.needs_input_grad[1]:
                        grad_weight = grad_output.T @ input
                    if ctx.needs_input_grad[2]:
                        grad_bias = grad_output.sum(0).squeeze()
                    return grad_input, grad_weight, grad_bias
        '''), "raised RuntimeError: Function LinearFunctionBackward returned an invalid gradient at index 2"),
        # the bias gradient as a product with a column of ones made in float64, the dtype of the example: a float32
        # layer (nn.Linear's dtype) fails in backward
        Wrong("linear_function_sums_with_float64_ones", AUTOGRAD_FUNCTION, "linear_function", _cell('''
            class LinearFunction(Function):
                @staticmethod
                def forward(input, weight, bias=None):
                    output = input @ weight.T
                    if bias is not None:
                        output = output + bias
                    return output

                @staticmethod
                def setup_context(ctx, inputs, output):
                    input, weight, bias = inputs
                    ctx.save_for_backward(input, weight)

                @staticmethod
                def backward(ctx, grad_output):
                    input, weight = ctx.saved_tensors
                    grad_input = grad_weight = grad_bias = None
                    if ctx.needs_input_grad[0]:
                        grad_input = grad_output @ weight
                    if ctx.needs_input_grad[1]:
                        grad_weight = grad_output.T @ input
                    if ctx.needs_input_grad[2]:
                        grad_bias = grad_output.T @ torch.ones(len(grad_output), dtype=torch.float64)
                    return grad_input, grad_weight, grad_bias
        '''), "(float32 is nn.Linear's dtype), with grad_output of shape"),
        # "uniformly distributed in ±1/sqrt(in_features)" read as evenly spaced over that range: the right mean, spread
        # and kurtosis, and the same values in every layer
        Wrong("linear_module_evenly_spaced_values", AUTOGRAD_FUNCTION, "linear_module", _cell('''
            class Linear(nn.Module):
                def __init__(self, in_features, out_features, bias=True):
                    super().__init__()
                    self.in_features, self.out_features = in_features, out_features
                    bound = in_features**-0.5
                    count = out_features * in_features
                    inside = torch.linspace(-bound, bound, count + 2)[1:-1]  # strictly within the bound
                    self.weight = nn.Parameter(inside.view(out_features, in_features))
                    if bias:
                        self.bias = nn.Parameter(torch.linspace(-bound, bound, out_features + 2)[1:-1])
                    else:
                        self.register_parameter("bias", None)

                def forward(self, input):
                    return LinearFunction.apply(input, self.weight, self.bias)

                def extra_repr(self):
                    sizes = f"in_features={self.in_features}, out_features={self.out_features}"
                    return f"{sizes}, bias={self.bias is not None}"
        '''),
              "of one layer minus another's"),
        # the initial values made reproducible by seeding torch's generator in __init__: every layer starts the same
        Wrong("linear_module_seeds_torch_in_init", AUTOGRAD_FUNCTION, "linear_module", _cell('''
            class Linear(nn.Module):
                def __init__(self, in_features, out_features, bias=True):
                    super().__init__()
                    self.in_features, self.out_features = in_features, out_features
                    bound = in_features**-0.5
                    torch.manual_seed(0)
                    self.weight = nn.Parameter(nn.init.uniform_(torch.empty(out_features, in_features), -bound, bound))
                    if bias:
                        self.bias = nn.Parameter(nn.init.uniform_(torch.empty(out_features), -bound, bound))
                    else:
                        self.register_parameter("bias", None)

                def forward(self, input):
                    return LinearFunction.apply(input, self.weight, self.bias)

                def extra_repr(self):
                    sizes = f"in_features={self.in_features}, out_features={self.out_features}"
                    return f"{sizes}, bias={self.bias is not None}"
        '''),
              "of one layer minus another's"),
        # the same with a generator of its own, seeded by the layer's sizes: every layer of one shape starts the same
        Wrong("linear_module_seeded_by_its_sizes", AUTOGRAD_FUNCTION, "linear_module", _cell('''
            class Linear(nn.Module):
                def __init__(self, in_features, out_features, bias=True):
                    super().__init__()
                    self.in_features, self.out_features = in_features, out_features
                    bound = in_features**-0.5
                    drawn = torch.Generator().manual_seed(1000 * in_features + out_features)
                    weight = torch.empty(out_features, in_features).uniform_(-bound, bound, generator=drawn)
                    self.weight = nn.Parameter(weight)
                    if bias:
                        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound, generator=drawn))
                    else:
                        self.register_parameter("bias", None)

                def forward(self, input):
                    return LinearFunction.apply(input, self.weight, self.bias)

                def extra_repr(self):
                    sizes = f"in_features={self.in_features}, out_features={self.out_features}"
                    return f"{sizes}, bias={self.bias is not None}"
        '''),
              "of one layer minus another's"),
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
        '''), "for a grad_output of mixed signs and sizes (backward multiplies grad_output by the derivative"),
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
        # "in x's dtype" read for float32 and float64 only: a half-precision input computed and returned in float32
        Wrong("stable_softplus_upcasts_half_precision", AUTOGRAD_FUNCTION, "stable_softplus", _cell('''
            class StableSoftplus(Function):
                @staticmethod
                def forward(x):
                    if x.dtype in (torch.float16, torch.bfloat16):
                        x = x.float()
                    return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    return grad_output * torch.sigmoid(x)
        '''), "StableSoftplus.apply("),
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
        # the gradient 3x² written as 3x³/x from the saved output: nan at x = 0
        Wrong("cube_gradient_divides_by_x", AUTOGRAD_FUNCTION, "cube", _cell('''
            class Cube(Function):
                @staticmethod
                def forward(x):
                    return x**3

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0], output)

                @staticmethod
                def backward(ctx, grad_output):
                    x, y = ctx.saved_tensors
                    return 3 * y / x * grad_output
        '''), "first derivative of Cube"),
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
        '''), "gradient of Cube for a grad_output of mixed signs and sizes"),
        # "grad_output is a constant from autograd's point of view" read as detaching it: the first derivatives are
        # right, the double backward misses the path through grad_output
        Wrong("cube_detaches_grad_output", AUTOGRAD_FUNCTION, "cube", _cell('''
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
                    return 3 * x**2 * grad_output.detach()
        '''), "derivative, with respect to grad_output, of the sum of what Cube's backward returns"),
    ]
