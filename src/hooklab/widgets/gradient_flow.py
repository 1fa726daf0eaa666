"""Gradient flow: the gradient norm of every layer at every training step."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure
from torch import nn
from torch.utils.hooks import RemovableHandle

from hooklab.widgets.puzzle import WRONG_CLASS, WRONG_MARK, WRONG_STYLE, Prediction, attempt
from hooklab.widgets.view import SteppedView, Stepper, View, draw, text_table

VANISHING, EXPLODING = 1e-6, 1e3


class GradientFlow(SteppedView):
    """Per-layer gradient norms of ``model`` over training steps.

    A layer is a module with parameters of its own; its norm is that of all its parameters'
    gradients together. Call :meth:`record` after each ``backward()``, or :meth:`watch` an
    optimizer to record just before each of its steps. ``norms[step][layer]`` holds the values;
    the widget shows them when displayed, or after :meth:`refresh`. A layer none of whose parameters
    has a gradient at a step (frozen, or not part of the loss) is recorded as ``None``: no gradient at
    all, which is not a vanishing one.
    """

    def __init__(self, model: nn.Module) -> None:
        self.parameters = {
            name or "model": list(module.parameters(recurse=False))
            for name, module in model.named_modules()
            if next(module.parameters(recurse=False), None) is not None
        }
        self.layers = list(self.parameters)
        self.norms: list[dict[str, float | None]] = []
        self.stepper = Stepper(1, lambda _: self._render(), description="step")
        self.image = widgets.Image(format="png")
        self.caption = widgets.HTML()
        self.widget = widgets.VBox([self.stepper.widget, self.caption, self.image])

    def record(self) -> None:
        """Store the current gradient norms as the next step (``None`` for a layer without gradients)."""
        norms: dict[str, float | None] = {}
        for layer, parameters in self.parameters.items():
            grads = [p.grad.detach() for p in parameters if p.grad is not None]
            norms[layer] = math.sqrt(sum(float(g.pow(2).sum()) for g in grads)) if grads else None
        self.norms.append(norms)

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
        """Layers with no gradient at ``step``, or whose gradient norm there looks vanishing or exploding."""
        return {
            layer: "no gradient" if norm is None else "vanishing" if norm < VANISHING else "exploding"
            for layer, norm in self.norms[step].items()
            if norm is None or norm < VANISHING or norm > EXPLODING
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
        peak = [max((step[layer] for step in self.norms if step[layer] is not None), default=math.nan)
                for layer in self.layers]
        axes.bar(self.layers, peak, color="#ddd", label="largest over all steps")
        shown = [math.nan if norms[layer] is None else norms[layer] for layer in self.layers]  # no bar: no gradient
        axes.bar(self.layers, shown, color="#3b75af", label=f"step {self.step + 1}")
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

        def cell(norm: float | None) -> str:
            return "no grad" if norm is None else f"{norm:.2e}"

        return text_table(header, [(layer, *(cell(self.norms[i][layer]) for i in picked)) for layer in self.layers])


SPOTS = ("first layer", "a middle layer", "last layer", "none: all within 10×")  # where the smallest gradient is
EVEN = 10  # largest / smallest below this: no layer stands out


def deep_mlp(activation: type[nn.Module], depth: int, width: int, kaiming: bool) -> nn.Sequential:
    """``depth`` Linear layers of ``width`` (the last one to 1 output), ``activation`` between them;
    PyTorch's default initialisation, or Kaiming's for ReLU (normal, fan_in, zero biases)."""
    layers: list[nn.Module] = []
    for i in range(depth):
        linear = nn.Linear(width, width if i < depth - 1 else 1)
        if kaiming:
            nn.init.kaiming_normal_(linear.weight, nonlinearity="relu")
            nn.init.zeros_(linear.bias)
        layers += [linear, activation()] if i < depth - 1 else [linear]
    return nn.Sequential(*layers)


def smallest_spot(norms: list[float]) -> str:
    """Which of :data:`SPOTS` describes where the smallest of ``norms`` (first layer first) is."""
    low, high = min(norms), max(norms)
    if high < EVEN * low:
        return SPOTS[3]
    where = norms.index(low)
    return SPOTS[0] if where == 0 else SPOTS[2] if where == len(norms) - 1 else SPOTS[1]


class VanishingPuzzle(View):
    """Predict where the gradient is smallest in two deep MLPs, then see every layer's gradient norm.

    The networks (``networks``) have ``depth`` Linear layers of ``width``: one with sigmoids and PyTorch's
    default initialisation, one with ReLUs and Kaiming's; each runs one backward pass of an MSE loss on
    the same random batch (``seed``; the global random state is left as it was). ``norms[network]``
    lists the layers' gradient norms, first layer first, as :class:`GradientFlow` records them
    (``flows``). ``prediction`` is the :class:`Prediction` (one of :data:`SPOTS` per network); once it
    is over, the plot shows the norms on a log scale.
    """

    def __init__(self, depth: int = 10, width: int = 32, batch: int = 64, seed: int = 0) -> None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.networks = {
                "sigmoid, default init": deep_mlp(nn.Sigmoid, depth, width, kaiming=False),
                "ReLU, Kaiming init": deep_mlp(nn.ReLU, depth, width, kaiming=True),
            }
            x, target = torch.randn(batch, width), torch.randn(batch, 1)
        self.flows: dict[str, GradientFlow] = {}
        for name, network in self.networks.items():
            self.flows[name] = GradientFlow(network)
            nn.functional.mse_loss(network(x), target).backward()
            self.flows[name].record()
        self.norms = {name: [flow.norms[0][layer] for layer in flow.layers] for name, flow in self.flows.items()}
        self.prediction = Prediction({name: smallest_spot(norms) for name, norms in self.norms.items()}, SPOTS)
        self.prompt = (
            f"two MLPs of {depth} Linear layers, one backward pass each: where is the gradient norm smallest?"
            " Pick one answer per network, then Check."
        )
        self.pickers = {}
        for name in self.networks:
            picker = widgets.ToggleButtons(options=SPOTS, value=None, description=name,
                                           style={"description_width": "10em", "button_width": "auto"})
            picker.observe(lambda change,
                           name=name: self._act(lambda: self.prediction.pick(name, change["new"])) if change["new"]
                           else None, names="value")
            picker.add_class("hooklab-prediction")
            self.pickers[name] = picker
        self.check = widgets.Button(description="Check", icon="check", button_style="primary",
                                    tooltip="check your prediction")
        self.show = widgets.Button(description="Show answer", icon="eye", tooltip="show the gradient norms")
        self.check.on_click(lambda _: self._act(self.prediction.check))
        self.show.on_click(lambda _: self._act(self.prediction.reveal))
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.controls = widgets.VBox([*self.pickers.values(), widgets.HBox([self.check, self.show])])
        self.widget = widgets.VBox([widgets.HTML(f"<b>Puzzle:</b> {self.prompt}"), self.controls, self.status,
                                    self.image])
        self.widget.add_class("hooklab-puzzle")
        self.message = ""
        self.drawn = False
        self._render()

    @property
    def puzzle(self) -> Prediction:
        """The prediction, under the name the other views give their puzzle."""
        return self.prediction

    def _act(self, move: Callable[[], object]) -> None:
        self.message = attempt(move)
        self._render()

    def _render(self) -> None:
        prediction = self.prediction
        for picker in self.pickers.values():
            picker.disabled = prediction.over
        self.check.disabled = prediction.over or prediction.checked or len(prediction.picks) < len(self.networks)
        self.show.disabled = prediction.over or not prediction.tries
        self.controls.layout.display = "none" if prediction.over else None
        self.image.layout.display = None if prediction.over else "none"
        lines = []
        for line, question in zip(prediction.status().splitlines(), [*prediction.questions, None]):
            wrong = question in prediction.wrong and prediction.checked
            attributes = f" class='{WRONG_CLASS}' style='{WRONG_STYLE}'" if wrong else ""
            lines.append(f"<div{attributes}>{html.escape(line)}</div>")
        if self.message:
            lines.append(f"<i>{html.escape(self.message)}</i>")
        self.status.value = f"<div style='font-size:12px'>{''.join(lines)}</div>"
        if prediction.over and not self.drawn:
            self._draw()

    def _draw(self) -> None:
        figure = Figure(figsize=(6, 2.8))
        axes = figure.add_subplot()
        for (name, norms), style in zip(self.norms.items(), ("o-", "s-")):
            axes.plot(range(1, len(norms) + 1), norms, style, label=name)
        axes.set_yscale("log")
        axes.set_xlabel("layer (1 = nearest the input)")
        axes.set_ylabel("gradient norm")
        axes.set_xticks(range(1, len(next(iter(self.norms.values()))) + 1))
        axes.legend(fontsize=8)
        draw(self.image, figure)
        self.drawn = True

    def text(self) -> str:
        prediction = self.prediction
        if not prediction.over:
            return "\n".join([f"Puzzle: {self.prompt}", f"choices: {'; '.join(SPOTS)}", prediction.status()])
        names = list(self.norms)
        rows = [(f"layer {i + 1}", *(f"{self.norms[name][i]:.2e}" for name in names))
                for i in range(len(self.norms[names[0]]))]
        marks = {name: f"{self.prediction.picks[name]} {WRONG_MARK}" if name in prediction.wrong else ""
                 for name in names}
        verdict = [f"{name}: smallest: {prediction.answers[name]}" + (f" (you: {marks[name]})" if marks[name] else "")
                   for name in names]
        return "\n".join([prediction.outcome(), *verdict, text_table(("gradient norm", *names), rows)])
