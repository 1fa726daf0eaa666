"""``make mutants`` in small: its mutants are the listed kinds of mistake, only in the student's lines, and a fixed
sample of them is killed by the hidden tests, judged by the runner as ``hooklab autograde`` judges them."""

from __future__ import annotations

import subprocess
import sys

import nbformat
import pytest

from conftest import REPO, make_course
from mutation.mutate import mutants, solution_lines
from mutation.runner import TIMED_OUT
from mutation.score import equivalents, run

NOTEBOOK = REPO / "solutions" / "02_forward_hooks" / "forward_hooks.ipynb"
ANSWER = """def f(model, x):
    ### BEGIN SOLUTION
    handles = []
    try:
        handles.append(model.register_forward_hook(hook))
        y = x.clone()
        y += 1
        return y.sum(dim=1, keepdim=True)
    finally:
        for handle in handles:
            handle.remove()
    ### END SOLUTION
"""
# A fixed sample of 02's mutants, of several kinds, each of which the hidden tests must fail under the seed below.
SAMPLE = [
    "collect_hooks|line 6, column 5: statement dropped (Expr)",
    "change_hooks|line 2, column 18: Mult → Div",
    "change_hooks|line 6, column 12: Add → Sub",
    "leaf_shapes|line 11, column 5: try/finally narrowed to except Exception",
    "leaf_shapes|line 12, column 29: named_modules() → named_children()",
    "capture|line 22, column 13: statement dropped (Expr)",
]
SEED = "20261126"


def test_mutants_are_made_in_the_students_lines_only_one_change_each():
    source, lines = solution_lines(ANSWER)
    assert lines == set(range(2, 11)) and "SOLUTION" not in source
    made = {m.change: m.source for m in mutants(source, lines)}
    assert "in place → out of place (x op= y → x = x op y)" in made and "y = y + 1" in made["in place → out of place "
                                                                                            "(x op= y → x = x op y)"]
    assert ".clone() dropped" in made and "y = x\n" in made[".clone() dropped"]
    assert "True → False" in made and "keepdim=False" in made["True → False"]
    assert "dim=1 → dim=-1" in made
    assert "try/finally narrowed to except Exception" in made and "except Exception:" in made["try/finally narrowed to "
                                                                                              "except Exception"]
    assert "register_forward_hook() → register_forward_pre_hook()" in made
    assert "returns its input model" in made
    assert not any(m.line == 1 for m in mutants(source, lines)), "the given signature was mutated"


@pytest.fixture(scope="module")
def sample_verdicts() -> dict[str, str]:
    return run(NOTEBOOK, SEED, SAMPLE)


@pytest.mark.slow  # runs the sample in forks of this process (sample_verdicts)
@pytest.mark.parametrize("key", SAMPLE)
def test_the_hidden_tests_fail_each_mutant_of_the_sample(sample_verdicts, key):
    assert key in sample_verdicts, f"{key} is no longer made (update SAMPLE)"
    assert sample_verdicts[key], f"{key} passed the hidden tests"


@pytest.mark.slow  # and grades one mutant with hooklab autograde
def test_the_runner_judges_a_mutant_as_hooklab_autograde_does(tmp_path, sample_verdicts):
    """The runner's verdict (a mutant fails its test, the solution passes) is the grader's on the same answers."""
    from catalogues import corpus

    source, lines = solution_lines(next(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells
                                        if c.metadata.get("nbgrader", {}).get("grade_id") == "change_hooks"))
    mutant = next(m for m in mutants(source, lines) if m.key == "line 6, column 12: Add → Sub")
    assert sample_verdicts[f"change_hooks|{mutant.key}"]
    course = make_course(tmp_path / "course")
    inbox = tmp_path / "class"
    answers = {**corpus.solutions("02_forward_hooks"), "change_hooks": mutant.source}
    corpus.write(inbox, [corpus.Case("mutant", "02_forward_hooks",
                                     {NOTEBOOK.name: corpus.notebook("02_forward_hooks", answers)}, {})])
    subprocess.run([sys.executable, "-m", "hooklab.cli", "autograde", "--config", str(course / "nbgrader_config.py"),
                    str(inbox)],
                   check=True, capture_output=True, cwd=REPO)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        grades = {g.name: g.score
                  for g in gradebook.find_submission_notebook("forward_hooks", "02_forward_hooks", "mutant").grades}
    assert grades["change_hooks_test"] == 0.0 and grades["collect_hooks_test"] > 0, grades


def test_every_listed_equivalent_mutant_is_still_made():
    made = set()
    for path in sorted(REPO.glob("solutions/*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            nbgrader = cell.metadata.get("nbgrader", {})
            if nbgrader.get("solution") and cell.cell_type == "code":
                made |= {f"{path.parent.name} {nbgrader['grade_id']}|{m.key}"
                         for m in mutants(*solution_lines(cell.source))}
    listed = equivalents()
    assert listed and not [key for key in listed if key not in made], [key for key in listed if key not in made]


@pytest.mark.slow  # runs the runner
def test_the_runner_judges_a_wrong_reading_in_place_of_a_mutant_and_passes_the_solutions_own_answer():
    """``make mutants``' second measure: a catalogued wrong reading is run where a mutant would be and fails; the
    solution's own answer, given as a reading, passes (the measure can tell them apart)."""
    from catalogues.wrong_readings import readings

    nb = nbformat.read(REPO / "solutions" / "04_apply" / "apply.ipynb", as_version=4)
    own = solution_lines(next(c.source for c in nb.cells
                              if c.metadata.get("nbgrader", {}).get("grade_id") == "apply_order"))[0]
    reading = next(w for w in readings() if w.name == "apply_order_lists_modules_in_preorder")
    verdicts = run(REPO / "solutions" / "04_apply" / "apply.ipynb", SEED,
                   [], {"apply_order": {"own": own, reading.name: reading.source}})
    assert set(verdicts) == {"apply_order|reading: own", f"apply_order|reading: {reading.name}"}, verdicts
    assert verdicts["apply_order|reading: own"] == "", verdicts
    assert verdicts[f"apply_order|reading: {reading.name}"].startswith("apply_order_test"), verdicts


def _notebook_with_a_process_group(path):
    """A notebook whose cell before the answer starts a one-process gloo group, which a fork of the runner cannot use
    (gloo's threads are not in the fork): its answer sums a tensor over the group."""
    def cell(source, **nbgrader):
        made = nbformat.v4.new_code_cell(source)
        if nbgrader:
            made.metadata["nbgrader"] = {"schema_version": 3, "locked": False, "points": 0, **nbgrader}
        return made

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        cell('import os\nos.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")\n'
             "import torch\nimport torch.distributed as dist\nfrom hooklab.checks import check_equal"),
        cell('dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)'),
        cell("def total(t):\n    ### BEGIN SOLUTION\n    dist.all_reduce(t)\n    return t * 2\n    ### END SOLUTION",
             grade_id="total", solution=True, grade=False),
        cell('check_equal(total(torch.ones(2)).tolist(), [2.0, 2.0], "total(torch.ones(2))")',
             grade_id="total_test", solution=False, grade=True, locked=True, points=1),
    ]
    nbformat.write(nb, path)
    return path


@pytest.mark.slow  # runs the runner
def test_an_answer_after_a_process_group_is_started_is_judged_not_timed_out(tmp_path):
    """A fork taken after ``dist.init_process_group`` hangs on its first collective: the runner runs those answers in
    copies forked before the group was made, each making its own. The solution's answer passes, a wrong one fails with
    its test's reason (not a timeout)."""
    notebook = _notebook_with_a_process_group(tmp_path / "group.ipynb")
    own = "def total(t):\n    dist.all_reduce(t)\n    return t * 2\n"
    verdicts = run(notebook, SEED, [], {"total": {"own": own, "wrong": own.replace("* 2", "* 3")}})
    assert verdicts["total|reading: own"] == "", verdicts
    wrong = "total_test: total(torch.ones(2)) should be [2.0, 2.0], got [3.0, 3.0]"
    assert verdicts["total|reading: wrong"] == wrong, verdicts


def test_a_mutant_killed_only_by_the_timeout_is_named_apart(monkeypatch):
    """A hang (of the mutant, or of the runner's fork) fails as the grader's timeout fails a cell, but the score names
    every such kill, so that a runner whose forks all hang cannot pass for a perfect score."""
    import mutation.score as score

    hung, failed = SAMPLE[0], SAMPLE[1]
    verdicts = {hung: f"{TIMED_OUT} 60 s (a timeout fails the test)", failed: "change_hooks_test: wrong values"}
    monkeypatch.setattr(score, "run", lambda notebook, seed, keys, readings=None: {
        key: why for key, why in verdicts.items() if not keys or key in keys})
    killed, counted, survivors, _, stopped = score.score(NOTEBOOK, ["1", "2"], {})
    assert (killed, counted, survivors) == (2, 2, []), survivors
    assert stopped == [f"02_forward_hooks {hung}"], stopped
