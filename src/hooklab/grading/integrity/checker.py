"""The ``ast`` visitor that walks one cell and notes each technique it uses: what its names and attribute chains
refer to, and what it binds, imports, patches, calls or hides in strings and magics."""

from __future__ import annotations

import ast
import builtins
import re

from hooklab.grading.integrity import rules, syntax
from hooklab.grading.integrity.magics import Magics
from hooklab.grading.integrity.rules import (
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_CALLS,
    FORBIDDEN_MODULES,
    HISTORY_NAMES,
    HOOKLAB_MODULES,
    IMPORT_MODULE,
    SPECIAL_METHODS,
    installed,
)

NO_OPERATORS = syntax.Operators()  # code that makes none


class Checker(Magics, ast.NodeVisitor):
    def __init__(self, imported: dict[str, str], given: dict[str, str], protected: set[str],
                 permitted: frozenset[str] = frozenset(), shown: frozenset[str] = frozenset(),
                 kept: frozenset[str] = frozenset(), bound: frozenset[str] = frozenset(),
                 unsure: frozenset[str] = frozenset(), operators: syntax.Operators = NO_OPERATORS) -> None:
        self.imported = imported  # grows with the student's own imports, across cells
        self.permitted = permitted  # dotted names this assignment may use (ALLOWED)
        self.given = given
        self.protected = protected  # builtins and the notebook's own classes and functions that tests use
        self.shown = shown  # rules.SHOWN_ONLY's functions the student's code never rebinds
        self.kept = kept  # rules.KEPT_BUILTINS's and LOOKUP_BUILTINS's builtins the student's code never rebinds
        self.bound = bound  # every name the student's code binds, in any cell and scope (syntax.bound_names)
        self.unsure = unsure  # names it binds otherwise than by one import (syntax.reimported)
        self.operators = operators  # the operators it makes with torch.library.custom_op (syntax.operators)
        self.found: list[tuple[int, str]] = []
        self.depth = 0  # > 0 inside a function or class body
        self.class_body = False  # directly in a class's body: a name bound there is the class's attribute
        self.called: set[int] = set()  # ids of the nodes called as functions (getattr(...), not getattr as a value)
        self.allowed: set[int] = set()  # ids of the nodes of importlib.import_module("name") calls, checked as imports
        self.lookups: set[int] = set()  # ids of getattr given to reduce or map, its names read (functional_lookup)
        self.bases: set[int] = set()  # ids of the nodes whose attribute is taken (``m`` in ``m.f``)
        self.getters: dict[str, set[int | str]] = {}  # function → its parameters a computed name is applied to
        self.holders: set[str] = set()  # names bound to a display of imported objects (``mods = [check_equal]``)
        self.env_reads: set[int] = set()  # ids of os.environ read where it is (an item, ``in``, dict(os.environ))
        self.globals: set[str] = set()
        self.annotation = False  # in a plain annotation (visit_annotation): it may name rules.ANNOTATION_TYPES
        self.annotated: set[int] = set()  # ids of the links of an attribute chain that names one of those

    def flag(self, node: ast.AST, technique: str) -> None:
        self.found.append((getattr(node, "lineno", 1), technique))

    # -- what a name or attribute chain refers to ------------------------------------------
    def origin(self, node: ast.AST) -> str | None:
        """The dotted module path an expression names (``F.linear`` → torch.nn.functional.linear)."""
        parts = syntax.dotted(node)
        if parts is None or parts[0] not in self.imported:
            return None
        return ".".join([self.imported[parts[0]], *parts[1:]])

    def names(self, node: ast.AST, dotted: str) -> bool:
        """Whether an expression names ``dotted`` (rules.METHODCALLER, ...): as imported, through a module that holds
        it (``typing.operator.attrgetter``), or from its C module (``_operator.attrgetter``)."""
        origin = self.origin(node)
        return origin is not None and any(path.removeprefix("_") == dotted for path in rules.reached(origin))

    def trusted(self, node: ast.AST, dotted: str) -> bool:
        """Whether an expression names ``dotted`` (as :meth:`names`) where a rule lets code through because it is that
        function (rules.REDUCE, rules.CONTAINER_CLASSES, importlib.import_module): not through a name the student's
        code also binds otherwise (``def reduce(...)``, a parameter ``reduce``), which could hold another function."""
        return self.names(node, dotted) and syntax.dotted(node)[0] not in self.unsure

    def builtin(self, name: str) -> bool:
        """Whether a name, called, is the builtin the scan reads it as (getattr, hasattr, setattr, delattr, super): the
        student's code binds it nowhere, in no cell or scope (def, assignment, import, parameter, loop, walrus, a code
        magic's body, a string annotation). Otherwise the call hands its arguments to a function of the answer's."""
        return name not in self.bound and name not in self.imported

    def check_module(self, node: ast.AST, dotted: str) -> None:
        if dotted in self.permitted:
            return
        for path in reversed(list(rules.reached(dotted))):  # the module it is, before the path it was reached by
            technique = rules.technique(path)
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

    def mutate(self, node: ast.AST, target: ast.AST, value: ast.AST | None = None) -> None:
        """An attribute or item of ``target`` is set (to ``value``, where it is known) or deleted."""
        root = syntax.root(target)
        if isinstance(target, ast.Attribute) and target.attr in {"__class__", "__bases__", "__dict__"}:
            self.flag(node, f"changes an object's {target.attr}")
            return
        if isinstance(target, ast.Subscript) and self.namespace(target.value):
            self.flag(node, "writes into an object's namespace (__dict__, vars())")
            return
        if isinstance(target, ast.Subscript) and self.environment(target.value):
            if not self.allowed_environment(target.slice, value):
                self.flag(node, rules.ENV_WRITE)
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
        elif isinstance(target, ast.Attribute) and target.attr in rules.MODULE_READS and not self._container(value):
            self.flag(node, f"replaces {target.attr} on an object (the tests read a model's parts through it)")

    def environment(self, node: ast.AST) -> bool:
        """Whether an expression names the process environment (rules.ENVIRON), as imported or through an alias."""
        return any(self.names(node, dotted) for dotted in rules.ENVIRON)

    def allowed_environment(self, key: ast.AST | None, value: ast.AST | None) -> bool:
        """Whether a write of the process environment is one the assignment may make (rules.ALLOWED: a constant key
        set to a constant value, as ``os.environ.<KEY>=<value>``)."""
        key_text, value_text = syntax.constant_text(key), syntax.constant_text(value)
        return (key_text is not None and value_text is not None
                and f"os.environ.{key_text}={value_text}" in self.permitted)

    def namespace(self, node: ast.AST | None) -> bool:
        """Whether ``node`` is an object's namespace, ``x.__dict__`` or ``vars(x)`` (the builtin): its items are the
        object's attributes, set there around the normal rules (a model's reading methods among them)."""
        if isinstance(node, ast.Attribute):
            return node.attr == "__dict__"
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars"
                and "vars" in self.kept and len(node.args) == 1)

    def _container(self, value: ast.AST | None) -> bool:
        """Whether a stored value is a plain container or constant, never callable: stored as ``modules`` (a recorder's
        list, ``tracker.modules = []``), it cannot stand in for a model's reading method, whose call then fails."""
        if isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp,
                              ast.GeneratorExp, ast.JoinedStr, ast.Constant)):
            return True
        if isinstance(value, ast.IfExp):
            return self._container(value.body) and self._container(value.orelse)
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Name) and func.id in rules.CONTAINERS and func.id in self.kept:
                return True
            return any(self.trusted(func, dotted) for dotted in rules.CONTAINER_CLASSES)
        return False

    @staticmethod
    def _through_dunder(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr.startswith("__") for n in ast.walk(node))

    # -- statements -------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name != IMPORT_MODULE[0]:  # importlib itself: its uses are checked where it is used
                self.check_module(node, alias.name)
            self.check_installed(node, alias.name)
        self._bind_imports(node)

    def _bind_imports(self, node: ast.Import | ast.ImportFrom) -> None:
        if self.class_body:  # the module would be the class's attribute (C.m), out of the imports' sight
            self.flag(node, "imports inside a class body (import at the notebook's level)")
        for name, origin in syntax.bindings(node):
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
            if alias.name in FORBIDDEN_ATTRIBUTES:  # from m import f_back, py_impl…: the attribute, by import
                self.flag(node, FORBIDDEN_ATTRIBUTES[alias.name])
            if f"{module}.{alias.name}" != ".".join(IMPORT_MODULE):
                self.check_module(node, f"{module}.{alias.name}")
        self._bind_imports(node)

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
        if self.getter_parameters(node):
            self.getters[node.name] = self.getter_parameters(node)
            self.imported_default(node)
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.depth += 1
        outer, in_class = self.globals, self.class_body
        self.globals, self.class_body = set(), False
        self.visit(node.args)
        if node.returns is not None:  # evaluated when the function is defined, as the arguments' annotations
            self.visit_annotation(node.returns)
        for statement in node.body:
            self.visit(statement)
        self.globals, self.class_body = outer, in_class
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 (ast.NodeVisitor's name for the method)

    def visit_arg(self, node: ast.arg) -> None:
        if node.annotation is not None:
            self.visit_annotation(node.annotation)

    def visit_annotation(self, node: ast.expr) -> None:
        """A parameter's, a return's or a variable's annotation. One that is plain (names, attributes, subscripts,
        ``|``, strings of those: a type, as written) may name a class of rules.ANNOTATION_TYPES; anything else in an
        annotation, a call among it, is checked as any code."""
        outer, self.annotation = self.annotation, _plain_annotation(node)
        self.visit(node)
        self.annotation = outer

    def names_annotation_type(self, node: ast.Attribute, origin: str) -> bool:
        """Whether an attribute chain in a plain annotation names a class of rules.ANNOTATION_TYPES, or is a link of
        one (``torch.futures`` in ``torch.futures.Future``). Not where the builtin getattr is rebound: the scan reads
        ``getattr(torch.futures, "Future")`` as ``torch.futures.Future`` (syntax.parse), and another getattr would
        be handed the module."""
        if id(node) in self.annotated:
            return True
        if not (self.annotation and "getattr" in self.kept
                and any(path in rules.ANNOTATION_TYPES for path in rules.reached(origin))):
            return False
        link = node.value
        while isinstance(link, ast.Attribute):
            self.annotated.add(id(link))
            link = link.value
        return True

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.imported_default(node)
        self._scoped(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bind(node, node.name)
        methods = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        methods |= {t.id for item in node.body if isinstance(item, ast.Assign) for t in item.targets
                    if isinstance(t, ast.Name)}
        bases = {self.origin(base) or "" for base in node.bases}
        # a mode's own handler, where the assignment teaches modes: a class whose one base is that mode, no metaclass
        (only,) = bases if len(node.bases) == 1 and not node.keywords else (None,)
        mode_handler = rules.MODE_HANDLERS.get(only) if only in self.permitted else None
        for method in sorted(methods & SPECIAL_METHODS.keys()):
            if method != mode_handler:
                self.flag(node, SPECIAL_METHODS[method])
        if any(base in {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"} for base in bases):
            for method in sorted(methods & rules.TENSOR_READS):
                self.flag(node, f"a tensor subclass that redefines {method}")
        outer, self.class_body = self.class_body, True
        self._scoped(node)
        self.class_body = outer

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.namespace(node.value):
            self.flag(node, "hands an object's namespace around (__dict__, vars()): read it where it is")
        for target in node.targets:
            self.store(node, target, node.value)
        if all(isinstance(target, ast.Name) for target in node.targets) and not self.class_body and (
                self.origin(node.value) not in HOOKLAB_MODULES):  # t = torch: an alias, followed by name
            self.bases.add(id(node.value))
        self.visit(node.value)
        self.hold(node.targets, node.value)
        origin = self.origin(node.value) or self._fetched(node.value)
        if origin is not None:  # an alias (t = torch, s = getattr(sys, "stdout")): changing it changes the library
            self.imported.update({target.id: origin for target in node.targets if isinstance(target, ast.Name)})

    def _imported_by_name(self, node: ast.AST) -> str | None:
        """The module ``importlib.import_module("name")`` imports (a constant name, no package), or None."""
        if not (isinstance(node, ast.Call) and self.origin(node.func) == ".".join(IMPORT_MODULE)
                and self.trusted(node.func, ".".join(IMPORT_MODULE)) and len(node.args) == 1 and not node.keywords):
            return None
        return syntax.constant_text(node.args[0])

    def _fetched(self, node: ast.AST) -> str | None:
        """The dotted path ``getattr(module, "name")`` reaches (``<computed>`` for the name of a function of a module
        of rules.CALLED_BY_NAME), or ``importlib.import_module("name")`` imports, or None."""
        imported = self._imported_by_name(node)
        if imported is not None:
            return imported
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and self.builtin("getattr") and len(node.args) >= 2):
            target, name = self.origin(node.args[0]), syntax.constant_text(node.args[1])
            if target is not None and name is not None:
                return f"{target}.{name}"
            if target in rules.CALLED_BY_NAME and _ends_with_underscore(node.args[1]):  # one of its functions, followed
                return f"{target}.<computed>"
        return None

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.store(node, node.target, node.value)  # ``+= [m]`` on a list leaves a list
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.store(node, node.target, node.value)
        self.visit_annotation(node.annotation)  # evaluated at notebook level
        if node.value is not None:
            self.visit(node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        if self.namespace(node.value):
            self.flag(node, "hands an object's namespace around (__dict__, vars()): read it where it is")
        self.store(node, node.target)
        self.visit(node.value)

    def visit_ExceptHandler(self, node: ast.ExceptHandler | ast.MatchAs | ast.MatchStar | ast.MatchMapping) -> None:
        name = getattr(node, "name", None) or getattr(node, "rest", None)  # except E as x, case x, [*x], {**x}
        if name:
            self.bind(node, name)
        self.generic_visit(node)

    visit_MatchAs = visit_MatchStar = visit_MatchMapping = visit_ExceptHandler  # noqa: N815 (ast.NodeVisitor's names)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.store(node, target)

    def hold(self, targets: list[ast.expr], value: ast.AST, iterated: bool = False) -> None:
        """Names bound to a display of imported objects (``mods = [check_equal]``), or to its items (``for f in mods``):
        a computed attribute name applied to them reaches a checker or a module (check_attribute_name)."""
        if iterated and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and self.builtin(
                value.func.id) and value.func.id in {"enumerate", "zip", "reversed", "sorted", "iter", "list", "tuple"}:
            value = ast.Tuple(elts=value.args, ctx=ast.Load())  # for i, f in enumerate(mods)
        if iterated and self.holds_imported(value) or self.display_of_imported(value):
            self.holders.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))

    def display_of_imported(self, node: ast.AST) -> bool:
        """Whether a list, tuple, set or dict display (or a container builtin's call on one) holds an object the
        notebook imported, a holder's items among them."""
        if isinstance(node, ast.Starred):
            node = node.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.kept:
            return any(map(self.display_of_imported, node.args))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return any(self.holds_imported(element) for element in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.holds_imported(element) for element in [*node.keys, *node.values] if element is not None)
        return False

    def holds_imported(self, node: ast.AST) -> bool:
        """Whether an expression is an object the notebook imported (a checker, a module), a holder, an item of one, or
        a display of such."""
        if isinstance(node, ast.Starred):
            node = node.value
        while isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.holders:
            return True
        return (isinstance(node, (ast.Name, ast.Attribute)) and self.origin(node) is not None
                or self.display_of_imported(node))

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.hold([node.target], node.iter, iterated=True)
        self.generic_visit(node)

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        """A comprehension's loops before its element, which reads what they bind."""
        for generator in node.generators:
            self.visit(generator)
        for element in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
            self.visit(element)

    visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp  # noqa: N815 (ast.NodeVisitor's names)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.hold([node.target], node.iter, iterated=True)
        self.store(node, node.target)
        self.visit(node.iter)
        for statement in node.body + node.orelse:
            self.visit(statement)

    visit_AsyncFor = visit_For  # noqa: N815 (ast.NodeVisitor's name for the method)

    def visit_withitem(self, node: ast.withitem) -> None:
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self.store(node.context_expr, node.optional_vars)

    def store(self, node: ast.AST, target: ast.AST, value: ast.AST | None = None) -> None:
        """``target`` is bound, set or deleted (to ``value``, where it is known)."""
        if isinstance(target, ast.Name):
            self.bind(node, target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            paired = (isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                      and not any(isinstance(e, ast.Starred) for e in [*target.elts, *value.elts]))
            for position, element in enumerate(target.elts):
                self.store(node, element, value.elts[position] if paired else None)
        elif isinstance(target, ast.Starred):
            self.store(node, target.value)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            self.mutate(node, target, value)
            self.visit(target)

    # -- expressions ------------------------------------------------------------------------
    def handed_around(self, node: ast.Name | ast.Attribute) -> None:
        """A module used as a value, not as the base of a name: the scan cannot follow it (``next(iter([sys]))``)."""
        origin = self.origin(node)
        if origin and id(node) not in self.bases and isinstance(node.ctx, ast.Load) and (
                origin in HOOKLAB_MODULES or any(map(rules.is_module, rules.reached(origin)))):
            self.flag_handed(node, origin)

    def environment_handed(self, node: ast.Name | ast.Attribute) -> None:
        """os.environ used as a value, not read where it is (an item, a reading method, ``in``, a builtin that shows or
        copies it): code the scan does not follow could write into it."""
        if (isinstance(node.ctx, ast.Load) and id(node) not in self.bases | self.env_reads
                and self.environment(node)):
            self.flag(node, "hands the process environment (os.environ) around: read it where it is")

    def flag_handed(self, node: ast.AST, module: str) -> None:
        whose = "hooklab's module" if module in HOOKLAB_MODULES else "the module"
        self.flag(node, f"hands {whose} {module} around (use what it holds by name: {module}.<name>)")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.env_reads.add(id(node.value))
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        self.env_reads.update(id(right) for op, right in zip(node.ops, node.comparators)
                              if isinstance(op, (ast.In, ast.NotIn)))
        imported = all(self.origin(operand) is not None and syntax.dotted(operand)[0] not in self.unsure
                       for operand in operands)  # == asks an operand's __eq__, an answer's object's one too
        if all(isinstance(op, (ast.Is, ast.IsNot)) or imported and isinstance(op, (ast.Eq, ast.NotEq))
               for op in node.ops):  # F is torch.nn.functional
            self.bases.update(map(id, operands))
        self.generic_visit(node)

    def methodcaller_as_a_value(self, node: ast.Name | ast.Attribute) -> None:
        """operator.methodcaller or attrgetter passed on rather than called (or aliased): the names it is given go
        unread."""
        callers = (rules.METHODCALLER, rules.ATTRGETTER, rules.PICKLE_LOADER)
        caller = next((dotted for dotted in callers if self.names(node, dotted)), None)
        if caller and id(node) not in self.called and id(node) not in self.bases and isinstance(node.ctx, ast.Load):
            does = {rules.METHODCALLER: "calls methods by computed names", rules.ATTRGETTER:
                    "reaches attributes by computed names", rules.PICKLE_LOADER: "unpickles what it is given"}[caller]
            self.flag(node, f"passes {caller} as a value ({does})")

    def library_function_handed(self, node: ast.Name | ast.Attribute) -> None:
        """torch.library's functions that make or register operators, used otherwise than called where they are named
        (``functools.partial(custom_op, "aten::x")``, a list of them): the scan reads their direct calls only."""
        function = (self.origin(node) or "").removeprefix("torch.library.")
        if (function in rules.TORCH_LIBRARY_REGISTERS | rules.TORCH_LIBRARY_MAKERS | {rules.TORCH_LIBRARY_CLASS}
                and id(node) not in self.called):
            self.flag(node, f"hands torch.library.{function} around: call it where the operator is made or its "
                            "kernel registered")

    def visit_Name(self, node: ast.Name) -> None:
        self.library_function_handed(node)
        self.handed_around(node)
        self.environment_handed(node)
        self.methodcaller_as_a_value(node)
        if self.imported.get(node.id) in {IMPORT_MODULE[0], ".".join(IMPORT_MODULE)} and id(node) not in self.allowed:
            self.flag(node, FORBIDDEN_MODULES[IMPORT_MODULE[0]])
        elif node.id in {"getattr", "setattr", "delattr"} and id(node) not in self.called | self.lookups:
            self.flag(node, f"passes {node.id} as a value (reaches attributes by computed names)")
        elif (node.id in {"globals", "vars", "eval", "exec", "compile"} and node.id not in self.imported
              and id(node) not in self.called and isinstance(node.ctx, ast.Load)):
            self.flag(node, f"passes {node.id} as a value (the scan cannot follow what it reaches)")
        elif node.id == "__builtins__":
            self.flag(node, "reaches the builtins (__builtins__)")
        elif node.id == "__annotations__":  # a class's or the notebook's, written into by name
            self.flag(node, FORBIDDEN_ATTRIBUTES[node.id])
        elif (node.id in {"__import__", "get_ipython"} or HISTORY_NAMES.match(node.id)
              and isinstance(node.ctx, ast.Load)):
            technique = FORBIDDEN_CALLS.get(node.id) or "reads IPython's input history (the test cells' source)"
            self.flag(node, technique)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, bytes):  # a name spelled in bytes, b"__globals__".decode(): read as its text
            node = ast.Constant(syntax.constant_text(node), lineno=node.lineno, col_offset=node.col_offset)
        if isinstance(node.value, str) and rules.PROCESS_FILES.match(node.value):
            self.flag(node, f"reads the process's own files ({node.value[:24]!r}), its connections among them")
        elif isinstance(node.value, str) and node.value in FORBIDDEN_ATTRIBUTES:
            self.flag(node, f"names {node.value!r} ({FORBIDDEN_ATTRIBUTES[node.value]})")
        elif isinstance(node.value, str) and node.value in SPECIAL_METHODS:
            self.flag(node, f"names {node.value!r} ({SPECIAL_METHODS[node.value]})")
        elif isinstance(node.value, str) and node.value.startswith(rules.GRADER_MODULES):
            self.flag(node, f"names the grader's module {node.value!r}")
        elif isinstance(node.value, str):
            self.code_in_string(node, node.value)

    def code_in_string(self, node: ast.AST, text: str) -> None:
        """A string that is Python code (as timeit, doctest, a string annotation or a debugger would run it) is
        checked as code: the techniques it uses are the cell's. One in a plain annotation is read as an annotation
        (``inspect.signature(f, eval_str=True)`` and functools.singledispatch's register evaluate it): what it names
        (``"sys"``: the module, read back as a value) and binds (``"(getattr := mine)"``) among it."""
        annotation = syntax.expression_in(text) if self.annotation else None
        if annotation is not None:
            plain = _plain_annotation(annotation.body)  # "torch.futures.Future": one plain expression, no binding
            inner = Checker(dict(self.imported), self.given, self.protected, self.permitted,
                            kept=self.kept if plain else frozenset(), bound=self.bound, unsure=self.unsure)
            inner.visit_annotation(annotation.body)
        else:
            tree = syntax.code_in(text)
            if tree is None:
                return
            inner = Checker(dict(self.imported), self.given, self.protected, self.permitted, bound=self.bound,
                            unsure=self.unsure)
            inner.visit(tree)
        self.found += [(getattr(node, "lineno", 1), f"code in a string: {technique}") for _, technique in inner.found]

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.library_function_handed(node)
        if isinstance(node.value, ast.Name) and node.value.id in self.operators.made and node.attr.startswith("_"):
            # its library (_lib) registers kernels for any operator of its namespace; destroyed, it takes them away
            self.flag(node, f"reaches its custom operator's internals ({node.attr}: torch.library)")
        self.bases.add(id(node.value))
        self.handed_around(node)
        self.environment_handed(node)
        self.methodcaller_as_a_value(node)
        if id(node) in self.allowed:  # importlib.import_module("math"), checked as an import of math
            self.generic_visit(node)
            return
        if node.attr in FORBIDDEN_ATTRIBUTES and not self._super_setattr(node):
            self.flag(node, FORBIDDEN_ATTRIBUTES[node.attr])
        elif node.attr in SPECIAL_METHODS:  # given to a class after it is made
            self.flag(node, SPECIAL_METHODS[node.attr])
        elif node.attr == "__dict__":
            root = syntax.root(node.value)
            if not isinstance(node.value, ast.Name) or (isinstance(root, ast.Name) and root.id in self.imported):
                self.flag(node, "reaches a module's or class's namespace (__dict__)")
        origin = self.origin(node)
        if origin is not None and not self.names_annotation_type(node, origin):
            self.check_module(node, origin)
        self.generic_visit(node)

    def _super_setattr(self, node: ast.Attribute) -> bool:
        value = node.value
        return (
            node.attr in {"__setattr__", "__delattr__", "__getattribute__"}
            and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"
            and self.builtin("super")
            and (not value.args or len(value.args) == 2 and isinstance(value.args[1], ast.Name)
                 and value.args[1].id == "self")
        )

    def weakref_callback(self, node: ast.Call) -> None:
        """A callback run when an object is freed (rules.WEAKREF_CALLBACKS) other than a container's method that forgets
        an entry (``cache.pop``): held."""
        callbacks = [*node.args[1:2], *(k.value for k in node.keywords if k.arg in {"callback", "func", None})]
        unread = any(isinstance(argument, ast.Starred) for argument in node.args[:2])
        if unread or any(not (isinstance(callback, ast.Attribute) and callback.attr in rules.FORGETTING_METHODS
                              and isinstance(callback.value, ast.Name)) for callback in callbacks):
            self.flag(node, "runs code outside its cell (a callback run when an object is freed: weakref)")

    def check_registered_operator(self, node: ast.Call) -> None:
        """torch.library.register_kernel(op, …) and its siblings: ``op`` must be the answer's own operator, the name of
        a custom_op it made or a "namespace::name" string outside torch's namespaces; one of torch's would run the
        answer's code inside every use of that operator, the tests' own included. No library of the answer's choosing
        (``lib=``, or keywords unpacked from a dict)."""
        target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in {"op", "qualname"}),
                                                     None)
        if any(keyword.arg in {None, "lib"} for keyword in node.keywords):
            self.flag(node, "registers a kernel in a library of its choosing (torch.library's lib=): register it "
                            "for its own operator, without lib=")
        if isinstance(target, ast.Name) and target.id in self.operators.made:
            return
        if not self.own_operator_name(target):
            self.flag(node, "registers a kernel for an operator that is not its own (torch.library): only for an "
                            "operator it made (with torch.library.custom_op, or named \"yourlib::name\")")

    def check_made_operator(self, node: ast.Call) -> None:
        """torch.library.custom_op("namespace::name", …): the operator's name written out, in a namespace of the
        answer's own; in one of torch's, the operator's library would register kernels there."""
        name = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
        if not self.own_operator_name(name) or any(keyword.arg is None for keyword in node.keywords):
            self.flag(node, "makes an operator in torch's namespace or under a name not written out "
                            "(torch.library.custom_op): name it \"yourlib::name\"")

    def check_made_library(self, node: ast.Call) -> None:
        """torch.library.Library("namespace", kind): a library for a namespace of the answer's own, written out; one
        for torch's namespaces, or "_" (every namespace), registers kernels inside operators the tests run."""
        space = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "ns"), None)
        text = self.constant(space)
        if (text is None or "::" in text or text == "_" or text.split(".")[0] in rules.TORCH_NAMESPACES
                or any(keyword.arg is None for keyword in node.keywords)):
            self.flag(node, "makes a library for torch's operators or for a namespace not written out "
                            "(torch.library.Library): make it for a namespace of its own, \"yourlib\"")

    def constant(self, node: ast.AST | None) -> str | None:
        """The text ``node`` holds where it is a constant string written there or a name bound once to one; for an
        f-string, its text up to the first value put in."""
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        return (self.operators.texts.get(node.id) if isinstance(node, ast.Name)
                else syntax.constant_text(node) if node is not None else None)

    def own_operator_name(self, node: ast.AST | None) -> bool:
        """Whether ``node`` is a constant "namespace::name" outside torch's own namespaces (written there, a name
        bound once to it, or an f-string whose namespace is written out)."""
        text = self.constant(node)
        return text is not None and "::" in text and text.partition("::")[0].split(".")[0] not in rules.TORCH_NAMESPACES

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        self.called.add(id(func))
        imported = self._imported_by_name(node)
        if imported is not None:  # importlib.import_module("math"): as `import math`, but not handed around
            self.allowed |= {id(func), id(syntax.root(func))}
            if id(node) not in self.bases and rules.is_module(imported):
                self.flag_handed(node, imported)
            self.check_module(node, imported)
            self.check_installed(node, imported)
        if isinstance(func, ast.Attribute) and func.attr in rules.DICT_WRITES and self.namespace(func.value):
            self.flag(node, "writes into an object's namespace (__dict__, vars())")
        shown = isinstance(func, ast.Name) and func.id in self.shown | (self.kept & rules.KEPT_BUILTINS)
        if shown and not node.keywords:  # print(os.environ), dict(os.environ): shown or copied, not handed on
            self.env_reads.update(map(id, node.args))
        if (isinstance(func, ast.Attribute) and func.attr == "setdefault" and self.environment(func.value)
                and len(node.args) == 2 and not node.keywords and self.allowed_environment(*node.args)):
            self.allowed.add(id(func))  # rules.ALLOWED's write, os.environ.setdefault("KEY", "value")
        if not shown and any(self.namespace(argument) for argument in [*node.args, *(k.value for k in node.keywords)]):
            self.flag(node, "hands an object's namespace around (__dict__, vars()): read it where it is")
        if (self.origin(func) or "").endswith(".DataLoader") and any(
                keyword.arg == "num_workers" and not (isinstance(keyword.value, ast.Constant)
                                                      and keyword.value.value == 0)
                for keyword in node.keywords):
            self.flag(node, "runs code outside its cell (a DataLoader's worker processes)")
        if any(self.names(func, dotted) for dotted in rules.WEAKREF_CALLBACKS):
            self.weakref_callback(node)
        library_function = (self.origin(func) or "").removeprefix("torch.library.")
        if library_function in rules.TORCH_LIBRARY_REGISTERS:
            self.check_registered_operator(node)
        elif library_function in rules.TORCH_LIBRARY_MAKERS:
            self.check_made_operator(node)
        elif library_function == rules.TORCH_LIBRARY_CLASS:
            self.check_made_library(node)
        self.check_unpickling(node)
        for keyword in node.keywords:
            if keyword.arg in rules.FORBIDDEN_KEYWORDS:
                self.flag(node, rules.FORBIDDEN_KEYWORDS[keyword.arg])
            elif keyword.arg in SPECIAL_METHODS:  # type("T", bases, dict(__torch_function__=f)): a class's method
                self.flag(node, SPECIAL_METHODS[keyword.arg])
        opener = func.id if isinstance(func, ast.Name) and func.id not in self.imported else self.origin(func)
        if opener in rules.OPENERS and node.args and not _may_be_a_path(node.args[0]):
            self.flag(node, f"opens a file descriptor by its number ({opener}), the kernel's connections among them")
        if isinstance(func, ast.Name):
            name = func.id
            if name in self.shown and self.only_shows(node):  # print(torch), dir(F): a module shown, not handed on
                self.bases.update(map(id, node.args))
            if name in FORBIDDEN_CALLS and name != "get_ipython" and not (name == "locals" and self.snapshot(name)):
                self.flag(node, FORBIDDEN_CALLS[name])
            elif name in {"setattr", "delattr"} and node.args and self.builtin(name):
                attribute = syntax.constant_text(node.args[1]) if len(node.args) > 1 else None
                self.mutate(node,
                            ast.Attribute(value=node.args[0], attr=attribute or "<computed name>", ctx=ast.Store()),
                            node.args[2] if name == "setattr" and len(node.args) == 3 else None)
                self.check_attribute_name(node)
            elif name in {"getattr", "hasattr"} and node.args and self.builtin(name):
                self.check_attribute_name(node)
            if name in {"getattr", "hasattr", "setattr", "delattr"} and node.args and self.builtin(name):  # m.x
                self.bases.add(id(node.args[0]))
            elif name == "vars" and (node.args and self.origin(node.args[0]) is not None
                                     or not node.args and not self.snapshot(name)):
                self.flag(node, "reaches a module's namespace (vars())")
        if self.names(func, rules.METHODCALLER) and (node.args or node.keywords):
            self.check_method_name(node, node.args[0] if node.args else None)
            self.kept_getter(node, node.args[:1], "operator.methodcaller")
        self.functional_lookup(node)
        self.imported_to_getter(node)
        if self.magic(node):
            return
        self.generic_visit(node)

    def check_unpickling(self, node: ast.Call) -> None:
        """A load that unpickles: any call given ``weights_only`` other than a written True, ``allow_pickle`` other than
        False (numpy.load) or a ``pickle_module``; torch.load (rules.PICKLE_LOADER) given a third positional argument
        (its pickle_module) or options the scan cannot read (``*args``, ``**options``). A plain ``torch.load(x)`` loads
        weights only (the default of the pack's torch, which only the environment, held, can change)."""
        given = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
        weights_only = given.get("weights_only")
        safe = weights_only is None or isinstance(weights_only, ast.Constant) and weights_only.value is True
        allow_pickle = given.get("allow_pickle")
        if not safe:
            self.flag(node, "runs code hidden in data (weights_only other than True unpickles)")
        if self.names(node.func, rules.PICKLE_LOADER) and (
                len(node.args) > 2 or any(isinstance(a, ast.Starred) for a in node.args)
                or any(keyword.arg is None for keyword in node.keywords)):
            self.flag(node, "runs code hidden in data (torch.load given a pickle_module or options the scan cannot "
                            "read)")
        if allow_pickle is not None and not (isinstance(allow_pickle, ast.Constant) and allow_pickle.value is False):
            self.flag(node, "runs code hidden in data (allow_pickle: a pickle)")
        if "pickle_module" in given:
            self.flag(node, "runs code hidden in data (pickle_module)")

    def only_shows(self, node: ast.Call) -> bool:
        """Whether a call of rules.SHOWN_ONLY's builtin runs no code of the answer's with its arguments: ``type`` given
        one (given three, it makes a class, whose metaclass, the answer's, is handed them), ``isinstance`` given
        classes that are no answer's (a metaclass's ``__instancecheck__`` is handed the object)."""
        name = node.func.id
        if name == "type":
            return len(node.args) == 1 and not node.keywords
        if name == "isinstance":
            return len(node.args) == 2 and not node.keywords and self.no_answers_class(node.args[1])
        return True

    def no_answers_class(self, classes: ast.expr) -> bool:
        """Whether an isinstance's classes are all imported or builtin ones, none the answer's (nor a name it binds)."""
        if isinstance(classes, ast.Tuple):
            return all(map(self.no_answers_class, classes.elts))
        parts = syntax.dotted(classes)
        if parts is None:
            return False
        if self.origin(classes) is not None:
            return parts[0] not in self.unsure
        return len(parts) == 1 and hasattr(builtins, parts[0]) and self.builtin(parts[0])

    def snapshot(self, name: str) -> bool:
        """Whether ``locals()`` or ``vars()`` (the builtin, never rebound) is called in the body of a def or lambda, not
        in a class body: a snapshot of the function's own variables there, and writing to it changes none of them."""
        return name in self.kept and bool(self.depth) and not self.class_body

    def hidden_name(self, node: ast.AST, name: ast.AST) -> bool:
        """Whether an attribute name given as a value spells a dangerous attribute, written or built at run time
        (flagged)."""
        text = syntax.constant_text(name)
        coded = [node for node in ast.walk(name) if isinstance(node, ast.Call) and (
            isinstance(node.func, ast.Name) and node.func.id == "chr"
            or isinstance(node.func, ast.Attribute) and node.func.attr in {"translate", "fromhex", "maketrans"})]
        if text is None and coded:
            self.flag(node, "builds an attribute name from character codes (chr, translate)")
            return True
        fragments = [syntax.constant_text(piece) for piece in sorted(  # in the order they are written
            (n for n in ast.walk(name) if syntax.constant_text(n) is not None), key=lambda n: (n.lineno, n.col_offset))]
        for piece in [*fragments, *([] if text is not None else ["".join(fragments)])]:  # and the pieces put together
            variants = {piece, piece[::-1], re.sub(r"%[sr]|\{[^}]*\}", "", piece)}  # reversed, a format's holes out
            hidden = text is None and ("__" in piece or any(f"__{variant.strip('_')}__" in FORBIDDEN_ATTRIBUTES
                                                            for variant in variants))  # '_'*2
            if piece in FORBIDDEN_ATTRIBUTES or piece == "__dict__" or hidden:
                self.flag(node, f"reaches {piece!r} by name ({FORBIDDEN_ATTRIBUTES.get(piece, 'a hidden attribute')})")
                return True
        value = None if text is not None else syntax.folded(name, frozenset(filter(self.builtin, syntax.FOLDING)))
        value = value.decode("latin-1") if isinstance(value, bytes) else value
        for part in value.split(".") if isinstance(value, str) else ():  # built from constants: "slabolg"[::-1]...
            if part in FORBIDDEN_ATTRIBUTES or part in SPECIAL_METHODS or "__" in part:
                what = FORBIDDEN_ATTRIBUTES.get(part) or SPECIAL_METHODS.get(part) or "a hidden attribute"
                self.flag(node, f"reaches {part!r} by a name built from constants ({what})")
                return True
        return False

    def check_method_name(self, node: ast.Call, name: ast.AST | None) -> None:
        """``operator.methodcaller(name, ...)``: read as ``obj.name(...)``, its name as an attribute's."""
        if name is None or isinstance(name, ast.Starred):
            self.flag(node, "calls methods by names it is not given (operator.methodcaller)")
        elif not self.hidden_name(node, name) and syntax.constant_text(name) in SPECIAL_METHODS:
            self.flag(node, SPECIAL_METHODS[syntax.constant_text(name)])

    def functional_lookup(self, node: ast.Call) -> None:
        """The functional spellings of a getattr loop (rules.ATTRGETTER, REDUCE, ``map(getattr, objs, names)``), read as
        ``getattr(obj, name)`` is: their names as an attribute's (no dangerous attribute, no hidden dunder), and held
        where they reach an object the notebook imported or are given names they do not show (``*names``)."""
        func, args = node.func, node.args
        plain = len(args) == 3 and not node.keywords and not any(isinstance(a, ast.Starred) for a in args)
        given_getattr = (plain and isinstance(args[0], ast.Name) and args[0].id == "getattr"
                         and "getattr" in self.kept and "getattr" not in self.imported)
        passed = "passes getattr as a value (reaches attributes by computed names)"
        if given_getattr and self.trusted(func, rules.REDUCE):  # reduce(getattr, names, obj)
            self.lookups.add(id(args[0]))
            self.read_names(node, args[1])
            self.imported_reached(node, args[2], passed)
        elif (given_getattr and isinstance(func, ast.Name) and func.id == "map" and "map" in self.kept
              and "map" not in self.imported):
            self.lookups.add(id(args[0]))  # map(getattr, objs, names)
            self.read_names(node, args[2])
            self.imported_reached(node, args[1], passed)
        elif self.names(func, rules.ATTRGETTER):  # attrgetter(name, ...): a dotted name is a chain of getattr
            if any(isinstance(a, ast.Starred) for a in args) or node.keywords:
                self.flag(node, "reaches attributes by names it is not given (operator.attrgetter)")
            for name in args:
                self.read_name(node, name)
            self.kept_getter(node, args, "operator.attrgetter")
        elif isinstance(func, ast.Call) and self.names(func.func, rules.ATTRGETTER):  # attrgetter(...)(obj)
            for argument in [*args, *(k.value for k in node.keywords)]:
                self.imported_reached(node, argument, "reaches attributes by computed names (operator.attrgetter)")

    def kept_getter(self, node: ast.Call, names: list[ast.expr], getter: str) -> None:
        """An attrgetter or methodcaller that is not applied at once (``attrgetter(n)(obj)``) but handed to map, sorted,
        a key= or a variable can be applied to anything, the checkers among them: its names must be written constants
        (read as an attribute's name is); a computed one is held."""
        if id(node) not in self.called and not all(syntax.constant_text(name) is not None for name in names):
            self.flag(node, f"keeps {getter} with a computed name (applied later, to any object, the checkers among "
                            "them)")

    def getter_parameters(self, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[int | str]:
        """The parameters (by position and name) of a def or lambda that a computed attribute name is applied to in its
        body: ``getattr(o, name)`` or ``operator.attrgetter(name)(o)`` with a name not written (hasattr only answers yes
        or no, as check_attribute_name reads it)."""
        arguments = function.args
        parameters = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
        named = set(parameters) | {a.arg for a in arguments.kwonlyargs}
        found: set[int | str] = set()
        body = function.body if isinstance(function.body, list) else [function.body]
        for call in (n for statement in body for n in ast.walk(statement) if isinstance(n, ast.Call)):
            if (isinstance(call.func, ast.Name) and call.func.id == "getattr"
                    and self.builtin(call.func.id) and len(call.args) >= 2
                    and syntax.constant_text(call.args[1]) is None):
                reached = [call.args[0]]
            elif (isinstance(call.func, ast.Call) and self.names(call.func.func, rules.ATTRGETTER)
                  and not all(syntax.constant_text(a) is not None for a in call.func.args)):
                reached = list(call.args)
            else:
                continue
            for target in reached:
                root = syntax.root(target)
                if isinstance(root, ast.Name) and root.id in named:
                    found.add(root.id)
                    if root.id in parameters:
                        found.add(parameters.index(root.id))
        return found

    def imported_default(self, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        """A parameter a computed attribute name is applied to whose default is an imported object (a checker):
        ``def f(n, o=check_equal): return getattr(o, n)``."""
        arguments, getter = function.args, self.getter_parameters(function)
        positional = [*arguments.posonlyargs, *arguments.args]
        pairs = [*zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults),
                 *((a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None)]
        if any(a.arg in getter and self.holds_imported(default) for a, default in pairs):
            self.flag(function, "hands an imported object (a checker) to a function that reaches its attributes by a "
                                "computed name")

    def imported_to_getter(self, node: ast.Call) -> None:
        """An imported object (a checker), or a container of them, handed to a function of the answer's that applies a
        computed attribute name to that parameter: ``f(check_equal)`` with ``def f(o): return getattr(o, n)``, and
        ``map``/``filter``/``sorted``/``min``/``max`` given such a function or lambda and such objects."""
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.getters and func.id not in self.imported:
            getter = self.getters[func.id]
            handed = [a for i, a in enumerate(node.args) if i in getter or isinstance(a, ast.Starred)]
            handed += [k.value for k in node.keywords if k.arg is None or k.arg in getter]
            if any(self.holds_imported(argument) for argument in handed):
                self.flag(node, "hands an imported object (a checker) to a function that reaches its attributes by a "
                                "computed name")
            return
        if not (isinstance(func, ast.Name) and func.id in {"map", "filter", "sorted", "min", "max"}
                and self.builtin(func.id)):
            return
        functions = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "key")]
        applies = any(isinstance(f, ast.Lambda) and 0 in self.getter_parameters(f)
                      or isinstance(f, ast.Name) and 0 in self.getters.get(f.id, ()) for f in functions)
        if applies and any(self.holds_imported(argument) for argument in node.args[1:] or node.args):
            self.flag(node, "hands an imported object (a checker) to a function that reaches its attributes by a "
                            "computed name")

    def read_names(self, node: ast.Call, names: ast.AST) -> None:
        """The names a functional lookup is given: each of a display's, or the pieces of what builds them."""
        if isinstance(names, (ast.List, ast.Tuple, ast.Set)) and not any(isinstance(e, ast.Starred)
                                                                         for e in names.elts):
            for name in names.elts:
                self.read_name(node, name)
        else:
            self.read_name(node, names)

    def read_name(self, node: ast.Call, name: ast.AST) -> None:
        """One attribute name (dotted, as attrgetter reads it), checked as getattr's is."""
        if self.hidden_name(node, name):
            return
        for part in (syntax.constant_text(name) or "").split("."):
            if part in FORBIDDEN_ATTRIBUTES or part == "__dict__" or part in SPECIAL_METHODS:
                what = FORBIDDEN_ATTRIBUTES.get(part) or SPECIAL_METHODS.get(part) or "an object's namespace"
                self.flag(node, f"reaches {part!r} by name ({what})")
                return

    def imported_reached(self, node: ast.Call, objects: ast.AST, technique: str) -> None:
        """Held where the objects a functional lookup reads from name something the notebook imported (a module, a
        checker): the scan cannot read the names it reaches there."""
        inner = list(ast.walk(objects))
        skipped = {id(n.func) for n in inner if isinstance(n, ast.Call)} | {
            id(n.value) for n in inner if isinstance(n, ast.Attribute)}
        if any(isinstance(n, (ast.Name, ast.Attribute)) and id(n) not in skipped
               and (self.origin(n) is not None or isinstance(n, ast.Name) and n.id in self.holders) for n in inner):
            self.flag(node, technique)

    def check_attribute_name(self, node: ast.Call) -> None:
        """getattr/setattr/delattr whose name spells a dangerous attribute, or is built at run time
        to reach into a system module."""
        if len(node.args) < 2:
            return
        name = node.args[1]
        text = syntax.constant_text(name)
        if self.hidden_name(node, name):
            return
        target = self.origin(node.args[0])
        if target is None and text is None and self.holds_imported(node.args[0]):  # getattr(mods[0], n)
            self.flag(node, "reaches an attribute of an imported object (a checker, a module) kept in a container by a "
                            "computed name")
        if target is not None:
            if text is None and not self._fetched_to_call(node, target, name):
                self.flag(node, f"reaches an attribute of {target} by a computed name")
            elif text is not None:
                self.check_module(node, f"{target}.{text}")

    def _fetched_to_call(self, node: ast.Call, target: str, name: ast.AST) -> bool:
        """A computed name that can only give a function: ``hasattr`` (a yes or no), or ``getattr`` on a module of
        rules.CALLED_BY_NAME whose result is called at once or whose name ends in a written "_"."""
        if isinstance(node.func, ast.Name) and node.func.id == "hasattr":
            return True
        return target in rules.CALLED_BY_NAME and (id(node) in self.called or _ends_with_underscore(name))


def _ends_with_underscore(name: ast.AST) -> bool:
    """Whether a name built at run time ends in a written "_": ``f"{kind}_"``, ``kind + "_"``, ``"%s_" % kind``,
    ``"{}_".format(kind)``."""
    if isinstance(name, ast.JoinedStr):
        return bool(name.values) and (syntax.constant_text(name.values[-1]) or "").endswith("_")
    if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Add):
        return _ends_with_underscore(name.right) or (syntax.constant_text(name.right) or "").endswith("_")
    if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Mod):
        return (syntax.constant_text(name.left) or "").endswith("_")
    if isinstance(name, ast.Call) and isinstance(name.func, ast.Attribute) and name.func.attr == "format":
        return (syntax.constant_text(name.func.value) or "").endswith("_")
    return False


def _plain_annotation(node: ast.expr) -> bool:
    """Whether an annotation only names a type, as written: names, attributes, subscripts, tuples and lists of them
    (``Callable[[A], B]``), ``A | B`` and constants (a string one is read as its own annotation); no call."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _plain_annotation(node.value)
    if isinstance(node, ast.Subscript):
        return _plain_annotation(node.value) and _plain_annotation(node.slice)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_plain_annotation(element) for element in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _plain_annotation(node.left) and _plain_annotation(node.right)
    return False


def _may_be_a_path(argument: ast.expr) -> bool:
    """Whether an opener's first argument can be a file's name rather than a descriptor's number: anything but a
    number written out or computed from numbers alone (``7``, ``3 + 4``, ``int('7')``)."""
    if isinstance(argument, ast.Constant):
        return not isinstance(argument.value, int)
    if isinstance(argument, (ast.BinOp, ast.UnaryOp)):
        return any(_may_be_a_path(part) for part in ast.iter_child_nodes(argument) if isinstance(part, ast.expr))
    if isinstance(argument, ast.Call) and isinstance(argument.func, ast.Name) and argument.func.id == "int":
        return False
    return True
