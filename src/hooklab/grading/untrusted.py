"""Text a student controls, made safe for where the grader writes it: a terminal and a spreadsheet.

A student names their folder, their files and their exceptions, and so writes part of the grader's
summary, its review listing and its CSV files. In a terminal, escape sequences in that text move the
cursor, erase the lines above or hide what follows; bidi overrides reorder what is shown. In a
spreadsheet, a cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula.
"""

from __future__ import annotations

import re

# C0 controls (newline too: an item is one line), DEL, C1 controls, the bidi marks, embeddings, overrides and
# isolates, the line and paragraph separators, and lone surrogates (the bytes of a file name that is not UTF-8)
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_QUOTE = "'"
_NUMBER = re.compile(r"[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character and bidi control written as a visible escape (``\\x1b``,
    ``\\u202e``), so that it shows as typed and changes nothing else on the screen. Backslashes are left
    as they are: the result has no control left, so escaping it again changes nothing."""
    return _CONTROLS.sub(_escape, text)


def spreadsheet_cell(value: object) -> object:
    """A CSV cell a spreadsheet shows as text: a string that would start a formula gets a leading quote
    (OWASP's rule), as does one that starts with the quote itself, which a spreadsheet would otherwise take
    as its own and hide; its control characters are then escaped (:func:`printable`). Numbers, and strings
    that are a plain number (a negative score), stay as they are."""
    if not isinstance(value, str) or _NUMBER.fullmatch(value):
        return value
    return printable(_QUOTE + value if value.startswith((*FORMULA_START, _QUOTE)) else value)
