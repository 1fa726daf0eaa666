"""IPython's rewriting of magics and shell escapes, as the scan reads it: which magics run code it must check."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

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
        if "get_ipython" in self.bound:  # the answer's own get_ipython: an ordinary call, its name held
            return False
        for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
            if syntax.constant_text(argument) is None:  # what IPython is handed, not as the text it runs
                self.visit(argument)
        if func.attr in {"system", "getoutput"}:
            return True  # a shell command: it cannot reach this interpreter
        args = [syntax.constant_text(arg) for arg in node.args]
        if func.attr in {"run_line_magic", "run_cell_magic"} and args and args[0] is not None:
            magic = args[0].lstrip("%")
            if magic == "env" and any(text is None or re.search(r"[\s=${]", text.strip()) for text in args[1:]):
                self.flag(node, rules.ENV_WRITE)  # %env KEY value, %env KEY=value ($ and {} expand to either)
                return True
            if magic in rules.SAFE_MAGICS:
                for code in args[1:] if magic in rules.CODE_MAGICS else []:
                    if code:
                        self.nested(node, magic, code)
                return True
            self.flag(node, f"uses the IPython magic %{magic}")
            return True
        self.flag(node, FORBIDDEN_CALLS["get_ipython"])
        return True

    def nested(self, node: ast.AST, magic: str, code: str) -> None:
        trees = [tree for text in statements(code) if (tree := syntax.parse(text, "getattr" not in self.bound))]
        if not trees and code.lstrip().startswith("-"):
            self.flag(node, f"gives %{magic} options and code the scan cannot read")
        for tree in trees:
            inner = type(self)(self.imported, self.given, self.protected, self.permitted, bound=self.bound,
                               unsure=self.unsure)
            inner.visit(tree)
            self.found += [(getattr(node, "lineno", 1), technique) for _, technique in inner.found]


def statements(code: str) -> list[str]:
    """The code a code magic runs (rules.CODE_MAGICS): its text, and where it begins with options (``-n1 -r1 f(x)``,
    whose values IPython takes off) each tail after a space, every one read (the one IPython runs among them)."""
    text = code.strip()
    if not text.startswith("-"):
        return [code]
    return [code, *(text[match.end():] for match in re.finditer(r"\s+", text))]


def magic_code(tree: ast.AST) -> Iterator[str]:
    """The code the code magics of a cell run (``%time``, ``%%timeit``: rules.CODE_MAGICS), as Magics reads it."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"run_line_magic", "run_cell_magic"} and node.args
                and (syntax.constant_text(node.args[0]) or "").lstrip("%") in rules.CODE_MAGICS):
            for argument in node.args[1:]:
                yield from statements(syntax.constant_text(argument) or "")
