"""What the kernel server loads before it forks: the modules the notebooks import (:func:`modules_to_preload`,
:func:`preload`), and the grader's agent (:mod:`hooklab.grading.kernels.agent`), which loads the grader's probe."""

from __future__ import annotations

import gc
import importlib
import os
import re
import sys

from hooklab.grading.kernels.protocol import KERNEL_CLASS

# What every kernel would import, imported once by the server; a module imported here is in every kernel as if
# just imported: torch, hooklab's checkers, then what ipykernel imports as a kernel starts (its debugger, which
# imports debugpy; the parts of IPython's shell).
PRELOAD = (
    "torch", "numpy", "hooklab.checks",
    "ipykernel.kernelapp", "ipykernel.debugger", "IPython.core.debugger", "IPython.core.completerlib",
           "IPython.core.oinspect",
    "IPython.core.logger", "IPython.extensions.storemagic", "sqlite3", "tornado.queues", "tornado.platform.asyncio",
)
# The notebooks' other slow imports, each preloaded where the code of a notebook to grade matches its pattern
# (the server takes 0.1-0.9 s for each, and its forks grow): hooklab's widgets with matplotlib and ipywidgets,
# scikit-learn's datasets, torch._dynamo (which an optimizer's first step and torch.compile import).
RENDERER = "matplotlib.backends.backend_agg"
PROFILER = "torch.profiler"  # which check_backward watches a Function with; its first start takes a second
PRELOAD_WHEN_USED = {
    "matplotlib.figure": r"\bhooklab\.widgets\b|\bmatplotlib\b",
    "matplotlib.pyplot": r"\bpyplot\b",  # which picks its backend at its first figure, in the kernel
    "ipywidgets": r"\bhooklab\.widgets\b|\bipywidgets\b",
    "hooklab.widgets": r"\bhooklab\.widgets\b",
    "sklearn.datasets": r"\bsklearn\b",
    # (and notebook 09's FlopCounterMode, whose first use imports it: 3-4 s in each kernel otherwise; the modes'
    # own modules, torch.overrides and torch.utils._python_dispatch, come with torch; so does the first
    # DistributedDataParallel of notebook 10, about 2 s: torch.distributed itself comes with torch)
    "torch._dynamo": r"\boptim\b|\bcompile\b|\b_dynamo\b|\bFlopCounterMode\b|\bDistributedDataParallel\b",
    # where the notebooks draw (pyplot, or one of hooklab's widgets that plot): matplotlib's renderer, which the
    # server uses once (_draw_once)
    RENDERER: r"\bpyplot\b|\bplt\b|\bGradientFlow\b|\bFunctionPlayground\b|\bVanishingPuzzle\b",
    # where a test checks a Function's backward or that no model runs: the profiler, started once by the server (then
    # torch._dynamo is in)
    PROFILER: r"\bcheck_backward\b|\bcheck_no_model_run\b",
}
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"  # ipykernel's default for MPLBACKEND
AGENT = KERNEL_CLASS.rpartition(".")[0]  # the module of graded kernels' class, which loads the grader's probe


def modules_to_preload(code: str | None = None) -> list[str]:
    """The modules a server preloads for kernels that run ``code`` (the notebooks' code, hidden tests
    included); all of them when it is not known."""
    return [*PRELOAD, *(name for name, used in PRELOAD_WHEN_USED.items() if code is None or re.search(used, code))]


def preload(modules: list[str] | None = None) -> None:
    """What the server does before it forks: import ``modules`` (:func:`modules_to_preload`; one of
    :data:`PRELOAD_WHEN_USED` that is not installed is left to the kernels), draw once if matplotlib's
    renderer is among them (:func:`_draw_once`), start torch's profiler once if it is (:func:`hooklab.checks.warm_up`),
    import the grader's agent (the kernels' class) with its probe."""
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)  # matplotlib reads it once, when it is imported
    # debugpy warns at import that Python's frozen modules may hide breakpoints; nobody debugs a grading kernel
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    for name in modules_to_preload() if modules is None else modules:
        try:
            importlib.import_module(name)
        except ImportError:
            if name not in PRELOAD_WHEN_USED:
                raise
            continue
        if name == RENDERER:
            _draw_once()
        elif name == PROFILER:
            importlib.import_module("hooklab.checks").warm_up()
    importlib.import_module(AGENT).load_probe().prepare()
    # what is imported now is shared by every kernel: their garbage collector leaves it alone, so it is not
    # walked (and copied, page by page) in each of them
    gc.freeze()


def _draw_once() -> None:
    """Draw a small figure, as the notebooks do: matplotlib finds its fonts and builds its math-text parser (for
    log-scale tick labels) at its first drawing, 0.05-0.1 s that each kernel would spend again. A speed-up: if
    it fails, it says so and the kernels draw their own."""
    import io

    from matplotlib.figure import Figure

    try:
        figure = Figure(figsize=(2, 1))
        axes = figure.add_subplot()
        axes.bar(["a", "b"], [1, 10], label="bars")
        axes.set_yscale("log")
        axes.set_title("title")
        axes.legend()
        figure.savefig(io.BytesIO(), format="png", bbox_inches="tight")
    except Exception as error:  # whatever matplotlib raises, the kernels must still start
        print(f"hooklab kernel server: could not draw a first figure ({error!r}); kernels draw their own",
              file=sys.stderr)
