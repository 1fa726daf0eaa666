"""The scan of a submission's code cells (:func:`scan`, into :class:`Finding`) and what it reads of a notebook's own
cells (:func:`imports_of`, :func:`definitions_of`, :func:`names_loaded`)."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hooklab.grading.integrity import magics, rules, syntax
from hooklab.grading.integrity.checker import Checker


@dataclass(frozen=True)
class Finding:
    """One use of a technique that can change what the tests see."""

    cell: int  # 1-based position of the cell in the notebook
    line: int
    technique: str

    def __str__(self) -> str:
        return f"{self.technique} (cell {self.cell}, line {self.line})"


def _trees(sources: Iterable[str]) -> Iterator[ast.Module]:
    """The syntax trees of the sources that parse (a syntax error fails at run time, like any wrong answer)."""
    for source in sources:
        tree = syntax.parse(source)
        if tree is not None:
            yield tree


def imports_of(sources: Iterable[str]) -> dict[str, str]:
    """Names the given cells bind by importing → the dotted path they come from."""
    bound: dict[str, str] = {}
    for tree in _trees(sources):
        for node in ast.walk(tree):
            for name, origin in syntax.bindings(node):
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
    the dotted names this assignment may use that are held elsewhere (:func:`rules.allowed_for`).
    """
    protected = {name for name in test_names if hasattr(builtins, name)} | (set(given_definitions) & test_names)
    findings: list[Finding] = []
    imported = dict(given_imports)
    sources = list(cells)
    cells = [(number, syntax.parse(source)) for number, source in sources]
    trees = _with_code_inside(tree for _, tree in cells if tree is not None)
    bound, unsure = frozenset(syntax.bound_names(trees)), frozenset(syntax.reimported(trees))
    operators = syntax.operators(trees)
    if "getattr" in bound:  # getattr(x, "name") is a call of the answer's getattr, handed x, not the attribute x.name
        cells = [(number, syntax.parse(source, getattr_builtin=False)) for number, source in sources]
    shown, kept = frozenset(rules.SHOWN_ONLY - bound), frozenset((rules.KEPT_BUILTINS | rules.LOOKUP_BUILTINS) - bound)
    for number, tree in cells:
        if tree is None:
            continue  # a syntax error fails at run time, like any wrong answer
        checker = Checker(imported, given_imports, protected, allowed, shown, kept, bound, unsure, operators)
        checker.visit(tree)
        findings += [Finding(number, line, technique) for line, technique in checker.found]
    return _unique(findings)


def _with_code_inside(trees: Iterable[ast.Module]) -> list[ast.AST]:
    """The cells' trees and those of the code they hold: what their code magics run (``%%time`` with a ``def getattr``
    in it) and their strings that are code (an annotation ``"(getattr := mine)"``, evaluated later by
    ``inspect.signature(f, eval_str=True)``): a name bound there is bound in the notebook."""
    found, pending = [], list(trees)
    while pending:
        tree = pending.pop()
        found.append(tree)
        pending += [inner for code in magics.magic_code(tree) if (inner := syntax.parse(code)) is not None]
        texts = {text for node in ast.walk(tree) if (text := syntax.constant_text(node)) is not None}
        pending += [inner for text in texts for inner in (syntax.code_in(text), syntax.expression_in(text))
                    if inner is not None]
    return found


def _unique(findings: list[Finding]) -> list[Finding]:
    seen, kept = set(), []
    for finding in findings:
        if (finding.cell, finding.technique) not in seen:
            seen.add((finding.cell, finding.technique))
            kept.append(finding)
    return kept
