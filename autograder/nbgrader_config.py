"""nbgrader configuration of the hooklab course.

The Makefile puts this folder on JUPYTER_CONFIG_PATH, so every nbgrader command and the
JupyterLab extensions started by `make` read it. Course layout, relative to the repository:

    solutions/<assignment>/<notebook>.ipynb   nbgrader "source": solutions and hidden tests
    notebooks/<assignment>/<notebook>.ipynb   nbgrader "release": what students open
    autograder/{submitted,autograded,feedback}/<student>/<assignment>/   grading (not committed)
"""

from pathlib import Path

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

# Grading that can be trusted (see src/hooklab/grading/ and tests/test_autograde.py). Before running:
# put the cells back in the assignment's shape (restored in place, pasted copies dropped), then, after
# nbgrader's own sanitising, scan the student's code for tampering. Running: integrity checks around
# every test cell and proof that each ran, a dying or hung kernel costs only the cells after it, and a
# test cell is scored by its errors (its stderr shows in the feedback but does not zero it).
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "hooklab.grading.repair.RepairCells",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
    "hooklab.grading.integrity.preprocessor.ScanSubmission",
]
c.Autograde.autograde_preprocessors = [
    "hooklab.grading.execute.GuardedExecute",
    "nbgrader.preprocessors.LimitOutput",
    "hooklab.grading.scores.SaveAutoGradesByErrors",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# feedback shows each test's result and message, not the hidden tests' code, and runs or loads nothing a student's
# outputs or markdown hold (hooklab.grading.feedback.SafeHTMLExporter); its templates are compiled once.
c.GenerateFeedback.exporter_class = "hooklab.grading.feedback.FeedbackExporter"
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "nbconvert.preprocessors.CoalesceStreamsPreprocessor",  # one printed line in one box, as the lab shows it
    "hooklab.grading.feedback.HideHiddenTests",
]
