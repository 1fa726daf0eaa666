"""Function playground: a custom ``autograd.Function`` against a built-in op, value and gradient."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from hooklab.widgets.view import View, draw


class ClampSTE(torch.autograd.Function):
    """``x.clamp(low, high)`` forward; the gradient passes straight through (straight-through estimator)."""

    @staticmethod
    def forward(x: torch.Tensor, low: float, high: float) -> torch.Tensor:
        return x.clamp(low, high)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        pass

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return grad_output, None, None


def value_and_grad(function: Callable[[torch.Tensor], torch.Tensor],
                   x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Elementwise ``function(x)`` and its derivative at every element of ``x``."""
    x = x.detach().to(torch.float64).requires_grad_()
    y = function(x)
    (grad,) = torch.autograd.grad(y.sum(), x)
    return y.detach(), grad


class FunctionPlayground(View):
    """Compare elementwise ``custom`` with ``reference``: values and gradients over ``x_range``.

    ``x`` is the slider's input; :meth:`at` gives ``{name: (value, gradient)}`` at any input.
    Defaults: :class:`ClampSTE` on [-1, 1] against ``torch.clamp``.
    """

    def __init__(
        self,
        custom: Callable[[torch.Tensor], torch.Tensor] = lambda x: ClampSTE.apply(x, -1.0, 1.0),
        reference: Callable[[torch.Tensor], torch.Tensor] = lambda x: x.clamp(-1.0, 1.0),
        names: tuple[str, str] = ("ClampSTE", "torch.clamp"),
        x_range: tuple[float, float] = (-3.0, 3.0),
    ) -> None:
        self.functions = dict(zip(names, (custom, reference)))
        self.grid = torch.linspace(*x_range, 241, dtype=torch.float64)
        self.curves = {name: value_and_grad(function, self.grid) for name, function in self.functions.items()}
        self.slider = widgets.FloatSlider(value=0.0, min=x_range[0], max=x_range[1], step=0.05, description="x")
        self.slider.observe(lambda _: self._render(), names="value")
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.widget = widgets.VBox([self.slider, self.readout, self.image])
        self._render()

    @property
    def x(self) -> float:
        return self.slider.value

    @x.setter
    def x(self, value: float) -> None:
        self.slider.value = value

    def at(self, x: float) -> dict[str, tuple[float, float]]:
        point = torch.tensor([x], dtype=torch.float64)
        return {name: tuple(t.item() for t in value_and_grad(f, point)) for name, f in self.functions.items()}

    def _render(self) -> None:
        self.readout.value = "<br>".join(f"<code>{line}</code>" for line in self.text().splitlines())
        figure = Figure(figsize=(8, 2.8))
        for axes, index, title in zip(figure.subplots(1, 2), (0, 1), ("forward value", "gradient d/dx")):
            for (name, curve), style in zip(self.curves.items(), ("-", "--")):
                axes.plot(self.grid, curve[index], style, label=name)
            axes.axvline(self.x, color="#999", linewidth=1)
            axes.set_title(title, fontsize=10)
            axes.legend(fontsize=8)
        draw(self.image, figure)

    def text(self) -> str:
        return "\n".join(
            f"{name}: f({self.x:+.2f}) = {value:+.4f}, f'({self.x:+.2f}) = {grad:+.4f}"
            for name, (value, grad) in self.at(self.x).items()
        )
