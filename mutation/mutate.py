"""Mutants of an answer cell: one small change each, the kind of mistake a student makes.

Written on Python's ``ast`` rather than with mutmut or cosmic-ray: both mutate files of a package on disk and run
a test command per mutant, while the unit here is one notebook cell whose mutants are judged by the grader's
comparison of observations in a forked process (:mod:`mutation.runner`); their operators are also about
Python alone, not the tensor-library mistakes this pack tests (in place or not, ``dim``/``keepdim``, hooks
registered with the neighbouring method). Only the lines between the solution markers are mutated.
"""

from __future__ import annotations

import ast
import copy
import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*$")
BINARY = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
          ast.Pow: ast.Mult, ast.MatMult: ast.Mult, ast.Mod: ast.FloorDiv}
COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
           ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
# A call replaced by a plausible neighbour (both ways).
NEIGHBOURS = [
    ("sum", "mean"), ("max", "min"), ("amax", "amin"), ("argmax", "argmin"), ("zeros", "ones"),
    ("zeros_like", "ones_like"), ("exp", "log"), ("cumsum", "cumprod"), ("softmax", "log_softmax"),
    ("sigmoid", "tanh"), ("append", "extend"), ("register_forward_hook", "register_forward_pre_hook"),
    ("register_full_backward_hook", "register_full_backward_pre_hook"), ("no_grad", "enable_grad"),
    ("detach", "clone"), ("named_modules", "named_children"), ("modules", "children"),
    ("parameters", "buffers"), ("named_parameters", "named_buffers"), ("items", "values"), ("keys", "values"),
    ("unsqueeze", "squeeze"), ("t", "contiguous"), ("matmul", "mul"), ("mm", "mul"), ("sqrt", "exp"),
    ("abs", "neg"), ("clamp_min", "clamp_max"), ("uniform_", "normal_"), ("fill_", "add_"),
]
_NEIGHBOUR = {a: b for a, b in NEIGHBOURS} | {b: a for a, b in NEIGHBOURS}
# Tensor methods with an in-place twin (name_), turned into each other.
IN_PLACE = {"add", "sub", "mul", "div", "clamp", "neg", "abs", "exp", "pow", "sqrt", "clamp_min", "clamp_max",
            "masked_fill",
            "squeeze", "unsqueeze", "relu", "sigmoid", "tanh"}


@dataclass(frozen=True)
class Mutant:
    """One change to an answer: where (1-based line of the answer, column), what, and the mutated source."""

    line: int
    column: int
    change: str
    source: str

    @property
    def key(self) -> str:
        """How the reviewed list of equivalent mutants names it."""
        return f"line {self.line}, column {self.column + 1}: {self.change}"


def solution_lines(cell_source: str) -> tuple[str, set[int]]:
    """A solution cell's source without nbgrader's markers, and the (1-based) lines that were between them."""
    kept, inside, lines = [], False, set()
    for line in cell_source.splitlines(keepends=True):
        match = MARKER.match(line.rstrip("\n"))
        if match:
            inside = match.group(1) == "BEGIN"
            continue
        kept.append(line)
        if inside:
            lines.add(len(kept))
    return "".join(kept), lines


def mutants(source: str, lines: set[int]) -> list[Mutant]:
    """Every mutant of ``source`` changing a node that starts on one of ``lines``, each once (by its source)."""
    tree = ast.parse(source)
    original = ast.unparse(tree)
    found, seen = [], {original}
    for index, node in enumerate(_nodes(tree)):
        if getattr(node, "lineno", None) not in lines:
            continue
        for change, apply in _changes(node, tree):
            mutated = ast.parse(source)
            target = _nodes(mutated)[index]
            try:
                apply(target, mutated)
                text = ast.unparse(ast.fix_missing_locations(mutated))
                compile(text, "<mutant>", "exec")
            except (SyntaxError, ValueError, TypeError, AttributeError, IndexError):
                continue
            if text not in seen:
                seen.add(text)
                found.append(Mutant(node.lineno, node.col_offset, change, text))
    return found


def diff(source: str, mutant: Mutant) -> str:
    """The mutant's change as a unified diff of the two sources (both as ``ast.unparse`` writes them)."""
    before = ast.unparse(ast.parse(source)).splitlines()
    return "\n".join(line for line in difflib.unified_diff(before, mutant.source.splitlines(), lineterm="", n=0)
                     if not line.startswith(("---", "+++", "@@")))


def _nodes(tree: ast.AST) -> list[ast.AST]:
    return list(ast.walk(tree))


Change = tuple[str, Callable[[ast.AST, ast.Module], None]]


def _changes(node: ast.AST, tree: ast.Module) -> Iterator[Change]:
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        new = BINARY[type(node.op)]
        yield f"{type(node.op).__name__} → {new.__name__}", lambda n, t, new=new: setattr(n, "op", new())
    if isinstance(node, ast.AugAssign):
        if type(node.op) in BINARY:
            new = BINARY[type(node.op)]
            yield f"{type(node.op).__name__}= → {new.__name__}=", lambda n, t, new=new: setattr(n, "op", new())
        if isinstance(node.target, ast.Name):
            yield "in place → out of place (x op= y → x = x op y)", _out_of_place
    if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.BinOp) and isinstance(node.value.left, ast.Name)
            and node.value.left.id == node.targets[0].id):
        yield "out of place → in place (x = x op y → x op= y)", _in_place
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in COMPARE:
                new = COMPARE[type(op)]
                yield f"{type(op).__name__} → {new.__name__}", lambda n, t, i=i, new=new: n.ops.__setitem__(i, new())
    if isinstance(node, ast.BoolOp):
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield f"{type(node.op).__name__} → {new.__name__}", lambda n, t, new=new: setattr(n, "op", new())
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        yield f"{type(node.op).__name__} dropped", lambda n, t: _replace(t, n, n.operand)
    if isinstance(node, ast.Constant):
        yield from _constants(node)
    if isinstance(node, ast.Call):
        yield from _calls(node)
    if isinstance(node, ast.Return) and node.value is not None:
        function = _enclosing_function(tree, node)
        arguments = [a.arg for a in function.args.args if a.arg not in ("self", "ctx", "cls")] if function else []
        if arguments and not (isinstance(node.value, ast.Name) and node.value.id == arguments[0]):
            yield (f"returns its input {arguments[0]}",
                   lambda n, t, a=arguments[0]: setattr(n, "value", ast.Name(a, ast.Load())))
    if isinstance(node, ast.Try) and node.finalbody:
        yield "try/finally cleanup dropped", lambda n, t: setattr(n, "finalbody", [ast.Pass()])
        yield "try/finally narrowed to except Exception", _narrowed
    if isinstance(node, ast.stmt) and not isinstance(node,
                                                     (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)):
        yield f"statement dropped ({type(node).__name__})", lambda n, t: _replace(t, n, ast.Pass())
    if (isinstance(node, ast.keyword) and node.arg in ("dim", "axis") and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, int)):
        yield (f"{node.arg}={node.value.value} → {node.arg}=-1",
               lambda n, t: setattr(n, "value", ast.Constant(-1 if n.value.value != -1 else 0)))


def _constants(node: ast.Constant) -> Iterator[Change]:
    value = node.value
    if isinstance(value, bool):
        yield f"{value} → {not value}", lambda n, t: setattr(n, "value", not n.value)
    elif isinstance(value, int):
        yield f"{value} → {value + 1}", lambda n, t: setattr(n, "value", n.value + 1)
        if value not in (0, 1):
            yield f"{value} → {value - 1}", lambda n, t: setattr(n, "value", n.value - 1)
    elif isinstance(value, float):
        new = value * 2 if value else 1.0
        yield f"{value} → {new}", lambda n, t, new=new: setattr(n, "value", new)


def _calls(node: ast.Call) -> Iterator[Change]:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name in _NEIGHBOUR:
        new = _NEIGHBOUR[name]
        yield f"{name}() → {new}()", lambda n, t, new=new: _rename(n.func, new)
    if isinstance(func, ast.Attribute) and func.attr in ("clone", "detach") and not node.args and not node.keywords:
        yield f".{func.attr}() dropped", lambda n, t: _replace(t, n, n.func.value)
    if isinstance(func, ast.Attribute) and not func.attr.startswith("_"):
        if func.attr.endswith("_") and func.attr[:-1] in IN_PLACE:
            yield f".{func.attr}() → .{func.attr[:-1]}() (out of place)", lambda n, t: _rename(n.func, n.func.attr[:-1])
        elif func.attr in IN_PLACE:
            yield f".{func.attr}() → .{func.attr}_() (in place)", lambda n, t: _rename(n.func, n.func.attr + "_")
    if len(node.args) == 2 and not any(isinstance(a, ast.Starred) for a in node.args):
        yield f"{name or 'call'}(a, b) → (b, a)", lambda n, t: n.args.reverse()
    if node.args and isinstance(func, ast.Attribute) and func.attr in ("sum", "mean", "max", "min", "amax", "amin",
                                                                       "softmax",
                                                                          "log_softmax", "cumsum", "logsumexp", "norm",
                                                                       "flatten"):
        yield f"{func.attr}(...) argument dropped", lambda n, t: n.args.pop()


def _rename(func: ast.AST, name: str) -> None:
    if isinstance(func, ast.Attribute):
        func.attr = name
    else:
        func.id = name


def _replace(tree: ast.Module, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(item is old for item in value):
                value[[i for i, item in enumerate(value) if item is old][0]] = new
                return
    raise ValueError("node not found")


def _enclosing_function(tree: ast.Module, node: ast.AST) -> ast.FunctionDef | None:
    found = None
    for candidate in ast.walk(tree):
        if (isinstance(candidate, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(n is node for n in ast.walk(candidate))):
            found = candidate  # the innermost: ast.walk visits outer functions first
    return found


def _out_of_place(node: ast.AugAssign, tree: ast.Module) -> None:
    value = ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value)
    _replace(tree, node, ast.Assign([ast.Name(node.target.id, ast.Store())], value, lineno=node.lineno))


def _in_place(node: ast.Assign, tree: ast.Module) -> None:
    _replace(tree, node, ast.AugAssign(ast.Name(node.targets[0].id, ast.Store()), node.value.op, node.value.right))


def _narrowed(node: ast.Try, tree: ast.Module) -> None:
    cleanup = node.finalbody
    handler = ast.ExceptHandler(ast.Name("Exception", ast.Load()), None, [*copy.deepcopy(cleanup), ast.Raise()])
    replacement = ast.Try(node.body, [handler], [], [])
    body = next(value for parent in ast.walk(tree) for _, value in ast.iter_fields(parent)
                if isinstance(value, list) and any(item is node for item in value))
    position = [i for i, item in enumerate(body) if item is node][0]
    body[position : position + 1] = [replacement, *cleanup]
