"""nbgrader configuration of the hooklab course.

The Makefile puts this folder on JUPYTER_CONFIG_PATH, so every nbgrader command and the
JupyterLab extensions started by `make` read it. Course layout, relative to the repository:

    solutions/<assignment>/<notebook>.ipynb   nbgrader "source": solutions and hidden tests
    notebooks/<assignment>/<notebook>.ipynb   nbgrader "release": what students open
    autograder/{submitted,autograded,feedback}/<student>/<assignment>/   grading (not committed)
"""

from pathlib import Path

from hooklab.grading import pipeline

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

COURSE_ROOT = Path(__file__).resolve().parent.parent

c.CourseDirectory.root = str(COURSE_ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = "autograder/submitted"
c.CourseDirectory.autograded_directory = "autograder/autograded"
c.CourseDirectory.feedback_directory = "autograder/feedback"
c.CourseDirectory.db_url = f"sqlite:///{COURSE_ROOT / 'autograder' / 'gradebook.db'}"
# nbgrader's exchange, for Formgrader's Release and Collect (`nbgrader release_assignment`, `collect`): a folder
# of the course, made by `make instructor` (README, "nbgrader's exchange").
c.CourseDirectory.course_id = "hooklab"
c.Exchange.root = str(COURSE_ROOT / "autograder" / "exchange")

# What replaces a solution in the student release.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# The release is nbgrader's (its default preprocessors, in order: tests/test_release.py keeps them so), plus a
# tag that lets "Run All" go past open exercises (hooklab.release). Classes are named, not imported, here and
# below: `hooklab autograde` reads this file first, to start its kernel server, and importing nbgrader would
# delay that by a second. (A lazy .append() would add the tag again each time the file is read.)
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearSolutions",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
    "hooklab.release.RunPastOpenExercises",
]

# Every notebook runs in seconds; a cell that takes longer is a student's infinite loop.
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True
# A graded kernel's state is thrown away: stop it at once rather than wait for a clean exit (≈ 0.5 s each).
c.Execute.shutdown_kernel = "immediate"

# Grading that can be trusted: hooklab's pipeline (hooklab.grading.pipeline, where each step is explained), named
# here for nbgrader's own commands too (Formgrader's autograde and feedback); `hooklab autograde` takes it where a
# course config sets none, and refuses a config that drops one of its defences.
c.Autograde.sanitize_preprocessors = list(pipeline.SANITIZE)
c.Autograde.autograde_preprocessors = list(pipeline.AUTOGRADE)
c.GenerateFeedback.exporter_class = pipeline.FEEDBACK_EXPORTER
c.GenerateFeedback.preprocessors = list(pipeline.FEEDBACK)
