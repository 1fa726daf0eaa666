"""What every view shares: a widget shown with a text fallback, a step control, figures as images."""

from __future__ import annotations

import html
import io
import struct
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets
from matplotlib.figure import Figure


class View:
    """Base of the views: ``widget`` is what Jupyter shows; ``text()`` is the same state as text.

    The text is also the display's ``text/plain``, so a notebook's stored output stays readable
    without the widget and nbval compares it (it ignores the widget's view data).
    """

    widget: widgets.Widget

    def text(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.text()
        return bundle


class Stepper:
    """A slider with Back / Next buttons over the steps ``0 … count - 1``.

    The slider shows them counted from ``first`` (1: "event 1" is step 0), as the captions do.
    """

    def __init__(self, count: int, on_step: Callable[[int], None], description: str = "step", first: int = 1) -> None:
        self.first = first
        self.slider = widgets.IntSlider(value=first, min=first, description=description)
        self.resize(count)
        self.back = widgets.Button(description="Back", icon="step-backward", tooltip="previous step")
        self.next = widgets.Button(description="Next", icon="step-forward", tooltip="next step")
        self.back.on_click(lambda _: self.move(-1))
        self.next.on_click(lambda _: self.move(+1))
        self.slider.observe(lambda change: on_step(change["new"] - first), names="value")
        self.widget = widgets.HBox([self.back, self.slider, self.next])

    def resize(self, count: int) -> None:
        """Offer ``count`` steps (at least one)."""
        self.slider.max = self.first + max(count - 1, 0)

    @property
    def value(self) -> int:
        return self.slider.value - self.first

    @value.setter
    def value(self, step: int) -> None:
        self.slider.value = min(max(step + self.first, self.slider.min), self.slider.max)

    def move(self, delta: int) -> None:
        self.value = self.value + delta


class SteppedView(View):
    """A view moved through by a :class:`Stepper`; ``step`` is where it stands."""

    stepper: Stepper

    @property
    def step(self) -> int:
        return self.stepper.value

    @step.setter
    def step(self, value: int) -> None:
        self.stepper.value = value


def step_style(index: int, step: int) -> str:
    """CSS for an item of a stepped view: the current one highlighted, those not reached yet greyed."""
    return "background:#ffe08a;font-weight:bold" if index == step else "" if index < step else "color:#aaa"


DPI = 100  # a figure's size on the page, in pixels per inch
PIXEL_RATIO = 2  # drawn with twice as many pixels, so it stays sharp on high-density screens


def draw(image: widgets.Image, figure: Figure) -> None:
    """Show a matplotlib figure in ``image``: rendered at ``PIXEL_RATIO`` times the pixels it is shown with."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI * PIXEL_RATIO, bbox_inches="tight")
    data = buffer.getvalue()
    width = struct.unpack(">I", data[16:20])[0]  # the PNG header (IHDR) holds the width in pixels
    image.value, image.width = data, str(width // PIXEL_RATIO)


def html_table(
    header: Sequence[str], rows: Sequence[Sequence[object]], styles: Sequence[str] = (), classes: Sequence[str] = ()
) -> str:
    """An HTML table; ``styles[i]`` is the CSS of row ``i``, ``classes[i]`` its class attribute (if any)."""
    head = "".join(f"<th style='text-align:left;padding:0 8px'>{html.escape(h)}</th>" for h in header)
    body = "".join(
        f"<tr style='{styles[i] if i < len(styles) else ''}'"
        + (f" class='{classes[i]}'" if i < len(classes) and classes[i] else "") + ">"
        + "".join(f"<td style='padding:0 8px'>{html.escape(str(cell))}</td>" for cell in row)
        + "</tr>"
        for i, row in enumerate(rows)
    )
    return f"<table style='font-family:monospace;font-size:12px'><tr>{head}</tr>{body}</table>"


def text_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A fixed-width text table."""
    cells = [list(map(str, header))] + [list(map(str, row)) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells)
