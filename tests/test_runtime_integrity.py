"""Defence in depth: with the static check switched off, the kernel-side integrity checks and the
proof that each test ran still hold every cheat (and no honest notebook)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from catalogues import corpus
from conftest import make_course
from test_autograde import grade

pytestmark = pytest.mark.slow  # starts kernels or a grader (conftest: the fast tier)

EMPTY_HOOKS = "def pre_hook(module, args):\n    pass\n\n\ndef hook(module, args, output):\n    pass\n\n\n"
# Each cheat is written so that the static check would miss it or is told to look away; the
# runtime layer must name what it did.
CHEATS = {
    "checker_patched_through_a_parameter": (
        EMPTY_HOOKS + "import hooklab.checks\n\n\ndef relax(module):\n    module.check_answer = lambda *args, "
                      "**kwargs: None\n\n\n"
        "relax(hooklab.checks)\ncheck_answer = hooklab.checks.check_answer\n",
        "changed: hooklab.checks.check_answer",
    ),
    "tensor_equality_patched_through_type": (
        EMPTY_HOOKS + "type(torch.ones(1)).__eq__ = lambda self, other: True\n",
        "changed: torch.Tensor.__eq__",
    ),
    "patched_in_a_cell_that_then_raises": (  # the check before the test then asks on its own
        EMPTY_HOOKS + "type(torch.ones(1)).__eq__ = lambda self, other: True\nraise RuntimeError('the patch stays')\n",
        "changed: torch.Tensor.__eq__",
    ),
    "function_code_swapped_in_place": (  # the function object stays the one watched
        EMPTY_HOOKS + "torch.testing.assert_close.__code__ = (lambda *args, **kwargs: None).__code__\n",
        "changed: torch.testing.assert_close (code or defaults)",
    ),
    "module_swapped_in_sys_modules": (
        EMPTY_HOOKS + "import sys\nimport types\n\nfake = types.ModuleType('hooklab.checks')\n"
        "fake.check_answer = fake.check_tensor = fake.random_generator = lambda *args, **kwargs: None\n"
        "sys.modules['hooklab.checks'] = fake\ncheck_answer = fake.check_answer\n",
        "changed: sys.modules['hooklab.checks']",
    ),
    "input_transformer_drops_the_checks": (
        EMPTY_HOOKS + "get_ipython().input_transformers_post.append(lambda lines: [l for l in lines if 'check' not in "
                      "l])\n",
        "changed: IPython input_transformers_post",
    ),
    "custom_exception_handler_swallows_failures": (
        EMPTY_HOOKS + "get_ipython().set_custom_exc((AssertionError,), lambda *args, **kwargs: None)\n",
        "changed: IPython custom exception handler",
    ),
    "compiler_turns_cells_into_pass": (
        EMPTY_HOOKS + "import ast\nfrom IPython.core.compilerop import CachingCompiler\n\n"
        "CachingCompiler.ast_parse = lambda self, source, filename='<unknown>', symbol='exec': ast.parse('pass')\n",
        "changed: IPython.core.compilerop.CachingCompiler.ast_parse",
    ),
    "reading_method_set_on_a_torch_class_by_a_computed_name": (  # every nn.Sequential shows no parameters
        EMPTY_HOOKS + "name = 'named_' + 'parameters'\nsetattr(nn.Sequential, name, lambda self, *a, **k: iter(()))\n",
        "changed: torch.nn.Sequential (reading methods)",
    ),
    # 08's watches switched off through a checker's globals
    "checkers_class_patched_through_a_checkers_globals": (
        EMPTY_HOOKS + "from hooklab.checks import check_backward\n\n"
                      "watches = check_backward.__globals__\n"
                      "setattr(watches['_Span'], 'forked', property(lambda self: False, lambda self, value: None))\n",
        "changed: hooklab.checks._Span.forked",
    ),
    # a watched class changed while the test observes (an answer's switch that silences the checkers), seen as the
    # observation is sent, whether or not it is put back before the cell ends
    "class_changed_while_the_test_observes": (
        "def pre_hook(module, args):\n    type(args[0]).__doc__ = None\n\n\n"
        "def hook(module, args, output):\n    type(output).__doc__ = ' '\n\n\n",
        "changed: torch.Tensor.__doc__ (while a test ran)",
    ),
    "tracer_installed": (
        EMPTY_HOOKS + "import sys\nsys.settrace(lambda frame, event, arg: None)\n",
        "changed: sys.settrace",
    ),
}


def grade_with(folder: Path, config: str, cheats: dict[str, tuple[str, str]]) -> dict:
    """Ledger entries of an honest notebook and the cheats, graded with ``config`` added to the course's."""
    course = make_course(folder / "course")
    with open(course / "nbgrader_config.py", "a") as handle:
        handle.write(config)
    solved = corpus.solutions(corpus.ASSIGNMENT)
    name = corpus.notebook_name(corpus.ASSIGNMENT)
    cases = [corpus.Case("honest", corpus.ASSIGNMENT, {name: corpus.notebook(corpus.ASSIGNMENT, solved)}, {})]
    for student, (source, _) in cheats.items():
        cases.append(corpus.Case(student, corpus.ASSIGNMENT,
                                 {name: corpus.notebook(corpus.ASSIGNMENT, {**solved, "collect_hooks": source})}, {}))
    grade(course, corpus.write(folder / "submissions", cases))
    return json.loads((course / "grading.json").read_text())


STATIC_CHECK_OFF = ("c.Autograde.sanitize_preprocessors"
                    ".remove('hooklab.grading.integrity.preprocessor.ScanSubmission')\n"
                    "c.Pipeline.without = ['hooklab.grading.integrity.preprocessor.ScanSubmission']\n")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return grade_with(tmp_path_factory.mktemp("runtime"), STATIC_CHECK_OFF, CHEATS)


@pytest.mark.parametrize("name", CHEATS)
def test_the_kernel_side_checks_hold_a_cheat_the_static_check_did_not_see(name: str, graded: dict):
    entry = graded[f"{name}/{corpus.ASSIGNMENT}"]
    assert entry["score"] == 0, f"{name} scored {entry['score']}"
    assert any(CHEATS[name][1] in why for why in entry["held"]), f"{name} held for {entry['held']}"


def test_an_honest_notebook_changes_nothing_the_checks_watch(graded: dict):
    entry = graded[f"honest/{corpus.ASSIGNMENT}"]
    assert entry["held"] == [] and entry["score"] == sum(corpus.points(corpus.ASSIGNMENT).values())


def test_the_proof_of_run_fails_a_test_that_was_rewritten_when_nothing_else_looks(tmp_path: Path):
    cheat = {"rewritten": (CHEATS["compiler_turns_cells_into_pass"][0], "")}
    ledger = grade_with(tmp_path, STATIC_CHECK_OFF + "c.GuardedExecute.report_changes = False\n", cheat)
    entry = ledger[f"rewritten/{corpus.ASSIGNMENT}"]
    assert entry["score"] == 0 and entry["held"], entry
    assert all("did not run to its end" in why for why in entry["held"]), entry["held"]
    assert ledger[f"honest/{corpus.ASSIGNMENT}"]["held"] == []


def test_a_graded_kernel_refuses_a_models_reading_method_set_on_the_model_by_any_name():
    """The agent's guard (kernels.agent.guard_model_reads), in a process that imports the agent as a graded kernel
    does: a computed name, a str subclass that hashes otherwise, and setattr through the class's own method are
    refused with a sentence; a model's other attributes, and a reading method's name given a value that cannot be
    called, are set as usual."""
    script = (
        "import hooklab.grading.kernels.agent\nimport torch.nn as nn\n\n\nclass Name(str):\n"
        "    def __hash__(self):\n        return 1\n\n\nmodel = nn.Sequential(nn.Linear(2, 2))\nrefused = []\n"
        "for name in ('named_' + 'parameters', Name('state_dict')):\n"
        "    for way in (setattr, type(model).__setattr__):\n"
        "        try:\n            way(model, name, list)\n        except AttributeError as error:\n"
        "            refused.append(str(error))\nmodel.scale = nn.Parameter(model[0].weight.detach().clone())\n"
        "model.head = nn.ReLU()\nmodel.children = ['0']\nprint(len(refused), refused[0])\n"
        "print(sorted(dict(model.named_parameters())))\nprint(model.children)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    count, _, sentence = done.stdout.splitlines()[0].partition(" ")
    assert count == "4", done.stdout
    assert sentence == ("a model's named_parameters cannot be replaced on the model while it is graded (the tests "
                        "read the model's parts through it)"), sentence
    assert done.stdout.splitlines()[1] == "['0.bias', '0.weight', 'scale']", done.stdout
    assert done.stdout.splitlines()[2] == "['0']", done.stdout
