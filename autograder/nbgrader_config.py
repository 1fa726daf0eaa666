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

# What replaces a solution in the student release.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Every notebook runs in seconds; a cell that takes longer is a student's infinite loop.
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True

# Close nbgrader's grading traps (see tests/test_autograde.py):
# a deleted test cell is put back, so it runs and fails instead of silently vanishing;
c.OverwriteCells.add_missing_cells = True
# a warning or progress bar on stderr would zero a passing test cell, so drop such stderr outputs;
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"\w*Warning: |\d+%\|"
# feedback shows each test's result and message, not the hidden tests' code.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "hooklab.feedback.HideHiddenTests",
]
