"""A class of submissions covering every way a submission can be right, wrong, broken or cheating.

Built from the releases and solutions, so it stays in step with them. Each case says what it
submits and what grading must make of it, exactly: the points of every test cell of its notebook, the
reason it could not be run, the technique and cell it is held for, and the notes its grading carries (a
restored cell and where it was put, a kernel that stopped and in which cell). Three families:

- :func:`structural_cases`: careless and broken submissions of the forward-hooks notebook (blank,
  wrong, crashing, looping, deleted, pasted and moved cells, stderr output, scripts displayed, extra files);
- :func:`honest_cases`: every answer of ``honest_answers.py`` (all six notebooks, many styles)
  plus harmless extra cells: full points, never held;
- :func:`attack_cases`: every cheat of ``attacks.py`` (all six notebooks): held, 0 points.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import nbformat
from nbgrader import utils

from catalogues.attacks import attacks
from catalogues.honest_answers import extra_cells, honest_answers
from conftest import REPO, solution_sources
from hooklab.grading.kernels.server import SUPPORTED

ASSIGNMENT = "02_forward_hooks"  # the structural cases' notebook
TIMEOUT = 5  # seconds per cell when the corpus is graded (``hooklab autograde --timeout``)
# An extra cell that displays what would run in the feedback page if it were shown as it is (no import needed:
# ``display`` is the kernel's, and any object may have rich representations).
SHOWS_SCRIPTS = """class Shown:
    def _repr_html_(self):
        return "<script>hacked(1)</script><img src=x onerror=hacked(2)><b>my hooks ran</b>"

    def _repr_javascript_(self):
        return "hacked(3)"


display(Shown())
"""
# Cheats that tamper with nothing but hand the checkers objects that claim to be equal to anything:
# the checkers compare plain data only, so these are just wrong answers (0 points, not held).
CAUGHT_BY_CHECKERS = {"list_of_always_equal_objects"}
# Cheats that ship a file named like a module the kernel server has imported already (torch, hooklab): a forked
# kernel never imports the file, so they are wrong answers, not held; a kernel started afresh might import it.
NEVER_IMPORTED = {"shipped_hooklab_package_shadows_real_one", "shipped_torch_py_patches_math_before_capture"}
# Cheats that break the interpreter so badly that the kernel is lost in the answer cell of this grade_id: ipykernel
# cannot send the cell's reply, and the kernel either dies as it is interrupted or is stopped once the cell's time is
# up, as the timing falls (:func:`kernel_lost` reads both notes alike).
KILL_THEIR_KERNEL = {"state_dict_checker_rebound": "compact_state_dict"}  # builtins.isinstance replaced
# Every other cheat of tests/catalogues/attacks.py is held, and grading names (first) this technique, in the answer
# cell of this grade_id, at this line of the student's code: checked exactly as the ledger, the summary, the CSV and
# the feedback say it. A new attack adds its row.
HELD_FOR: dict[str, tuple[str, int, str]] = {
    "from_hooklab_import_checks_patch": ("running_mean", 8,
                                         "patches hooklab.checks.check_tensor (an imported module or class)"),
    "setattr_sys_modules_checker": ("freeze", 3, "patches sys (an imported module or class)"),
    "probe_swapped_for_a_wrapper_that_undoes_the_patch": ("running_mean", 5, "hands the module sys around (use what "
                                                          "it holds by name: sys.<name>)"),
    "private_values_helper_patch": ("my_linear", 3, "patches hooklab.checks._values (an imported module or class)"),
    "functional_relu_reference_patch": ("mlp", 1, "patches torch.nn.functional.relu (an imported module or class)"),
    "rebind_F_in_namespace": ("two_head_net", 14, "rebinds F, which the notebook imports from torch.nn.functional"),
    "pre_run_cell_patch_post_run_cell_restore": ("two_head_net", 12,
                                                 "patches hooklab.checks.check_tensor (an imported module or class)"),
    "input_transformer_cleanup_try_except": ("freeze", 11, "reaches IPython's machinery (get_ipython)"),
    "session_send_drops_error_messages": ("my_linear", 1, "reaches IPython's machinery (get_ipython)"),
    "getattr_builtins_exec_string": ("my_linear", 1, "reaches the builtins (__builtins__)"),
    "gc_get_objects_code_swap": ("mlp", 1, "searches the interpreter's objects (gc)"),
    "parameter_subclass_bias_poisons_reference": ("mlp", 1,
                                                  "overrides torch functions for its tensors (__torch_function__)"),
    "parameter_subclass_everywhere_poisons_reference": (
        "two_head_net", 1, "overrides torch functions for its tensors (__torch_function__)"),
    "constructor_rebinds_caller_globals": ("scale_repr", 7, "uses the interpreter's machinery (sys._getframe)"),
    "blunt_comparison_patches": ("running_mean", 3, "patches torch.allclose (an imported module or class)"),
    "leak_hidden_tests_in_exception_message": ("scale_repr", 8, "uses the interpreter's machinery (sys._getframe)"),
    "selective_tolist_and_reload_checks": ("running_mean", 10, "reads a frame's globals"),
    "module_from_spec_swapped_in": ("scale_repr", 1, "uses the import system (importlib)"),
    "import_as_alias_patch": ("collect_hooks", 3, "patches hooklab.checks.check_answer (an imported module or class)"),
    "module_dict_update_private_helper": ("change_hooks", 3, "reaches a module's namespace (vars())"),
    "sys_modules_checks_module_type": ("leaf_shapes", 6, "builds code or modules by hand (types.ModuleType)"),
    "builtins_import_wrapper": ("change_hooks", 1, "changes the builtins"),
    "settrace_rewrites_checker_arguments": ("collect_hooks", 5, "reads or replaces a function's code"),
    "hooks_rebind_checker_in_caller_frames": ("collect_hooks", 5, "uses the interpreter's machinery (sys._getframe)"),
    "rebind_Add_fixture": ("collect_hooks", 4, "rebinds the notebook's Add, which the tests use"),
    "rebind_test_helper_hooks_left": ("leaf_shapes", 2, "reaches the notebook's namespace (globals())"),
    "ctypes_tuple_write_admits_subclass": ("change_hooks", 1, "reaches memory directly (ctypes)"),
    "base64_exec_payload": ("leaf_shapes", 3, "runs code from a string (exec)"),
    "input_transformer_post_strips_hidden_tests": ("change_hooks", 10, "reaches IPython's machinery (get_ipython)"),
    "leak_from_In_history_in_hook": ("collect_hooks", 10, "reaches IPython's machinery (get_ipython)"),
    "rebind_checkers_in_namespace_only": ("collect_hooks", 1,
                                          "rebinds check_answer, which the notebook imports from "
                                          "hooklab.checks.check_answer"),
    "captured_dtype_constant_patch": ("clip_gradient", 3,
                                      "patches hooklab.checks._float64 (an imported module or class)"),
    "checker_kwdefaults_infinite_tolerance": ("tensor_hook", 1, "changes a function's default arguments"),
    "sys_modules_torch_proxy_and_reload": ("backward_collect", 6, "uses the interpreter's machinery (sys.modules)"),
    "setprofile_rewrites_checker_arguments": ("backward_collect", 5, "reads or replaces a function's code"),
    "tensor_hook_rebinds_checker_via_currentframe": ("tensor_hook", 5, "walks the call stack (frames)"),
    "tensor_clamp_reference_patch": ("clip_gradient", 1, "patches torch.Tensor.clamp (an imported module or class)"),
    "ctypes_code_pointer_swap": ("clip_gradient", 1, "reaches memory directly (ctypes)"),
    "compile_eval_payload": ("backward_collect", 2, "runs code from a string (eval)"),
    "private_showtraceback_replaced": ("tensor_hook", 1, "reaches IPython's machinery (get_ipython)"),
    "torch_function_mode_never_exited": ("tensor_hook", 3, "intercepts torch functions (torch.overrides)"),
    "rebind_Model_fixture_clips": ("clip_gradient", 4, "rebinds the notebook's Model, which the tests use"),
    "answer_writes_module_and_imports_it": ("clip_gradient", 7, "uses the import system (importlib)"),
    "leak_display_markdown_from_ih": ("tensor_hook", 1, "reaches IPython's machinery"),
    "code_object_swap": ("add_repr", 5, "patches hooklab.checks.check_equal.__code__ (an imported module or class)"),
    "sys_modules_checks_class_instance": ("add_bias", 14, "changes sys.modules"),
    "sys_modules_fake_hooklab_package": ("apply_order", 28, "builds code or modules by hand (types.ModuleType)"),
    "set_custom_exc_swallows_assertions": ("init_weights", 1, "reaches IPython's machinery (get_ipython)"),
    "ast_transformer_drops_checks_and_asserts": ("make_linear", 15, "reaches IPython's machinery (get_ipython)"),
    "threading_settrace_and_settrace": ("apply_order", 2, "runs code outside its cell (threads)"),
    "apply_callback_rebinds_checker_via_traceback_frame": ("init_to_one", 5, "walks the call stack (traceback frames)"),
    "rebind_Model_fixture_ones": ("init_to_one", 4, "rebinds the notebook's Model, which the tests use"),
    "rebind_test_helper_postorder": ("apply_order", 3, "reaches the notebook's namespace (globals())"),
    "ctypes_pydict_setitem": ("add_bias", 1, "reaches memory directly (ctypes)"),
    "pickle_loads_payload": ("add_repr", 1, "runs code hidden in data (pickle)"),
    "torch_dispatch_mode_zeroes_checker_reads": ("make_linear", 3, "intercepts torch operators (dispatch modes)"),
    "thread_keeps_repatching": ("add_repr", 1, "runs code outside its cell (threads)"),
    "shipped_module_sets_custom_exc": ("init_weights", 1,
                                       "imports plotting_utils, which is not an installed module (a file of the "
                                       "submission?)"),
    "leak_pre_run_cell_prints_every_cell": ("apply_order", 9, "reaches IPython's machinery (get_ipython)"),
    "private_isclose_and_gradcheck_patch": ("cube", 3, "patches hooklab.checks._isclose (an imported module or class)"),
    "failing_test_hidden_by_its_error_and_its_checks_forged": ("cube", 31,
                                                               "uses the interpreter's machinery (sys.modules)"),
    "meta_path_finder_serves_fake_checks": ("linear_module", 1, "uses the import system (importlib)"),
    "path_hook_serves_fake_package": ("linear_function", 1, "uses the import system (importlib)"),
    "functional_softplus_reference_patch": ("stable_softplus", 1,
                                            "patches torch.nn.functional.softplus (an imported module or class)"),
    "functional_linear_is_the_answer": ("linear_function", 1,
                                        "patches torch.nn.functional.linear (an imported module or class)"),
    "gc_get_referrers_finds_captured_isclose": ("linear_module", 1, "searches the interpreter's objects (gc)"),
    "parameter_subclass_weight_poisons_reference": ("linear_module", 1,
                                                    "overrides torch functions for its tensors (__torch_function__)"),
    "chr_built_names": ("cube", 4, "patches sys (an imported module or class)"),
    "run_cell_replaced": ("stable_softplus", 3, "reaches IPython's machinery (get_ipython)"),
    "run_code_replaced": ("cube", 7, "runs code from a string (eval)"),
    "answer_writes_shadow_package": ("cube", 45, "uses the interpreter's machinery (sys.modules)"),
    "leak_stderr_getsource_in_backward": ("stable_softplus", 10, "uses the interpreter's machinery (sys._getframe)"),
    "forward_rebinds_checker_in_caller_frame": ("linear_function", 7,
                                                "uses the interpreter's machinery (sys._getframe)"),
    "checker_globals_patch": ("grad_cam", 1, "patches hooklab.checks.check_tensor (an imported module or class)"),
    "checker_kwdefaults_huge_rtol": ("gradient_penalty", 1,
                                     "patches hooklab.checks.check_tensor (an imported module or class)"),
    "sys_modules_math_swap_and_reload": ("round_ste", 8, "builds code or modules by hand (types.ModuleType)"),
    "settrace_sets_infinite_tolerance": ("gradient_penalty", 5, "reads or replaces a function's code"),
    "inspect_stack_rebinds_checker": ("grad_cam", 5, "walks the call stack (inspect)"),
    "torch_equal_patch": ("skip_nonfinite", 1, "patches torch.equal (an imported module or class)"),
    "tensor_pow_reference_patch": ("gradient_penalty", 7, "reads a frame's code"),
    "torch_isnan_patch": ("skip_nonfinite", 1, "patches torch.isnan (an imported module or class)"),
    "rebind_torch_in_namespace": ("round_ste", 14, "rebinds torch, which the notebook imports from torch"),
    "parameter_subclass_in_shared_network": ("grad_cam", 1,
                                             "overrides torch functions for its tensors (__torch_function__)"),
    "public_showtraceback_replaced": ("skip_nonfinite", 1, "reaches IPython's machinery (get_ipython)"),
    "rot13_exec_payload": ("skip_nonfinite", 3, "runs code from a string (exec)"),
    "torch_dispatch_mode_zeroes_detach": ("round_ste", 3, "intercepts torch operators (dispatch modes)"),
    "timer_patches_later_in_another_cell": ("round_ste", 1, "runs code outside its cell (threads)"),
    "leak_linecache_of_caller_module": ("grad_cam", 8, "uses the interpreter's machinery (sys._getframe)"),
    "answer_is_tensor_subclass_equal_to_anything": ("round_ste", 1, "a tensor subclass that redefines __eq__"),
    "check_backward_patched": ("mul", 3, "patches hooklab.checks.check_backward (an imported module or class)"),
    "gradcheck_and_assert_close_patched": ("mul", 1, "patches torch.autograd.gradcheck (an imported module or class)"),
    "tensor_sub_returns_zero": ("mul", 1, "patches torch.Tensor.__sub__ (an imported module or class)"),
    "state_dict_checker_rebound": ("compact_state_dict", 1, "changes the builtins"),
    "load_state_dict_patched": ("compact_state_dict", 1,
                                "patches torch.nn.Module.state_dict (an imported module or class)"),
}


@dataclass
class Case:
    student: str
    assignment: str
    files: dict[str, bytes]  # path inside the submission → content
    scores: dict[str, float]  # test cell grade_id → expected points, unless held (a held notebook scores 0)
    reason: str = ""  # why it cannot be run at all, exactly as the ledger, summary and CSV say it
    held: str | None = ""  # one of the reasons it is held for review, exactly ("": must not be held; None: either)
    notes: tuple[str, ...] = ()  # the notes of its grading, exactly and in order (a stopped kernel, a repair)
    why: str = field(default="", repr=False)


@cache
def notebook_name(assignment: str) -> str:
    return next((REPO / "solutions" / assignment).glob("*.ipynb")).name


def _read(step: str, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(REPO / step / assignment / notebook_name(assignment), as_version=4)


@cache
def cell_number(assignment: str, grade_id: str) -> int:
    """Where a cell is in the release students get, counted from 1 as grading's notes and reasons count."""
    cells = _read("notebooks", assignment).cells
    return 1 + next(i for i, cell in enumerate(cells) if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def stem(assignment: str) -> str:
    return Path(notebook_name(assignment)).stem


def restored(assignment: str, grade_id: str) -> str:
    """The note of a deleted cell put back where it was in the release."""
    return f"{stem(assignment)}: restored {grade_id} (cell {cell_number(assignment, grade_id)})"


def flagged(assignment: str, technique: str, cell: int, line: int) -> str:
    """A reason a notebook is held for review: the technique, the cell and the line of the student's code."""
    return f"{stem(assignment)}: {technique} (cell {cell}, line {line})"


@cache
def points(assignment: str) -> dict[str, float]:
    """Test cell grade_id → its points."""
    return {c.metadata.nbgrader.grade_id: float(c.metadata.nbgrader.points)
            for c in _read("solutions", assignment).cells if utils.is_grade(c)}


@cache
def solutions(assignment: str) -> dict[str, str]:
    return solution_sources(_read("solutions", assignment))


def notebook(assignment: str, answers: dict[str, str], *, drop: tuple[str, ...] = (), edit_tests: str | None = None,
             extra: list[str] = (), move: tuple[str, str] | None = None, copy: str | None = None) -> bytes:
    """The release with answer cells filled (by grade_id), cells dropped, test cells edited,
    ``extra`` code cells added after each test cell (in turn), cell ``move[0]`` moved to just before
    ``move[1]``, and a pasted copy of cell ``copy`` right after it."""
    nb = _read("notebooks", assignment)
    extras = iter(extra)
    cells = []
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
        if grade_id in drop:
            continue
        if edit_tests is not None and utils.is_grade(cell):
            cell.source = edit_tests
        cells.append(cell)
        if copy is not None and grade_id == copy:
            twin = nbformat.from_dict(cell)
            twin.id = f"{cell.id}-copy"
            cells.append(twin)
        if utils.is_grade(cell):
            cells += [nbformat.v4.new_code_cell(source) for source in itertools.islice(extras, 1)]
    cells += [nbformat.v4.new_code_cell(source) for source in extras]
    if move is not None:
        moving = next(c for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") == move[0])
        cells.remove(moving)
        cells.insert(next(i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == move[1]),
                     moving)
    nb.cells = cells
    return nbformat.writes(nb).encode()


def scores(assignment: str, **overrides: float) -> dict[str, float]:
    """Full points except where overridden (by exercise grade_id, without "_test")."""
    return {test: float(overrides.get(test.removesuffix("_test"), full)) for test, full in points(assignment).items()}


def zero(assignment: str) -> dict[str, float]:
    return dict.fromkeys(points(assignment), 0.0)


def from_on(assignment: str, exercise: str) -> dict[str, float]:
    """Overrides for :func:`scores`: 0 for ``exercise`` and every exercise after it in the notebook."""
    exercises = [test.removesuffix("_test") for test in points(assignment)]
    return dict.fromkeys(exercises[exercises.index(exercise):], 0)


def stopped(assignment: str, grade_id: str) -> str:
    """The note of a kernel stopped after an answer cell that did not end (or whose reply never came)."""
    return (f"{stem(assignment)}: cell {cell_number(assignment, grade_id)} still running {TIMEOUT} s after interrupt; "
            "kernel stopped")


def kernel_lost(note: str) -> str:
    """A note of a kernel that died in a cell or was stopped after it, in one form: where it was lost."""
    found = re.fullmatch(r"(.+): (?:the kernel died in cell (\d+) \(.*\)|cell (\d+) still running \d+ s after "
                         r"interrupt; kernel stopped)", note)
    return f"{found[1]}: the kernel was lost in cell {found[2] or found[3]}" if found else note


def died(assignment: str, grade_id: str) -> str:
    """The note of a kernel that died in an answer cell."""
    return (f"{stem(assignment)}: the kernel died in cell {cell_number(assignment, grade_id)} (os._exit, a crash or "
            "out of memory)")


def structural_cases() -> list[Case]:
    a = ASSIGNMENT
    solved = solutions(a)
    name = notebook_name(a)

    def case(student: str, answers: dict[str, str], expected: dict[str, float], why: str = "", **options) -> Case:
        layout = {k: options.pop(k) for k in ("drop", "edit_tests", "extra", "move", "copy") if k in options}
        return Case(student, a, {name: notebook(a, {**solved, **answers}, **layout)}, expected, why=why, **options)

    wrong_collect = solved["collect_hooks"].replace("answer.extend(args)", "pass")
    other = _read("solutions", "01_module_basics")
    return [
        case("full", {}, scores(a)),
        case("rewritten", {"collect_hooks": (
            "def pre_hook(module, args):\n    for x in args:\n        answer.append(x)\n\n\n"
            "def hook(module, args, output):\n    answer.insert(len(answer), output)\n"
        ), "change_hooks": (
            "def double_inputs(module, args):\n    return tuple(x + x for x in args)\n\n\n"
            "def plus_five(module, args, output):\n    return output.add(5)\n"
        )}, scores(a), "right answers written differently"),
        Case("partial", a, {name: notebook(a, {"collect_hooks": solved["collect_hooks"]})},
             scores(a, **from_on(a, "change_hooks"))),
        Case("blank", a, {name: notebook(a, {})}, zero(a)),
        case("syntax_error", {"change_hooks": "def double_inputs(module, args)\n    return args\n"},
             scores(a, change_hooks=0)),
        case("exception", {"collect_hooks": (
            "def pre_hook(module, args):\n    raise RuntimeError('oops')\n\n\ndef hook(module, args, output):\n    "
            "pass\n"
        )}, scores(a, collect_hooks=0), "an answer that raises"),
        case("infinite_loop", {"leaf_shapes": "while True:\n    pass\n"}, scores(a, leaf_shapes=0),
             "interrupted after the cell timeout"),
        case("stubborn_loop", {"change_hooks": (
            "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        "
            "pass\n"
        )}, scores(a, **from_on(a, "change_hooks")),
            notes=(stopped(a, "change_hooks"),),
            why="ignores the interrupt: the cells before keep their points, the rest score 0"),
        case("exits", {"collect_hooks": "import os\nos._exit(1)\n"}, zero(a), notes=(died(a, "collect_hooks"),)),
        case("late_crash", {"leaf_shapes": "import faulthandler\nfaulthandler._sigsegv()\n"},
             scores(a, **from_on(a, "leaf_shapes")),
             notes=(died(a, "leaf_shapes"),),
             why="a segfault in a late exercise: the tests that passed before keep their points"),
        case("memory_hog", {"change_hooks": "hog = bytearray(64 * 2**30)\n" + solved["change_hooks"]},
             scores(a, change_hooks=0)),
        Case("invalid_json", a, {name: b'{"cells": [ this is not json'}, zero(a),
             reason=f"{name} is not a valid notebook (Notebook does not appear to be JSON: '{{\"cells\": [ this is not "
                    "json')"),
        Case("wrong_assignment", a, {name: nbformat.writes(other).encode()}, zero(a),
             reason=f"{name} holds the exercises of 01_module_basics (module_basics.ipynb), not those of {a}: hand in "
                    f"{a}'s own notebook",
             why="another assignment's notebook, saved under this one's name: refused, saying whose it is"),
        Case("edited_tests", a, {name: notebook(a, {}, edit_tests="print('all tests pass')")}, zero(a),
             why="locked test cells replaced: nbgrader restores them from the gradebook"),
        case("deleted_test", {"collect_hooks": wrong_collect}, scores(a, collect_hooks=0), drop=("collect_hooks_test",),
             notes=(restored(a, "collect_hooks_test"),),
             why="a wrong answer whose test cell was deleted: the test is put back"),
        case("deleted_test_right", {}, scores(a), drop=("change_hooks_test",),
             notes=(restored(a, "change_hooks_test"),),
             why="a right answer whose test cell was deleted: put back where it was, after the names it uses"),
        case("deleted_exercise", {}, scores(a, change_hooks=0), drop=("change_hooks", "change_hooks_test"),
             notes=(restored(a, "change_hooks"), restored(a, "change_hooks_test")),
             why="answer and test deleted: both restored (the answer as the release's stub), the rest graded normally"),
        case("pasted_test", {}, scores(a), copy="collect_hooks_test",
             notes=(f"{stem(a)}: dropped a copy of collect_hooks_test",)),
        case("pasted_answer", {}, scores(a), copy="change_hooks", why="a second copy of an answer cell is plain code"),
        case("moved_test", {}, scores(a), move=("change_hooks_test", "change_hooks"),
             why="a test cell moved above its answer runs in the source's order"),
        case("hard_coded", {"change_hooks": (
            "def double_inputs(module, args):\n    return torch.tensor([2.0]), torch.tensor([4.0])\n\n\n"
            "def plus_five(module, args, output):\n    return output + 5\n"
        )}, scores(a, change_hooks=0), "the visible test's numbers typed in: hidden tests use fresh inputs"),
        case("stderr", {"collect_hooks": "import logging\nimport sys\n\n\n" + solved["collect_hooks"].replace(
            "answer.append(output)",
            "print('hook ran', file=sys.stderr)\n    logging.warning('still here')\n    answer.append(output)")},
             scores(a), "stderr from the student's own hooks during a passing test cell"),
        case("warns", {"collect_hooks": "import warnings\n\n\n" + solved["collect_hooks"].replace(
            "answer.append(output)", "warnings.warn('hooks are fun')\n    answer.append(output)")},
             scores(a), "a warning on stderr in a passing test cell"),
        case("shows_scripts", {}, scores(a), extra=[SHOWS_SCRIPTS],
             why="HTML with a script and an event handler, and JavaScript, displayed while graded: inert in the "
                 "feedback"),
        Case("extra_files", a,
             {name: notebook(a, solved), "notes.txt": b"my notes\n", "data/cache.bin": bytes(range(256))}, scores(a)),
        Case("no_notebook", a, {"notes.txt": b"I forgot to upload it\n"}, zero(a),
             reason=f"no notebook submitted (expected {name})"),
        # the cell after the first test cell
        case("flagged_but_honest", {}, scores(a), extra=["import gc\ngc.collect()\n"],
             held=flagged(a, "searches the interpreter's objects (gc)", cell_number(a, "collect_hooks_test") + 1, 1),
             why="honest code that uses a flagged module: held, then released by the instructor"),
    ]


def honest_cases() -> list[Case]:
    """Every honest answer, in as few notebooks as one answer per cell allows, with extra cells."""
    by_cell: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for answer in honest_answers():
        by_cell[answer.assignment][answer.grade_id].append(answer.source)
    extras: dict[str, list[str]] = defaultdict(list)
    for assignment, _, source in extra_cells():
        extras[assignment].append(source)
    cases = []
    for assignment, alternatives in sorted(by_cell.items()):
        for variant in range(max(map(len, alternatives.values()))):
            answers = {**solutions(assignment),
                       **{g: sources[variant] for g, sources in alternatives.items() if variant < len(sources)}}
            files = {notebook_name(assignment): notebook(assignment, answers,
                                                         extra=extras[assignment] if variant == 0 else [])}
            cases.append(Case(f"honest{variant}", assignment, files, scores(assignment),
                              why="honest answers in other styles"))
    return cases


def attack_cases() -> list[Case]:
    cases = []
    for attack in attacks():
        answers = {**solutions(attack.assignment), **attack.answers}
        files = {notebook_name(attack.assignment): notebook(attack.assignment, answers)}
        files.update({path: text.encode() for path, text in attack.files.items()})
        if attack.name in CAUGHT_BY_CHECKERS:
            held = ""
        # a file shipped with the submission is held only where the kernel imports it
        elif attack.name in NEVER_IMPORTED:
            held = "" if SUPPORTED else None
        else:
            if attack.name not in HELD_FOR:
                raise KeyError(f"tests/catalogues/corpus.py: HELD_FOR has no row for the attack {attack.name!r} "
                               "(the technique grading names)")
            grade_id, line, technique = HELD_FOR[attack.name]
            held = flagged(attack.assignment, technique, cell_number(attack.assignment, grade_id), line)
        expected = scores(attack.assignment, **{test.removesuffix("_test"): 0 for test in attack.attacked})
        notes = ((stopped(attack.assignment, KILL_THEIR_KERNEL[attack.name]),) if attack.name in KILL_THEIR_KERNEL
                 else ())
        cases.append(Case(f"attack-{attack.name}", attack.assignment, files, expected, held=held, notes=notes,
                          why=f"{attack.category}: {attack.note or attack.name}"))
    return cases


def cases() -> list[Case]:
    return structural_cases() + honest_cases() + attack_cases()


def write(root: Path, chosen: list[Case]) -> Path:
    """The cases in nbgrader's layout under ``root``: <student>/<assignment>/<files>."""
    for case in chosen:
        for name, content in case.files.items():
            path = root / case.student / case.assignment / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return root
