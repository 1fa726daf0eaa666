"""``hooklab`` command line: ``hooklab autograde SUBMISSIONS``."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from hooklab.grading.course import Course
from hooklab.grading.run import GRADES_CSV, autograde
from hooklab.grading.submissions import DEFAULT_FILENAME_REGEX

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def memory_size(text: str) -> int:
    """'4G' → bytes; '0' → no limit."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text.strip(), re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (try 4G or 512M)")
    return int(float(match[1]) * _UNITS[match[2].upper()])


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
        "or a flat folder or zip of <student>_<notebook>.ipynb files",
    )
    grade.add_argument("--config", type=Path, default=Path("autograder/nbgrader_config.py"),
                       help="the course's nbgrader_config.py (default: %(default)s)")
    grade.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                       help="submissions graded at once (default: one per core, %(default)s)")
    grade.add_argument("--force", action="store_true", help="regrade submissions that were graded already")
    grade.add_argument("--timeout", type=int, default=None,
                       help="seconds a notebook cell may run before it is interrupted (default: the course's, 30)")
    grade.add_argument("--memory", type=memory_size, default=memory_size("4G"),
                       help="memory limit of each submission's kernel, e.g. 4G; 0 for none (default: 4G)")
    grade.add_argument("--filename-regex", default=DEFAULT_FILENAME_REGEX,
                       help="for flat input: regex with named groups student_id and file_id (default: %(default)s)")
    return main


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.config.is_file():
        print(f"hooklab: no nbgrader config at {args.config} (use --config)", file=sys.stderr)
        return 2
    if not args.submissions.exists():
        print(f"hooklab: no such file or folder: {args.submissions}", file=sys.stderr)
        return 2
    # nbgrader starts `alembic` by name when it creates a gradebook: use this environment's.
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    course = Course(args.config.resolve(), timeout=args.timeout)
    report = autograde(args.submissions, course, max(1, args.jobs), force=args.force,
                       memory_bytes=args.memory or None, filename_regex=args.filename_regex)
    print(report)
    print(f"Grades: {course.work_dir / GRADES_CSV}   Feedback: {course.step_dir('feedback')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
