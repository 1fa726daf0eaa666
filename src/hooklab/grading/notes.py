"""The one record a worker hands the grading process: what grading found and did in one notebook.

It travels inside the autograded notebook, in its metadata under :data:`METADATA`, so it reaches the parent
however the notebook does (a local worker's file, a Dask worker's bytes). The worker's preprocessors write it
in the order they run (repair.RepairCells, integrity.preprocessor.ScanSubmission, execute.GuardedExecute); the
parent reads it (record.record_submission, and worker.reference for the reference run) and nothing else of the worker's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from nbformat import NotebookNode

METADATA = "hooklab"  # the notebook metadata key; repair.RepairCells replaces whatever a submission put there


@dataclass
class Notes:
    """One notebook's grading notes (``observed`` and ``would_be`` are None where they do not apply)."""

    repairs: list[str] = field(default_factory=list)  # cells restored or dropped (repair)
    findings: list[str] = field(default_factory=list)  # techniques the static scan found (integrity)
    held: list[str] = field(default_factory=list)  # why the notebook is held for review: findings, probe, proof
    stopped: str = ""  # why the kernel stopped before the last cell (execute)
    limits: list[str] = field(default_factory=list)  # outputs cut by the output limits (execute)
    seed: str = ""  # the seed of its hidden tests' random inputs (execute)
    observed: dict[str, list[Any]] | None = None  # test cell → what its checkers observed (driver notebooks)
    would_be: dict[str, float] | None = None  # a held notebook's test cell → points if released
    seconds: dict[str, float] = field(default_factory=dict)  # "kernel" (until ready), "cells"

    @classmethod
    def read(cls, nb: NotebookNode) -> Notes:
        """The notes in ``nb`` (none yet: empty notes)."""
        stored = nb.metadata.get(METADATA, {})
        return cls(**{f.name: stored[f.name] for f in fields(cls) if stored.get(f.name) is not None})

    def write(self, nb: NotebookNode) -> None:
        """Store these notes in ``nb``, in place of any there."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        nb.metadata[METADATA] = {name: value for name, value in values.items() if value is not None}
