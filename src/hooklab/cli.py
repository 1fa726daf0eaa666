"""``hooklab`` command line: ``hooklab autograde SUBMISSIONS``."""

from __future__ import annotations

import argparse
import copy
import gc
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

# jsonschema (which nbformat validates with) imports rfc3987_syntax, where installed, for its "iri" format
# checks; that compiles 38 grammars, 0.85 s at every start of the command. Notebook validation checks no
# formats, so the command and its workers (forks of it) go without: jsonschema skips those two checks.
# Not in the kernel server, a process of its own, whose kernels must look like fresh ones.
sys.modules.setdefault("rfc3987_syntax", None)

from traitlets.config import Config, PyFileConfigLoader  # noqa: E402 (after rfc3987_syntax is set aside)

from hooklab.grading.kernels.sandbox import Sandbox  # noqa: E402 (after rfc3987_syntax is set aside)
from hooklab.grading.kernels.server import start_server  # noqa: E402 (after rfc3987_syntax is set aside)
from hooklab.grading.kernels.supervise import unavailable  # noqa: E402 (after rfc3987_syntax is set aside)
from hooklab.grading.lms import PLATFORMS  # noqa: E402 (after rfc3987_syntax is set aside)

if TYPE_CHECKING:
    from hooklab.grading.course import Course

# nbgrader and what grading needs besides take about a second to import: they are imported once the
# command has started its kernel server (which imports torch meanwhile), in the functions that use them

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def memory_size(text: str) -> int:
    """'4G' → bytes; '0' → no limit."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text.strip(), re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (try 4G or 512M)")
    return int(float(match[1]) * _UNITS[match[2].upper()])


def _size(count: int) -> str:
    """bytes → '4G' (the largest unit that divides it)."""
    unit = next(unit for unit in reversed(_UNITS) if count % _UNITS[unit] == 0)
    return f"{count // _UNITS[unit]}{unit}"


def _default(name: str) -> object:
    return Sandbox.class_traits()[name].default_value


_LIMITS = {  # option → (Sandbox setting, type, help); the defaults are Sandbox's
    "--memory": ("memory", memory_size,
                 f"address space of each kernel, e.g. 4G; 0 for none (default: {_size(_default('memory'))})"),
    "--wall-clock": ("wall_clock", float,
                     f"seconds each notebook's kernel may live; 0 for no limit (default: {_default('wall_clock'):g})"),
    "--processes": ("processes", int, f"processes and threads of each kernel (default: {_default('processes')})"),
    "--file-size": ("file_size", memory_size,
                    f"largest file a kernel may write (default: {_size(_default('file_size'))})"),
    "--disk": ("disk", memory_size,
               "bytes a kernel may write in all: its working copy, /tmp and /dev/shm (default: "
               f"{_size(_default('disk'))})"),
    "--threads": ("threads", int,
                  "CPU threads of torch and BLAS in each kernel; 0 for their defaults "
                  f"(default: {_default('threads')})"),
}


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="hooklab", description="hooklab course tools")
    commands = main.add_subparsers(dest="command", required=True)
    grade = commands.add_parser(
        "autograde",
        help="grade a class's submissions with nbgrader: feedback, grades CSV and a summary",
        description=(
            "Grade every submission with nbgrader's autograde, in parallel, then write per-student feedback, "
            "a grades CSV (one column per test cell) and a summary. Re-running skips submissions that are "
            "unchanged and already graded, so an interrupted run continues where it stopped."
        ),
    )
    grade.add_argument(
        "submissions", type=Path,
        help="folder in nbgrader's layout (<student>/<assignment>/<notebook>.ipynb), "
        "or a flat folder or zip of <student>_<notebook>.ipynb files, or an LMS's export (--lms)",
    )
    grade.add_argument("--config", type=Path, default=Path("autograder/nbgrader_config.py"),
                       help="the course's nbgrader_config.py (default: %(default)s)")
    grade.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                       help="submissions graded at once (default: one per core, %(default)s)")
    grade.add_argument("--force", action="store_true", help="regrade submissions that were graded already")
    cluster = grade.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="ADDRESS",
                         help="execute on the workers of the Dask cluster at ADDRESS (e.g. tcp://10.0.0.5:8786); "
                         "this machine records and writes the feedback with --jobs processes")
    cluster.add_argument("--dask", action="store_true", help="execute on a local Dask cluster of --jobs workers")
    grade.add_argument("--timeout", type=int, default=None,
                       help="seconds a notebook cell may run before it is interrupted (default: the course's, 30)")
    limits = grade.add_argument_group(
        "sandbox", "each kernel runs in a sandbox: it sees its own copy of the submission, not the course, other "
        "students or the network, as an unprivileged user, within these limits (set others with c.Sandbox in the "
        "config)",
    )
    limits.add_argument("--no-sandbox", action="store_true",
                        help="run kernels with the grader's rights where no sandbox can be made (the limits still "
                             "apply)")
    for option, (name, kind, text) in _LIMITS.items():
        limits.add_argument(option, dest=name, type=kind, default=None, help=text)
    grade.add_argument("--no-integrity", action="store_true",
                       help="turn off the scan, the runtime probe and the proof that each test ran (nothing is held "
                            "for review); the scores of tests that are drivers are the grader's either way")
    grade.add_argument("--timestamps", action="store_true",
                       help="take each submission's timestamp.txt (late penalties) as nbgrader's exchange wrote it; "
                       "by default a student's own is left out, but in the course's own submitted folder")
    grade.add_argument("--filename-regex",
                       help="for flat input: regex with named groups student_id and file_id "
                       "(default: <student>_<notebook>.ipynb, student ids without underscores)")
    lms = grade.add_argument_group(
        "learning platforms", "the input is an LMS's submissions zip: Canvas's \"Download Submissions\" or "
        "Moodle's \"Download all submissions\"; students are the LMS's numbers, or the roster's ids")
    lms.add_argument("--lms", choices=PLATFORMS, help="the LMS whose export SUBMISSIONS is")
    lms.add_argument("--roster", type=Path,
                     help="the LMS's own export of the class: Canvas's gradebook CSV (student ids from SIS Login ID), "
                     "Moodle's grading worksheet (ids from Email address, submission times for nbgrader's late "
                     "penalties)")
    lms.add_argument("--roster-timezone", default="UTC",
                     help="the time zone of the worksheet's times (whoever downloaded it; default: %(default)s)")
    review = commands.add_parser(
        "review",
        help="list the notebooks held for review; release them after a look",
        description=(
            "A notebook whose code tampers with grading (or only looks like it) is held: its tests run, but it "
            "scores 0 until released. Without --release, list the held notebooks with the reasons and the score "
            "each would get. --release gives it those scores as manual scores in nbgrader's gradebook."
        ),
    )
    review.add_argument("--config", type=Path, default=Path("autograder/nbgrader_config.py"),
                        help="the course's nbgrader_config.py (default: %(default)s)")
    review.add_argument("--release", metavar="STUDENT/ASSIGNMENT", action="append", default=[],
                        help="release this held submission (repeatable)")
    back = commands.add_parser(
        "export",
        help="write an assignment's scores into the LMS's own gradebook export, to import there",
        description=(
            "Fill Canvas's gradebook CSV (the column \"<Name> (<id>)\") or Moodle's grading worksheet (Grade) with "
            "the scores of one assignment, students found as hooklab autograde --lms named them; other cells stay as "
            "they were (text a spreadsheet would run is quoted). The score is before nbgrader's late penalty: the "
            "LMS's own late policy applies."
        ),
    )
    back.add_argument("lms_file", type=Path, help="the LMS's export: Canvas's gradebook CSV, Moodle's worksheet")
    back.add_argument("--lms", choices=PLATFORMS, required=True, help="the LMS the file is from")
    back.add_argument("--assignment", required=True, help="hooklab's assignment, e.g. 02_forward_hooks")
    back.add_argument("--column", default="",
                      help="Canvas: the assignment's column, its whole header \"<Name> (<id>)\", its name or its id")
    back.add_argument("--to", type=Path, required=True, help="the filled file to write (never the input)")
    back.add_argument("--late-penalty", action="store_true",
                      help="write the score after nbgrader's late penalty (then turn the LMS's late policy off)")
    back.add_argument("--config", type=Path, default=Path("autograder/nbgrader_config.py"),
                      help="the course's nbgrader_config.py (default: %(default)s)")
    scaffold = commands.add_parser(
        "new-exercise",
        help="add a graded exercise's cells to a source notebook of solutions/ (docs/new_exercise.md)",
        description=(
            "Insert, before the notebook's summary, an exercise in the pack's shape: its heading with a requirements "
            "skeleton, an answer cell (nbgrader solution, grade_id ID) and a test cell (grade_id ID_test, the points, "
            "a visible check and hidden tests on inputs from random_generator()); then print what to add to "
            "tests/catalogues/exercises/."
        ),
    )
    scaffold.add_argument("notebook", type=Path, help="solutions/<assignment>/<notebook>.ipynb (never notebooks/)")
    scaffold.add_argument("--id", required=True, dest="grade_id",
                          help="the answer cell's grade_id and its function's name, e.g. count_hooks")
    scaffold.add_argument("--title", required=True, help="the heading's title")
    scaffold.add_argument("--points", type=float, required=True, help="the test cell's points")
    return main


def new_exercise(args: argparse.Namespace) -> int:
    """``hooklab new-exercise``: the exercise's cells (:func:`hooklab.scaffold.new_exercise`), then what is left."""
    from hooklab.scaffold import ScaffoldError, catalogue_hint, new_exercise as scaffold

    try:
        added = scaffold(args.notebook, args.grade_id, args.title, args.points)
    except ScaffoldError as error:
        print(f"hooklab: {error}", file=sys.stderr)
        return 2
    print(f"Exercise {added.number} ({args.grade_id}, {args.grade_id}_test) added to {args.notebook} as cells "
          f"{added.index}–{added.index + 2}; write its text, solution and tests where they say TODO.")
    for note in added.notes:
        print(f"  note: {note}")
    print(catalogue_hint(args.notebook, args.grade_id))
    return 0


def review(course: Course, keys: list[str]) -> int:
    """``hooklab review``: release ``keys``, then list what is held (:func:`hooklab.grading.review.review`)."""
    from hooklab.grading.review import review as release_and_list

    shown, error = release_and_list(course, keys)
    if shown:
        print(shown)
    if error:
        print(f"hooklab: {error}", file=sys.stderr)
        return 2
    return 0


def export(course: Course, args: argparse.Namespace) -> int:
    """``hooklab export``: the scores into the LMS's file (:func:`hooklab.grading.lms.export.export`)."""
    from hooklab.grading.ledger import LEDGER, Ledger
    from hooklab.grading.lms.export import export as fill_export
    from hooklab.grading.untrusted import printable

    if args.to.resolve() == args.lms_file.resolve():
        print("hooklab: --to must be a new file: the LMS's export is only read", file=sys.stderr)
        return 2
    if args.lms == "canvas" and not args.column:
        print("hooklab: Canvas: name the assignment's column with --column", file=sys.stderr)
        return 2
    filled = fill_export(course, Ledger(course.work_dir / LEDGER), args.lms, args.lms_file, args.to, args.assignment,
                         args.column, args.late_penalty)
    if filled.problems:
        for problem in filled.problems:
            print(f"hooklab: {problem}", file=sys.stderr)
        return 2
    print(f"{len(filled.written)} scores written to {args.to}, "
          + ("after nbgrader's late penalty: turn the LMS's own late policy off before importing."
             if args.late_penalty else "before any late penalty: the LMS's own late policy applies."))
    for student in filled.held:
        print(f"  {printable(student)}: held for review, left as it was (hooklab review)")
    for student in filled.not_in_file:
        print(f"  {printable(student)}: graded, but in no row of {args.lms_file.name}")
    if filled.quoted:
        print(f"  {filled.quoted} cells that a spreadsheet would run as formulas were quoted")
    return 0


def _lms_problem(args: argparse.Namespace) -> str:
    """Why ``hooklab autograde``'s LMS options cannot be used as given, or ""."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if args.roster and not args.lms:
        return "--roster needs --lms (canvas or moodle): the roster is that LMS's own export"
    if args.roster and not args.roster.is_file():
        return f"no such roster file: {args.roster}"
    try:
        ZoneInfo(args.roster_timezone)
    except (ZoneInfoNotFoundError, ValueError):
        return f"--roster-timezone {args.roster_timezone!r} is not a time zone (e.g. UTC, Europe/Paris)"
    return ""


def _configured(config_file: Path) -> Config | str:
    """The course's configuration file as nbgrader reads it (:class:`hooklab.grading.course.Course`), without
    importing nbgrader (enough to start the kernel server); or why it cannot be read."""
    try:
        return PyFileConfigLoader(config_file.name, path=str(config_file.parent)).load_config()
    except Exception as error:  # the course's own Python file: whatever it raises
        return f"{type(error).__name__}: {error}"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "new-exercise":
        return new_exercise(args)
    if not args.config.is_file():
        print(f"hooklab: no nbgrader config at {args.config} (use --config)", file=sys.stderr)
        return 2
    config = _configured(args.config.resolve())
    if isinstance(config, str):
        print(f"hooklab: the nbgrader config {args.config} cannot be read ({config})", file=sys.stderr)
        return 2
    if args.command == "review":
        from hooklab.grading.course import Course

        return review(Course(args.config.resolve(), loaded=config), args.release)
    if args.command == "export":
        from hooklab.grading.course import Course

        if not args.lms_file.is_file():
            print(f"hooklab: no such file: {args.lms_file}", file=sys.stderr)
            return 2
        return export(Course(args.config.resolve(), loaded=config), args)
    if not args.submissions.exists():
        print(f"hooklab: no such file or folder: {args.submissions}", file=sys.stderr)
        return 2
    if problem := _lms_problem(args):
        print(f"hooklab: {problem}", file=sys.stderr)
        return 2
    # nbgrader starts `alembic` by name when it creates a gradebook: use this environment's.
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    settings = {name: getattr(args, name) for name, _, _ in _LIMITS.values() if getattr(args, name) is not None}
    if args.no_sandbox:
        settings["isolate"] = False
    server = None
    if not (args.dask or args.scheduler):  # the local workers' kernel server: it imports torch while the class is read
        server_config = copy.deepcopy(config)
        server_config.Sandbox.update(settings)
        server = start_server(server_config, code="")
    from hooklab.grading import class_report
    from hooklab.grading.course import Course
    from hooklab.grading.grades_csv import GRADES_CSV
    from hooklab.grading.run import autograde
    from hooklab.grading.submissions import DEFAULT_FILENAME_REGEX

    course = Course(args.config.resolve(), timeout=args.timeout, sandbox=settings, integrity=not args.no_integrity,
                    loaded=config)
    if course.pipeline_problem:
        print(f"hooklab: {course.pipeline_problem}", file=sys.stderr)
        return 2
    sandbox = Sandbox(config=course.config())
    problem = unavailable(sandbox)
    if problem:
        print(f"hooklab: kernels cannot be started {'in a sandbox ' if sandbox.isolate else ''}here: {problem}",
              file=sys.stderr)
        if sandbox.isolate:
            print("hooklab: grade without one with --no-sandbox (student code then runs with the grader's rights)",
                  file=sys.stderr)
        return 2
    lms = None
    if args.lms:
        from hooklab.grading.lms import platform

        lms = platform(args.lms), platform(args.lms).read_roster(args.roster, args.roster_timezone) if args.roster \
            else None
    report = autograde(args.submissions, course, max(1, args.jobs), force=args.force,
                       filename_regex=args.filename_regex or DEFAULT_FILENAME_REGEX, timestamps=args.timestamps,
                       dask=args.dask, scheduler=args.scheduler, server=server, lms=lms)
    print(report)
    if not sandbox.isolate:
        print("Graded WITHOUT a sandbox (--no-sandbox): student code ran with the grader's rights.")
    print(f"Grades: {course.work_dir / GRADES_CSV}   Feedback: {course.step_dir('feedback')}   Report: "
          f"{course.work_dir / class_report.REPORT}")
    return 0


def leave(code: int) -> int:
    """``code``, once the garbage collector has been told to leave alone every object there is: at exit Python
    would walk all that nbgrader, SQLAlchemy and matplotlib made once more (0.3 s); the system frees it anyway."""
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(leave(main()))
