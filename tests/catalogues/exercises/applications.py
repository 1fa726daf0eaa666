"""06_applications: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

import torch
from torch import nn

from catalogues.honest_answers import APPLICATIONS, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

SPACE: dict[str, list[Dimension]] = {
    "round_ste": [
        Dimension("ties x.5 (to the even neighbour)", lambda c: c.target == "RoundSTE.forward"
                  and bool((c.args[0] - c.args[0].floor() == 0.5).any())),
        Dimension("negative ties", lambda c: c.target == "RoundSTE.forward"
                  and bool(((c.args[0] - c.args[0].floor() == 0.5) & (c.args[0] < 0)).any())),
        Dimension("float64", lambda c: c.target == "RoundSTE.forward" and c.args[0].dtype == torch.float64),
        Dimension("values beyond ±5", lambda c: c.target == "RoundSTE.forward" and bool((c.args[0].abs() > 5).any())),
        Dimension("a gradient other than ones", lambda c: c.target == "RoundSTE.backward"
                  and not bool((c.args[1] == 1).all())),
        Dimension("the caller's x left as it was",
                  reading="check_round_ste: x's values after RoundSTE.apply against a copy taken before the call"),
    ],
    "gradient_penalty": [
        Dimension("a batch of 1", lambda c: c.target == "gradient_penalty" and c.args[1].shape[0] == 1),
        Dimension("one feature (D = 1)", lambda c: c.target == "gradient_penalty" and c.args[1].shape[1] == 1),
        Dimension("fake straight from a generator (it requires grad, no leaf)",
                  lambda c: c.target == "gradient_penalty" and c.args[2].grad_fn is not None),
        Dimension("a non-linear critic", lambda c: c.target == "gradient_penalty"
                  and any(isinstance(m, nn.Tanh) for m in c.args[0].modules())),
        Dimension("mixing weights that differ between samples", lambda c: c.target == "gradient_penalty"
                  and c.args[3].shape[0] > 1 and bool((c.args[3] != c.args[3][0]).any())),
        Dimension("the caller's real, fake and eps left as they were",
                  reading="check_gradient_penalty (hidden): real, fake, eps and their requires_grad after the call"),
    ],
    "skip_nonfinite": [
        Dimension("several parameter groups", lambda c: c.target == "skip_nonfinite_steps"
                  and len(c.args[0].param_groups) > 1),
        Dimension("a parameter the loss never reaches (its .grad stays None)",
                  lambda c: c.target == "skip_nonfinite_steps" and any(
                      p.shape == (3,) for group in c.args[0].param_groups[1:] for p in group["params"])),
        Dimension("nan, inf and -inf in the weight's or the bias's gradient",
                  reading="check_skip_nonfinite: a step with each, in one entry drawn at random of one parameter"),
        Dimension("large finite gradients whose sum overflows",
                  reading="check_groups_and_large_gradients (hidden): entries at three quarters of float32's "
                  "largest (any two sum to inf; the weight has two at least)"),
        Dimension("a step after handle.remove()",
                  reading="check_skip_nonfinite: a nan step once the handle is removed"),
    ],
    "grad_cam": [
        Dimension("a convolution (its output can be negative)",
                  lambda c: c.target == "grad_cam" and isinstance(c.args[1], nn.Conv2d)),
        Dimension("a ReLU", lambda c: c.target == "grad_cam" and isinstance(c.args[1], nn.ReLU)),
        Dimension("a model in training mode", lambda c: c.target == "grad_cam" and c.args[0].training
                  and type(c.args[0]).__name__ == "Sequential" and len(list(c.args[0].parameters())) > 4),
        Dimension("parameters that hold a .grad already", lambda c: c.target == "grad_cam"
                  and all(p.grad is not None for p in c.args[0].parameters())),
        Dimension("some parameters frozen by the caller, the others trainable", lambda c: c.target == "grad_cam"
                  and any(not p.requires_grad for p in c.args[0].parameters())
                  and any(p.requires_grad for p in c.args[0].parameters())),
        Dimension("a model whose forward raises KeyboardInterrupt", lambda c: c.target == "grad_cam"
                  and getattr(c.args[0], "error", None) is KeyboardInterrupt),
        Dimension("a model whose forward raises RuntimeError", lambda c: c.target == "grad_cam"
                  and getattr(c.args[0], "error", None) is RuntimeError),
        Dimension("the caller's image left as it was",
                  reading="grad_cam_test's hidden checks of the image's values and requires_grad after the call"),
    ],
}
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
        # "returns torch.round(x)" read as "rounds x": forward rounds the caller's tensor in place and returns it
        Wrong("round_ste_rounds_in_place", APPLICATIONS, "round_ste", _cell('''
            class RoundSTE(Function):
                @staticmethod
                def forward(x):
                    return x.round_()

                @staticmethod
                def setup_context(ctx, inputs, output):
                    pass

                @staticmethod
                def backward(ctx, grad_output):
                    return grad_output
        '''), "the caller's x after RoundSTE.apply("),
        # x_hat "made to require grad" by setting the flag: refused when fake comes from a generator (a non-leaf)
        Wrong("gradient_penalty_sets_the_flag_on_the_mix", APPLICATIONS, "gradient_penalty", _cell('''
            def gradient_penalty(critic, real, fake, eps):
                x_hat = eps * real + (1 - eps) * fake
                x_hat.requires_grad = True
                (grad,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
                return ((grad.norm(dim=1) - 1) ** 2).mean()
        '''), "raised RuntimeError: you can only change requires_grad flags of leaf variables"),
        # the mix made in place in real's memory, to save a copy: the caller's real is changed (and made a leaf that
        # requires grad)
        Wrong("gradient_penalty_mixes_in_place", APPLICATIONS, "gradient_penalty", _cell('''
            def gradient_penalty(critic, real, fake, eps):
                x_hat = real.mul_(eps).add_((1 - eps) * fake).requires_grad_()
                (grad,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
                return ((grad.norm(dim=1) - 1) ** 2).mean()
        '''), "real after gradient_penalty"),
        # eps read as "a random mixing weight per sample", drawn afresh as in the paper: right on a linear critic, whose
        # gradient is the same everywhere
        Wrong("gradient_penalty_draws_its_own_eps", APPLICATIONS, "gradient_penalty", _cell('''
            def gradient_penalty(critic, real, fake, eps):
                eps = torch.rand_like(eps)
                x_hat = (eps * real + (1 - eps) * fake).requires_grad_()
                (grad,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
                return ((grad.norm(dim=1) - 1) ** 2).mean()
        '''), "gradient_penalty on a batch of"),
        # "any parameter's gradient" read as the parameters of the first group: a second group is not looked at
        Wrong("skip_nonfinite_looks_at_the_first_group", APPLICATIONS, "skip_nonfinite", _cell('''
            def skip_nonfinite_steps(optimizer):
                def hook(optimizer, args, kwargs):
                    params = optimizer.param_groups[0]["params"]
                    if any(p.grad is not None and not torch.isfinite(p.grad).all() for p in params):
                        for group in optimizer.param_groups:
                            for p in group["params"]:
                                p.grad = None

                return optimizer.register_step_pre_hook(hook)
        '''), "second parameter group"),
        # every parameter assumed to have a gradient: a parameter the loss did not reach (grad None) raises
        Wrong("skip_nonfinite_assumes_every_gradient", APPLICATIONS, "skip_nonfinite", _cell('''
            def skip_nonfinite_steps(optimizer):
                def hook(optimizer, args, kwargs):
                    params = [p for group in optimizer.param_groups for p in group["params"]]
                    if not all(torch.isfinite(p.grad).all() for p in params):
                        for p in params:
                            p.grad = None

                return optimizer.register_step_pre_hook(hook)
        '''), "no gradient"),
        # a non-finite entry makes the sum non-finite, so each gradient's sum is tested (as some overflow checks do):
        # large finite gradients whose sum overflows are taken for non-finite ones
        Wrong("skip_nonfinite_tests_the_sum", APPLICATIONS, "skip_nonfinite", _cell('''
            def skip_nonfinite_steps(optimizer):
                def hook(optimizer, args, kwargs):
                    params = [p for group in optimizer.param_groups for p in group["params"]]
                    if any(p.grad is not None and not torch.isfinite(p.grad.sum()) for p in params):
                        for p in params:
                            p.grad = None

                return optimizer.register_step_pre_hook(hook)
        '''), "large but finite"),
        # an analysis "in inference mode": the model is put in eval mode and left there
        Wrong("grad_cam_leaves_the_model_in_eval_mode", APPLICATIONS, "grad_cam", _cell('''
            def grad_cam(model, layer, image, target):
                model.eval()
                captured = {}
                with layer.register_forward_hook(lambda m, a, out: captured.__setitem__("A", out)):
                    score = model(image)[0, target]
                (gradient,) = torch.autograd.grad(score, captured["A"])
                weights = gradient[0].mean(dim=(1, 2), keepdim=True)
                return F.relu((weights * captured["A"][0]).sum(dim=0)).detach()
        '''), "left in eval mode"),
        # "Grad-CAM needs gradients" read as "the image must require grad": the caller's image is changed
        Wrong("grad_cam_makes_the_image_require_grad", APPLICATIONS, "grad_cam", _cell('''
            def grad_cam(model, layer, image, target):
                image.requires_grad_()
                captured = {}
                with layer.register_forward_hook(lambda m, a, out: captured.__setitem__("A", out)):
                    score = model(image)[0, target]
                (gradient,) = torch.autograd.grad(score, captured["A"])
                weights = gradient[0].mean(dim=(1, 2), keepdim=True)
                return F.relu((weights * captured["A"][0]).sum(dim=0)).detach()
        '''), "caller's image requiring grad"),
        # "leave every parameter's .grad as it was" read as "freeze the parameters": requires_grad set to False on every
        # parameter and never restored
        Wrong("grad_cam_freezes_the_parameters", APPLICATIONS, "grad_cam", _cell('''
            def grad_cam(model, layer, image, target):
                for p in model.parameters():
                    p.requires_grad_(False)
                image = image.detach().requires_grad_()
                kept = {}
                with layer.register_forward_hook(lambda m, i, o: kept.update(A=o)):
                    score = model(image)[0, target]
                (grad,) = torch.autograd.grad(score, kept["A"])
                alpha = grad[0].mean(dim=(1, 2))
                return torch.relu((alpha[:, None, None] * kept["A"][0]).sum(0)).detach()
        '''), "the parameters whose requires_grad"),
        # the parameters frozen for the analysis and "restored" by making every one trainable: a parameter the caller
        # had frozen comes back trainable
        Wrong("grad_cam_unfreezes_every_parameter", APPLICATIONS, "grad_cam", _cell('''
            def grad_cam(model, layer, image, target):
                for p in model.parameters():
                    p.requires_grad_(False)
                kept = {}
                try:
                    with layer.register_forward_hook(lambda m, i, o: kept.update(A=o.requires_grad_())):
                        score = model(image)[0, target]
                    (grad,) = torch.autograd.grad(score, kept["A"])
                finally:
                    for p in model.parameters():
                        p.requires_grad_(True)
                alpha = grad[0].mean(dim=(1, 2))
                return torch.relu((alpha[:, None, None] * kept["A"][0]).sum(0)).detach()
        '''), "the parameters whose requires_grad"),
        # "ReLU(Σ α_k A_k)" read with the ReLU on each channel: the same at a ReLU layer, whose output is never negative
        Wrong("grad_cam_rectifies_each_channel", APPLICATIONS, "grad_cam", _cell('''
            def grad_cam(model, layer, image, target):
                captured = {}
                with layer.register_forward_hook(lambda m, a, out: captured.__setitem__("A", out)):
                    score = model(image)[0, target]
                (gradient,) = torch.autograd.grad(score, captured["A"])
                weights = gradient[0].mean(dim=(1, 2), keepdim=True)
                return (weights * F.relu(captured["A"][0])).sum(dim=0).clamp(min=0).detach()
        '''), "grad_cam(cnn, cnn.features["),
    ]
