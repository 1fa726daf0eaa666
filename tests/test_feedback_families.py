"""A wrong answer whose test would crash on the wrong data reads, in the graded feedback, as its first wrong check.

Graded outside the student's interpreter, a failed check raises nothing in the kernel, so the test's next line can
crash on the wrong data (a key the answer lacks, an index, a product of two dtypes): that exception would be all a
student read. Each family of such crashes is graded here by ``hooklab autograde`` with a fixed seed (one submission per
family, the families of one notebook together where their cells differ), and each graded test cell must say exactly
what differed first, then that the rest of the test did not run (never the test code's own exception); a backward
that raises is said where it raised, and a blank exercise is "not written yet". The feedback page shows the same
sentence.
"""

from __future__ import annotations

import html
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader import utils

from catalogues import corpus
from catalogues.honest_answers import BACKWARD_HOOKS, BACKWARD_PUZZLES, FORWARD_HOOKS, MEMORY_HOOKS, _cell
from catalogues.wrong_answers import _with_backward, wrong_answers
from conftest import make_course
from hooklab.grading import judge

pytestmark = pytest.mark.slow  # starts a grader and its kernels (conftest: the fast tier)

SEED = "feedback-families"

# Both hooks in mode "all", the dict's registered first: they fire together, in that order, and "first" is the first
# tensor's gradient rather than the first one computed.
WATCH_GROUP_ALL_THEN_FIRST = _cell('''
    from torch.autograd.graph import register_multi_grad_hook


    def watch_group(tensors: list[torch.Tensor], names: list[str], log: list) -> list:
        every = register_multi_grad_hook(tensors, lambda grads: log.append(("all", dict(zip(names, grads)))))
        first = register_multi_grad_hook(tensors, lambda grads: log.append(("first", grads[0])))
        return [first, every]
''')

# The dtype it stores, not the tensor's: unpack_half then gives float16 back, and backward multiplies it with float32.
PACK_HALF_RECORDS_THE_STORED_DTYPE = _cell('''
    def pack_half(tensor: torch.Tensor) -> tuple[torch.dtype, torch.Tensor]:
        stored = tensor.to(torch.float16) if tensor.is_floating_point() else tensor
        return stored.dtype, stored


    def unpack_half(packed: tuple[torch.dtype, torch.Tensor]) -> torch.Tensor:
        dtype, stored = packed
        return stored.to(dtype)
''')

# unsqueeze whether or not forward kept the dim: with keepdim=True the gradient has one dim too many to expand.
SUM_DIM_ALWAYS_UNSQUEEZES = _with_backward("sum_dim", '''
    return grad_output.unsqueeze(ctx.dim).expand(ctx.shape), None, None
''')


# student → (assignment, its answers by grade_id: a source, or the name of a wrong answer of wrong_answers.py); every
# other exercise is left as the release has it, blank
SUBMISSIONS = {
    "capture-by-kind": (FORWARD_HOOKS, {"capture": "capture_keys_by_layer_type"}),  # keyed by type(module)
    "watch-group-skips-missing": (BACKWARD_HOOKS, {"multi_grad": "watch_group_all_skips_missing"}),
    "watch-group-all-then-first": (BACKWARD_HOOKS, {"multi_grad": WATCH_GROUP_ALL_THEN_FIRST}),
    "pack-half-stored-dtype": (MEMORY_HOOKS, {"half_precision": PACK_HALF_RECORDS_THE_STORED_DTYPE}),
    "sum-dim-always-unsqueezes": (BACKWARD_PUZZLES, {"sum_dim": SUM_DIM_ALWAYS_UNSQUEEZES}),
}

# (student, test cell) → the graded cell's error, exactly: (ename, its first wrong check's sentence, the note that the
# rest of the test did not run, where its later lines then raised on the wrong data). A test that guards its later
# lines against the wrong data (graded, it goes on after a failed check) stops at no crash: its sentence comes alone.
EXPECTED = {
    # capture's test read outputs["body.0"] after the check of the names: KeyError: 'body.0'
    ("capture-by-kind", "capture_test"): (
        "WrongAnswer", "the names in capture(net, ['body.0', 'head']) should be ['body.0', 'head'], got ['Linear']",
        ""),  # guarded: outputs read with .get after the check of the names
    # a blank exercise: the template's NotImplementedError, named by its function
    ("capture-by-kind", "collect_hooks_test"): ("NotWritten", "pre_hook is not written yet", ""),
    # check_watch read every[name] after the check of the names: KeyError: 'h2'
    ("watch-group-skips-missing", "multi_grad_test"): (
        "WrongAnswer", "the names in log[1] ('all') after watch_group([h2, h3, h1], …) with h1 = 3 * x, h2 = tanh(h1), "
        "h3 = h2 ** 2 and a loss from h1 (every name of the group, in its order) should be ['h2', 'h3', 'h1'], got "
        "['h1']", ""),  # guarded
    # the log's items in the wrong order: every is then a tensor, and every[name] an IndexError
    ("watch-group-all-then-first", "multi_grad_test"): (
        "WrongAnswer", "the kinds of the log entries after backward pass 1 (watch_group([h1, h2, h3], …) with h1 = 3 * "
        "x, h2 = tanh(h1), h3 = h2 ** 2 and a loss from h3): one of each per pass should be ['first', 'all'], got "
        "['all', 'first']", ""),  # guarded
    # float16 given back to backward's float32 product
    ("pack-half-stored-dtype", "half_precision_test"): (
        "WrongAnswer", "pack_half of a torch.float32 tensor: the pair's first item (the tensor's dtype) should be "
        "'torch.float32', got 'torch.float16'",
        judge.STOPPED),  # the test's product then raised: float != c10::Half
    # said where it was raised, with the student's line whole (not under the label of the next check)
    ("sum-dim-always-unsqueezes", "sum_dim_test"): (
        "WrongAnswer", "SumDim.apply(x: (3, 4) float64, dim=0, keepdim=True): SumDim.backward raised RuntimeError: "
        "expand(torch.DoubleTensor{[1, 1, 4]}, size=[3, 4]): the number of sizes provided (2) must be greater or equal "
        "to the number of dimensions in the tensor (3) (line 13: return grad_output.unsqueeze(ctx.dim)"
        ".expand(ctx.shape), None, None)", ""),
    # 08's blank puzzles are said by check_backward, with what to do
    ("sum-dim-always-unsqueezes", "mul_test"): (
        "NotWritten", "Mul.backward is not written yet: replace `raise NotImplementedError()` with your answer, run "
        "its cell, then this one", ""),
}


def graded_errors(path: Path) -> dict[str, list[tuple[str, str]]]:
    """grade_id → the (ename, evalue) of each error of a graded test cell."""
    nb = nbformat.read(path, as_version=4)
    return {cell.metadata.nbgrader["grade_id"]: [(o.ename, o.evalue) for o in cell.outputs if o.output_type == "error"]
            for cell in nb.cells if cell.cell_type == "code" and utils.is_grade(cell)}


def test_a_test_that_crashed_on_wrong_data_says_its_first_wrong_check(tmp_path: Path):
    course = make_course(tmp_path / "course")
    submissions = tmp_path / "class"
    catalogued = {wrong.name: wrong.source for wrong in wrong_answers()}
    for student, (assignment, answers) in SUBMISSIONS.items():
        folder = submissions / student / assignment
        folder.mkdir(parents=True)
        sources = {grade_id: catalogued.get(source, source) for grade_id, source in answers.items()}
        (folder / corpus.notebook_name(assignment)).write_bytes(corpus.notebook(assignment, sources))
    result = subprocess.run(
        [sys.executable, "-m", "hooklab.cli", "autograde", "--timeout", str(corpus.TIMEOUT), "--no-integrity",
         "--config", str(course / "nbgrader_config.py"), str(submissions)],
        capture_output=True, text=True, timeout=900, env={**os.environ, "HOOKLAB_SEED": SEED})
    assert result.returncode == 0, result.stderr[-3000:]

    differ = []
    for (student, grade_id), (ename, sentence, stopped) in EXPECTED.items():
        assignment = SUBMISSIONS[student][0]
        name = corpus.notebook_name(assignment)
        graded = graded_errors(course / "autograder" / "autograded" / student / assignment / name).get(grade_id)
        evalue = sentence + stopped
        if graded != [(ename, evalue)]:
            differ.append(f"{student} {grade_id}:\n  expected: {[(ename, evalue)]}\n  graded:   {graded}")
        page = course / "autograder" / "feedback" / student / assignment / f"{Path(name).stem}.html"
        if f"{ename}: {evalue}" not in html.unescape(page.read_text()):
            differ.append(f"{student} {grade_id}: the feedback page does not say {ename}: {evalue}")
    assert differ == [], "\n".join(differ)
