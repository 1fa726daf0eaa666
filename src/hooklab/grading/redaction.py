"""What the feedback and the class report keep out of what a student and an instructor's report show: the lines of
the hidden tests and the grader's proof that a test ran. Light on purpose: the report reads it without the execution
side (nbclient, kernels)."""

from __future__ import annotations

import re

REDACTED = "[hidden test redacted]"
MIN_LINE = 10  # shorter hidden lines (a bracket, "else:") say nothing and would redact innocent output
PROOF_PREFIX = "_hooklab_ran_"  # the name each executed test cell assigns last (hooklab.grading.execute)


# a line of a cell's code as Python counts them (a form feed or U+2028 inside a line ends none; str.splitlines splits
# there and would shift every line after it)
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def hidden_lines_by_number(source: str, begin: str, end: str) -> dict[int, str]:
    """The lines of a test cell between the hidden-test delimiters ``begin`` and ``end`` (matched anywhere in a line,
    as nbgrader's ClearHiddenTests matches them): line number (from 1, as its code runs) → the line, stripped."""
    lines, inside = {}, False
    for number, line in enumerate(LINE.findall(source), start=1):
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            lines[number] = line.strip()
    return lines


def hidden_lines(source: str, begin: str, end: str) -> set[str]:
    """The texts of a test cell's hidden lines (:func:`hidden_lines_by_number`), but for those shorter than
    :data:`MIN_LINE`."""
    return {line for line in hidden_lines_by_number(source, begin, end).values() if len(line) >= MIN_LINE}
