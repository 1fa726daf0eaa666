"""IPython's rewriting of magics and shell escapes, as the scan reads it: which magics run code it must check."""

from __future__ import annotations

import ast

from hooklab.grading.integrity import rules, syntax
from hooklab.grading.integrity.rules import FORBIDDEN_CALLS


class Magics:
    """The checker's part that reads ``get_ipython().run_line_magic(...)`` and friends (a mixin of
    :class:`hooklab.grading.integrity.checker.Checker`)."""

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
        args = [syntax.constant_text(arg) for arg in node.args]
        if func.attr in {"run_line_magic", "run_cell_magic"} and args and args[0] is not None:
            magic = args[0].lstrip("%")
            if magic in rules.SAFE_MAGICS:
                for code in args[1:] if magic in rules.CODE_MAGICS else []:
                    if code:
                        self.nested(node, code)
                return True
            self.flag(node, f"uses the IPython magic %{magic}")
            return True
        self.flag(node, FORBIDDEN_CALLS["get_ipython"])
        return True

    def nested(self, node: ast.AST, code: str) -> None:
        tree = syntax.parse(code)
        if tree is None:
            return
        inner = type(self)(self.imported, self.given, self.protected, self.permitted)
        inner.visit(tree)
        self.found += [(getattr(node, "lineno", 1), technique) for _, technique in inner.found]
