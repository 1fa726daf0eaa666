"""What the feedback and the class report keep out of what a student and an instructor's report show: the lines of
the hidden tests and the grader's proof that a test ran. Light on purpose: the report reads it without the execution
side (nbclient, kernels)."""

from __future__ import annotations

REDACTED = "[hidden test redacted]"
MIN_LINE = 10  # shorter hidden lines (a bracket, "else:") say nothing and would redact innocent output
PROOF_PREFIX = "_hooklab_ran_"  # the name each executed test cell assigns last (hooklab.grading.execute)


def hidden_lines(source: str, begin: str, end: str) -> set[str]:
    """The lines of a test cell between the hidden-test delimiters ``begin`` and ``end``, stripped, but
    for those shorter than :data:`MIN_LINE`."""
    lines, inside = set(), False
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside and len(line.strip()) >= MIN_LINE:
            lines.add(line.strip())
    return lines
