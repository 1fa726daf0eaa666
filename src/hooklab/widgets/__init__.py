"""Interactive views of hooks, ``Module.apply``, module trees, gradients and custom Functions.

Each view is an ipywidgets widget when displayed in Jupyter and plain data plus a text table
everywhere else (``str(view)``, and the attributes each class documents).

Puzzle mode (``HookTimeline(..., puzzle=True)``, ``ApplyOrder(..., puzzle=True)``, ``VanishingPuzzle``)
asks for a prediction first and shows the real thing once it is right or given up; its state is a plain
Python :class:`OrderPuzzle` or :class:`Prediction`. Predictions are not graded.
"""

from hooklab.widgets.apply_order import ApplyOrder
from hooklab.widgets.explorer import ModuleExplorer
from hooklab.widgets.gradient_flow import GradientFlow, VanishingPuzzle
from hooklab.widgets.playground import ClampSTE, FunctionPlayground
from hooklab.widgets.puzzle import OrderPuzzle, Prediction, PuzzleError
from hooklab.widgets.timeline import Event, HookTimeline, record_events

__all__ = [
    "ApplyOrder",
    "ClampSTE",
    "Event",
    "FunctionPlayground",
    "GradientFlow",
    "HookTimeline",
    "ModuleExplorer",
    "OrderPuzzle",
    "Prediction",
    "PuzzleError",
    "VanishingPuzzle",
    "record_events",
]
