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
    monkeypatch.setattr(observations, "_state",
                        {"seed": "cell", "draws": itertools.count(), "seen": [], "channel": None})
    monkeypatch.setattr(observations, "_called_by_the_cell", lambda: True)  # no IPython cell here
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
    assert verdict([_obs(["b"], "order")], [_obs(["a"], "order")]) == "order[0] is not the expected value: got 'b'"
    assert verdict([_obs(["b"], "another check")], [_obs(["a"], "order")]).startswith("order: this check was not made")
    assert "observed nothing" in verdict([], [want]) and "made 2 checks" in verdict([want, want], [want])
    raised = {"kind": "raised", "label": "Mul.backward", "value": observations.encode("ValueError: no")}
    assert verdict([raised], [want]) == "grad of x: raised 'ValueError: no'"
    # where the reference raised too, the kind of error counts, and so does every check after it
    other = {"kind": "raised", "label": "Mul.backward", "value": observations.encode("TypeError: no")}
    assert verdict([raised, want], [raised, want]) == ""
    assert verdict([other, want], [raised, want]) == ("Mul.backward: raised 'TypeError: no', expected another kind of "
                                                      "error")
    assert verdict([raised, _obs(torch.zeros(1, 2), "grad of x")], [raised, want]).startswith("grad of x has the wrong "
                                                                                              "values")
    assert "made 3 checks" in verdict([raised, want, want], [raised, want])
    assert verdict([want], [raised]) == "Mul.backward: expected an error, but it ran"


def test_a_nan_matches_nothing():
    nan = torch.tensor([float("nan")])
    assert "wrong values" in verdict([_obs(nan)], [_obs(nan)])


def test_a_nan_matches_a_nan_where_the_references_test_expects_one():
    want = {**_obs(torch.tensor([float("nan"), 1.0])), "equal_nan": True}
    assert verdict([_obs(torch.tensor([float("nan"), 1.0]))], [want]) == ""
    assert "wrong values" in verdict([_obs(torch.tensor([1.0, float("nan")]))], [want])
    assert "wrong values" in verdict([{**_obs(torch.tensor([float("nan"), float("nan")])), "equal_nan": True}],
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
                                                      "07_memory_hooks", "08_backward_puzzles", "09_below_the_module"]


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
