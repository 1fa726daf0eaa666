"""The grader's side of drivers (hooklab.grading.judge) and the kernel's (hooklab.observations), in one process:
what a test cell is sent without, how observations are encoded, and how two streams are compared."""

from __future__ import annotations

import ast
import itertools
import json

import nbformat
import numpy
import pytest
import torch
from nbgrader import utils

from conftest import REPO
from hooklab import checks, observations
from hooklab.grading import judge
from hooklab.grading.judge import REFERENCE, has_drivers, verdict, without_expectations


def observed(monkeypatch: pytest.MonkeyPatch, run) -> list[dict]:
    """What the checkers called by ``run`` send to the grader in a test cell."""
    monkeypatch.setattr(observations, "_state", {**observations._state, "seed": "cell", "draws": itertools.count(),
                                                 "seen": [], "channel": None, "send": None})
    monkeypatch.setattr(observations, "_line_of_the_cell", lambda: 1)  # no IPython cell here
    run()
    return json.loads(observations.collected())


def test_expected_values_are_taken_out_and_the_lines_kept():
    source = (
        "check_tensor(result, a + b, 'sum', atol=1e-6)\n"
        "check_equal(order(config),\n"
        "            fired_order(config),  # the reference\n"
        "            'order')\n"
        "helper(model, x, expected=model[1:](\n    x))\n"
        "check_answer(answer, {'x1': a}, same_object=True)\n"
        "check_backward(Mul, x, y, reference=torch.mul, generator=g)\n"
        "check_parameter(layer, 'weight', (3, 4))\n"
        "label = 'é'; check_tensor(out, expected_é(x), label)\n"
        "check_tensor(*pair)\n"
    )
    sent = without_expectations(source)
    assert sent.count("\n") == source.count("\n")
    for gone in ("a + b", "fired_order", "model[1:]", "{'x1': a}", "torch.mul", "(3, 4)", "expected_é"):
        assert gone not in sent, gone
    for kept in ("check_tensor(result, None, 'sum', atol=1e-6)", "order(config)", "'order'",
                 "helper(model, x, expected=None",
                 "same_object=True", "generator=g", "check_tensor(*pair)"):
        assert kept in sent, kept
    compile(sent, "cell", "exec")


def test_a_cell_that_is_not_python_is_sent_as_it_is():
    assert without_expectations("%timeit check_tensor(a, b)\n") == "%timeit check_tensor(a, b)\n"


def test_checkers_observe_the_answer_only_and_raise_nothing(monkeypatch):
    wrong = torch.tensor([1.0, 2.0])
    sent = observed(monkeypatch,
                    lambda: (checks.check_tensor(wrong, None, "out", atol=0.5),
                             checks.check_equal([1, "a"], None, "order"),
                                          checks.check_answer([wrong], None, name="answer after")))
    assert [s["label"] for s in sent] == ["out", "order", "answer after"]
    assert sent[0]["value"]["type"] == "tensor" and sent[0]["atol"] == 0.5
    assert sent[1]["value"] == {"type": "list", "items": [{"type": "int", "value": "1"}, {"type": "str", "value": "a"}]}


@pytest.mark.parametrize("value", [torch.arange(6.0).reshape(2, 3), torch.tensor([True, False]), torch.arange(3),
                                   torch.tensor([1 + 2j]), torch.ones(2, dtype=torch.bfloat16), torch.zeros(0, 3),
                                   torch.nn.Parameter(torch.ones(2)), torch.tensor(2.5)])
def test_a_tensor_matches_itself_and_not_a_changed_copy(value):
    plain = value.detach()
    assert verdict([_obs(value)], [_obs(plain.clone())]) == ""
    if plain.numel():
        changed = plain.clone()
        changed.view(-1)[0] = 0 if plain.view(-1)[0] != 0 else 1
        assert "wrong values" in verdict([_obs(changed)], [_obs(plain)])


def test_messages_say_what_differs_without_the_reference_values():
    want = _obs(torch.tensor([[0.123456, 2.0]]), label="grad of x")
    assert verdict([_obs(torch.zeros(2), "grad of x")], [want]) == "grad of x: shape (1, 2) expected, got (2,)"
    assert verdict([_obs(torch.zeros(1, 2, dtype=torch.float64), "grad of x")], [want]) == ("grad of x has dtype "
                                                                                            "torch.float64, expected "
                                                                                            "torch.float32")
    message = verdict([_obs(torch.tensor([[0.5, 2.0]]), "grad of x")], [want])
    assert (message.startswith("grad of x has the wrong values at index (0, 0) (1 of 2 entries wrong")
            and "0.123" not in message)
    assert verdict([_obs([1, 2], "out")], [_obs(torch.zeros(2), "out")]) == ("out is a list, expected a tensor of "
                                                                             "shape (2,)")
    assert verdict([_obs(["b"], "order")], [_obs(["a"], "order")]) == "order[0] should be another value, got 'b'"
    assert verdict([_obs(["b"], "another check")], [_obs(["a"], "order")]).startswith("order: this check was not made")
    assert "observed nothing" in verdict([], [want]) and "made 2 checks" in verdict([want, want], [want])
    raised = {"kind": "raised", "label": "Mul.backward", "value": observations.encode("ValueError: no")}
    assert verdict([raised], [want]) == "Mul.backward raised ValueError: no"  # where it was raised
    # where the reference raised too, the kind of error counts, and so does every check after it
    other = {"kind": "raised", "label": "Mul.backward", "value": observations.encode("TypeError: no")}
    assert verdict([raised, want], [raised, want]) == ""
    assert verdict([other, want], [raised, want]) == ("Mul.backward raised TypeError: no, expected another kind of "
                                                      "error")
    assert verdict([raised, _obs(torch.zeros(1, 2), "grad of x")], [raised, want]).startswith("grad of x has the wrong "
                                                                                              "values")
    assert "made 3 checks" in verdict([raised, want, want], [raised, want])
    assert verdict([want], [raised]) == "Mul.backward: expected an error, but it ran"


def test_a_nan_matches_nothing():
    nan = torch.tensor([float("nan")])
    assert verdict([_obs(nan)], [_obs(nan)]).startswith("x is nan at index (0,), where a number is expected")


def test_a_nan_matches_a_nan_where_the_references_test_expects_one():
    want = {**_obs(torch.tensor([float("nan"), 1.0])), "equal_nan": True}
    assert verdict([_obs(torch.tensor([float("nan"), 1.0]))], [want]) == ""
    assert "wrong values at index (0,)" in verdict([_obs(torch.tensor([1.0, float("nan")]))], [want])
    assert "is nan at index (0,)" in verdict([{**_obs(torch.tensor([float("nan"), float("nan")])), "equal_nan": True}],
                                     [_obs(torch.tensor([float("nan"), 1.0]))])
    checks.check_tensor(torch.tensor([float("nan"), 1.0]), torch.tensor([float("nan"), 1.0]), "p", equal_nan=True)
    with pytest.raises(checks.AnswerError, match="wrong values"):
        checks.check_tensor(torch.tensor([1.0, 1.0]), torch.tensor([float("nan"), 1.0]), "p", equal_nan=True)


def test_the_references_tolerance_counts_not_the_students():
    want = {**_obs(torch.tensor([1.0])), "atol": 1e-6, "rtol": 0.0}
    got = {**_obs(torch.tensor([1.1])), "atol": 1.0, "rtol": 1.0}
    assert "wrong values" in verdict([got], [want])


def test_a_distribution_is_judged_by_the_graders_statistics_of_the_values_against_the_references_targets(monkeypatch):
    """check_distribution observes the values; the grader computes their statistics, with the reference test's targets
    (what the student's kernel sends as targets counts for nothing), and the kernel's own check says the same."""
    generator = torch.Generator().manual_seed(0)
    spec = {"mean": 0.0, "mean_atol": 0.01, "std": 0.1, "std_rtol": 0.05, "kurtosis": 3.0, "kurtosis_atol": 0.3}
    normal = torch.randn(400, 300, generator=generator) * 0.1
    uniform = (torch.rand(400, 300, generator=generator) * 2 - 1) * 0.1 * 3**0.5
    reference = observed(monkeypatch, lambda: checks.check_distribution(normal, "w", **spec))
    assert reference[0]["kind"] == "distribution" and reference[0]["std"] == 0.1
    for values, problem in [(normal * 1.0001, ""), (torch.zeros(400, 300), "standard deviation 0"),
                            (uniform, "w: kurtosis 1."),
                            (normal + 0.05, "w: mean 0.0"), (torch.full((400, 300), float("nan")), "not all finite"),
                            (normal[:2], "shape")]:
        student = observed(monkeypatch, lambda values=values: checks.check_distribution(
            values, "w", std=float(values.std()) if values.numel() else 0.0, std_rtol=1.0, kurtosis=0.0,
            kurtosis_atol=99.0))
        message = verdict(student, reference)
        assert (problem in message and message) if problem else message == "", (problem, message)
    bounded = observed(monkeypatch, lambda: checks.check_distribution(torch.tensor([0.3, -0.5]), "b", bound=0.5))
    unbounded = observed(monkeypatch, lambda: checks.check_distribution(torch.tensor([0.3, -0.6]), "b"))
    assert verdict(unbounded, bounded).startswith("b: a value of -0.6")


def test_outside_grading_the_distribution_is_checked_in_the_kernel():
    generator = torch.Generator().manual_seed(0)
    uniform = (torch.rand(400, 300, generator=generator) * 2 - 1) * 0.1 * 3**0.5
    checks.check_distribution(uniform, "w", mean=0.0, mean_atol=0.01, std=0.1, std_rtol=0.05, kurtosis=1.8,
                              kurtosis_atol=0.3, bound=0.18)
    with pytest.raises(checks.AnswerError, match="kurtosis 1[.]"):
        checks.check_distribution(uniform, "w", kurtosis=3.0, kurtosis_atol=0.3)


@pytest.mark.parametrize("forged",
                         [None, "x", {"kind": "value"},
                          {"kind": "value", "value": {"type": "tensor", "shape": [2], "dtype": "float32"}},
                                    {"kind": "value",
                                     "value": {"type": "tensor", "shape": [2], "dtype": "float32", "stored": "float64",
                                               "data": "!!"}},
                                    {"kind": "value",
                                     "value": {"type": "tensor", "shape": [2], "dtype": "float32", "stored": "object",
                                               "data": ""}},
                                    {"kind": "value", "value": {"type": "list", "items": "ab"}},
                                    {"kind": "value", "value": {"type": "dict", "items": [1]}},
                                    {"kind": "raised", "label": "x", "value": {"type": "list", "items": 5}},
                                    {"kind": "raised", "label": "x", "value": {"type": "dict", "items": [[1]]}}])
def test_a_malformed_observation_fails_its_test_and_nothing_else(forged):
    want = [_obs(torch.ones(2)), _obs([1, 2])]
    assert verdict([forged, want[1]], want)
    assert verdict(want, want) == ""


def test_plain_values_keep_their_types():
    assert (verdict([_obs((1, 2))], [_obs([1, 2])]) and verdict([_obs(1.0)], [_obs(1)])
            and verdict([_obs(True)], [_obs(1)]))
    assert verdict([_obs(numpy.int64(3))], [_obs(3)]) == ""
    assert verdict([_obs({"a": [1.5]})], [_obs({"a": [1.5]})]) == ""
    deep: list = []
    for _ in range(100):
        deep = [deep]
    assert observations.encode(deep)["type"] == "list"  # encoded to a bound, then "too large": never a recursion error


def _obs(value, label: str = "x") -> dict:
    return {"kind": "value", "label": label, "value": observations.encode(value)}


DRIVERS = [path for path in sorted(REPO.glob("solutions/*/*.ipynb")) if has_drivers(nbformat.read(path, as_version=4))]


def test_the_notebooks_that_are_drivers():
    assert [path.parent.name for path in DRIVERS] == ["01_module_basics", "02_forward_hooks", "03_backward_hooks",
                                                      "04_apply", "05_autograd_function", "06_applications",
                                                      "07_memory_hooks", "08_backward_puzzles", "09_below_the_module",
                                                      "10_hooks_inside_pytorch"]


@pytest.mark.parametrize("path", DRIVERS, ids=lambda p: p.parent.name)
def test_what_a_driver_sends_compiles_and_holds_no_expected_value_nor_oracle(path):
    """The kernel gets valid Python with every REFERENCE block blank, uses none of their names, and its hidden tests
    keep no expected value in a variable of their own (an expected value lives only in a checker's argument)."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code" or not utils.is_grade(cell) or utils.is_solution(cell):
            continue
        begins, ends = (sum(line.strip() == marker for line in cell.source.splitlines()) for marker in REFERENCE)
        assert begins == ends, f"{cell.metadata.nbgrader['grade_id']}: unbalanced REFERENCE markers"
        sent = without_expectations(cell.source)
        tree = ast.parse(sent)
        defined = {n.name for n in ast.walk(ast.parse(cell.source)) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        kept = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert not (defined - kept) & used, (f"{cell.metadata.nbgrader['grade_id']} uses an oracle the kernel does not "
                                             "get")
        # the visible part is the student's own
        hidden = next(i for i, line in enumerate(sent.splitlines(), 1) if "BEGIN HIDDEN TESTS" in line)
        stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                  and n.lineno > hidden}
        assert not {name for name in stored if name.startswith("expected")}, (f"{cell.metadata.nbgrader['grade_id']} "
                                                                              "keeps an expected value")


def test_a_cell_the_grader_fails_loses_the_lines_that_said_it_passed():
    """A driver's checks raise nothing in the kernel, so its cell prints ✓ whatever the answer; the verdict removes
    it."""
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    want = _obs(torch.ones(2), "out")

    def cell(grade_id: str) -> nbformat.NotebookNode:
        made = new_code_cell("",
                             metadata={"nbgrader": {"grade": True, "grade_id": grade_id, "points": 1, "solution": False,
                                                    "locked": True}})
        made.outputs = [new_output("stream", name="stdout", text="shapes: (2,)\n✓ out passes the visible tests\n")]
        return made

    nb = new_notebook(cells=[cell("right"), cell("wrong")])
    reference = {"right": {"observed": [want], "error": ""}, "wrong": {"observed": [want], "error": ""}}
    judge.judge(nb, reference, {"right": [want], "wrong": [_obs(torch.zeros(2), "out")]})
    right, wrong = nb.cells
    assert [o.text for o in right.outputs] == ["shapes: (2,)\n✓ out passes the visible tests\n"]
    assert [o.get("text", o.get("ename")) for o in wrong.outputs] == ["shapes: (2,)\n", "WrongAnswer"]


def _test_cell(grade_id: str, *outputs: nbformat.NotebookNode) -> nbformat.NotebookNode:
    from nbformat.v4 import new_code_cell

    made = new_code_cell("", metadata={"nbgrader": {"grade": True, "grade_id": grade_id, "points": 1,
                                                    "solution": False, "locked": True}})
    made.outputs = list(outputs)
    return made


def test_a_test_that_crashed_on_wrong_data_says_the_first_check_that_differed():
    """A failed observation raises nothing in the kernel, so the test's next line can crash on the wrong data (a key
    the wrong answer lacks): the message is the first check that differed, then that the rest of the test did not
    run; a crash with every check before it right, or before any check, is the kernel's own error."""
    from nbformat.v4 import new_notebook, new_output

    want = [_obs(torch.ones(2), "outputs['h1']"), _obs(torch.ones(2), "outputs['h2']")]
    crash = new_output("error", ename="KeyError", evalue="'h2'", traceback=["KeyError: 'h2'"])
    nb = new_notebook(cells=[_test_cell("wrong_then_crash", crash), _test_cell("right_then_crash", crash),
                             _test_cell("crash_first", crash)])
    reference = {cell.metadata.nbgrader["grade_id"]: {"observed": want, "error": ""} for cell in nb.cells}
    judge.judge(nb, reference, {"wrong_then_crash": [_obs(torch.zeros(2), "outputs['h1']")],
                                "right_then_crash": want[:1], "crash_first": []})
    wrong, right, first = ([(o.ename, o.evalue) for o in cell.outputs] for cell in nb.cells)
    assert wrong == [("WrongAnswer", "outputs['h1'] has the wrong values at index (0,) (2 of 2 entries wrong; largest "
                                     "error 1)" + judge.STOPPED)]
    assert right == first == [("KeyError", "'h2'")]


def test_a_checkers_sentence_raised_in_the_kernel_reads_as_a_wrong_answer_without_the_checkers_class_name():
    """checks.calling (a student call that raised) observes, then raises AnswerError: the feedback says its sentence
    as every wrong answer is said, not as "AnswerError: ..." with a traceback of the test."""
    from nbformat.v4 import new_notebook, new_output

    sentence = "model(x), with x of shape (2, 2), float32, raised RuntimeError: mat1 and mat2 cannot be multiplied"
    raised = new_output("error", ename="AnswerError", evalue=sentence,
                        traceback=["AnswerError Traceback", "----> 12 with calling('model(x)', x=x):", sentence])
    nb = new_notebook(cells=[_test_cell("make_linear_test", raised)])
    reference = {"make_linear_test": {"observed": [_obs(torch.ones(2), "model(x)")], "error": ""}}
    judge.judge(nb, reference, {"make_linear_test": [{"kind": "raised", "label": "model(x)", "value": {}}]})
    [shown] = nb.cells[0].outputs
    assert (shown.ename, shown.evalue) == ("WrongAnswer", sentence) and "calling" not in "".join(shown.traceback)


def test_an_error_is_said_whole_and_cut_only_past_a_sentences_room_and_a_tests_own_crash_not_at_all():
    """What a student's backward raised reads as in the lab, its line whole, and only an error longer than a
    sentence's room is cut, with "…"; what the test's own code then raised on the wrong data is not said (it is test
    code's, and may name a hidden test's objects): only that the rest of the test did not run."""
    from nbformat.v4 import new_notebook, new_output

    crash = new_output("error", ename="RuntimeError", evalue="Error(s) in loading state_dict for HiddenModel",
                       traceback=["RuntimeError: Error(s) in loading state_dict for HiddenModel"])
    nb = new_notebook(cells=[_test_cell("order", crash)])
    want = [{**_obs(["first", "all"], "the kinds of the log entries"), "line": 1}, _obs(torch.ones(2), "log[0]")]
    judge.judge(nb, {"order": {"observed": want, "error": ""}},
                {"order": [_obs(["all", "first"], "the kinds of the log entries")]})
    assert [(o.ename, o.evalue) for o in nb.cells[0].outputs] == [(
        "WrongAnswer", "the kinds of the log entries should be ['first', 'all'], got ['all', 'first'] (the rest of "
        "this test did not run)")]

    said = ("RuntimeError: expand(torch.DoubleTensor{[1, 1, 4]}, size=[3, 4]): the number of sizes provided (2) must "
            "be greater or equal to the number of dimensions in the tensor (3) (line 13: return "
            "grad_output.unsqueeze(ctx.dim).expand(ctx.shape), None, None)")
    raised = {"kind": "raised", "label": "SumDim.apply(…): SumDim.backward", "value": observations.encode(said)}
    assert verdict([raised], [want[1]]) == f"SumDim.apply(…): SumDim.backward raised {said}"
    endless = {**raised, "value": observations.encode("RuntimeError: " + "x" * 5000)}
    assert verdict([endless], [want[1]]) == f"SumDim.apply(…): SumDim.backward raised RuntimeError: {'x' * 586}…"


def test_a_cell_that_raised_loses_the_lines_that_said_it_passed():
    """A visible check printed ✓, then the hidden tests raised (the student's own error): the ✓ line goes, the error
    stays as the kernel gave it."""
    from nbformat.v4 import new_notebook, new_output

    nb = new_notebook(cells=[_test_cell("own_error", new_output("stream", name="stdout", text="✓ visible tests pass\n"),
                                        new_output("error", ename="ValueError", evalue="not enough values to unpack",
                                                   traceback=["ValueError: not enough values to unpack"]))])
    judge.judge(nb, {"own_error": {"observed": [], "error": ""}}, {})
    assert [(o.output_type, o.get("ename")) for o in nb.cells[0].outputs] == [("error", "ValueError")]


def test_hidden_lines_are_counted_as_python_counts_them_between_nbgraders_delimiters():
    """A form feed or U+2028 inside a line ends no line for Python (str.splitlines would split there, and every check
    after it would be judged on the wrong line); nbgrader finds its delimiters anywhere in a line."""
    source = ("\x0cx = 1  # a form feed first\n# a line separator \u2028 in a comment\ncheck_equal(x, 1, 'a')\n"
              "# BEGIN HIDDEN TESTS\ncheck_equal(x, 1, 'b')\r\ncheck_equal(x, 1, 'c')\n  # END HIDDEN TESTS\n"
              "check_equal(x, 1, 'd')")
    assert judge.hidden_lines(source) == {5, 6}
    sent = judge.without_expectations(source)
    assert [line.strip() for line in sent.split("\n")[2:]] == [
        "check_equal(x, None, 'a')", "# BEGIN HIDDEN TESTS", "check_equal(x, None, 'b')", "check_equal(x, None, 'c')",
        "# END HIDDEN TESTS", "check_equal(x, None, 'd')"]
    assert "\u2028" in sent and sent.startswith("\x0cx = 1")


def test_a_hidden_check_of_names_names_no_expected_name():
    got, want = _obs(["fc", "extra"], "names"), _obs(["fc", "out"], "names")
    got["kind"] = want["kind"] = "names"
    hidden = {**want, "line": 2}
    assert verdict([got], [hidden], frozenset({2})) == "names is missing 1 name; got ['fc', 'extra']"
    assert verdict([got], [{**hidden, "line": 1}], frozenset({2})) == "names is missing 'out'; got ['fc', 'extra']"
    swapped = {**_obs(["out", "fc"], "names"), "kind": "names"}
    assert verdict([swapped], [hidden], frozenset({2})) == ("names has the right names in the wrong order: got "
                                                            "['out', 'fc']")


def test_a_hidden_checks_largest_error_has_one_significant_figure():
    """With the student's own value, the error's size to three figures would give a hidden one-entry reference away."""
    want = {**_obs(torch.tensor([0.8018089]), "penalty"), "line": 2}
    assert verdict([_obs(torch.tensor([0.792165]), "penalty")], [want], frozenset({2})) == (
        "penalty has the wrong values at index (0,) (largest error 0.01)")


def test_an_exercise_not_written_yet_says_so_in_the_graded_cell():
    """The template's NotImplementedError, with the note hooklab.hints gives it in the kernel, is "not written yet"."""
    from nbformat.v4 import new_notebook, new_output

    blank = new_output("error", ename="NotImplementedError", evalue="", traceback=[
        "\x1b[0;31mNotImplementedError\x1b[0m: \npre_hook is not written yet: replace `raise NotImplementedError()` "
        "(line 2 of its cell) with your answer, run that cell, then run this one again."])
    other = new_output("error", ename="NotImplementedError", evalue="a method torch lacks", traceback=["..."])
    nb = new_notebook(cells=[_test_cell("blank", blank), _test_cell("other", other)])
    reference = {"blank": {"observed": [], "error": ""}, "other": {"observed": [], "error": ""}}
    judge.judge(nb, reference, {})
    assert [(o.ename, o.evalue) for cell in nb.cells for o in cell.outputs] == [
        ("NotWritten", "pre_hook is not written yet"), ("NotImplementedError", "a method torch lacks")]


# What reaches a checker in the kernel: the same cells run as the grader sends them --------------------------------
# Blanking works on the test's text; the run below holds every test to what it promises, whatever path a value takes.


def _expected_expression(source: str, line: int, column: int, name: str) -> ast.expr | None:
    """In a test cell's original source, the expression a checker call at (``line``, ``column``) gives as its expected
    value (as :data:`judge.EXPECTATIONS` names it), or None."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and (node.lineno, node.col_offset) == (line, column):
            position, keyword = judge.EXPECTATIONS[name]
            if position is not None and len(node.args) > position:
                return node.args[position]
            return next((k.value for k in node.keywords if k.arg in (keyword, "expected")), None)
    return None


def _held_by_the_kernel(expression: ast.expr, frame, sent: str) -> str:
    """How the value of ``expression`` (a checker's expected argument in the test's own source) is held by the kernel
    that ran the cell as ``sent``, where the checker was called (``frame``): "parameter NAME of HELPER" when a helper
    the test defines was handed it (by position: a keyword ``expected=`` is blanked where it is passed), "global
    NAME" when the notebook keeps it; "" when the kernel does not hold it (computed at the call, which the grader
    blanks, or in a REFERENCE block, which it leaves out), when the test also uses it as an input (a gradient it
    passes to backward and expects back unchanged: the answer is given it anyway), or when it is a function (a
    reference operation, which torch has anyway)."""
    if not isinstance(expression, ast.Name):
        return ""
    name, code = expression.id, frame.f_code
    parameters = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    local = code.co_name != "<module>" and name in (*code.co_varnames, *code.co_cellvars, *code.co_freevars)
    tree = ast.parse(sent)
    if local and name in parameters and frame.f_locals.get(name) is not None:
        where, value = f"parameter {name!r} of {code.co_name}()", frame.f_locals[name]
        tree = next((node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                     and node.name == code.co_name and node.lineno <= code.co_firstlineno), tree)
    elif not local and frame.f_globals.get(name) is not None:
        where, value = f"global {name!r}", frame.f_globals[name]
    else:
        return ""
    read = any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
               for node in ast.walk(tree))
    return "" if callable(value) or read else where


def _in_hidden_tests(frame, sent: str) -> bool:
    """Whether the cell's own code (its outermost frame, above ``frame``) is running a line of its hidden tests."""
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    lines = sent.splitlines()
    hidden = next((number for number, line in enumerate(lines, 1) if line.strip() == "### BEGIN HIDDEN TESTS"), None)
    return frame is not None and hidden is not None and frame.f_lineno > hidden


def checker_arguments_as_sent(path: Path) -> list[str]:
    """Run a solution notebook's cells as the grader sends them (test cells through ``without_expectations``, the
    checkers observing) and list every checker call that received an expected value, or whose expected value, read
    where the checker was called, is held by the kernel (a helper's parameter, a global, a local computed outside a
    REFERENCE block)."""
    import inspect
    import linecache
    import sys

    from mutation.runner import notebook_shell

    nb, shell, _ = notebook_shell(path)
    originals: dict[str, tuple[str, str]] = {}  # the source sent → (grade_id, the test's own source)
    problems: list[str] = []

    def watched(name: str):
        real = getattr(checks, name)
        keyword = judge.EXPECTATIONS[name][1]
        signature = inspect.signature(real)

        def checker(*args, **kwargs):
            caller = sys._getframe(1)
            sent = "".join(linecache.getlines(caller.f_code.co_filename)).rstrip()  # as IPython compiled it
            grade_id, source = originals.get(sent, (None, None))
            if grade_id is not None:
                bound = signature.bind(*args, **kwargs)
                where = f"{grade_id} line {caller.f_lineno}: {name}"
                given = bound.arguments.get(keyword)
                names_only = type(given) is dict and all(value is None for value in given.values())  # check_answer's
                if given is not None and not names_only:
                    problems.append(f"{where} received an expected value")
                line, _, column, _ = list(caller.f_code.co_positions())[caller.f_lasti // 2]
                expression = _expected_expression(source, line, column, name)
                held = (_held_by_the_kernel(expression, caller, sent)
                        if expression is not None and _in_hidden_tests(caller, sent) else "")
                if held:
                    problems.append(f"{where}'s expected value reaches the kernel as {held}")
            return real(*args, **kwargs)

        return checker

    for name in judge.EXPECTATIONS:
        setattr(checks, name, watched(name))
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        test = utils.is_grade(cell) and not utils.is_solution(cell)
        key = cell.metadata.get("nbgrader", {}).get("grade_id") or str(index)
        observations.begin(observations.cell_seed("expected-values", path.stem, key), test)
        code = without_expectations(cell.source) if test else cell.source
        if test:
            originals[code.rstrip()] = (key, cell.source)
        result = shell.run_cell(code, store_history=False, silent=True)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            problems.append(f"{key} raised {type(error).__name__}: {error}")
        observations.collected()
    return list(dict.fromkeys(problems))


@pytest.mark.slow  # runs each notebook, in a process of its own
@pytest.mark.parametrize("path", DRIVERS, ids=lambda p: p.parent.name)
def test_no_checker_gets_an_expected_value_in_the_kernel_by_any_path(path):
    """Every checker in a test cell sent as the grader sends it gets None for its expected value, and the expression
    the test gave for it holds nothing in the kernel where the checker was called: an expected value handed to a
    helper by position, kept in a global or computed outside a REFERENCE block would be there for an answer to read."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, __file__, str(path)], capture_output=True, text=True, timeout=600,
                         cwd=REPO)
    assert run.returncode == 0, run.stderr[-3000:]
    problems = json.loads(run.stdout.splitlines()[-1])
    assert problems == [], "\n".join(problems)


if __name__ == "__main__":  # the run above, in a process of its own: python tests/test_judge.py NOTEBOOK
    import sys
    from pathlib import Path

    sys.path.insert(0, str(REPO))  # the repository's tools (mutation.runner's notebook shell)
    found = checker_arguments_as_sent(Path(sys.argv[1]).resolve())
    print(json.dumps(found))
