"""The tensor subclasses notebook 10 shows beside modes: one at the level of torch functions, one at the level of
aten operators. They live here, not in a cell, because an answer that defines a tensor subclass with these handlers
is held for review when graded (it could change what the checkers compute); the notebook shows their code."""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree  # private: maps a function over nested arguments and results
from torch.overrides import resolve_name


class Logged(torch.Tensor):
    """Records the name of every torch function called with a Logged tensor; results stay Logged."""

    calls: list[str] = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(resolve_name(func) or repr(func))
        return super().__torch_function__(func, types, args, kwargs or {})


class Counted(torch.Tensor):
    """A wrapper subclass: a real tensor inside, every aten operator on it counted."""

    ops: list[str] = []

    @staticmethod
    def __new__(cls, inner: torch.Tensor):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner: torch.Tensor):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.ops.append(func.overloadpacket.__name__)

        def unwrap(t):
            return t.inner if isinstance(t, Counted) else t

        out = func(*pytree.tree_map(unwrap, args), **pytree.tree_map(unwrap, kwargs or {}))
        return pytree.tree_map(lambda t: Counted(t) if isinstance(t, torch.Tensor) else t, out)


class PlainDispatch(Counted):
    """Counted with its ``__torch_dispatch__`` written as a plain method: records what its first parameter is."""

    firsts: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # a plain method: no @classmethod
        PlainDispatch.firsts.append("the class" if isinstance(self, type) else f"a {type(self).__name__} instance")

        def unwrap(t):
            return t.inner if isinstance(t, PlainDispatch) else t

        out = func(*pytree.tree_map(unwrap, args), **pytree.tree_map(unwrap, kwargs or {}))
        return pytree.tree_map(lambda t: PlainDispatch(t) if isinstance(t, torch.Tensor) else t, out)


class PlainFunction(torch.Tensor):
    """Logged with its ``__torch_function__`` written as a plain method."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # a plain method: no @classmethod
        return super().__torch_function__(func, types, args, kwargs or {})
