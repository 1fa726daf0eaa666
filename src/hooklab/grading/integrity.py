"""Tamper detection before anything runs: a static check of the code a student wrote.

A student's cells run in the interpreter that runs the test cells, so a submission can try to
change what the tests see: patch the checkers or torch, swap modules in ``sys.modules``, hook
the import system or IPython, trace frames, or hide such code in strings. :func:`scan` reads
every code cell the student wrote (answer cells, added cells, edited given cells) with Python's
``ast`` and reports each such technique as a :class:`Finding`; the notebook is then held for
review. The rules name techniques, not spellings, and leave ordinary code alone: a student's
own objects may be changed freely (``setattr(module, name, ...)``, ``module.extra_repr = ...``).
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import re
import sys
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from IPython.core.inputtransformer2 import TransformerManager
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from hooklab.grading.notes import Notes
from hooklab.grading.repair import source_notebook


@dataclass(frozen=True)
class Finding:
    """One use of a technique that can change what the tests see."""

    cell: int  # 1-based position of the cell in the notebook
    line: int
    technique: str

    def __str__(self) -> str:
        return f"{self.technique} (cell {self.cell}, line {self.line})"


# Modules whose only use in a submission is to reach the interpreter's machinery.
FORBIDDEN_MODULES = {
    "ctypes": "reaches memory directly (ctypes)",
    "_ctypes": "reaches memory directly (ctypes)",
    "cffi": "reaches memory directly (cffi)",
    "gc": "searches the interpreter's objects (gc)",
    "importlib": "uses the import system (importlib)",
    "imp": "uses the import system (imp)",
    "builtins": "changes the builtins",
    "marshal": "loads code objects (marshal)",
    "pickle": "runs code hidden in data (pickle)",
    "_pickle": "runs code hidden in data (pickle)",
    "dill": "runs code hidden in data (dill)",
    "cloudpickle": "runs code hidden in data (cloudpickle)",
    "shelve": "runs code hidden in data (shelve)",
    "copyreg": "runs code hidden in data (copyreg)",
    "code": "runs code from strings (code)",
    "codeop": "runs code from strings (codeop)",
    "runpy": "runs code from files (runpy)",
    "IPython": "reaches IPython's machinery",
    "ipykernel": "reaches the kernel's machinery",
    "traitlets": "reaches IPython's configuration",
    "jupyter_client": "reaches the kernel's machinery",
    "zmq": "reaches the kernel's machinery",
    "threading": "runs code outside its cell (threads)",
    "_thread": "runs code outside its cell (threads)",
    "concurrent": "runs code outside its cell (threads)",
    "multiprocessing": "runs code outside its cell (processes)",
    "subprocess": "runs code outside its cell (processes)",
    "pty": "runs code outside its cell (processes)",
    "asyncio": "runs code outside its cell (event loop)",
    "signal": "runs code outside its cell (signal handlers)",
    "atexit": "runs code outside its cell (exit handlers)",
    "sched": "runs code outside its cell (scheduler)",
    "unittest": "patches objects (unittest.mock)",
    "mock": "patches objects (mock)",
    "site": "changes the import path (site)",
    "sitecustomize": "changes the import path (site)",
    "hooklab.grading": "reaches the grader",
    "hooklab.observations": "reaches the grader's observations",
    "hooklab.checks.observations": "reaches the grader's observations",  # the module, as the checkers hold it
    "torch._C": "reaches torch's internals (torch._C)",
    "torch.overrides": "intercepts torch functions (torch.overrides)",
    "torch.utils._python_dispatch": "intercepts torch operators (dispatch modes)",
    "torch.jit": "runs TorchScript (torch.jit), which no watch sees into",
    "torch.futures": "runs code outside its cell (torch.futures)",
    "pydoc": "runs shell commands (pydoc's pagers)",
    "pkgutil": "uses the import system (pkgutil)",
    "socket": "reaches the kernel's connections (socket)",
    "doctest": "runs code from strings (doctest)",
    "pdb": "starts a debugger (pdb)",
    "bdb": "starts a debugger (bdb)",
    "trace": "traces code (trace)",
    "cProfile.run": "runs code from a string (cProfile.run)",
    "cProfile.runctx": "runs code from a string (cProfile.runctx)",
    "profile.run": "runs code from a string (profile.run)",
    "profile.runctx": "runs code from a string (profile.runctx)",
    "typing.get_type_hints": "runs code from strings (annotations evaluated by typing.get_type_hints)",
    "joblib": "runs code outside its cell (joblib)",
    "dask": "runs code outside its cell (dask)",
    "distributed": "runs code outside its cell (dask.distributed)",
    "operator.attrgetter": "reaches attributes by computed names (operator.attrgetter)",
    "operator.methodcaller": "calls methods by computed names (operator.methodcaller)",
}

# os functions that start processes: a forked child computes where no watch of the kernel's sees it.
OS_PROCESSES = ("fork", "spawn", "exec", "system", "popen", "posix_spawn", "register_at_fork")
# os functions that work on file descriptors: the kernel's connections to the grader are among them.
OS_DESCRIPTORS = {"dup", "dup2", "close", "closerange", "open", "openpty", "write", "writev", "pwrite", "fdopen",
                  "pipe", "pipe2", "set_inheritable", "set_blocking", "sendfile", "ftruncate", "read", "readv", "pread",
                  "lseek"}
# What a student may take of inspect: a callable's signature and source, what kind of object something is. The rest
# reads frames, closures, globals and members (inspect.getclosurevars, getmembers) or finds modules (getmodule).
INSPECT_ALLOWED = {"signature", "Signature", "Parameter", "getsource", "getsourcelines", "getdoc", "cleandoc", "getmro",
                   "getfullargspec", "isclass", "isfunction", "ismethod", "isbuiltin", "isroutine", "ismodule",
                   "isgeneratorfunction", "iscoroutinefunction", "isabstract", "isgenerator"}

# Attribute names that lead to functions' internals, frames or the object graph.
FORBIDDEN_ATTRIBUTES = {
    "__globals__": "reads a function's globals",
    "__code__": "reads or replaces a function's code",
    "__closure__": "reads a function's closure",
    "__defaults__": "changes a function's default arguments",
    "__kwdefaults__": "changes a function's default arguments",
    "__builtins__": "reaches the builtins",
    "__subclasses__": "searches classes (__subclasses__)",
    "__import__": "uses the import system (__import__)",
    "__loader__": "uses the import system (__loader__)",
    "__spec__": "uses the import system (__spec__)",
    "__setattr__": "sets attributes around the normal rules (__setattr__)",
    "__delattr__": "deletes attributes around the normal rules (__delattr__)",
    "__getattribute__": "reads attributes around the normal rules (__getattribute__)",
    "f_back": "walks the call stack (frames)",
    "f_globals": "reads a frame's globals",
    "f_locals": "reads a frame's locals",
    "f_builtins": "reads a frame's builtins",
    "f_code": "reads a frame's code",
    "f_trace": "traces a frame",
    "tb_frame": "walks the call stack (traceback frames)",
    "tb_next": "walks the call stack (traceback frames)",
    "gi_frame": "reads a generator's frame",
    "cr_frame": "reads a coroutine's frame",
    "ag_frame": "reads a generator's frame",
}

FORBIDDEN_CALLS = {
    "exec": "runs code from a string (exec)",
    "eval": "runs code from a string (eval)",
    "compile": "compiles code from a string (compile)",
    "__import__": "uses the import system (__import__)",
    "breakpoint": "starts a debugger (breakpoint)",
    "globals": "reaches the notebook's namespace (globals())",
    "get_ipython": "reaches IPython's machinery (get_ipython)",
}

# IPython's input history holds the source of the test cells that ran.
HISTORY_NAMES = re.compile(r"^(In|Out|_ih|_oh|_dh|_i+|_i\d+|_\d+|__IPYTHON__)$")

SYS_READABLE = {
    "stdout", "stderr", "stdin", "version", "version_info", "float_info", "int_info", "maxsize",
    "platform", "byteorder", "getsizeof", "getrecursionlimit", "executable", "argv",
    "implementation", "hexversion", "exc_info", "exception", "getdefaultencoding",
    "getfilesystemencoding", "path", "float_repr_style",
    "setrecursionlimit",  # a deep recursive walk of a graph; too deep a recursion only crashes the student's own kernel
}
INSPECT_FRAMES = {"currentframe", "stack", "trace", "getouterframes", "getinnerframes", "getframeinfo"}
TORCH_LIBRARY_ALLOWED = {"custom_op", "register_fake", "register_autograd", "register_kernel", "opcheck", "triton_op"}
# IPython magics that only time, capture, install or display; others (%run, %load, %config,
# %history, ...) run unseen code, change IPython or print the test cells.
SAFE_MAGICS = {
    "time", "timeit", "matplotlib", "capture", "pip", "who", "whos", "who_ls", "precision", "pprint",
    "writefile", "prun", "pwd", "ls", "env", "pinfo", "pinfo2", "psearch", "pdoc", "pdef", "psource",
}
PARSED = 2048  # syntax trees a worker keeps for the next submissions
STRING_CODE = 100_000  # characters of a string the scan reads as code, at most
CODE_MAGICS = {"time", "timeit", "capture", "prun"}  # magics whose argument or body is Python code to check
# Methods no class of an answer may have: they run the class's code where the tests do not look.
SPECIAL_METHODS = {
    "__torch_function__": "overrides torch functions for its tensors (__torch_function__)",
    "__torch_dispatch__": "overrides torch operators for its tensors (__torch_dispatch__)",
    "__del__": "runs code outside its cell (__del__)",
    "_render_traceback_": "changes how IPython shows an error (_render_traceback_)",
}
# What the checks read of a tensor: a tensor subclass that redefines one can report what it is not.
TENSOR_READS = {
    "__eq__", "__ne__", "__bool__", "__float__", "__index__", "__int__", "__len__", "__iter__", "__getitem__",
    "tolist", "item", "allclose", "equal", "dtype", "shape", "size", "dim", "ndim", "numel", "device", "layout",
    "requires_grad", "grad", "grad_fn", "is_leaf", "data", "is_floating_point", "element_size", "itemsize", "nbytes",
    "untyped_storage", "storage", "stride", "is_contiguous", "detach", "clone", "to", "cpu", "double", "float",
}

# Modules other modules hold as attributes (``logging.threading``, ``torch.nn.functional.torch``): reached through
# them, they are still themselves. OWN_SUBMODULES: a package's own submodule of one of those names.
REEXPORTED = {name.split(".")[0] for name in FORBIDDEN_MODULES} | {"os", "sys", "inspect", "types", "torch"}
OWN_SUBMODULES = {"torch.signal", "scipy.signal", "torch.types", "numpy.typing"}
TORCH_PRIVATE_ALLOWED = {"_dynamo", "_logging"}  # private modules of torch's that the notebooks themselves use

# nn.Module's methods that tests read a model through: one set on a model object (``model.named_parameters = …``)
# would show the tests parts the model does not have.
MODULE_READS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
                          "modules", "named_modules", "state_dict", "get_parameter", "get_buffer", "get_submodule"})

# What one assignment teaches and so may use, though the scan holds it everywhere else. Notebook 09 teaches torch's
# modes: its answers subclass TorchFunctionMode and TorchDispatchMode, define __torch_function__ and
# __torch_dispatch__ on those subclasses, and enter them with ``with`` inside the answer's function. Only these exact
# names are let through (torch.utils._python_dispatch's other, private names, torch._C and the rest stay held), and
# each mode's own handler only in a class whose bases are that mode alone (a tensor subclass defining them is held).
# A mode that is left entered is caught as it runs: the runtime probe (kernel_probe) records how many modes are
# entered, around every test cell, and a checker reading a value while a mode is entered observes only that
# (hooklab.observations.encode), so it cannot change what the grader sees.
MODE_HANDLERS = {  # a mode class → the method its subclasses define
    "torch.overrides.TorchFunctionMode": "__torch_function__",
    "torch.utils._python_dispatch.TorchDispatchMode": "__torch_dispatch__",
}
MODES = frozenset({"torch.overrides", "torch.overrides.resolve_name", "torch.utils._python_dispatch", *MODE_HANDLERS})
ALLOWED = {"09_below_the_module": MODES}  # assignment → the dotted names its answers may use


def allowed_for(assignment: str) -> frozenset[str]:
    """The dotted names an assignment's answers may use that the scan holds elsewhere (:data:`ALLOWED`)."""
    return ALLOWED.get(assignment, frozenset())



def _package_modules(package: str) -> frozenset[str]:
    """The dotted names of a package's modules, from its files (nothing is imported)."""
    root = Path(importlib.util.find_spec(package).origin).parent
    names = {package}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        names.add(".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts))))
    return frozenset(names)


# hooklab's modules: a student's code names what it uses of them (hooklab.checks.check_tensor), never hands a module
# around (``[checks][0]``, ``(lambda m: m)(checks)``), where the scan would lose what it is.
HOOKLAB_MODULES = _package_modules("hooklab")
IMPORT_MODULE = ("importlib", "import_module")  # the one use of importlib a student may make, with a constant name
_transformer = TransformerManager()


@cache
def installed(module: str) -> bool:
    """Whether a top-level module is part of the grading environment (not a file of the submission)."""
    if module in sys.stdlib_module_names or module in sys.builtin_module_names:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _trees(sources: Iterable[str]) -> Iterator[ast.Module]:
    """The syntax trees of the sources that parse (a syntax error fails at run time, like any wrong answer)."""
    for source in sources:
        tree = _parse(source)
        if tree is not None:
            yield tree


def imports_of(sources: Iterable[str]) -> dict[str, str]:
    """Names the given cells bind by importing → the dotted path they come from."""
    bound: dict[str, str] = {}
    for tree in _trees(sources):
        for node in ast.walk(tree):
            for name, origin in _bindings(node):
                bound[name] = origin
    return bound


def definitions_of(sources: Iterable[str]) -> set[str]:
    """Names the given cells define with ``def`` or ``class`` at notebook level (Add, Model, ...)."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {node.name for tree in _trees(sources) for node in tree.body if isinstance(node, kinds)}


def names_loaded(sources: Iterable[str]) -> set[str]:
    """Every name the given code reads (the test cells: what an answer must not rebind)."""
    return {node.id for tree in _trees(sources) for node in ast.walk(tree) if isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)}


def scan(
    cells: Iterable[tuple[int, str]], given_imports: dict[str, str], test_names: set[str],
         given_definitions: Iterable[str] = (),
    allowed: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Findings in the student's code cells, given as (1-based cell number, source).

    ``given_imports`` are the names the notebook's own cells import (a student may import them
    again from the same place, not rebind them); ``test_names`` are the names test cells read;
    ``given_definitions`` the classes and functions the notebook defines (the tests build on them); ``allowed``
    the dotted names this assignment may use that are held elsewhere (:func:`allowed_for`).
    """
    protected = {name for name in test_names if hasattr(builtins, name)} | (set(given_definitions) & test_names)
    findings: list[Finding] = []
    imported = dict(given_imports)
    for number, source in cells:
        tree = _parse(source)
        if tree is None:
            continue  # a syntax error fails at run time, like any wrong answer
        checker = _Checker(imported, given_imports, protected, allowed)
        checker.visit(tree)
        findings += [Finding(number, line, technique) for line, technique in checker.found]
    return _unique(findings)


def _unique(findings: list[Finding]) -> list[Finding]:
    seen, kept = set(), []
    for finding in findings:
        if (finding.cell, finding.technique) not in seen:
            seen.add((finding.cell, finding.technique))
            kept.append(finding)
    return kept


@lru_cache(PARSED)  # a class's notebooks share most cells: given code, tests, unchanged answers
def _parse(source: str) -> ast.Module | None:
    """The syntax tree of a cell's source, with displays indexed by constants resolved, or None; callers only
    read it."""
    try:
        return _Unwrapped().visit(ast.parse(_transformer.transform_cell(source)))
    except (SyntaxError, ValueError):
        return None


class _Unwrapped(ast.NodeTransformer):
    """``[x][0]``, ``(a, x)[1]`` and ``{"k": x}["k"]`` read as the ``x`` they are, so that an object passed
    through a display is still tracked (``[sys][0].modules`` is ``sys.modules``)."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        found = None
        if (isinstance(node.value, (ast.List, ast.Tuple)) and type(key) is int
            and not any(isinstance(e, ast.Starred) for e in node.value.elts)):
            if -len(node.value.elts) <= key < len(node.value.elts):
                found = node.value.elts[key]
        elif isinstance(node.value, ast.Dict) and key is not None:
            found = next((v for k, v in zip(node.value.keys, node.value.values)
                          if isinstance(k, ast.Constant) and k.value == key), None)
        return ast.copy_location(found, node) if found is not None and isinstance(node.ctx, ast.Load) else node


@lru_cache(PARSED)
def _code_in(text: str) -> ast.Module | None:
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
def _code(source: str) -> str:
    """What a cell's source does, without its comments and layout: its syntax tree, or the text that does not parse."""
    tree = _parse(source)
    return source if tree is None else ast.dump(tree)


def _bindings(node: ast.AST) -> Iterator[tuple[str, str]]:
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


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` → ["a", "b", "c"]; None when the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _constant_text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _reached(dotted: str) -> Iterator[str]:
    """The dotted paths an attribute chain reaches: its own, and the path from each module it passes through that
    another module re-exports (``logging.threading.Thread`` is threading.Thread, ``F.torch._C`` is torch._C), also
    under a private alias (``collections._sys.modules`` is sys.modules)."""
    yield dotted
    parts = dotted.split(".")
    for position in range(1, len(parts)):
        name = parts[position].removeprefix("_")  # collections._sys, typing._sys: sys under a private alias
        if name in REEXPORTED and ".".join(parts[:position + 1]) not in OWN_SUBMODULES:
            yield ".".join([name, *parts[position + 1:]])


def _technique(dotted: str) -> str | None:
    """What reaching this dotted path does, when it is one of the techniques; None for ordinary code."""
    for prefix, technique in FORBIDDEN_MODULES.items():
        if dotted == prefix or dotted.startswith(prefix + "."):
            return technique
    parts = dotted.split(".")
    if len(parts) < 2:
        return None
    private = next((position for position, part in enumerate(parts) if position and _private(part)), None)
    if parts[0] == "torch" and private is not None:
        return f"reaches torch's internals ({'.'.join(parts[:private + 1])})"
    if dotted.startswith("torch.library.") and parts[2] not in TORCH_LIBRARY_ALLOWED:
        return "registers operator kernels (torch.library)"
    if parts[0] == "inspect" and parts[1] in INSPECT_FRAMES:
        return "walks the call stack (inspect)"
    if parts[0] == "inspect" and parts[1] not in INSPECT_ALLOWED:
        return f"reads objects' internals (inspect.{parts[1]})"
    if parts[0] == "os" and parts[1] in OS_DESCRIPTORS:
        return f"handles file descriptors (os.{parts[1]}), the kernel's connections among them"
    if parts[0] == "hooklab" and any(part.startswith("_") for part in parts[1:]):
        return f"reaches hooklab's internals ({dotted})"
    if parts[0] == "sys" and parts[1] not in SYS_READABLE:
        return f"uses the interpreter's machinery (sys.{parts[1]})"
    if parts[0] == "os" and parts[1].startswith(OS_PROCESSES):
        return f"runs code outside its cell (processes: os.{parts[1]})"
    if parts[0] == "types" and parts[1] in {"FunctionType", "CodeType", "ModuleType", "CellType", "LambdaType"}:
        return f"builds code or modules by hand (types.{parts[1]})"
    return None


def _private(name: str) -> bool:
    """A private name of torch's that no notebook needs (they use torch._dynamo, torch._logging, torch._foreach_*)."""
    return (name.startswith("_") and not name.startswith("__") and name not in TORCH_PRIVATE_ALLOWED
            and not name.startswith("_foreach_"))


class _Checker(ast.NodeVisitor):
    def __init__(self, imported: dict[str, str], given: dict[str, str], protected: set[str],
                 permitted: frozenset[str] = frozenset()) -> None:
        self.imported = imported  # grows with the student's own imports, across cells
        self.permitted = permitted  # dotted names this assignment may use (ALLOWED)
        self.given = given
        self.protected = protected  # builtins and the notebook's own classes and functions that tests use
        self.found: list[tuple[int, str]] = []
        self.depth = 0  # > 0 inside a function or class body
        self.called: set[int] = set()  # ids of the nodes called as functions (getattr(...), not getattr as a value)
        self.allowed: set[int] = set()  # ids of the nodes of importlib.import_module("name") calls, checked as imports
        self.bases: set[int] = set()  # ids of the nodes whose attribute is taken (``m`` in ``m.f``)
        self.globals: set[str] = set()

    def flag(self, node: ast.AST, technique: str) -> None:
        self.found.append((getattr(node, "lineno", 1), technique))

    # -- what a name or attribute chain refers to ------------------------------------------
    def origin(self, node: ast.AST) -> str | None:
        """The dotted module path an expression names (``F.linear`` → torch.nn.functional.linear)."""
        parts = _dotted(node)
        if parts is None or parts[0] not in self.imported:
            return None
        return ".".join([self.imported[parts[0]], *parts[1:]])

    def check_module(self, node: ast.AST, dotted: str) -> None:
        if dotted in self.permitted:
            return
        for path in reversed(list(_reached(dotted))):  # the module it is, before the path it was reached by
            technique = _technique(path)
            if technique:
                self.flag(node, technique)
                return

    def bind(self, node: ast.AST, name: str, origin: str | None = None) -> None:
        """A name bound at notebook level: it must not replace what the tests rely on."""
        if self.depth and name not in self.globals:
            return
        if name in self.given and origin != self.given[name]:
            self.flag(node, f"rebinds {name}, which the notebook imports from {self.given[name]}")
        elif name in self.protected:
            what = "the builtin" if hasattr(builtins, name) else "the notebook's"
            self.flag(node, f"rebinds {what} {name}, which the tests use")
        elif HISTORY_NAMES.match(name):
            self.flag(node, "changes IPython's input history")

    def mutate(self, node: ast.AST, target: ast.AST) -> None:
        """An attribute or item of ``target`` is set or deleted."""
        root = _root(target)
        if isinstance(target, ast.Attribute) and target.attr in {"__class__", "__bases__", "__dict__"}:
            self.flag(node, f"changes an object's {target.attr}")
            return
        if isinstance(root, ast.Name) and root.id in self.imported:
            if isinstance(target, ast.Subscript) and not self._through_dunder(target):
                origin = self.origin(target.value) or ""
                if origin.startswith("sys."):
                    self.flag(node, f"changes {origin}")
                return  # an item of a library object (plt.rcParams[...], os.environ[...])
            described = self.origin(target) or self.imported[root.id]
            self.flag(node, f"patches {described} (an imported module or class)")
        elif isinstance(root, ast.Name) and root.id == "__builtins__":
            self.flag(node, "changes the builtins")
        elif isinstance(target, ast.Attribute) and target.attr in MODULE_READS:
            self.flag(node, f"replaces {target.attr} on an object (the tests read a model's parts through it)")

    @staticmethod
    def _through_dunder(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr.startswith("__") for n in ast.walk(node))

    # -- statements -------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name != IMPORT_MODULE[0]:  # importlib itself: its uses are checked where it is used
                self.check_module(node, alias.name)
            self.check_installed(node, alias.name)
        for name, origin in _bindings(node):
            self.bind(node, name, origin)
            self.imported[name] = origin

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag(node, "imports a module from the submission folder (relative import)")
            return
        module = node.module or ""
        if not (module == IMPORT_MODULE[0] and all(alias.name == IMPORT_MODULE[1] for alias in node.names)):
            self.check_module(node, module)
        self.check_installed(node, module)
        for alias in node.names:
            if alias.name == "*":
                self.flag(node, f"imports every name of {module} (import *), which can replace names the tests use")
                continue
            if f"{module}.{alias.name}" != ".".join(IMPORT_MODULE):
                self.check_module(node, f"{module}.{alias.name}")
        for name, origin in _bindings(node):
            self.bind(node, name, origin)
            self.imported[name] = origin

    def check_installed(self, node: ast.AST, module: str) -> None:
        top = module.split(".")[0]
        if top and not installed(top):
            self.flag(node, f"imports {top}, which is not an installed module (a file of the submission?)")

    def visit_Global(self, node: ast.Global) -> None:
        self.globals |= set(node.names)

    def _scoped(self, node: ast.AST) -> None:
        self.depth += 1
        outer = self.globals
        self.globals = set()
        self.generic_visit(node)
        self.globals = outer
        self.depth -= 1

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.bind(node, node.name)
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.depth += 1
        outer = self.globals
        self.globals = set()
        self.visit(node.args)
        for statement in node.body:
            self.visit(statement)
        self.globals = outer
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 (ast.NodeVisitor's name for the method)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._scoped(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bind(node, node.name)
        methods = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        methods |= {t.id for item in node.body if isinstance(item, ast.Assign) for t in item.targets
                    if isinstance(t, ast.Name)}
        bases = {self.origin(base) or "" for base in node.bases}
        # a mode's own handler, where the assignment teaches modes: a class whose one base is that mode, no metaclass
        (only,) = bases if len(node.bases) == 1 and not node.keywords else (None,)
        mode_handler = MODE_HANDLERS.get(only) if only in self.permitted else None
        for method in sorted(methods & SPECIAL_METHODS.keys()):
            if method != mode_handler:
                self.flag(node, SPECIAL_METHODS[method])
        if any(base in {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"} for base in bases):
            for method in sorted(methods & TENSOR_READS):
                self.flag(node, f"a tensor subclass that redefines {method}")
        self._scoped(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.store(node, target)
        self.visit(node.value)
        origin = self.origin(node.value) or self._fetched(node.value)
        if origin is not None:  # an alias (t = torch, s = getattr(sys, "stdout")): changing it changes the library
            self.imported.update({target.id: origin for target in node.targets if isinstance(target, ast.Name)})

    def _imported_by_name(self, node: ast.AST) -> str | None:
        """The module ``importlib.import_module("name")`` imports (a constant name, no package), or None."""
        if not (isinstance(node, ast.Call) and self.origin(node.func) == ".".join(IMPORT_MODULE)
                and len(node.args) == 1 and not node.keywords):
            return None
        return _constant_text(node.args[0])

    def _fetched(self, node: ast.AST) -> str | None:
        """The dotted path ``getattr(module, "name")`` reaches, or ``importlib.import_module("name")`` imports, or
        None."""
        imported = self._imported_by_name(node)
        if imported is not None:
            return imported
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2):
            target, name = self.origin(node.args[0]), _constant_text(node.args[1])
            if target is not None and name is not None:
                return f"{target}.{name}"
        return None

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.store(node, node.target)
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.store(node, node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.store(node, node.target)
        self.visit(node.value)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.store(node, target)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.store(node, node.target)
        self.visit(node.iter)
        for statement in node.body + node.orelse:
            self.visit(statement)

    visit_AsyncFor = visit_For  # noqa: N815 (ast.NodeVisitor's name for the method)

    def visit_withitem(self, node: ast.withitem) -> None:
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self.store(node.context_expr, node.optional_vars)

    def store(self, node: ast.AST, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.bind(node, target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.store(node, element)
        elif isinstance(target, ast.Starred):
            self.store(node, target.value)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            self.mutate(node, target)
            self.visit(target)

    # -- expressions ------------------------------------------------------------------------
    def handed_around(self, node: ast.Name | ast.Attribute) -> None:
        """hooklab's module used as a value, not as the base of the name of what is used of it."""
        origin = self.origin(node)
        if origin in HOOKLAB_MODULES and id(node) not in self.bases and isinstance(node.ctx, ast.Load):
            self.flag(node, f"hands hooklab's module {origin} around (use what it holds by name: {origin}.<name>)")

    def visit_Name(self, node: ast.Name) -> None:
        self.handed_around(node)
        if self.imported.get(node.id) in {IMPORT_MODULE[0], ".".join(IMPORT_MODULE)} and id(node) not in self.allowed:
            self.flag(node, FORBIDDEN_MODULES[IMPORT_MODULE[0]])
        elif node.id in {"getattr", "setattr", "delattr"} and id(node) not in self.called:
            self.flag(node, f"passes {node.id} as a value (reaches attributes by computed names)")
        elif node.id == "__builtins__":
            self.flag(node, "reaches the builtins (__builtins__)")
        elif (node.id in {"__import__", "get_ipython"} or HISTORY_NAMES.match(node.id)
              and isinstance(node.ctx, ast.Load)):
            technique = FORBIDDEN_CALLS.get(node.id) or "reads IPython's input history (the test cells' source)"
            self.flag(node, technique)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value in FORBIDDEN_ATTRIBUTES:
            self.flag(node, f"names {node.value!r} ({FORBIDDEN_ATTRIBUTES[node.value]})")
        elif isinstance(node.value, str) and node.value in SPECIAL_METHODS:
            self.flag(node, f"names {node.value!r} ({SPECIAL_METHODS[node.value]})")
        elif isinstance(node.value, str):
            self.code_in_string(node, node.value)

    def code_in_string(self, node: ast.AST, text: str) -> None:
        """A string that is Python code (as timeit, doctest, a string annotation or a debugger would run it) is
        checked as code: the techniques it uses are the cell's."""
        tree = _code_in(text)
        if tree is None:
            return
        inner = _Checker(dict(self.imported), self.given, self.protected, self.permitted)
        inner.visit(tree)
        self.found += [(getattr(node, "lineno", 1), f"code in a string: {technique}") for _, technique in inner.found]

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.bases.add(id(node.value))
        self.handed_around(node)
        if id(node) in self.allowed:  # importlib.import_module("math"), checked as an import of math
            self.generic_visit(node)
            return
        if node.attr in FORBIDDEN_ATTRIBUTES and not self._super_setattr(node):
            self.flag(node, FORBIDDEN_ATTRIBUTES[node.attr])
        elif node.attr in SPECIAL_METHODS:  # given to a class after it is made
            self.flag(node, SPECIAL_METHODS[node.attr])
        elif node.attr == "__dict__":
            root = _root(node.value)
            if not isinstance(node.value, ast.Name) or (isinstance(root, ast.Name) and root.id in self.imported):
                self.flag(node, "reaches a module's or class's namespace (__dict__)")
        origin = self.origin(node)
        if origin is not None:
            self.check_module(node, origin)
        self.generic_visit(node)

    @staticmethod
    def _super_setattr(node: ast.Attribute) -> bool:
        value = node.value
        return (
            node.attr in {"__setattr__", "__delattr__", "__getattribute__"}
            and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"
        )

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        self.called.add(id(func))
        imported = self._imported_by_name(node)
        if imported is not None:  # importlib.import_module("math"): as `import math`
            self.allowed |= {id(func), id(_root(func))}
            self.check_module(node, imported)
            self.check_installed(node, imported)
        if (self.origin(func) or "").endswith(".DataLoader") and any(
                keyword.arg == "num_workers" and not (isinstance(keyword.value, ast.Constant)
                                                      and keyword.value.value == 0)
                for keyword in node.keywords):
            self.flag(node, "runs code outside its cell (a DataLoader's worker processes)")
        if isinstance(func, ast.Name):
            name = func.id
            if name in FORBIDDEN_CALLS and name != "get_ipython":
                self.flag(node, FORBIDDEN_CALLS[name])
            elif name in {"setattr", "delattr"} and node.args:
                attribute = _constant_text(node.args[1]) if len(node.args) > 1 else None
                self.mutate(node,
                            ast.Attribute(value=node.args[0], attr=attribute or "<computed name>", ctx=ast.Store()))
                self.check_attribute_name(node)
            elif name in {"getattr", "hasattr"} and node.args:
                self.check_attribute_name(node)
            elif name == "vars" and (not node.args or self.origin(node.args[0]) is not None):
                self.flag(node, "reaches a module's namespace (vars())")
        if self.magic(node):
            return
        self.generic_visit(node)

    def check_attribute_name(self, node: ast.Call) -> None:
        """getattr/setattr/delattr whose name spells a dangerous attribute, or is built at run time
        to reach into a system module."""
        if len(node.args) < 2:
            return
        name = node.args[1]
        text = _constant_text(name)
        fragments = [_constant_text(piece) for piece in sorted(  # in the order they are written
            (n for n in ast.walk(name) if _constant_text(n) is not None), key=lambda n: (n.lineno, n.col_offset))]
        for piece in [*fragments, *([] if text is not None else ["".join(fragments)])]:  # and the pieces put together
            if piece in FORBIDDEN_ATTRIBUTES or piece == "__dict__" or "__" in piece and text is None:
                self.flag(node, f"reaches {piece!r} by name ({FORBIDDEN_ATTRIBUTES.get(piece, 'a hidden attribute')})")
                return
        target = self.origin(node.args[0])
        if target is not None:
            if text is None:
                self.flag(node, f"reaches an attribute of {target} by a computed name")
            else:
                self.check_module(node, f"{target}.{text}")

    def magic(self, node: ast.Call) -> bool:
        """IPython's rewriting of ``%magic``, ``%%magic`` and ``!cmd``: True when handled here."""
        func = node.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "get_ipython"
            and not func.value.args
        ):
            if isinstance(func, ast.Name) and func.id == "get_ipython":
                self.flag(node, FORBIDDEN_CALLS["get_ipython"])
                return True
            return False
        if func.attr in {"system", "getoutput"}:
            return True  # a shell command: it cannot reach this interpreter
        args = [_constant_text(arg) for arg in node.args]
        if func.attr in {"run_line_magic", "run_cell_magic"} and args and args[0] is not None:
            magic = args[0].lstrip("%")
            if magic in SAFE_MAGICS:
                for code in args[1:] if magic in CODE_MAGICS else []:
                    if code:
                        self.nested(node, code)
                return True
            self.flag(node, f"uses the IPython magic %{magic}")
            return True
        self.flag(node, FORBIDDEN_CALLS["get_ipython"])
        return True

    def nested(self, node: ast.AST, code: str) -> None:
        tree = _parse(code)
        if tree is None:
            return
        inner = _Checker(self.imported, self.given, self.protected, self.permitted)
        inner.visit(tree)
        self.found += [(getattr(node, "lineno", 1), technique) for _, technique in inner.found]


class ScanSubmission(NbGraderPreprocessor):
    """nbgrader preprocessor (sanitising step): record the findings of :func:`scan` in the
    notebook's metadata, for the execution step to hold the notebook for review."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        source = source_notebook(self, resources)
        own = [c for c in source.cells if c.cell_type == "code" and not utils.is_solution(c)]
        given = tuple(c.source for c in own if not utils.is_grade(c))
        unchanged, imports, test_names, definitions = _given(given, tuple(c.source for c in own if utils.is_grade(c)))
        written = [
            (number, cell.source)
            for number, cell in enumerate(nb.cells, start=1)
            if cell.cell_type == "code"
            and (utils.is_solution(cell) or not (utils.is_grade(cell) or utils.is_locked(cell))
                 and _code(cell.source) not in unchanged)
        ]
        assignment = resources.get("nbgrader", {}).get("assignment", "")
        findings = scan(written, imports, test_names, definitions, allowed_for(assignment))
        notes = Notes.read(nb)
        notes.findings = [str(finding) for finding in findings]
        notes.write(nb)
        return nb, resources


@lru_cache(maxsize=16)  # the source's: the same for every submission of the class
def _given(given: tuple[str, ...], tests: tuple[str, ...]) -> tuple[frozenset[str], dict[str, str], frozenset[str],
                                                                    frozenset[str]]:
    """What a source notebook's own cells say for the scan: the code of its given cells (one with comments or
    spacing of the student's is still given), what they import (a test's own imports are its own: it imports
    them again as it runs), the names its tests read, and what the given cells define. Callers only read it."""
    return (frozenset(map(_code, given)), imports_of(given), frozenset(names_loaded(tests)),
            frozenset(definitions_of(given)))
