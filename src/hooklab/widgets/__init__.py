"""Interactive views of hooks, ``Module.apply``, module trees, gradients and custom Functions.

Each view is an ipywidgets widget when displayed in Jupyter and plain data plus a text table
everywhere else (``str(view)``, and the attributes each class documents).
"""

from hooklab.widgets.apply_order import ApplyOrder
from hooklab.widgets.explorer import ModuleExplorer
from hooklab.widgets.gradient_flow import GradientFlow
from hooklab.widgets.playground import ClampSTE, FunctionPlayground
from hooklab.widgets.timeline import Event, HookTimeline, record_events

__all__ = [
    "ApplyOrder",
    "ClampSTE",
    "Event",
    "FunctionPlayground",
    "GradientFlow",
    "HookTimeline",
    "ModuleExplorer",
    "record_events",
]
