"""The course being graded: its nbgrader configuration, paths and assignments."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import nbformat
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config, LazyConfigValue, PyFileConfigLoader
from traitlets.utils.importstring import import_item

from hooklab.grading import pipeline


@dataclass(frozen=True)
class Course:
    """An nbgrader course, described by its ``nbgrader_config.py``, with grading settings on top."""

    config_file: Path
    timeout: int | None = None  # per-cell seconds; None keeps the configured value
    sandbox: dict[str, object] = field(default_factory=dict, hash=False)  # Sandbox settings over the configured ones
    integrity: bool = True  # the scan, the runtime probe and the proof that each test ran (hooklab.grading.integrity)
    # the run's (hooklab.observations): given to the workers only, so it is no part of a result's fingerprint
    seed: str = ""
    # ``config_file`` as read already (the command line reads it once, before it imports nbgrader); None: read it
    loaded: Config | None = field(default=None, hash=False, compare=False, repr=False)

    @cached_property
    def _read(self) -> tuple[Config, str]:
        """The course's config with hooklab's pipeline where it sets none (:func:`pipeline.configure`), and why it
        cannot be graded with ("" when it can)."""
        config = copy.deepcopy(self.loaded) if self.loaded is not None else PyFileConfigLoader(
            self.config_file.name, path=str(self.config_file.parent)).load_config()
        return config, pipeline.configure(config)

    @property
    def _configured(self) -> Config:
        return self._read[0]

    @property
    def pipeline_problem(self) -> str:
        """Why this course's configuration cannot be graded with: a step that drops one of hooklab's defences."""
        return self._read[1]

    @cached_property
    def coursedir(self) -> CourseDirectory:
        return CourseDirectory(config=self._configured)

    @property
    def root(self) -> Path:
        return Path(self.coursedir.root)

    @property
    def db_url(self) -> str:
        return self.coursedir.db_url

    @property
    def work_dir(self) -> Path:
        """hooklab's own files (ledger, grades CSV, worker gradebooks) live beside the gradebook."""
        return Path(self.db_url.removeprefix("sqlite:///")).parent

    def config(self, db_url: str | None = None, *, execute_only: bool = False) -> Config:
        """The course's nbgrader config with the grading settings, optionally on another gradebook, and
        with ``execute_only`` an autograde that records nothing (the workers' part of grading)."""
        config = copy.deepcopy(self._configured)
        if execute_only:
            config.Autograde.autograde_preprocessors = [p for p in self.autograde_preprocessors
                                                        if p not in self.recorders]
            from hooklab.grading.kernels.client import READY_CLIENT  # the execution side, loaded where it runs

            config.AsyncKernelManager.client_class = READY_CLIENT
            # errors as Python prints them: IPython's default (Context) costs 15-60 ms per error (the feedback reads
            # a student's frames in either shape)
            arguments = config.Execute.get("extra_arguments", [])
            arguments = arguments.get_value([]) if isinstance(arguments, LazyConfigValue) else arguments
            config.Execute.extra_arguments = [*arguments, "--InteractiveShell.xmode=Plain"]
            config.GuardedExecute.seed = self.seed
        # a notebook is validated once, after the last preprocessor of each pass (autograde's, feedback's), not
        # after every one
        config.Exporter.optimistic_validation = True
        if not self.integrity:
            config.GuardedExecute.integrity = False
            config.ScanSubmission.enabled = False
        # Releases made only to register assignments in the gradebook go to a scratch folder,
        # so grading never rewrites the published release.
        config.CourseDirectory.release_directory = str(self.work_dir / "release")
        if self.timeout is not None:
            config.Execute.timeout = self.timeout
        if db_url is not None:
            config.CourseDirectory.db_url = db_url
        config.Sandbox.update(self.sandbox)
        config.Sandbox.hidden = [*config.Sandbox.get("hidden", []), *map(str, self.private_paths)]
        return config

    @property
    def autograde_preprocessors(self) -> list[type]:
        """The preprocessors nbgrader's autograde runs after sanitising (hooklab's, or the course's own)."""
        return [import_item(p) if isinstance(p, str) else p for p in self._configured.Autograde.autograde_preprocessors]

    @property
    def recorders(self) -> list[type]:
        """Those that write scores into the gradebook (nbgrader's SaveAutoGrades and AssignLatePenalties)."""
        from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades  # its package loads nbclient

        return [p for p in self.autograde_preprocessors if issubclass(p, (SaveAutoGrades, AssignLatePenalties))]

    @property
    def private_paths(self) -> list[Path]:
        """What no student's kernel may see (:mod:`hooklab.grading.kernels.sandbox`): the course, the gradebook and
        hooklab's files, and every step's folder; a kernel sees only its own working folder inside them."""
        steps = [self.root / self.coursedir.source_directory,
                 *map(self.step_dir, ("submitted", "autograded", "feedback"))]
        return [self.root, self.work_dir, Path(self.db_url.removeprefix("sqlite:///")), *steps]

    def step_dir(self, step: str) -> Path:
        """Where nbgrader keeps a step: ``submitted``, ``autograded`` or ``feedback``."""
        return self.root / getattr(self.coursedir, f"{step}_directory")

    @cached_property
    def notebooks(self) -> dict[str, list[str]]:
        """Assignment → file names of its notebooks, from the source folder."""
        source = self.root / self.coursedir.source_directory
        return {
            folder.name: sorted(path.name for path in folder.glob("*.ipynb"))
            for folder in sorted(source.iterdir())
            if folder.is_dir() and any(folder.glob("*.ipynb"))
        }

    @cached_property
    def cell_ids(self) -> dict[str, frozenset[str]]:
        """Assignment → the ``grade_id`` of every nbgrader cell of its notebooks, from the source folder."""
        source = self.root / self.coursedir.source_directory
        return {assignment: frozenset(id_ for name in names for id_ in grade_ids(
                    nbformat.read(source / assignment / name, as_version=4).cells))
                for assignment, names in self.notebooks.items()}

    def assignment_of(self, notebook_name: str) -> str | None:
        """The assignment that has a notebook of this file name, if exactly one has."""
        owners = [assignment for assignment, names in self.notebooks.items() if notebook_name in names]
        return owners[0] if len(owners) == 1 else None



def grade_ids(cells) -> set[str]:
    """The ``grade_id`` of every nbgrader cell among ``cells`` (a notebook's, as nbformat reads them)."""
    ids = set()
    for cell in cells:
        marks = cell.get("metadata", {}).get("nbgrader")
        if isinstance(marks, dict) and isinstance(marks.get("grade_id"), str):
            ids.add(marks["grade_id"])
    return ids
