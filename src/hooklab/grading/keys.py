"""The two names the grader gives things, in one place: a submission, ``"<student>/<assignment>"`` (the ledger's,
the CSV's and the report's key), and a test cell, ``"<notebook>/<grade_id>"``."""

from __future__ import annotations


def submission_key(student: str, assignment: str) -> str:
    return f"{student}/{assignment}"


def split_submission_key(key: str) -> tuple[str, str]:
    """(student, assignment) of a :func:`submission_key`."""
    student, assignment = key.split("/", 1)
    return student, assignment


def cell_key(notebook: str, grade_id: str) -> str:
    return f"{notebook}/{grade_id}"


def split_cell_key(key: str) -> tuple[str, str]:
    """(notebook, grade_id) of a :func:`cell_key`."""
    notebook, grade_id = key.split("/", 1)
    return notebook, grade_id
