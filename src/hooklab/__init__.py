"""hooklab: interactive notebooks on nn.Module, hooks, Module.apply and autograd.Function.

The package holds what the notebooks import: the answer checkers (:mod:`hooklab.checks`).
"""

from importlib.metadata import version

__version__ = version("hooklab")
