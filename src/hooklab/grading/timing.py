"""Where a run's time went, by stage: what the summary and the class report say of it."""

from __future__ import annotations

from dataclasses import dataclass, field

STAGES = ("queue", "autograde", "kernel", "cells", "record", "feedback")  # kernel and cells are parts of autograde


@dataclass
class Stages:
    """Where a run's time went: seconds per stage, summed over the submissions that were executed."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    count: int = 0  # submissions executed
    wall: float = 0.0  # the whole run, workers' start included
    plan: float = 0.0  # seconds spent reading the class and deciding what to grade, before the run

    def add(self, **seconds: float) -> None:
        for stage, value in seconds.items():
            self.seconds[stage] += value

    def milliseconds(self) -> dict[str, float]:
        """Milliseconds per executed submission, by stage."""
        return {stage: 1000 * value / self.count for stage, value in self.seconds.items()}

    def figures(self, jobs: int) -> dict[str, float]:
        """The run's timing for the report: what it did, and ms per submission in each stage."""
        per_stage = {f"{stage} (ms per submission)": ms for stage, ms in self.milliseconds().items()}
        return {"submissions executed": self.count, "workers": jobs, "run (s)": self.wall, "plan (s)": self.plan,
                "run (ms per submission)": 1000 * self.wall / self.count, **per_stage}

    def describe(self, jobs: int) -> str:
        ms = self.milliseconds()
        return (
            f"Time per submission, in ms: waiting for a worker {ms['queue']:.0f} · autograde {ms['autograde']:.0f} "
            f"(kernel start {ms['kernel']:.0f}, cells {ms['cells']:.0f}) · record {ms['record']:.0f} · "
            f"feedback {ms['feedback']:.0f}; run: {self.wall:.1f} s with {jobs} workers, "
            f"{1000 * self.wall / self.count:.0f} ms per submission."
        )

