"""Module explorer: a collapsible tree of ``named_modules`` with parameters, buffers and ``extra_repr``."""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
from torch import nn

from hooklab.widgets.view import View, html_table


@dataclass(frozen=True)
class Row:
    """One module: its own parameters and buffers as ``(name, shape, numel, requires_grad)``."""

    path: str
    type: str
    depth: int
    extra_repr: str
    parameters: tuple[tuple[str, tuple[int, ...], int, bool], ...]
    buffers: tuple[tuple[str, tuple[int, ...], int, bool], ...]
    total: int  # parameters of the module and everything below it
    trainable: int

    @property
    def label(self) -> str:
        name = self.path.rsplit(".", 1)[-1] or "model"
        extra = f"({self.extra_repr})" if self.extra_repr else ""
        return f"{name}: {self.type}{extra} — {self.total:,} parameters"


def rows(model: nn.Module) -> list[Row]:
    """One :class:`Row` per module of ``model.named_modules()``."""
    def entries(named) -> tuple:
        return tuple((name, tuple(t.shape), t.numel(), t.requires_grad) for name, t in named)

    return [
        Row(
            path,
            type(module).__name__,
            path.count(".") + 1 if path else 0,
            module.extra_repr(),
            entries(module.named_parameters(recurse=False)),
            entries(module.named_buffers(recurse=False)),
            sum(p.numel() for p in module.parameters()),
            sum(p.numel() for p in module.parameters() if p.requires_grad),
        )
        for path, module in model.named_modules()
    ]


class ModuleExplorer(View):
    """``rows`` describes every module; the widget nests one ``Accordion`` per module.

    ``expand(path)`` opens the sections down to a module; ``expanded`` lists the open ones.
    """

    def __init__(self, model: nn.Module) -> None:
        self.rows = rows(model)
        self.sections: dict[str, widgets.Accordion] = {}
        by_path = {row.path: row for row in self.rows}
        children: dict[str, list[str]] = {row.path: [] for row in self.rows}
        for row in self.rows[1:]:
            children[row.path.rpartition(".")[0]].append(row.path)

        def section(path: str) -> widgets.Accordion:
            row = by_path[path]
            details = widgets.HTML(self._details(row))
            accordion = widgets.Accordion(
                children=[widgets.VBox([details, *(section(child) for child in children[path])])], titles=(row.label,)
            )
            self.sections[path] = accordion
            return accordion

        self.widget = section("")

    @staticmethod
    def _details(row: Row) -> str:
        tensors = [(f"parameter {n}", "×".join(map(str, s)) or "scalar", c, "yes" if g else "no")
                   for n, s, c, g in row.parameters]
        tensors += [(f"buffer {n}", "×".join(map(str, s)) or "scalar", c, "—") for n, s, c, _ in row.buffers]
        summary = f"{row.total:,} parameters, {row.trainable:,} trainable"
        return summary + (html_table(("tensor", "shape", "elements", "requires_grad"), tensors) if tensors else "")

    def expand(self, path: str) -> None:
        """Open the sections from the root down to module ``path``."""
        parts = path.split(".") if path else []
        for depth in range(len(parts) + 1):
            self.sections[".".join(parts[:depth])].selected_index = 0

    @property
    def expanded(self) -> list[str]:
        return [row.path for row in self.rows if self.sections[row.path].selected_index == 0]

    def text(self) -> str:
        lines = []
        for row in self.rows:
            lines.append("  " * row.depth + row.label)
            for name, shape, _, grad in row.parameters:
                lines.append("  " * row.depth + f"  · {name} {tuple(shape)}{'' if grad else ' (frozen)'}")
            for name, shape, _, _ in row.buffers:
                lines.append("  " * row.depth + f"  · {name} {tuple(shape)} (buffer)")
        return "\n".join(lines)
