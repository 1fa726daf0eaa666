"""Reading a cell's code: its syntax tree (IPython's syntax and displays indexed by constants resolved), code in a
string, and the names, dotted paths and constants an expression spells."""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from IPython.core.inputtransformer2 import TransformerManager

PARSED = 2048  # syntax trees a worker keeps for the next submissions
STRING_CODE = 100_000  # characters of a string the scan reads as code, at most
_transformer = TransformerManager()


@lru_cache(PARSED)  # a class's notebooks share most cells: given code, tests, unchanged answers
def parse(source: str, getattr_builtin: bool = True) -> ast.Module | None:
    """The syntax tree of a cell's source, with displays indexed by constants resolved, or None; callers only
    read it. ``getattr_builtin``: ``getattr`` is the builtin (the code never binds that name), so that
    ``getattr(x, "name")`` is read as ``x.name``; otherwise it stays a call, which hands ``x`` to another function."""
    try:
        return _Unwrapped(getattr_builtin).visit(ast.parse(_transformer.transform_cell(source)))
    except (SyntaxError, ValueError):
        return None


class _Unwrapped(ast.NodeTransformer):
    """``[x][0]``, ``(a, x)[1]`` and ``{"k": x}["k"]`` read as the ``x`` they are, so that an object passed
    through a display is still tracked (``[sys][0].modules`` is ``sys.modules``); ``getattr(x, "name")`` read as
    ``x.name`` where getattr is the builtin."""

    def __init__(self, getattr_builtin: bool) -> None:
        self.getattr_builtin = getattr_builtin

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if (self.getattr_builtin and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) == 2
                and not node.keywords and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str) and node.args[1].value.isidentifier()):
            return ast.copy_location(ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Load()), node)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        found, others = None, []
        if (isinstance(node.value, (ast.List, ast.Tuple)) and type(key) is int
            and not any(isinstance(e, ast.Starred) for e in node.value.elts)):
            if -len(node.value.elts) <= key < len(node.value.elts):
                found = node.value.elts[key]
                others = [e for e in node.value.elts if e is not found]
        elif isinstance(node.value, ast.Dict) and key is not None and all(  # keys all constants, none repeated
                isinstance(k, ast.Constant) for k in node.value.keys) and len(
                {k.value for k in node.value.keys}) == len(node.value.keys):
            found = next((v for k, v in zip(node.value.keys, node.value.values) if k.value == key), None)
            others = [v for v in node.value.values if v is not found]
        # only where what the display drops runs nothing (a constant, a name): `[x, f()][0]` still calls f
        if found is None or not isinstance(node.ctx, ast.Load) or not all(
                isinstance(other, (ast.Constant, ast.Name)) for other in others):
            return node
        return ast.copy_location(found, node)


@lru_cache(PARSED)
def code_in(text: str) -> ast.Module | None:
    """The syntax tree of a string that is Python code that does something (an import, a call or an attribute), as
    written or as doctest's examples (``>>> ``); None for any other string."""
    if len(text) > STRING_CODE or not any(mark in text for mark in ("(", ".", "import", "=")):
        return None
    lines = text.splitlines()
    examples = [line.strip()[4:] for line in lines if line.strip().startswith((">>> ", "... "))]
    for candidate in ([textwrap.dedent(text)] + (["\n".join(examples)] if examples else [])):
        try:
            tree = ast.parse(candidate)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        if any(isinstance(n, (ast.Call, ast.Attribute, ast.Import, ast.ImportFrom)) for n in ast.walk(tree)):
            return tree
    return None


@lru_cache(PARSED)
def expression_in(text: str) -> ast.Expression | None:
    """The syntax tree of a string that is one Python expression, as an annotation written as a string is evaluated
    (``"torch.Tensor"``, ``"sys"``, ``"(getattr := mine)"``); None for any other string."""
    if len(text) > STRING_CODE:
        return None
    try:
        return ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


@lru_cache(PARSED)
def code(source: str) -> str:
    """What a cell's source does, without its comments and layout: its syntax tree as written (no display resolved),
    or the text that does not parse."""
    try:
        return ast.dump(ast.parse(_transformer.transform_cell(source)))
    except (SyntaxError, ValueError):
        return source


def bindings(node: ast.AST) -> Iterator[tuple[str, str]]:
    """(name, dotted origin) for each name an import statement binds."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                top = alias.name.split(".")[0]
                yield top, top
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        for alias in node.names:
            yield alias.asname or alias.name, f"{node.module}.{alias.name}"


def dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` → ["a", "b", "c"]; None when the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def constant_text(node: ast.AST) -> str | None:
    """A constant string's text; a constant bytes' too, as ``.decode()`` would make it (a name spelled in bytes)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
        return node.value.decode("latin-1")
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def bound_names(trees: Iterable[ast.AST], imports: bool = True) -> set[str]:
    """Every name the code binds, at any depth: assigned, a parameter, defined, imported (unless ``imports`` is
    False), caught, matched."""
    return {name for tree in trees for node in ast.walk(tree) if imports or not isinstance(node, ast.alias)
            for name in binds(node)}


def binds(node: ast.AST) -> list[str]:
    """The names one node of the tree binds: a name assigned or deleted, a parameter, a function or class defined, an
    import's name, an exception caught, a pattern's capture (``case x``, ``[*x]``, ``{**x}``), a type parameter."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.alias):
        return [(node.asname or node.name).split(".")[0]]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs,
                         ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    if type(node).__name__ in {"TypeVar", "ParamSpec", "TypeVarTuple"}:  # def f[T](): (Python 3.12)
        return [node.name]
    return []


@dataclass(frozen=True)
class Operators:
    """The operators an answer makes with torch.library (:func:`operators`)."""

    made: frozenset[str] = frozenset()  # names that hold an operator made with custom_op, wherever code reads them
    texts: Mapping[str, str] = field(default_factory=dict)  # names that hold one constant string (an operator's name)


def operators(trees: Iterable[ast.AST]) -> Operators:
    """The operators the code makes with ``torch.library.custom_op`` (a function whose only decorator is
    ``@custom_op(…)``; ``name = custom_op(…)(function)``; ``name = custom_op(…, function, …)``), by the names bound
    only so (once or more); ``custom_op`` reached as torch.library's, as ``custom_op`` imported from it or through
    torch.library imported under a name, where nothing else binds that name. And the names bound once, to a
    constant string (``OP = "mylib::cube"``)."""
    trees = list(trees)
    nodes = [node for tree in trees for node in ast.walk(tree)]
    bindings: dict[str, int] = {}
    for name in (name for node in nodes for name in binds(node)):
        bindings[name] = bindings.get(name, 0) + 1
    once = {name for name, count in bindings.items() if count == 1}
    imported = [alias for node in nodes if isinstance(node, ast.ImportFrom) for alias in node.names
                if (node.module, alias.name) in {("torch.library", "custom_op"), ("torch", "library")}]
    imported += [alias for node in nodes if isinstance(node, ast.Import) for alias in node.names
                 if alias.name == "torch.library" and alias.asname]
    spellings = [["torch", "library", "custom_op"]]
    for alias in imported:
        name = alias.asname or alias.name
        if name in once:  # bound by this import alone
            spellings.append([name] if alias.name == "custom_op" else [name, "custom_op"])

    def custom_op(call: ast.AST) -> bool:
        return isinstance(call, ast.Call) and dotted(call.func) in spellings

    made: dict[str, int] = {}
    for node in nodes:
        name = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(node.decorator_list) == 1 and custom_op(
                node.decorator_list[0]):
            name = node.name
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
              and isinstance(node.value, ast.Call)
              and (custom_op(node.value.func) or custom_op(node.value) and len(node.value.args) >= 2)):
            name = node.targets[0].id
        if name is not None:
            made[name] = made.get(name, 0) + 1
    texts = {node.targets[0].id: node.value.value for node in nodes
             if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
             and node.targets[0].id in once and isinstance(node.value, ast.Constant)
             and isinstance(node.value.value, str)}
    return Operators(frozenset(name for name, count in made.items() if bindings.get(name) == count), texts)


def reimported(trees: Iterable[ast.AST]) -> set[str]:
    """The names the code binds otherwise than by importing (assigned, a parameter, defined, ...), or imports from
    two places: what such a name holds when a call runs depends on what ran before, not on one import."""
    trees = list(trees)
    origins: dict[str, set[str]] = {}
    for node in (node for tree in trees for node in ast.walk(tree)):
        for name, origin in bindings(node):
            origins.setdefault(name, set()).add(origin)
    return {name for name, found in origins.items() if len(found) > 1} | bound_names(trees, imports=False)


FOLDED = 1_000  # characters of a string built from constants that folded() computes, at most
# str's methods that only rearrange text: a name built with them from constants is computed as Python would
STRING_METHODS = frozenset({
    "center", "ljust", "rjust", "zfill", "format", "join", "replace", "upper", "lower", "casefold", "swapcase",
    "title", "capitalize", "strip", "lstrip", "rstrip", "removeprefix", "removesuffix", "expandtabs", "decode",
})
_FOLDING_BUILTINS = {"tuple": tuple, "list": list, "str": str, "reversed": lambda x: "".join(reversed(x))}
FOLDING = frozenset(_FOLDING_BUILTINS)  # the builtins folded() computes, where the code never rebinds them


def folded(node: ast.AST, builtins: frozenset[str] = FOLDING) -> object | None:
    """The value of an expression built from constants alone with plain text operations (``+``, ``*``, ``%``, slices,
    f-strings, rules-free str methods as STRING_METHODS, tuple/list/str of such where ``builtins`` says the name is the
    builtin): ``"slabolg"[::-1].center(11, "_")`` is ``"__globals__"``. None where any piece is not a constant or the
    text would grow past FOLDED."""
    try:
        value = _fold(node, builtins)
    except Exception:  # a name Python could not build either: a codec, a format, a slice that fails
        return None
    return value


class _TooLongError(Exception):
    pass


def _fold(node: ast.AST, builtins: frozenset[str]) -> object:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes, int)) and not isinstance(
            node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _fold(node.operand, builtins)
        if isinstance(operand, int):
            return -operand
    if isinstance(node, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return tuple(_fold(element, builtins) for element in node.elts)
    if isinstance(node, ast.JoinedStr):
        return "".join(str(_fold(v.value if isinstance(v, ast.FormattedValue) else v, builtins)) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Mod)):
        left, right = _fold(node.left, builtins), _fold(node.right, builtins)
        if isinstance(node.op, ast.Mult) and max(abs(x) for x in (left, right) if isinstance(x, int)) > FOLDED:
            raise _TooLongError
        if isinstance(node.op, ast.Mod) and not (isinstance(left, str) and _bounded(left) and _bounded(right)):
            raise TypeError
        return _short({ast.Add: lambda: left + right, ast.Mult: lambda: left * right,
                       ast.Mod: lambda: left % right}[type(node.op)]())
    if isinstance(node, ast.Subscript):
        value, index = _fold(node.value, builtins), node.slice
        if isinstance(index, ast.Slice):
            parts = [None if p is None else _fold(p, builtins) for p in (index.lower, index.upper, index.step)]
            return value[slice(*parts)]
        return value[_fold(index, builtins)]
    if isinstance(node, ast.Call) and not any(isinstance(a, ast.Starred) for a in node.args):
        args = [_fold(argument, builtins) for argument in node.args]
        kwargs = {k.arg: _fold(k.value, builtins) for k in node.keywords if k.arg}
        if len(kwargs) != len(node.keywords) or not _bounded((*args, *kwargs.values())):
            raise TypeError
        if isinstance(node.func, ast.Name) and node.func.id in builtins and node.func.id in _FOLDING_BUILTINS:
            return _short(_FOLDING_BUILTINS[node.func.id](*args, **kwargs))
        if isinstance(node.func, ast.Attribute) and node.func.attr in STRING_METHODS:
            owner = _fold(node.func.value, builtins)
            if isinstance(owner, (str, bytes)) and _bounded(owner):
                return _short(getattr(owner, node.func.attr)(*args, **kwargs))
    raise TypeError


def _short(value: object) -> object:
    if isinstance(value, (str, bytes, tuple, list)) and len(value) > FOLDED:
        raise _TooLongError
    return value


def _bounded(value: object) -> bool:
    """Whether text operations on a value stay small: no number past FOLDED (a width, ``"x".center(10**9)``), no format
    with a width of five digits or more (``"%99999s"``)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) <= FOLDED
    if isinstance(value, (str, bytes)):  # and no width given by a nested field, "{:{}{}{}}".format("a", 999, 999, 999)
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        return re.search(r"\d{5,}|\{[^{}]*\{", text.replace("{{", "").replace("}}", "")) is None
    if isinstance(value, (tuple, list)):
        return all(map(_bounded, value))
    return True
