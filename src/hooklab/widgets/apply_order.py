"""The order in which ``Module.apply`` visits a module tree, against ``children()`` and ``modules()``."""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as widgets
from torch import nn

from hooklab.widgets.puzzle import WRONG_CLASS, WRONG_MARK, WRONG_STYLE, OrderPuzzle, OrderPuzzleView
from hooklab.widgets.view import Stepper, step_style


@dataclass
class Node:
    """A module in the tree: its path from the root ("" for the root), depth and visit number (1-based)."""

    path: str
    type: str
    depth: int
    module: nn.Module
    visit: int = 0

    @property
    def label(self) -> str:
        return f"{self.path.rsplit('.', 1)[-1] or 'model'}: {self.type}"


def tree(model: nn.Module) -> list[Node]:
    """Every module, in preorder, through ``named_children`` (a shared module appears under each parent)."""
    nodes: list[Node] = []

    def walk(module: nn.Module, path: str, depth: int) -> None:
        nodes.append(Node(path, type(module).__name__, depth, module))
        for name, child in module.named_children():
            walk(child, f"{path}.{name}" if path else name, depth + 1)

    walk(model, "", 0)
    return nodes


class ApplyOrder(OrderPuzzleView):
    """``model.apply`` run with a function that records its argument.

    ``visits`` lists the module paths in the order apply called the function (children first:
    postorder); ``children`` and ``modules`` list what ``model.children()`` and
    ``model.named_modules()`` yield, for contrast. ``step`` is the number of visits shown (0 at first).

    ``puzzle=True`` first asks the student to click the modules of the tree in the order ``apply``
    visits them: ``puzzle`` is then an :class:`OrderPuzzle` over the module paths (offered in tree
    order). Once solved or revealed, the tree shows as without a puzzle, the modules the last try
    placed wrong marked with the number the student gave them.
    """

    def __init__(self, model: nn.Module, puzzle: bool = False) -> None:
        visited: list[nn.Module] = []
        model.apply(visited.append)
        self.nodes = tree(model)
        for number, module in enumerate(visited, start=1):
            node = next(n for n in self.nodes if n.module is module and not n.visit)
            node.visit = number
        self.visits = [node.path for node in sorted(self.nodes, key=lambda n: n.visit)]
        self.children = [name for name, _ in model.named_children()]
        self.modules = [name for name, _ in model.named_modules()]
        self.stepper = Stepper(len(self.visits) + 1, lambda _: self._render(), description="visits", first=0)
        self.drawing = widgets.HTML()
        orders = widgets.HTML(
            "<b>children()</b><br>" + "<br>".join(map(html.escape, self.children))
            + "<br><br><b>modules()</b> (preorder)<br>" + "<br>".join(html.escape(p or "(model)") for p in self.modules)
        )
        self.widget = self.stepping = widgets.VBox([self.stepper.widget, widgets.HBox([self.drawing, orders])])
        if puzzle:
            offered = [node for node in self.nodes if node.visit]
            labels = {node.path: node.label for node in offered}
            self._ask(OrderPuzzle(self.visits, [node.path for node in offered], labels),
                      f"click the {len(offered)} modules in the order model.apply(fn) calls fn on them, then Check.",
                      indents=[2 * n.depth for n in offered])
        self._render()

    @property
    def answer_step(self) -> int:
        return len(self.visits)  # every number shown

    def guesses(self) -> dict[str, int]:
        """Once a puzzle is over: the visit number the last try gave each module it placed wrong, by path."""
        if not self.puzzle_over:
            return {}
        return {self.puzzle.picked[i]: i + 1 for i in self.puzzle.wrong if i < len(self.puzzle.picks)}

    def _render(self) -> None:
        if not self._show_stepping():  # nothing of the answer in the page
            self.drawing.value = ""
            return
        lines, guesses = [], self.guesses()
        for node in self.nodes:
            badge = f"[{node.visit}]" if node.visit <= self.step else "[ ]"
            style, attributes, guess = step_style(node.visit, self.step), "", ""
            if node.path in guesses:
                guess = f" {WRONG_MARK} you: {guesses[node.path]}"
                style, attributes = f"{WRONG_STYLE};{style}", f" class='{WRONG_CLASS}'"
            lines.append(f"<div{attributes} style='margin-left:{2 * node.depth}em;{style}'>{badge} "
                         f"{html.escape(node.label)}{guess}</div>")
        caption = f"apply has visited {self.step} of {len(self.visits)} modules"
        self.drawing.value = f"<div style='font-family:monospace;min-width:24em'><i>{caption}</i>{''.join(lines)}</div>"

    def text(self) -> str:
        if self.hidden:
            return self.puzzle_text()
        guesses = self.guesses()
        tree_lines = [
            f"{'  ' * n.depth}[{n.visit}] {n.label}" + (f"  {WRONG_MARK} you: {guesses[n.path]}" if n.path in guesses
                                                        else "")
            for n in self.nodes
        ]
        outcome = [self.puzzle.outcome()] if self.puzzle else []
        return "\n".join(
            [*outcome, "apply visits (numbered, postorder):", *tree_lines,
             f"children(): {', '.join(self.children)}",
             f"modules():  {', '.join(p or '(model)' for p in self.modules)}"]
        )
