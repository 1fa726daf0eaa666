"""hooklab's grading pipeline: the preprocessors of each nbgrader step it runs, in order, and the defences a course's
configuration may not drop.

nbgrader's converters take their preprocessor lists from configuration, with nbgrader's own as defaults; ``hooklab
autograde`` takes hooklab's as defaults instead (:func:`configure`): a course config that names none grades with
every defence. One that sets a list may add to it or replace an entry by a subclass of it, but not drop a defence,
turn one off (``enabled = False``) or put a feedback step after the hidden tests' redaction: :func:`configure` says
why it refuses, unless the config names the defence in ``c.Pipeline.without`` (a deliberate choice: the tests of
what the other defences catch grade without the static scan). Classes are named, and imported only to tell whether
a replacement is a subclass, so that reading the course config stays quick and loads no execution code
(``autograder/nbgrader_config.py`` names these lists for nbgrader's own commands).
"""

from __future__ import annotations

from traitlets.config import Config, LazyConfigValue
from traitlets.utils.importstring import import_item

# Before running: the cells put back in the assignment's shape (restored in place, pasted copies dropped), then, after
# nbgrader's own sanitising, the student's code scanned for tampering.
SANITIZE = [
    "nbgrader.preprocessors.ClearOutput",
    "hooklab.grading.repair.RepairCells",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
    "hooklab.grading.integrity.preprocessor.ScanSubmission",
]
# Running: each kernel sandboxed and limited, the grader's checks around every test cell and proof that each ran, a
# dying or hung kernel costing only the cells after it; each test cell scored by the grader's verdict (its stderr
# shows in the feedback but does not zero it).
AUTOGRADE = [
    "hooklab.grading.execute.GuardedExecute",
    "nbgrader.preprocessors.LimitOutput",
    "hooklab.grading.scores.SaveAutoGradesByErrors",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Feedback: each test's result and message, never the hidden tests' code; a page that runs and loads nothing a
# student's outputs or markdown hold (the exporter), its templates compiled once.
FEEDBACK = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "nbconvert.preprocessors.CoalesceStreamsPreprocessor",  # one printed line in one box, as the lab shows it
    "hooklab.grading.feedback.HideHiddenTests",
]
FEEDBACK_EXPORTER = "hooklab.grading.feedback.FeedbackExporter"
LAST_FEEDBACK_STEP = "hooklab.grading.feedback.HideHiddenTests"  # what a later step prints or joins is not redacted

# (section, trait) → its default here, and each defence in it with what it guards
STEPS: dict[tuple[str, str], tuple[list[str] | str, dict[str, str]]] = {
    ("Autograde", "sanitize_preprocessors"): (SANITIZE, {
        "hooklab.grading.repair.RepairCells": "puts the cells back in the assignment's shape",
        "hooklab.grading.integrity.preprocessor.ScanSubmission": "holds code that tampers with the grading",
    }),
    ("Autograde", "autograde_preprocessors"): (AUTOGRADE, {
        "hooklab.grading.execute.GuardedExecute": "runs each kernel sandboxed, under limits, with the grader's "
                                                  "checks around every test cell",
        "hooklab.grading.scores.SaveAutoGradesByErrors": "scores each test cell by the grader's verdict",
    }),
    ("GenerateFeedback", "preprocessors"): (FEEDBACK, {
        "hooklab.grading.feedback.HideHiddenTests": "keeps the hidden tests out of the feedback",
    }),
    ("GenerateFeedback", "exporter_class"): (FEEDBACK_EXPORTER, {
        FEEDBACK_EXPORTER: "writes feedback pages that run and load nothing a submission holds",
    }),
}


def configure(config: Config) -> str:
    """Give ``config`` hooklab's pipeline where it sets none (a list it extends lazily, ``.append(...)``, extends
    hooklab's); return why it cannot be graded with ("" when it can): a step whose configured preprocessors (or
    exporter) drop one of hooklab's defences, a defence turned off, or a feedback step after the redaction."""
    without = set(config.Pipeline.get("without", []))
    for (section, trait), (default, defences) in STEPS.items():
        given = config[section].get(trait, default)
        if isinstance(given, LazyConfigValue):
            given = given.get_value(list(default) if isinstance(default, list) else default)
        given = list(given) if isinstance(given, list | tuple) else given
        config[section][trait] = given
        entries = given if isinstance(given, list) else [given]
        for name, guards in defences.items():
            if name in without:
                continue
            short = name.rsplit(".", 1)[-1]
            if config[short].get("enabled", True) is False:
                return f"the course config sets {short}.enabled = False, which turns off what it does: it {guards}"
            if name not in entries and not any(_replaces(entry, name) for entry in entries):
                return (f"the course config's {section}.{trait} leaves out {name}, which {guards}: add it back (or a "
                        f"subclass of it), or remove the setting to grade with hooklab's ({_listed(default)})")
    steps = config.GenerateFeedback.preprocessors
    last = steps[-1] if steps else None
    if LAST_FEEDBACK_STEP not in without and last != LAST_FEEDBACK_STEP and not _replaces(last, LAST_FEEDBACK_STEP):
        return (f"the course config's GenerateFeedback.preprocessors puts {_name(last)} after "
                f"{LAST_FEEDBACK_STEP}, which redacts the hidden tests from what the steps before it left: make it the "
                "last step")
    return ""


def _replaces(entry: object, name: str) -> bool:
    """Whether a configured entry (a name or a class) is a subclass of the defence ``name``."""
    found = _class(entry)
    return isinstance(found, type) and issubclass(found, import_item(name))


def _name(entry: object) -> str:
    return entry if isinstance(entry, str) else f"{getattr(entry, '__module__', '')}.{getattr(entry, '__name__', '')}"


def _class(entry: object) -> object:
    try:
        return import_item(entry) if isinstance(entry, str) else entry
    except (ImportError, AttributeError, ValueError):
        return None


def _listed(default: list[str] | str) -> str:
    return ", ".join(name.rsplit(".", 1)[-1] for name in (default if isinstance(default, list) else [default]))
