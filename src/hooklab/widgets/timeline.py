"""Hook timeline: every hook event of one forward and backward pass, in the order it happened."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import ipywidgets as widgets
import torch
from torch import nn

from hooklab.widgets.puzzle import RIGHT_MARK, WRONG_CLASS, WRONG_MARK, WRONG_STYLE, OrderPuzzle, OrderPuzzleView
from hooklab.widgets.view import Stepper, html_table, step_style, text_table

HEADER = ("#", "phase", "event", "where", "tensors")
TABLE_HEIGHT = "20em"
PUZZLE_KINDS = ("forward pre-hook", "forward hook", "backward pre-hook", "backward hook", "tensor hook")


@dataclass(frozen=True)
class Event:
    """One hook call: ``kind`` is "forward pre-hook", "forward" (a forward returned), "forward hook",
    "backward pre-hook", "backward hook", "tensor hook" or "grad accumulated"; ``where`` is a module
    ("name (Type)", the root is "model") or a parameter name; ``tensors`` describes what the hook saw."""

    index: int
    phase: str
    kind: str
    where: str
    tensors: str

    def row(self) -> tuple[object, ...]:
        return (self.index + 1, self.phase, self.kind, self.where, self.tensors)  # counted from 1, as the slider

    @property
    def label(self) -> str:
        """What the event is, without what it saw: "forward hook on 0 (Linear)"."""
        return f"{self.kind} on {self.where}"


def describe(value: object) -> str:
    """Shapes of the tensors in ``value`` (values too for tensors of at most 4 elements)."""
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(describe(item) for item in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, torch.Tensor):
        shape = "×".join(map(str, value.shape)) or "scalar"
        if value.numel() <= 4:
            values = ", ".join(f"{v:.4g}" for v in value.detach().flatten().tolist())
            return f"{shape} [{values}]"
        return shape
    return repr(value)


def record_events(
    model: nn.Module, *inputs: torch.Tensor, loss: Callable[[torch.Tensor], torch.Tensor] = torch.sum
) -> list[Event]:
    """Run ``loss(model(*inputs)).backward()`` with hooks on every module, parameter and input; return
    the events. The hooks are removed and the parameters' ``.grad`` restored afterwards.

    Floating-point inputs are detached copies that require grad: a full backward hook whose
    module's inputs need no gradient fires early, with ``grad_input`` all None (PyTorch warns).
    """
    events: list[Event] = []

    def add(phase: str, kind: str, where: str, tensors: object) -> None:
        events.append(Event(len(events), phase, kind, where, describe(tensors)))

    def module_hooks(where: str) -> dict[str, Callable[..., None]]:
        def pre(module: nn.Module, args: tuple) -> None:
            add("forward", "forward pre-hook", where, args)

        def post(module: nn.Module, args: tuple, output: object) -> None:
            add("forward", "forward", where, output)
            add("forward", "forward hook", where, output)

        def backward_pre(module: nn.Module, grad_output: tuple) -> None:
            add("backward", "backward pre-hook", where, grad_output)

        def backward(module: nn.Module, grad_input: tuple, grad_output: tuple) -> None:
            add("backward", "backward hook", where, grad_input)

        return {"pre": pre, "post": post, "backward_pre": backward_pre, "backward": backward}

    def tensor_hooks(name: str) -> tuple[Callable[..., None], Callable[..., None]]:
        def on_grad(grad: torch.Tensor) -> None:
            add("backward", "tensor hook", name, grad)

        def on_accumulated(parameter: torch.Tensor) -> None:
            add("backward", "grad accumulated", name, parameter.grad)

        return on_grad, on_accumulated

    handles = []
    for name, module in model.named_modules():
        hooks = module_hooks(f"{name or 'model'} ({type(module).__name__})")
        handles += [
            module.register_forward_pre_hook(hooks["pre"]),
            module.register_forward_hook(hooks["post"]),
            module.register_full_backward_pre_hook(hooks["backward_pre"]),
            module.register_full_backward_hook(hooks["backward"]),
        ]
    saved = []
    for name, parameter in model.named_parameters():
        on_grad, on_accumulated = tensor_hooks(name)
        handles += [parameter.register_hook(on_grad), parameter.register_post_accumulate_grad_hook(on_accumulated)]
        saved.append((parameter, parameter.grad))
        parameter.grad = None
    inputs = tuple(x.detach().requires_grad_() if x.is_floating_point() else x for x in inputs)
    for index, x in enumerate(inputs):
        if x.requires_grad:
            handles.append(x.register_hook(tensor_hooks(f"input {index}")[0]))
    try:
        loss(model(*inputs)).backward()
    finally:
        for handle in handles:
            handle.remove()
        for parameter, grad in saved:
            parameter.grad = grad
    return events


class HookTimeline(OrderPuzzleView):
    """The events of :func:`record_events` for ``model(*inputs)``, steppable one at a time.

    ``events`` holds them; ``step`` is the event shown (set it, or click Back / Next).

    ``puzzle=True`` (or a collection of event kinds; True means :data:`PUZZLE_KINDS`) first asks for the
    order of the events of those kinds: ``puzzle`` is then an :class:`OrderPuzzle` over their labels
    (shuffled with ``seed``), ``puzzle_events`` the events it asks about. Once solved or revealed, the
    timeline shows as without a puzzle, the events the last try placed wrong marked.
    """

    def __init__(
        self,
        model: nn.Module,
        *inputs: torch.Tensor,
        loss: Callable[[torch.Tensor], torch.Tensor] = torch.sum,
        puzzle: bool | Iterable[str] = False,
        seed: int = 0,
    ) -> None:
        self.events = record_events(model, *inputs, loss=loss)
        self.stepper = Stepper(len(self.events), lambda _: self._render(), description="event")
        self.current = widgets.HTML()
        self.table = widgets.HTML()
        self.widget = self.stepping = widgets.VBox([self.stepper.widget, self.current, self.table])
        self.puzzle_events: list[Event] = []
        if puzzle:
            kinds = PUZZLE_KINDS if puzzle is True else tuple(puzzle)
            self.puzzle_events = [e for e in self.events if e.kind in kinds]
            if not self.puzzle_events:
                raise ValueError(f"no events of the kinds {kinds} to order")
            self._ask(OrderPuzzle([e.label for e in self.puzzle_events], seed=seed),
                      f"click these {len(self.puzzle_events)} events in the order they fire, then Check.")
        self._render()

    def marks(self) -> dict[int, str]:
        """Once a puzzle is over: ✗ or ✓ by the index of each event it asked about (the last try's verdict)."""
        if not self.puzzle_over:
            return {}
        return {e.index: WRONG_MARK if i in self.puzzle.wrong else RIGHT_MARK for i, e in enumerate(self.puzzle_events)}

    def _render(self) -> None:
        if not self._show_stepping():  # nothing of the answer in the page
            self.current.value = self.table.value = ""
            return
        event = self.events[self.step]
        self.current.value = (
            f"<b>{event.index + 1}/{len(self.events)}</b> · {event.phase} · <b>{event.kind}</b> "
            f"on <code>{event.where}</code> · {event.tensors}"
        )
        marks = self.marks()
        wrong = [marks.get(e.index) == WRONG_MARK for e in self.events]
        styles = [f"{WRONG_STYLE};{step_style(e.index, self.step)}" if wrong[e.index]
                  else step_style(e.index, self.step) for e in self.events]
        if not marks:
            table = html_table(HEADER, [e.row() for e in self.events], styles)
        else:
            rows = [(*e.row(), marks.get(e.index, "")) for e in self.events]
            table = html_table((*HEADER, "you"), rows, styles, [WRONG_CLASS if w else "" for w in wrong])
        # scrolls in its own box
        self.table.value = f"<div style='max-height:{TABLE_HEIGHT};overflow-y:auto'>{table}</div>"

    def text(self) -> str:
        if self.puzzle is None:
            return text_table(HEADER, [e.row() for e in self.events])
        if self.hidden:
            return self.puzzle_text()
        marks = self.marks()
        table = text_table((*HEADER, "you"), [(*e.row(), marks.get(e.index, "")) for e in self.events])
        return f"{self.puzzle.outcome()}\n{table}"
