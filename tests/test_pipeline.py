"""hooklab's grading pipeline is code (hooklab.grading.pipeline): a course config that names none of its steps grades
with every defence, one that adds to a step or replaces an entry by a subclass keeps them, and one that drops a
defence is refused with the reason."""

from __future__ import annotations

import html
import os
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.preprocessors import ClearOutput
from traitlets.config import Config

from catalogues import corpus
from conftest import REPO, make_course
from hooklab.grading import pipeline
from hooklab.grading.course import Course
from hooklab.grading.execute import GuardedExecute

# appended to a course config that loads the real one: it then names none of hooklab's steps
WITHOUT_THE_PIPELINE = """
for section, names in {"Autograde": ["sanitize_preprocessors", "autograde_preprocessors"],
                       "GenerateFeedback": ["preprocessors", "exporter_class"]}.items():
    for name in names:
        c[section].pop(name, None)
"""


class StricterExecute(GuardedExecute):
    """A course's own replacement of a defence: a subclass keeps it."""


def test_a_config_that_names_no_step_gets_hooklabs_pipeline():
    config = Config()
    assert pipeline.configure(config) == ""
    assert config.Autograde.sanitize_preprocessors == pipeline.SANITIZE
    assert config.Autograde.autograde_preprocessors == pipeline.AUTOGRADE
    assert config.GenerateFeedback.preprocessors == pipeline.FEEDBACK
    assert config.GenerateFeedback.exporter_class == pipeline.FEEDBACK_EXPORTER
    config.Autograde.sanitize_preprocessors.append("x")
    assert "x" not in pipeline.SANITIZE, "the defaults are the course's own copies"


def test_a_step_may_gain_a_preprocessor_or_replace_one_by_a_subclass():
    config = Config()
    config.Autograde.sanitize_preprocessors = [*pipeline.SANITIZE, ClearOutput]
    config.Autograde.autograde_preprocessors = [StricterExecute if name.endswith("GuardedExecute") else name
                                                for name in pipeline.AUTOGRADE]
    assert pipeline.configure(config) == ""
    assert config.Autograde.autograde_preprocessors[0] is StricterExecute


@pytest.mark.parametrize(("section", "trait", "dropped"), [
    ("Autograde", "sanitize_preprocessors", "hooklab.grading.integrity.preprocessor.ScanSubmission"),
    ("Autograde", "sanitize_preprocessors", "hooklab.grading.repair.RepairCells"),
    ("Autograde", "autograde_preprocessors", "hooklab.grading.execute.GuardedExecute"),
    ("Autograde", "autograde_preprocessors", "hooklab.grading.scores.SaveAutoGradesByErrors"),
    ("GenerateFeedback", "preprocessors", "hooklab.grading.feedback.HideHiddenTests"),
])
def test_a_step_that_drops_a_defence_is_refused_with_the_reason(section: str, trait: str, dropped: str):
    config = Config()
    default = dict(pipeline.STEPS)[(section, trait)][0]
    config[section][trait] = [name for name in default if name != dropped]
    problem = pipeline.configure(config)
    assert problem.startswith(f"the course config's {section}.{trait} leaves out {dropped}, which "), problem
    assert "remove the setting to grade with hooklab's" in problem


def test_a_list_given_as_a_tuple_or_extended_lazily_is_read_as_nbgrader_reads_it():
    config = Config()
    config.Autograde.sanitize_preprocessors = tuple(pipeline.SANITIZE)
    config.Autograde.autograde_preprocessors.append("nbgrader.preprocessors.ClearOutput")  # a LazyConfigValue
    assert pipeline.configure(config) == ""
    assert config.Autograde.sanitize_preprocessors == pipeline.SANITIZE
    assert config.Autograde.autograde_preprocessors == [*pipeline.AUTOGRADE, "nbgrader.preprocessors.ClearOutput"]


def test_a_defence_turned_off_or_a_feedback_step_after_the_redaction_is_refused():
    config = Config()
    config.ScanSubmission.enabled = False
    assert pipeline.configure(config).startswith("the course config sets ScanSubmission.enabled = False, which turns "
                                                 "off what it does: it holds code that tampers with the grading")
    config = Config()
    config.GenerateFeedback.preprocessors = [*pipeline.FEEDBACK, "nbconvert.preprocessors.CoalesceStreamsPreprocessor"]
    assert pipeline.configure(config).startswith("the course config's GenerateFeedback.preprocessors puts "
                                                 "nbconvert.preprocessors.CoalesceStreamsPreprocessor after "
                                                 "hooklab.grading.feedback.HideHiddenTests")


def test_reading_a_course_loads_none_of_the_grading_execution():
    """Checking hooklab's own lists, named as they are, imports nothing (hooklab review reads the course too)."""
    config = REPO / "autograder" / "nbgrader_config.py"
    loaded = subprocess.run([sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
                             "from hooklab.grading.course import Course\n"
                             f"assert Course(Path({str(config)!r})).pipeline_problem == ''\n"
                             "print(' '.join(m for m in sys.modules if m.startswith('hooklab')))"],
                            capture_output=True, text=True, check=True, timeout=120).stdout.split()
    assert "hooklab.grading.pipeline" in loaded and not [m for m in loaded if m.startswith(
        tuple(f"hooklab.grading.{name}" for name in ("execute", "kernels", "worker", "judge", "feedback")))], loaded


def test_a_feedback_exporter_that_is_not_hooklabs_is_refused():
    config = Config()
    config.GenerateFeedback.exporter_class = "nbconvert.exporters.HTMLExporter"
    assert "leaves out hooklab.grading.feedback.FeedbackExporter, which writes feedback pages that run and load " \
           "nothing a submission holds" in pipeline.configure(config)


def test_a_course_whose_config_names_no_step_is_configured_with_hooklabs(tmp_path: Path):
    course = make_course(tmp_path / "course")
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(WITHOUT_THE_PIPELINE)
    graded = Course(course / "nbgrader_config.py")
    assert graded.pipeline_problem == ""
    assert GuardedExecute in graded.autograde_preprocessors
    assert graded.config().GenerateFeedback.preprocessors == pipeline.FEEDBACK


@pytest.mark.slow  # starts a grader
def test_hooklab_autograde_grades_with_every_defence_without_the_config_lines_and_refuses_one_that_drops_one(
        tmp_path: Path):
    course = make_course(tmp_path / "course")
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(WITHOUT_THE_PIPELINE)
    a = corpus.ASSIGNMENT
    folder = tmp_path / "class" / "gc" / a
    folder.mkdir(parents=True)
    # right answers but one that reaches the interpreter's objects: the scan holds it
    (folder / corpus.notebook_name(a)).write_bytes(corpus.notebook(a, {"collect_hooks": "import gc\n"
                                                                       + corpus.solutions(a)["collect_hooks"]}))
    command = [sys.executable, "-m", "hooklab.cli", "autograde", "--timeout", str(corpus.TIMEOUT),
               "--config", str(course / "nbgrader_config.py"), str(tmp_path / "class")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, env=os.environ)
    assert result.returncode == 0, result.stderr[-3000:]
    page = (course / "autograder" / "feedback" / "gc" / a / corpus.notebook_name(a)).with_suffix(".html")
    text = html.unescape(page.read_text())
    assert "HeldForReview" in text and "searches the interpreter's objects (gc)" in text
    assert "BEGIN HIDDEN TESTS" not in text and "<script" not in text.lower()

    with open(course / "nbgrader_config.py", "a") as config:
        config.write('c.Autograde.sanitize_preprocessors = ["nbgrader.preprocessors.ClearOutput"]\n')
    refused = subprocess.run(command, capture_output=True, text=True, timeout=900, env=os.environ)
    assert refused.returncode == 2 and refused.stderr.startswith(
        "hooklab: the course config's Autograde.sanitize_preprocessors leaves out hooklab.grading.repair.RepairCells, "
        "which puts the cells back in the assignment's shape"), refused.stderr
