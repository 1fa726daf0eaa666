"""Unit tests of hooklab.checks: every checker passes right answers and names what is wrong."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch import nn

from hooklab.checks import (
    AnswerError,
    check_answer,
    check_equal,
    check_names,
    check_parameter,
    check_tensor,
    random_generator,
)


@pytest.fixture
def refs() -> dict[str, torch.Tensor]:
    x1 = torch.tensor([0.25])
    x2 = torch.tensor([0.5])
    return {"x1": x1, "x2": x2, "output": x1 + x2}


def fails_with(message: str):
    return pytest.raises(AnswerError, match=message)


# check_answer -----------------------------------------------------------------------------


def test_answer_passes_same_objects_and_equal_values(refs):
    check_answer(list(refs.values()), refs, same_object=True)
    check_answer([t.clone() for t in refs.values()], refs)
    check_answer(tuple(refs.values()), refs)


def test_answer_must_be_a_list(refs):
    with fails_with(r"answer is a torch.Tensor, expected a list \[x1, x2, output\]"):
        check_answer(refs["x1"], refs)


def test_answer_length(refs):
    with fails_with(r"^answer has 2 items, expected 3: \[x1, x2, output\]$"):
        check_answer([refs["x1"], refs["x2"]], refs)
    with fails_with(r"^answer has 1 item, expected 3"):
        check_answer([refs["x1"]], refs)


def test_answer_item_equal_to_another_reference(refs):
    with fails_with(r"^answer\[1\] should equal x2; got a tensor equal to x1$"):
        check_answer([refs["x1"], refs["x1"], refs["output"]], refs)


def test_answer_item_python_float(refs):
    with fails_with(r"^answer\[0\] is a Python float, expected a tensor$"):
        check_answer([0.25, refs["x2"], refs["output"]], refs)


def test_answer_item_numpy_array(refs):
    with fails_with(r"^answer\[2\] is a numpy.ndarray, expected a tensor$"):
        check_answer([refs["x1"], refs["x2"], np.array([0.75])], refs)


def test_answer_item_shape(refs):
    with fails_with(r"^answer\[2\] \(output\): shape \(1,\) expected, got \(2,\)$"):
        check_answer([refs["x1"], refs["x2"], torch.tensor([0.75, 0.75])], refs)


def test_answer_item_dtype_strict_unless_relaxed(refs):
    as_double = [t.double() for t in refs.values()]
    with fails_with(r"^answer\[0\] \(x1\) has dtype torch.float64, expected torch.float32$"):
        check_answer(as_double, refs)
    check_answer(as_double, refs, check_dtype=False)


def test_answer_item_wrong_values(refs):
    with fails_with(r"^answer\[2\] \(output\) has the wrong values: 0.8 instead of 0.75 at index \(0,\)$"):
        check_answer([refs["x1"], refs["x2"], torch.tensor([0.8])], refs)


def test_answer_same_object_rejects_copies_and_swaps(refs):
    x1, x2, output = refs.values()
    with fails_with(r"^answer\[0\] should be x1 itself; got a copy with the same values"):
        check_answer([x1.clone(), x2, output], refs, same_object=True)
    with fails_with(r"^answer\[0\] should be x1; got x2$"):
        check_answer([x2, x1, output], refs, same_object=True)
    with fails_with(r"^answer\[2\] should be output itself; got a different tensor$"):
        check_answer([x1, x2, torch.tensor([9.0])], refs, same_object=True)


# check_tensor -----------------------------------------------------------------------------


def test_tensor_passes_within_tolerance():
    check_tensor(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
    check_tensor(torch.tensor([float("nan")]), torch.tensor([float("nan")]))


def test_tensor_reports_multi_dimensional_index():
    expected = torch.zeros(2, 3)
    actual = expected.clone()
    actual[1, 2] = 1.0
    with fails_with(r"^grad has the wrong values: 1 instead of 0 at index \(1, 2\)$"):
        check_tensor(actual, expected, "grad")


def test_tensor_scalar_has_no_index():
    with fails_with(r"^count has the wrong values: 3 instead of 4$"):
        check_tensor(torch.tensor(3), torch.tensor(4), "count")


def test_tensor_rejects_none():
    with fails_with(r"^weight.grad is None, expected a tensor$"):
        check_tensor(None, torch.zeros(1), "weight.grad")


def test_parameter_is_accepted_as_tensor():
    check_tensor(nn.Parameter(torch.ones(2)), torch.ones(2))


# cheats: patched comparisons and tensor subclasses ------------------------------------------


def test_patched_torch_comparisons_do_not_fool_the_checker(monkeypatch, refs):
    monkeypatch.setattr(torch, "allclose", lambda *args, **kwargs: True)
    monkeypatch.setattr(torch, "equal", lambda *args, **kwargs: True)
    monkeypatch.setattr(torch, "isclose", lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool))
    monkeypatch.setattr(torch.Tensor, "__eq__", lambda self, other: True)
    with fails_with(r"wrong values: 9 instead of 0.75"):
        check_answer([refs["x1"], refs["x2"], torch.tensor([9.0])], refs)


def test_tensor_subclass_is_rejected(refs):
    class EqualsAnything(torch.Tensor):
        def __eq__(self, other):
            return True

    sneaky = torch.tensor([9.0]).as_subclass(EqualsAnything)
    with fails_with(r"^answer\[2\] is a .*EqualsAnything \(a torch.Tensor subclass\), expected a plain tensor$"):
        check_answer([refs["x1"], refs["x2"], sneaky], refs)


# check_names ------------------------------------------------------------------------------


def test_names_pass():
    check_names(iter(["a", "b"]), ["a", "b"], "named_parameters()")


def test_names_missing_unexpected_and_order():
    with fails_with(r"^named_parameters\(\) is missing 'b'; got \['a'\]$"):
        check_names(["a"], ["a", "b"], "named_parameters()")
    with fails_with(r"^named_parameters\(\) has unexpected 'c'; expected \['a', 'b'\]$"):
        check_names(["a", "b", "c"], ["a", "b"], "named_parameters()")
    with fails_with(r"^named_parameters\(\) has the right names in the wrong order"):
        check_names(["b", "a"], ["a", "b"], "named_parameters()")


# check_parameter --------------------------------------------------------------------------


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(2, 3))
        self.plain = torch.zeros(2, requires_grad=True)


def test_parameter_passes():
    check_parameter(Holder(), "weight", (2, 3))


def test_parameter_missing_plain_and_shape():
    holder = Holder()
    with fails_with(r"^Holder has no attribute 'bias'$"):
        check_parameter(holder, "bias", (2,))
    with fails_with(r"^Holder.plain is a torch.Tensor, not an nn.Parameter: parameters\(\)"):
        check_parameter(holder, "plain", (2,))
    with fails_with(r"^Holder.weight: shape \(3, 2\) expected, got \(2, 3\)$"):
        check_parameter(holder, "weight", (3, 2))


def test_parameter_not_registered():
    holder = Holder()
    object.__setattr__(holder, "stray", nn.Parameter(torch.zeros(1)))
    with fails_with(r"^Holder.stray is a Parameter but is not registered on the module$"):
        check_parameter(holder, "stray", (1,))


# check_equal ------------------------------------------------------------------------------


def test_equal_passes_and_fails():
    check_equal("Scale(factor=2.5)", "Scale(factor=2.5)", "repr")
    with fails_with(r"^repr should be 'a', got 'b'$"):
        check_equal("b", "a", "repr")
    with fails_with(r"^count is a Python float, expected a Python int$"):
        check_equal(3.0, 3, "count")
    with fails_with(r"^repr differs.\nexpected:\nA\(\n\)\ngot:\nB\(\n\)$"):
        check_equal("B(\n)", "A(\n)", "repr")


# random_generator -------------------------------------------------------------------------


def test_random_generator_is_fresh_each_time():
    draws = {tuple(torch.randint(0, 2**31, (4,), generator=random_generator()).tolist()) for _ in range(3)}
    assert len(draws) == 3


# what a student sees ---------------------------------------------------------------------


def test_a_failed_check_shows_the_students_call_and_the_message_not_hooklabs_frames():
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import torch\nfrom hooklab.checks import check_answer\n\n"
        "def my_test():\n    check_answer([torch.ones(1)], {'x1': torch.ones(1), 'x2': torch.zeros(1)})\n\nmy_test()"
    )]
    nbclient.NotebookClient(nb, allow_errors=True, timeout=120).execute()
    (error,) = [o for o in nb.cells[0].outputs if o.output_type == "error"]
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))  # without the colours
    assert error.ename == "AnswerError" and "answer has 1 item, expected 2: [x1, x2]" in shown
    assert "my_test()" in shown and "check_answer([torch.ones(1)]" in shown, "the student's calls are shown"
    assert "checks.py" not in shown, f"hooklab's own frames are shown:\n{shown}"


def test_check_equal_takes_a_numpy_count_for_an_int_but_nothing_that_claims_equality():
    check_equal(np.prod((3, 4)), 12, "count")
    with fails_with("count should be 12, got 11"):
        check_equal(np.int64(11), 12, "count")

    class Same(list):
        def __eq__(self, other):
            return True

    with fails_with("is a .*Same, expected a list"):
        check_equal(Same(), [1, 2], "shapes")

    class Anything:
        def __eq__(self, other):
            return True

    with fails_with("holds a .*Anything; expected plain Python values"):
        check_equal([Anything()], [("layer", (2,))], "shapes")
    with fails_with("holds a .*Anything; expected names"):
        check_names([Anything()], ["weight"], "names")
