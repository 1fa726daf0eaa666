"""03_backward_hooks: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

from catalogues.honest_answers import BACKWARD_HOOKS, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

SPACE: dict[str, list[Dimension]] = {}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
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
