"""Finding a class's submissions and copying them into the course's ``submitted`` folder.

Accepted input: nbgrader's layout (``<student>/<assignment>/<notebook>.ipynb`` plus any other
files), or a flat folder or zip of notebooks as an LMS exports them, whose file names say the
student and the notebook (nbgrader's ``zip_collect`` convention, parsed by its
``FileNameCollectorPlugin``). The input is only read, never changed.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.plugins import FileNameCollectorPlugin

from hooklab.grading.course import Course

# "<student>_<notebook>.ipynb", e.g. "ada_forward_hooks.ipynb"; student ids without underscores.
DEFAULT_FILENAME_REGEX = r"^(?P<student_id>[^_/]+)_(?P<file_id>[^/]+\.ipynb)$"


@dataclass
class Submission:
    """One student's files for one assignment, as found in the input."""

    student: str
    assignment: str
    files: dict[str, Path] = field(default_factory=dict)  # path inside the submission → source file

    @property
    def key(self) -> str:
        return f"{self.student}/{self.assignment}"


@dataclass
class Found:
    submissions: list[Submission]
    problems: list[str]  # input that could not be attributed to a student and assignment


@contextmanager
def opened(path: Path) -> Iterator[Path]:
    """A folder to read the input from: the folder itself, or a zip extracted to a temporary one."""
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    if path.is_dir():
        yield path
        return
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is neither a folder nor a zip file")
    with tempfile.TemporaryDirectory(prefix="hooklab-zip-") as scratch:
        with zipfile.ZipFile(path) as archive:
            archive.extractall(scratch)
        yield Path(scratch)


def find(folder: Path, course: Course, filename_regex: str = DEFAULT_FILENAME_REGEX) -> Found:
    """Every submission in ``folder``: nbgrader's layout if it has subfolders, otherwise flat."""
    if any(entry.is_dir() for entry in folder.iterdir()):
        return _find_nested(folder, course)
    return _find_flat(folder, course, filename_regex)


def _find_nested(folder: Path, course: Course) -> Found:
    submissions, problems = [], []
    for student_dir in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        assignment_dirs = [p for p in sorted(student_dir.iterdir()) if p.is_dir() and p.name in course.notebooks]
        if not assignment_dirs:
            problems.append(f"{student_dir.name}/: no folder named after an assignment ({', '.join(course.notebooks)})")
        for assignment_dir in assignment_dirs:
            files = {
                path.relative_to(assignment_dir).as_posix(): path
                for path in sorted(assignment_dir.rglob("*"))
                if path.is_file() and ".ipynb_checkpoints" not in path.parts
            }
            submissions.append(Submission(student_dir.name, assignment_dir.name, files))
    for stray in sorted(p for p in folder.iterdir() if p.is_file()):
        problems.append(f"{stray.name}: a file outside any student folder, ignored")
    return Found(submissions, problems)


def _find_flat(folder: Path, course: Course, filename_regex: str) -> Found:
    collector = FileNameCollectorPlugin(named_regexp=filename_regex)
    found: dict[tuple[str, str], Submission] = {}
    problems = []
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        info = collector.collect(path.name)
        if info is None:
            problems.append(f"{path.name}: file name does not match {filename_regex!r}, ignored")
            continue
        assignment = course.assignment_of(info["file_id"])
        if assignment is None:
            problems.append(f"{path.name}: {info['file_id']!r} is not a notebook of any assignment, ignored")
            continue
        submission = found.setdefault((info["student_id"], assignment), Submission(info["student_id"], assignment))
        submission.files[info["file_id"]] = path
    return Found(list(found.values()), problems)


def digest(files: dict[str, Path]) -> str:
    """A fingerprint of a submission's files: names and contents."""
    sha = hashlib.sha256()
    for name in sorted(files):
        sha.update(name.encode() + b"\0" + files[name].read_bytes() + b"\0")
    return sha.hexdigest()


def files_in(folder: Path) -> dict[str, Path]:
    """The files of a submission folder, by path inside it."""
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}


def place(submission: Submission, course: Course) -> tuple[Path, str]:
    """Copy a submission into ``submitted/<student>/<assignment>/`` unless it is already there.

    Returns the folder and the submission's fingerprint (:func:`digest`). A changed submission
    replaces the previous copy in one rename, so a crash never leaves half of one.
    """
    target = course.step_dir("submitted") / submission.student / submission.assignment
    sources = {name: path.resolve() for name, path in submission.files.items()}
    fingerprint = digest(sources)
    if target.is_dir() and all(path.is_relative_to(target.resolve()) for path in sources.values()):
        return target, fingerprint  # the input is the course's own submitted folder
    if target.is_dir() and digest(files_in(target)) == fingerprint:
        return target, fingerprint
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{submission.assignment}-", dir=target.parent))
    for name, path in sources.items():
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, staging / name)
    if target.exists():
        shutil.rmtree(target)
    shutil.move(staging, target)
    return target, fingerprint
