"""Per notebook: each exercise's input space (``SPACE``) and its wrong readings (``readings()``)."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

_NAMES = {
    "01_module_basics": "module_basics",
    "02_forward_hooks": "forward_hooks",
    "03_backward_hooks": "backward_hooks",
    "04_apply": "apply",
    "05_autograd_function": "autograd_function",
    "06_applications": "applications",
    "07_memory_hooks": "memory_hooks",
    "08_backward_puzzles": "backward_puzzles",
    "09_below_the_module": "below_the_module",
    "10_hooks_inside_pytorch": "hooks_inside_pytorch",
}
MODULES: dict[str, ModuleType] = {
    folder: import_module(f"catalogues.exercises.{name}") for folder, name in _NAMES.items()
}
"""Notebook folder → its module."""
