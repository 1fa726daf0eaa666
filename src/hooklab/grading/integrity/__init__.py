"""Tamper detection before anything runs: a static check of the code a student wrote.

A student's cells run in the interpreter that runs the test cells, so a submission can try to
change what the tests see: patch the checkers or torch, swap modules in ``sys.modules``, hook
the import system or IPython, trace frames, or hide such code in strings. :func:`scan.scan` reads
every code cell the student wrote (answer cells, added cells, edited given cells) with Python's
``ast`` and reports each such technique as a :class:`scan.Finding`; the notebook is then held for
review. The rules name techniques, not spellings, and leave ordinary code alone: a student's
own objects may be changed freely (``setattr(module, name, ...)``, ``module.extra_repr = ...``).

The modules, from nbgrader's step down to the tables:

  preprocessor.ScanSubmission: the sanitising step; picks the code cells the student wrote (scan's ``cells``), reads
    the source notebook's own cells once per class (scan.imports_of, scan.names_loaded, scan.definitions_of) and
    writes the findings into the notebook's notes.Notes;
  scan.scan: parses each cell (syntax.parse) and walks it with a checker.Checker, cell after cell with the imports
    carried over, into scan.Finding (one per technique and cell);
  checker.Checker: the ``ast`` visitor: what a name or attribute chain refers to (origin), what is bound, imported,
    patched, called or named in a string, and which modules it hands around; code in strings and magics
    (magics.Magics, its part that reads IPython's rewriting of them) is checked by a Checker of its own;
  rules: what is forbidden or allowed: the tables (FORBIDDEN_MODULES, FORBIDDEN_ATTRIBUTES, FORBIDDEN_CALLS,
    SAFE_MAGICS, ...), what one assignment may use (ALLOWED, allowed_for), hooklab's own modules (HOOKLAB_MODULES),
    which modules are installed, and what reaching a dotted path does (rules.reached, rules.technique);
  syntax: reading code: a cell's syntax tree with IPython's syntax, displays indexed by constants and
    ``getattr(x, "name")`` resolved where getattr is the builtin (syntax.parse), code in a string (syntax.code_in,
    syntax.expression_in), a cell's code without its layout (syntax.code), the names code binds (syntax.bound_names,
    syntax.reimported), the names, dotted paths and constants an expression spells, and the value of a name built
    from constants by text operations (syntax.folded: ``"slabolg"[::-1].center(11, "_")``).
"""
