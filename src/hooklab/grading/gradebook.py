"""The parent's side of grading: assignments in the course gradebook and the ledger of what was done."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry

from hooklab.grading.keys import submission_key


def ensure_assignments(gradebook_url: str, sources: dict[str, list[Path]], generate, *,
                       force: bool = False) -> list[str]:
    """Register each assignment (nbgrader's generate_assignment) that is missing from the gradebook, or
    whose test cells there differ from its source notebooks (a hidden test was changed), or all with
    ``force``; returns those it failed on."""
    failed = []
    for assignment, notebooks in sources.items():
        if (force or not registered(gradebook_url, assignment, notebooks)) and not generate(assignment)["success"]:
            failed.append(assignment)
    return failed


def registered(gradebook_url: str, assignment: str, notebooks: list[Path]) -> bool:
    """Whether the gradebook holds these source notebooks' current test cells (code and points)."""
    with Gradebook(gradebook_url) as gradebook:
        try:
            for path in notebooks:
                for cell in nbformat.read(path, as_version=4).cells:
                    if utils.is_grade(cell):
                        grade_id, notebook = cell.metadata.nbgrader["grade_id"], path.stem
                        stored = gradebook.find_source_cell(grade_id, notebook, assignment)
                        points = gradebook.find_grade_cell(grade_id, notebook, assignment).max_score
                        if stored.source != cell.source or points != float(cell.metadata.nbgrader["points"]):
                            return False
        except MissingEntry:
            return False
    return True


def graded_keys(gradebook_url: str) -> set[str]:
    """'student/assignment' of every submission the gradebook holds."""
    with Gradebook(gradebook_url) as gradebook:
        return {submission_key(s.student_id, a.name) for a in gradebook.assignments for s in a.submissions}


def max_scores(gradebook_url: str, assignments: list[str]) -> dict[str, float]:
    """Assignment → the points its test cells are worth."""
    with Gradebook(gradebook_url) as gradebook:
        return {assignment: gradebook.find_assignment(assignment).max_score for assignment in assignments}


@dataclass
class Entry:
    """What the ledger remembers of one submission."""

    digest: str  # the submission's files and the grader's side (see run.grading_fingerprint)
    ok: bool
    reason: str
    score: float
    max_score: float
    files: str = ""  # the submission's files alone: a release holds while they are unchanged
    held: list[str] = field(default_factory=list)  # why it is held for review; empty when it is not
    would_be: dict[str, float] = field(default_factory=dict)  # "notebook/grade_id" → points once released
    notes: list[str] = field(default_factory=list)  # repaired cells, a kernel that stopped
    released: bool = False  # an instructor released it after review (hooklab review --release)
    # notebook → its hidden tests' seed (HOOKLAB_SEED draws them again)
    seeds: dict[str, str] = field(default_factory=dict)

    @property
    def is_held(self) -> bool:
        return bool(self.held) and not self.released

    def explanation(self) -> str:
        """What the CSV's reason column says about this submission."""
        if not self.ok:
            return self.reason
        if self.is_held:
            return "held for review: " + "; ".join(self.held)
        return "; ".join((["released after review"] if self.released else []) + self.notes)


class Ledger:
    """``grading.json``: per submission, the fingerprint it was graded at and the outcome.

    Each change is appended to a journal beside it as it is made (one line, whatever the ledger's size), so a
    run that is stopped resumes where it was; :meth:`save` folds the journal into the file (write, then rename).
    """

    def __init__(self, path: Path):
        self.path = path
        self.journal = path.with_name(f"{path.name}.journal")
        self.entries: dict[str, Entry] = {}
        try:  # read before the file: a save meanwhile writes the file, then removes the journal
            journal = self.journal.read_text()
        except FileNotFoundError:
            journal = ""
        if path.exists():
            self.entries = {key: Entry(**value) for key, value in json.loads(path.read_text()).items()}
        for line in journal.splitlines():  # left by a run that stopped, or running
            try:
                key, value = json.loads(line)
            except ValueError:  # empty, or cut short by a stop (its submission was not done)
                continue
            self.entries[key] = Entry(**value)

    def is_current(self, key: str, digest: str) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry.digest == digest

    def set(self, key: str, entry: Entry) -> None:
        self.entries[key] = entry
        with open(self.journal, "a") as journal:
            journal.write("\n" + json.dumps([key, asdict(entry)]))  # a new line, after one a stop may have cut short

    def save(self) -> None:
        """Write every entry to the ledger's file and empty the journal."""
        scratch = self.path.with_suffix(".tmp")
        scratch.write_text(json.dumps({k: asdict(v) for k, v in sorted(self.entries.items())}, indent=1))
        os.replace(scratch, self.path)
        self.journal.unlink(missing_ok=True)
