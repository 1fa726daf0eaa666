"""Finding a class's submissions and copying them into the course's ``submitted`` folder.

Accepted input: nbgrader's layout (``<student>/<assignment>/<notebook>.ipynb`` plus any other
files), or a flat folder or zip of notebooks as an LMS exports them, whose file names say the
student and the notebook (nbgrader's ``zip_collect`` convention, parsed by its
``FileNameCollectorPlugin``). The input is only read, never changed, and only inside the class folder:
a link (which git clones and zips keep) is skipped and named, never followed. A student id is a folder
name in the course (and a pattern to nbgrader, which globs it): one that could name another folder or
student is refused with the reason (:func:`refusal`). A submission larger than ``c.Sandbox.submission_size``
or with more than ``submission_files`` files is refused before it is copied, or extracted from a zip. A
student's own ``timestamp.txt`` (nbgrader's record of when it was handed in, which sets late penalties) is
left out unless the instructor says the input's are nbgrader's (``timestamps``), or the input is the
course's own ``submitted`` folder, where ``nbgrader collect`` writes them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import unicodedata
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.plugins import FileNameCollectorPlugin

from hooklab.grading.course import Course
from hooklab.grading.kernels.sandbox import Sandbox, amount
from hooklab.grading.keys import submission_key
from hooklab.grading.untrusted import printable

# "<student>_<notebook>.ipynb", e.g. "ada_forward_hooks.ipynb"; student ids without underscores.
DEFAULT_FILENAME_REGEX = r"^(?P<student_id>[^_/]+)_(?P<file_id>[^/]+\.ipynb)$"
TIMESTAMP = "timestamp.txt"  # nbgrader's, in a submission folder


_GLOB = set("*?[]")  # what nbgrader's glob.glob of a path with the student's id in it would take as a pattern


def refusal(student: str) -> str:
    """Why ``student`` cannot be a student id, or "": it must name one folder, and only literally."""
    if student in ("", ".", "..") or student.startswith("."):
        return "not a name for a student's folder"
    if "/" in student or "\\" in student:
        return "a path separator"
    if any(unicodedata.category(character)[0] in "CZ" and character != " " for character in student):
        return ("a control, invisible or formatting character, which could hide what it is or make it look like "
                "another id")
    if _GLOB & set(student):
        return "one of * ? [ ], which nbgrader would take as a pattern matching other students"
    return ""


def link_problem(path: Path, root: Path) -> str:
    """What a summary says of a link found under ``root`` (it is never followed)."""
    return (f"{printable(path.relative_to(root).as_posix())}: a link, not followed (only the files themselves are "
            "graded)")


@dataclass
class Submission:
    """One student's files for one assignment, as found in the input."""

    student: str
    assignment: str
    files: dict[str, Path] = field(default_factory=dict)  # path inside the submission → source file
    refused: str = ""  # why it is not graded at all (its files are not copied)
    timestamp: str = ""  # when it was handed in, from the instructor's roster: written as nbgrader's timestamp.txt

    @property
    def sources(self) -> dict[str, Path | bytes]:
        """What ``submitted/<student>/<assignment>/`` holds: its files, and the roster's timestamp."""
        return {**self.files, **({TIMESTAMP: self.timestamp.encode()} if self.timestamp else {})}

    @property
    def key(self) -> str:
        return submission_key(self.student, self.assignment)


@dataclass
class Found:
    submissions: list[Submission]
    problems: list[str]  # input that could not be attributed to a student and assignment


def too_big(size: int, count: int, sandbox: Sandbox) -> str:
    """Why a submission of ``count`` files and ``size`` bytes is refused, or ""."""
    if sandbox.submission_files and count > sandbox.submission_files:
        return (f"{count} files or more, more than the {sandbox.submission_files} a submission may hold "
                "(c.Sandbox.submission_files)")
    if sandbox.submission_size and size > sandbox.submission_size:
        return (f"{amount(size)} of files, more than the {amount(sandbox.submission_size)} a submission may hold "
                "(c.Sandbox.submission_size)")
    return ""


@contextmanager
def opened_input(path: Path, sandbox: Sandbox) -> Iterator[tuple[Path, list[str]]]:
    """A folder to read the input from (the folder itself, or a zip extracted to a temporary one) and the
    problems met opening it. A zip is extracted a submission (``<student>/<assignment>``) or a top-level file
    at a time, as the zip declares their sizes (extraction stops at a member's declared size): a submission
    within the submission limits, a file (a flat zip's notebook) within ``notebook_size``, all of it within
    ``input_size``; one that is damaged costs only itself."""
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    if path.is_dir():
        yield path, []
        return
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is neither a folder nor a zip file")
    with tempfile.TemporaryDirectory(prefix="hooklab-zip-") as scratch:
        problems: list[str] = []
        with zipfile.ZipFile(path) as archive:
            groups: dict[str, list[zipfile.ZipInfo]] = {}
            for member in archive.infolist():
                parts = _extracted_parts(member.filename)
                if parts:  # a submission: <student>/<assignment>/…; a flat zip's file
                    groups.setdefault("/".join(parts[:2]) if len(parts) > 2 else parts[0], []).append(member)
            extracted = 0
            for name, group in sorted(groups.items()):
                size = sum(member.file_size for member in group)
                why = _zip_entry_too_big(group, size, sandbox)
                if not why and sandbox.input_size and extracted + size > sandbox.input_size:
                    why = (f"the zip holds more than the {amount(sandbox.input_size)} extracted in all "
                           "(c.Sandbox.input_size)")
                if not why:
                    why = _extract(archive, group, Path(scratch), name)
                    extracted += size
                if why:
                    problems.append(f"{printable(name)}: {why}; not extracted from the zip, not graded")
        yield Path(scratch), problems


def _extracted_parts(filename: str) -> list[str]:
    """The path ``zipfile`` extracts a member to, as parts (it drops empty, ``.`` and ``..`` parts)."""
    return [part for part in filename.split("/") if part not in ("", ".", "..")]


def _zip_entry_too_big(group: list[zipfile.ZipInfo], size: int, sandbox: Sandbox) -> str:
    """Why a top-level entry of a zip (its members) is not extracted, or ""."""
    if len(group) == 1 and len(_extracted_parts(group[0].filename)) == 1:  # a file: a flat zip's notebook
        notebook = sandbox.notebook_size
        return (f"{amount(size)}, more than the {amount(notebook)} a notebook may be (c.Sandbox.notebook_size)"
                if notebook and size > notebook else "")
    return too_big(size, len(group), sandbox)


def _extract(archive: zipfile.ZipFile, group: list[zipfile.ZipInfo], scratch: Path, name: str) -> str:
    """Extract one submission's members; why it could not be (what was extracted of it removed), or ""."""
    try:
        for member in group:
            archive.extract(member, scratch)
    except Exception as error:  # a damaged member raises what its compressor raises: zlib, bz2, lzma…
        target = scratch / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        if target.parent != scratch and not any(target.parent.iterdir()):
            target.parent.rmdir()  # the student's folder, when it held only this submission
        return f"damaged in the zip ({printable(str(error))[:120]})"
    return ""


def find_submissions(folder: Path, course: Course, sandbox: Sandbox, filename_regex: str = DEFAULT_FILENAME_REGEX,
                     timestamps: bool = False) -> Found:
    """Every submission in ``folder``: nbgrader's layout if it has subfolders, otherwise flat (an LMS's export:
    :func:`hooklab.grading.lms.find_lms_submissions`). ``timestamps``: the submissions' ``timestamp.txt`` are
    nbgrader's, not the students' (always so in the course's own ``submitted`` folder)."""
    if any(entry.is_dir() for entry in folder.iterdir()):
        timestamps = timestamps or folder.resolve() == course.step_dir("submitted").resolve()
        return _find_nested(folder, course, sandbox, timestamps)
    return _find_flat(folder, course, sandbox, filename_regex)


def _find_nested(folder: Path, course: Course, sandbox: Sandbox, timestamps: bool) -> Found:
    submissions, problems = [], []
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink():
            problems.append(link_problem(entry, folder))
        elif entry.is_file():
            problems.append(f"{printable(entry.name)}: a file outside any student folder, ignored")
        elif entry.is_dir() and not entry.name.startswith("."):
            if why := refusal(entry.name):
                problems.append(f"{printable(entry.name)}/: refused as a student id ({why}); not graded")
                continue
            found = _find_student(entry, course, folder, sandbox, timestamps)
            submissions += found.submissions
            problems += found.problems
    return Found(submissions, problems)


def _find_student(student_dir: Path, course: Course, root: Path, sandbox: Sandbox, timestamps: bool) -> Found:
    submissions, problems = [], []
    assignment_dirs = []
    try:
        entries = sorted(student_dir.iterdir())
    except OSError as error:
        return Found([],
                     [f"{printable(student_dir.name)}/: could not be read ({printable(str(error))[:160]}); not graded"])
    for entry in entries:
        if entry.is_symlink():
            problems.append(link_problem(entry, root))
        elif entry.is_dir() and entry.name in course.notebooks:
            assignment_dirs.append(entry)
    if not assignment_dirs:
        problems.append(f"{printable(student_dir.name)}/: no folder named after an assignment "
                        f"({', '.join(course.notebooks)})")
    for assignment_dir in assignment_dirs:
        try:
            files, refused = files_of(assignment_dir, root, sandbox, timestamps, problems)
        except (OSError, RecursionError) as error:  # a tree too deep, a folder that cannot be read
            files, refused = {}, f"its files could not be read ({printable(str(error) or type(error).__name__)[:160]})"
        submissions.append(Submission(student_dir.name, assignment_dir.name, files, refused))
    return Found(submissions, problems)


def _walk(folder: Path) -> list[Path]:
    """Everything under ``folder``, without descending into linked folders; raises on a folder that cannot be
    read (``rglob`` would skip it)."""
    found = []
    for parent, folders, names in os.walk(folder, onerror=_raise):
        found += [Path(parent, name) for name in (*folders, *names)]
    return found


def _raise(error: OSError) -> None:
    raise error


def files_of(folder: Path, root: Path, sandbox: Sandbox, timestamps: bool,
              problems: list[str]) -> tuple[dict[str, Path], str]:
    """A submission folder's regular files by path inside it, and why it is refused ("" if it is not); the links
    and the student's own timestamp left out are added to ``problems``."""
    files, size = {}, 0
    for path in sorted(_walk(folder)):
        name = path.relative_to(folder).as_posix()
        if ".ipynb_checkpoints" in path.parts:
            continue
        if path.is_symlink():
            problems.append(link_problem(path, root))
        elif name == TIMESTAMP and not timestamps:
            problems.append(f"{printable(path.relative_to(root).as_posix())}: the student's own, left out (hooklab "
                            "autograde --timestamps takes it)")
        elif path.is_file():
            files[name] = path
            size += path.lstat().st_size
            if refused := too_big(size, len(files), sandbox):
                return {}, refused
    return files, ""


def _find_flat(folder: Path, course: Course, sandbox: Sandbox, filename_regex: str) -> Found:
    collector = FileNameCollectorPlugin(named_regexp=filename_regex)
    found: dict[tuple[str, str], Submission] = {}
    problems = []
    for path in sorted(folder.iterdir()):
        if path.is_symlink():
            problems.append(link_problem(path, folder))
            continue
        if not path.is_file():
            continue
        info = collector.collect(path.name)
        if info is None:
            problems.append(f"{printable(path.name)}: file name does not match {filename_regex!r}, ignored")
            continue
        if why := refusal(info["student_id"]):
            problems.append(f"{printable(path.name)}: {printable(info['student_id'])!r} refused as a student id "
                            f"({why}); not graded")
            continue
        assignment = course.assignment_of(info["file_id"])
        if assignment is None:
            problems.append(f"{printable(path.name)}: {printable(info['file_id'])!r} is not a notebook of any "
                            "assignment, ignored")
            continue
        submission = found.setdefault((info["student_id"], assignment), Submission(info["student_id"], assignment))
        if not submission.refused:
            submission.files[info["file_id"]] = path
            size = sum(file.lstat().st_size for file in submission.files.values())
            submission.refused = too_big(size, len(submission.files), sandbox)
            if submission.refused:
                submission.files = {}
    return Found(list(found.values()), problems)


def digest(files: dict[str, Path] | dict[str, Path | bytes]) -> str:
    """A fingerprint of a submission's files (or of a file's contents given as bytes): names and contents."""
    sha = hashlib.sha256()
    for name in sorted(files):
        path = files[name]
        sha.update(os.fsencode(name) + b"\0")
        if isinstance(path, bytes):
            sha.update(hashlib.sha256(path).digest())
        elif path.is_symlink():
            sha.update(b"link to " + os.fsencode(os.readlink(path)))
        else:
            with open(path, "rb") as handle:
                sha.update(hashlib.file_digest(handle, "sha256").digest())
        sha.update(b"\0")
    return sha.hexdigest()


def files_in(folder: Path) -> dict[str, Path]:
    """The files of a submission folder, by path inside it (a link counts as a file, so a folder holding one
    differs from what it is compared with)."""
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file() or p.is_symlink()}


def place_submission(submission: Submission, course: Course) -> tuple[Path, str]:
    """Copy a submission into ``submitted/<student>/<assignment>/`` unless it is already there.

    Returns the folder and the submission's fingerprint (:func:`digest`). A changed submission
    replaces the previous copy in one rename, so a crash never leaves half of one.
    """
    target = course.step_dir("submitted") / submission.student / submission.assignment
    sources = submission.sources  # regular files, none of them a link (find), and the roster's timestamp
    fingerprint = digest(sources)
    own = target.is_dir() and not target.is_symlink() and all(
        isinstance(path, Path) and path.parent.resolve().is_relative_to(target.resolve()) for path in sources.values())
    if own and not any(path.is_symlink() for path in target.rglob("*")):
        return target, fingerprint  # the input is the course's own submitted folder (a link in it is copied out below)
    if target.is_dir() and digest(files_in(target)) == fingerprint:
        return target, fingerprint
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{submission.assignment}-", dir=target.parent))
    for name, path in sources.items():
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(path, bytes):
            (staging / name).write_bytes(path)
        else:
            shutil.copy2(path, staging / name, follow_symlinks=False)
    if target.exists():
        shutil.rmtree(target)
    shutil.move(staging, target)
    return target, fingerprint
