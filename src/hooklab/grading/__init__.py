"""Grade a whole class with one command, on top of nbgrader's gradebook, autograde and feedback."""

import sys

# jsonschema (which nbformat validates with) imports rfc3987_syntax, where installed, for its "iri" format
# checks; that compiles 38 grammars, 0.85 s at every start of the grader. Notebook validation checks no
# formats, so the grader's processes go without it: jsonschema skips those two checks.
sys.modules.setdefault("rfc3987_syntax", None)
