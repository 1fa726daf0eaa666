"""Gradient flow: the gradient norm of every layer at every training step."""

from __future__ import annotations

import math
from typing import Any

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure
from torch import nn
from torch.utils.hooks import RemovableHandle

from hooklab.widgets.view import SteppedView, Stepper, draw, text_table

VANISHING, EXPLODING = 1e-6, 1e3


class GradientFlow(SteppedView):
    """Per-layer gradient norms of ``model`` over training steps.

    A layer is a module with parameters of its own; its norm is that of all its parameters'
    gradients together. Call :meth:`record` after each ``backward()``, or :meth:`watch` an
    optimizer to record just before each of its steps. ``norms[step][layer]`` holds the values;
    the widget shows them when displayed, or after :meth:`refresh`.
    """

    def __init__(self, model: nn.Module) -> None:
        self.parameters = {
            name or "model": list(module.parameters(recurse=False))
            for name, module in model.named_modules()
            if next(module.parameters(recurse=False), None) is not None
        }
        self.layers = list(self.parameters)
        self.norms: list[dict[str, float]] = []
        self.stepper = Stepper(1, lambda _: self._render(), description="step")
        self.image = widgets.Image(format="png")
        self.caption = widgets.HTML()
        self.widget = widgets.VBox([self.stepper.widget, self.caption, self.image])

    def record(self) -> None:
        """Store the current gradient norms as the next step (a layer without gradients gets 0)."""
        self.norms.append({
            layer: math.sqrt(sum(float(p.grad.detach().pow(2).sum()) for p in parameters if p.grad is not None))
            for layer, parameters in self.parameters.items()
        })

    def refresh(self) -> None:
        """Show the steps recorded so far, at the last one (done on display; drawing at every
        recorded step would slow training down)."""
        last = max(len(self.norms) - 1, 0)
        self.stepper.resize(len(self.norms))
        if self.step == last:
            self._render()  # otherwise moving the slider draws it
        else:
            self.step = last

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        self.refresh()
        return super()._repr_mimebundle_(**kwargs)

    def watch(self, optimizer: torch.optim.Optimizer) -> RemovableHandle:
        """Record before every ``optimizer.step()``; remove the returned handle to stop."""
        return optimizer.register_step_pre_hook(lambda optimizer, args, kwargs: self.record())

    def flags(self, step: int) -> dict[str, str]:
        """Layers whose gradient norm at ``step`` looks vanishing or exploding."""
        return {
            layer: "vanishing" if norm < VANISHING else "exploding"
            for layer, norm in self.norms[step].items()
            if norm < VANISHING or norm > EXPLODING
        }

    def _render(self) -> None:
        if not self.norms:
            self.caption.value = "no steps recorded yet: call record() after backward(), or watch(optimizer)"
            return
        norms = self.norms[self.step]
        flags = self.flags(self.step)
        self.caption.value = f"step {self.step + 1}/{len(self.norms)}" + "".join(
            f" · <b>{layer}</b>: {flag}" for layer, flag in flags.items()
        )
        figure = Figure(figsize=(6, 2.8))
        axes = figure.add_subplot()
        peak = [max(step[layer] for step in self.norms) for layer in self.layers]
        axes.bar(self.layers, peak, color="#ddd", label="largest over all steps")
        axes.bar(self.layers, [norms[layer] for layer in self.layers], color="#3b75af", label=f"step {self.step + 1}")
        axes.set_yscale("log")
        axes.set_ylabel("gradient norm")
        axes.legend(fontsize=8)
        axes.tick_params(axis="x", labelrotation=30, labelsize=8)
        draw(self.image, figure)

    def text(self) -> str:
        if not self.norms:
            return "GradientFlow: no steps recorded"
        picked = sorted({0, len(self.norms) // 2, len(self.norms) - 1})
        header = ("layer", *(f"step {i + 1}" for i in picked))
        return text_table(header, [(layer, *(f"{self.norms[i][layer]:.2e}" for i in picked)) for layer in self.layers])
