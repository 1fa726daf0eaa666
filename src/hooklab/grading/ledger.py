"""The ledger of what grading did (``grading.json``): one entry per submission, kept as the run goes, so that a
stopped run resumes and a second run grades only what changed; and beside it (``grading-run.json``) what the last
run met, which the class report shows, also when it is written again without a run (``hooklab review --release``)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

LEDGER = "grading.json"
LAST_RUN = "grading-run.json"


@dataclass
class Entry:
    """What the ledger remembers of one submission."""

    digest: str  # the submission's files and the grader's side (see plan.grading_fingerprint)
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


@dataclass
class LastRun:
    """What the last run met, beyond its submissions' entries."""

    timing: dict[str, float] | None = None  # its figures (hooklab.grading.timing.Stages.figures); None: nothing ran
    # input it could not grade, assignments nbgrader could not register, grading processes that failed
    problems: list[str] = field(default_factory=list)


class Ledger:
    """``grading.json``: per submission, the fingerprint it was graded at and the outcome.

    Each change is appended to a journal beside it as it is made (one line, whatever the ledger's size), so a
    run that is stopped resumes where it was; :meth:`save` folds the journal into the file (write, then rename),
    and writes :attr:`last_run` beside it.
    """

    def __init__(self, path: Path):
        self.path = path
        self.journal = path.with_name(f"{path.name}.journal")
        self.last_run_path = path.with_name(LAST_RUN)
        self.entries: dict[str, Entry] = {}
        self.last_run = (LastRun(**json.loads(self.last_run_path.read_text())) if self.last_run_path.exists()
                         else LastRun())
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
        """Write every entry to the ledger's file, empty the journal, and write the last run's record."""
        _replace(self.path, {k: asdict(v) for k, v in sorted(self.entries.items())})
        self.journal.unlink(missing_ok=True)
        _replace(self.last_run_path, asdict(self.last_run))


def _replace(path: Path, data: object) -> None:
    """Write ``data`` as JSON to ``path`` whole: a scratch file beside it, then renamed over it."""
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(data, indent=1))
    os.replace(scratch, path)
